"""The autograde step of the course: run the notebook in the sandboxed kernel, then score every
autograded cell in the grader's own process.

``SandboxedAutograde`` takes the place of nbgrader's ``Execute`` in
``Autograde.autograde_preprocessors`` (``autograde_preprocessors()``, set by the course's
managed config). It

1. for a unit with per-student variants, when the course config names the variant secret
   (``variant_secret``; without it, the fixed set), finds the student's variant from
   nbgrader's student id with that secret (read here, never in the notebook's folder) and
   puts the variant's own public traces into the notebook's folder
   (``grader.variants.nbkeys``), so the notebook runs on the student's own traces;
2. executes the notebook like ``Execute`` does, but always in ``nbkernel``'s kernel (whatever
   kernel the notebook or the config names): the student's code runs inside the sandbox;
3. then, outside the kernel, replaces the outputs of every autograded test cell by the verdict
   of the unit's check for that cell (``nbscores``), with the student's variant's answer keys
   and hidden cases: what the kernel printed stays, as plain
   text that cannot count (no error, no stderr, no result value), and the verdict comes last,
   which is the one output nbgrader's ``SaveAutoGrades`` scores. A graded cell without a check
   stops the autograding of that notebook.

While the notebook runs, what the kernel sends is capped, so a flood cannot exhaust the grader's
memory: a cell keeps at most ``CELL_OUTPUT_CHARS`` of output and a notebook
``NOTEBOOK_OUTPUT_CHARS`` (what comes after is dropped, and the cell says so once); widget
messages are ignored (their state would pile up in the grader); and no message over
``MESSAGE_BYTES`` is taken at all: zmq drops it and the connection with it, so that notebook's
autograde ends with nbgrader's "Timeout waiting for IOPub output" error.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import zmq.asyncio
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Unicode

from ..units import Unit, UnitError, load_unit
from ..variants import nbkeys
from . import nbcheck, nbscores
from .nbkernel import KERNEL_NAME, kernel_spec

KERNEL_TEXT_LIMIT = 20_000  # characters of the kernel's own output kept in a graded cell
MESSAGE_BYTES = 256 << 20  # the largest message taken from the kernel
CELL_OUTPUT_CHARS = 1 << 20  # output kept per cell while the notebook runs
NOTEBOOK_OUTPUT_CHARS = 8 << 20  # and per notebook
OUTPUT_MESSAGES = {"stream", "display_data", "execute_result", "error", "update_display_data"}
FLOOD_NOTE = "…(输出过多,之后的输出没有保留;评分照常进行)\n"


class SandboxKernelManager(AsyncKernelManager):
    """The kernel of ``kernel_spec``, over Unix sockets in a folder made for this kernel alone
    (the sandbox has no network, and binds only that folder)."""

    def __init__(self, **kwargs):
        super().__init__(transport="ipc", **kwargs)
        self._socket_dir: str | None = None

    @property
    def kernel_spec(self) -> KernelSpec:
        return KernelSpec(**kernel_spec())

    @property
    def ipykernel(self) -> bool:
        return True

    def client(self, **kwargs):
        """A client whose sockets refuse any message over ``MESSAGE_BYTES``."""
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MESSAGE_BYTES)
        return super().client(context=context, **kwargs)

    async def _async_pre_start_kernel(self, **kw):
        if self._socket_dir is None:
            self._socket_dir = tempfile.mkdtemp(prefix="infralab-kernel-")
            self.ip = os.path.join(self._socket_dir, "k")
        return await super()._async_pre_start_kernel(**kw)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None


class CheckError(RuntimeError):
    """A notebook that cannot be scored: a graded cell with no check."""


def cell_checks(unit: Unit) -> dict[str, tuple[nbscores.Check, ...]]:
    """``CHECKS`` of the unit's answer-key plug-in: grade id -> the cell's checks."""
    checks = nbcheck.plugin_table(unit, "CHECKS", "grade id: checks")
    return {grade_id: tuple(found) for grade_id, found in checks.items()}


def autograded_cells(nb) -> list:
    """The notebook's autograded test cells (graded code cells that are not answers)."""
    return [
        cell
        for cell in nb.cells
        if cell.cell_type == "code"
        and cell.metadata.get("nbgrader", {}).get("grade")
        and not cell.metadata["nbgrader"].get("solution")
    ]


def _text(output) -> str:
    """What one kernel output said, as text."""
    kind = output.get("output_type")
    if kind == "stream":
        return output.get("text", "")
    if kind == "error":
        summary = f"{output.get('ename')}: {output.get('evalue')}"
        return "\n".join(output.get("traceback") or [summary])
    return (output.get("data") or {}).get("text/plain", "")


def verdict_outputs(kernel_outputs: list, verdict: nbscores.Verdict, points: float) -> list:
    """The cell's outputs: the kernel's as plain text, then the verdict."""
    said = "\n".join(t.rstrip("\n") for t in map(_text, kernel_outputs) if t.strip())
    outputs = []
    if said:
        if len(said) > KERNEL_TEXT_LIMIT:
            said = said[:KERNEL_TEXT_LIMIT] + "\n…"
        outputs.append(new_output("stream", name="stdout", text=said + "\n"))
    if verdict.partial:
        outputs.append(new_output("stream", name="stdout", text=verdict.message.rstrip() + "\n"))
        score = round(points * verdict.fraction, 2)
        outputs.append(new_output("execute_result", data={"text/plain": repr(score)}))
    elif verdict.fraction == 1.0:
        outputs.append(new_output("stream", name="stdout", text=verdict.message + "\n"))
    else:
        outputs.append(
            new_output("error", ename="评分", evalue=verdict.message, traceback=[verdict.message])
        )
    for number, output in enumerate(outputs):
        if output["output_type"] == "execute_result":
            output["execution_count"] = number + 1
    return outputs


def policy_grading(unit: Unit, folder: Path) -> Callable[[], tuple[float, str]]:
    """The policy cell's (fraction, report text), graded once, when first asked for."""
    done: list[tuple[float, str]] = []

    def grade() -> tuple[float, str]:
        if not done:
            files, missing = nbscores.policy_files(unit, folder)
            if missing:
                done.append((0.0, f"缺少要提交的文件:{', '.join(missing)}"))
            else:
                try:
                    report = nbcheck.grade_policies(unit, files)
                except UnitError as exc:  # e.g. a link instead of a file: the submission's fault
                    done.append((0.0, str(exc)))
                else:
                    done.append((report["score"] / report["maxScore"], report["text"]))
        return done[0]

    return grade


def score_notebook(nb, unit: Unit, folder: Path) -> None:
    """Replace every autograded cell's outputs by its verdict (see the module's doc)."""
    checks = cell_checks(unit)
    keys: dict[str, dict] = {}

    def key(case: str) -> dict:
        if case not in keys:
            keys[case] = nbcheck.answer_key(unit, case)
        return keys[case]

    policies = policy_grading(unit, folder)
    for cell in autograded_cells(nb):
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        if grade_id not in checks:
            raise CheckError(f"{unit.id}: graded cell {grade_id!r} has no check in CHECKS")
        found = checks[grade_id]
        verdict = nbscores.judge(found, nbscores.handed_in(cell.outputs), key, policies)
        points = float(cell.metadata["nbgrader"]["points"])
        cell.outputs = verdict_outputs(cell.outputs, verdict, points)


class SandboxedAutograde(Execute):
    """nbgrader's ``Execute`` in the sandboxed kernel, then the trusted scores."""

    variant_secret = Unicode(
        "",
        help="The course's variant secret file: a unit with per-student variants grades each "
        "notebook against its student's variant (empty: the fixed set for everyone). Read by "
        "the grader only, never placed where the notebook runs.",
    ).tag(config=True)

    def create_kernel_manager(self):
        self.kernel_name = KERNEL_NAME
        self.km = SandboxKernelManager(kernel_name=KERNEL_NAME, config=self.config)
        return self.km

    def process_message(self, msg, cell, cell_index):
        """nbclient's handling of one kernel message, within the output caps (module doc)."""
        kind = msg["msg_type"]
        if kind.startswith("comm"):
            return None
        if kind in OUTPUT_MESSAGES:
            size = len(json.dumps(msg["content"], ensure_ascii=False, default=str))
            spent = self._output_spent.get(cell_index, 0) + size
            total = sum(self._output_spent.values()) + size
            if spent > CELL_OUTPUT_CHARS or total > NOTEBOOK_OUTPUT_CHARS:
                if cell_index not in self._output_noted:
                    self._output_noted.add(cell_index)
                    cell.outputs.append(new_output("stream", name="stdout", text=FLOOD_NOTE))
                return None
            self._output_spent[cell_index] = spent
        return super().process_message(msg, cell, cell_index)

    def execute(self, nb, resources):
        """Run ``nb`` in the sandboxed kernel (in ``resources["metadata"]["path"]``), with the
        output caps; no scoring."""
        self._output_spent: dict[int, int] = {}
        self._output_noted: set[int] = set()
        return super().preprocess(nb, resources)

    def graded_unit(self, resources) -> Unit:
        """The assignment's unit, as the student's variant where the unit has variants."""
        unit = load_unit(resources["nbgrader"]["assignment"])
        return nbkeys.notebook_unit(unit, resources["nbgrader"]["student"], self.variant_secret)

    def preprocess(self, nb, resources=None, km=None):
        if km is not None:
            raise CheckError("the sandboxed autograde starts its own kernel")
        unit = self.graded_unit(resources)
        folder = Path(resources["metadata"]["path"])
        nbkeys.overlay(unit, folder)
        nb, resources = self.execute(nb, resources)
        score_notebook(nb, unit, folder)
        return nb, resources


def autograde_preprocessors() -> list:
    """nbgrader's autograde preprocessors with ``SandboxedAutograde`` in place of ``Execute``."""
    from nbgrader.converters.autograde import Autograde

    default = list(Autograde.class_traits()["autograde_preprocessors"].default())
    if Execute not in default:
        raise CheckError("nbgrader's autograde preprocessors have no Execute step to replace")
    default[default.index(Execute)] = SandboxedAutograde
    return default
