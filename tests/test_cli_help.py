"""``simulate.py --help`` says which policies each parameter flag is for, in every unit."""

from __future__ import annotations

import pytest
from servesim.cliargs import build_parser
from servesim.labconfig import load_lab

from grader.units import load_unit, unit_ids


@pytest.mark.parametrize("unit_id", unit_ids())
def test_each_parameter_flag_names_the_policies_that_take_it(unit_id):
    lab = load_lab(load_unit(unit_id).lab_dir)
    helps = {
        action.dest: " ".join(action.help.split())
        for action in build_parser(lab)._actions
        if action.help
    }
    params = {param for spec in lab.policies for param in spec.params}
    assert params, f"{unit_id} has no policy parameter"
    for param in params:
        takers = [spec.name for spec in lab.policies if param in spec.params]
        if len(takers) == len(lab.policies) > 1:
            said = "every policy"
        else:
            said = ("policy " if len(takers) == 1 else "policies ") + ", ".join(takers)
        assert f"({said}; default " in helps[param], (unit_id, param, helps[param])
