"""Start ``infralab serve`` in a child process on an ephemeral port and end it cleanly (the
tests and ``benchmarks/serve_guidellm.py`` drive the server through it).

``Served`` waits on a known point, the ready line the command prints once its port listens
(``grader.cli.serve.READY``), never on a sleep; ``end()`` sends SIGINT (the session accepts
nothing more, finishes what it has, writes the run file) and waits for the exit.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ..cli.serve import READY

START_S = 120  # importing torch and warming the model up on a loaded machine
END_S = 120


class Served:
    def __init__(self, folder: Path, unit: str, policy: str, *flags: str, submission=None):
        """``submission``: a SUBMISSION_DIR served instead of the reference."""
        self.run_file = Path(folder) / "served.json"
        served = "--reference" if submission is None else str(submission)
        argv = [sys.executable, "-m", "grader.cli", "serve", "--unit", unit, served]
        argv += ["--policy", policy, "--port", "0", "--run-file", str(self.run_file), *flags]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        self.lines: list[str] = []
        ready = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(ready,), daemon=True)
        self._reader.start()
        if not ready.wait(START_S) or not any(READY in line for line in self.lines):
            self.proc.kill()
            raise AssertionError(f"no ready line: {self.lines} {self.proc.stderr.read()}")
        port = re.search(r"127\.0\.0\.1:(\d+)", self.lines[0]).group(1)
        self.url = f"http://127.0.0.1:{port}"

    def _read(self, ready: threading.Event) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if READY in line:
                ready.set()
        ready.set()  # the output ended: the command exited (the caller sees why)

    def end(self, *, signalled: bool = True) -> tuple[int, str, dict | None]:
        """(exit code, stderr, the run file or None); SIGINT first unless it ends by itself."""
        if signalled and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(END_S)
        self._reader.join(END_S)
        err = self.proc.stderr.read()
        doc = json.loads(self.run_file.read_text()) if self.run_file.exists() else None
        return code, err, doc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
