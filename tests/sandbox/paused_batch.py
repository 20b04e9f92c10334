"""``infralab grade`` as a TA runs it, with the batch paused at a known point, so that a test
interrupts it there instead of racing the grader's speed.

    python paused_batch.py AFTER MARKER GRADE-ARGS...

Once ``AFTER`` submissions are graded, the batch's parent creates the file ``MARKER`` and waits
(``WAIT_S`` at most) before it starts another submission; the workers already running go on. A
SIGINT sent once ``MARKER`` exists interrupts the batch with ``AFTER`` reports finished, plus at
most one per other worker that was running then.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from grader import cli
from grader.grading import cohort

WAIT_S = 300  # only a bound for a test that never interrupts; the interrupt ends the wait


def main(argv: list[str]) -> int:
    after, marker, grade_args = int(argv[0]), Path(argv[1]), argv[2:]
    # A terminal's foreground job: Ctrl-C interrupts it, even where whoever started this
    # process ignored or blocked SIGINT (both survive exec).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    graded = []

    def pause_at_the_known_point(name: str) -> None:
        graded.append(name)
        if len(graded) == after:
            marker.touch()
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                time.sleep(0.05)

    batch = cohort.grade_batch

    def paused_batch(*args, **kwargs):
        return batch(*args, on_done=pause_at_the_known_point, **kwargs)

    cohort.grade_batch = paused_batch  # cohort.run_cli looks it up when the command runs
    return cli.main(["grade", *grade_args])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
