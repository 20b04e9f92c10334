"""A student's policy served from a child under the grader's sandbox (``infralab serve
SUBMISSION_DIR``): the trusted server owns the HTTP server, the model, the pages and the
engine; the child only answers which batch.

The child (``policy_runner.py``, started by ``grader.sandbox.launch`` with the unit's lab
folder and the submission's editable files) runs an engine of its own that follows the
server's from the journal of its source (``servesim.livefeed``). Each time the server's engine
calls the policy (or its admission function), ``PolicyChild.ask`` sends the journal entries
written since the last call and waits for the child's answer, at most ``ANSWER_S`` seconds and
``MAX_LINE`` bytes. The answer becomes a ``Batch``, a ``Wait`` or a bool, which the server's
engine then checks like any policy's. Whatever else comes back (an exception in the student's
code, garbage, silence, an exit, a flood of output: prints go to /dev/null in the child) is one
``PolicyError`` whose words are the server's own, naming only the function and what kind of
thing went wrong; the session then stops cleanly (``Session``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from servesim import Batch, PrefillChunk, Wait
from servesim.engine import PolicyError

from ..sandbox import Limits, SandboxError
from ..sandbox.launch import launch

RUNNER_NAME = "_infralab_serve_runner.py"
ANSWER_S = 10.0  # the most one answer may take (a policy that loops is stopped here)
START_S = 60.0  # the child's start (bubblewrap, Python, servesim, the student's import)
MAX_LINE = 1 << 20
LIMITS = Limits(cpu_s=24 * 3600, submission_s=24 * 3600, wall_s=24 * 3600)
GARBAGE = {  # the runner's codes for an answer it cannot send, in the server's own words
    "type": "something that is neither a Batch nor a Wait",
    "ids": "a Batch whose decode, preempt or swap lists are not lists of request ids",
    "chunks": "a Batch whose prefill is not a list of PrefillChunks",
    "wait": "a Wait whose time is not a number",
    "admit": "an admission answer that is not True or False",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class PolicyChild:
    """The sandboxed child of one session; ``functions(spec)`` are what the engine calls."""

    def __init__(self, lab_dir: Path, files: dict[str, bytes], setup: dict, journal: list):
        self.setup, self.journal = setup, journal
        self._child = None
        self._started = threading.Event()
        self._done = threading.Event()
        self._buffer = b""
        self.failure: str | None = None
        runner = Path(__file__).with_name("policy_runner.py").read_bytes()
        self._thread = threading.Thread(
            target=self._launch, args=(lab_dir, files, runner), name="policy-child", daemon=True
        )
        self._thread.start()
        if not self._started.wait(START_S) or self._child is None:
            raise SandboxError(self.failure or "the policy's sandboxed child did not start")
        self._write([json.dumps({"setup": setup})])

    # -- the child's lifetime (``launch`` cleans up when ``run`` returns) ----------------------

    def _launch(self, lab_dir, files, runner) -> None:
        try:
            launch(
                lab_dir,
                files,
                extra={RUNNER_NAME: runner},
                build=lambda case, out: [RUNNER_NAME],
                limits=LIMITS,
                session=self,
            )
        except SandboxError as exc:
            self.failure = str(exc)
        finally:
            self._started.set()

    def run(self, child) -> int:
        """``launch``'s session: hold the child until the server is done with it."""
        self._child = child
        self._started.set()
        self._done.wait()
        return child.poll() or 0

    def close(self) -> None:
        """The session is over: the child is killed and its folder removed."""
        self._done.set()
        self._thread.join(30)

    # -- calls -------------------------------------------------------------------------------

    def ask(self, who: str) -> list:
        """Send the journal so far, then the child's next answer (``PolicyError`` if none)."""
        pending = self.journal[:]
        del self.journal[:]  # sent: the server keeps none of a long session's journal
        try:
            self._write([json.dumps(entry) for entry in pending])
        except OSError:
            raise PolicyError(f"{who}: the policy's sandboxed child is gone") from None
        answer = self._line(who)
        if answer[0] == "error":
            kind = answer[1] if isinstance(answer[1], str) and _NAME.fullmatch(answer[1]) else "?"
            raise PolicyError(f"{who} raised {kind} in its sandboxed child")
        if answer[0] == "garbage":
            said = GARBAGE.get(answer[1] if len(answer) > 1 else None, GARBAGE["type"])
            raise PolicyError(f"{who} returned {said}")
        return answer

    def _write(self, lines: list[str]) -> None:
        if lines:
            os.write(self._child.stdin.fileno(), "".join(f"{x}\n" for x in lines).encode())

    def _line(self, who: str) -> list:
        fd, ends = self._child.stdout.fileno(), time.monotonic() + ANSWER_S
        while b"\n" not in self._buffer:
            left = ends - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise PolicyError(f"{who} did not answer within {ANSWER_S:g} s")
            data = os.read(fd, 65536)
            if not data:
                raise PolicyError(f"{who}: the policy's sandboxed child exited")
            self._buffer += data
            if len(self._buffer) > MAX_LINE:
                raise PolicyError(f"{who} sent an answer longer than {MAX_LINE} bytes")
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, list) or not answer or not isinstance(answer[0], str):
            raise PolicyError(f"{who} sent something that is not an answer")
        return answer

    # -- the functions the engine calls ----------------------------------------------------------

    def module(self, policy: str, admit: str | None) -> SimpleNamespace:
        """A stand-in for ``policies.py``: ``policy`` and ``admit`` ask the child."""

        def remote_policy(view, **params):
            return _batch(self.ask(f"{policy}()"), f"{policy}()")

        def remote_admit(seq, view):
            answer = self.ask(f"{admit}()")
            if answer[0] != "admit":
                raise PolicyError(f"{admit}() sent something that is not an admission answer")
            return answer[1]

        names = {policy: remote_policy} | ({admit: remote_admit} if admit else {})
        return SimpleNamespace(**names)


def _batch(answer: list, who: str) -> Batch | Wait:
    """The child's answer as what the engine checks (its own types, never the child's)."""
    with contextlib.suppress(TypeError, ValueError, KeyError, IndexError, AttributeError):
        if answer[0] == "wait":
            until = answer[1]
            if isinstance(until, (int, float)) and not isinstance(until, bool):
                return Wait(float(until))
        if answer[0] == "batch" and isinstance(answer[1], dict):
            doc = answer[1]
            ids = {
                k: [str(i) for i in doc[k]] for k in ("decode", "preempt", "swap_out", "swap_in")
            }
            chunks = [PrefillChunk(str(i), int(t), int(c)) for i, t, c in doc["prefill"]]
            return Batch(prefill=chunks, **ids)
    raise PolicyError(f"{who} sent something that is not a batch")
