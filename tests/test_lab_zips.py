"""Every unit's student zip unpacks into a folder of its own, so all of them unpacked in one
place lose nothing: no file of one unit overwrites (or asks to overwrite) another's."""

from __future__ import annotations

import zipfile

from grader.course import release
from grader.units import load_unit, unit_ids


def test_every_units_zip_unpacks_beside_the_others(tmp_path):
    units = [load_unit(u) for u in unit_ids()]
    assert len(units) >= 2, "the test needs two units to unpack side by side"
    together = tmp_path / "downloads"
    contents: dict[str, bytes] = {}
    for unit in units:
        archive = release.build_student_zip(unit, tmp_path / release.student_zip_name(unit))
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
            root = f"infra-lab-{unit.id}/"
            assert names and all(n.startswith(root) for n in names), unit.id
            clash = sorted(set(names) & set(contents))
            assert not clash, f"{unit.id} would overwrite {clash[:3]}"
            contents |= {n: zf.read(n) for n in names}
            zf.extractall(together)  # one after the other, into the same folder
    on_disk = {
        p.relative_to(together).as_posix(): p.read_bytes()
        for p in together.rglob("*")
        if p.is_file()
    }
    assert on_disk == contents, "a file went missing or changed when the zips met"
    assert sorted(p.name for p in together.iterdir()) == [f"infra-lab-{u.id}" for u in units]
    for unit in units:
        assert (together / f"infra-lab-{unit.id}" / "policies.py").is_file()
