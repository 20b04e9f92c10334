"""One conversation with a sandboxed runner: send a case, wait for its frame, then the next.

Deadlines are the parent's own and nothing the child sends moves them: each case must answer
within ``wall_s`` of being sent, and the whole child must be done by the submission's absolute
deadline. A case that ran out of time ends the conversation (the child is killed); with
``skip_after_timeout`` the remaining cases of the same group (policy) are then not sent at all.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from dataclasses import dataclass, field

from .protocol import Frame, FrameReader, ProtocolError

TIME_SIGNALS = (-24, -27)  # SIGXCPU, SIGPROF: a case stopped for CPU time


@dataclass
class Answer:
    """A case the runner answered: its frame and the wall time from send to answer."""

    frame: Frame
    wall_s: float


@dataclass
class Session:
    """The cases to send (index -> message), in order, and what came back."""

    messages: dict[int, bytes]
    groups: dict[int, str | None]
    reader: FrameReader
    wall_s: float
    deadline: float  # time.monotonic() by which the whole submission must be done
    timed_out_groups: set[str] = field(default_factory=set)
    answers: dict[int, Answer] = field(default_factory=dict)
    current: int | None = None  # the case in flight when the conversation ended
    broken: str | None = None  # why the runner was judged broken (protocol error)
    _order: list[int] = field(default_factory=list)
    _pending: bytes = b""
    sent_at: float = 0.0  # when the case in flight was sent

    def __post_init__(self) -> None:
        self._order = list(self.messages)

    def run(self, child: subprocess.Popen) -> int:
        """Talk to ``child`` until every case is answered; its exit code.

        Raises ``subprocess.TimeoutExpired`` when a deadline passes (``current`` is then the
        case in flight, or None when the submission's time ran out between cases).
        """
        try:
            pidfd = os.pidfd_open(child.pid)  # wakes the loop the moment the child exits
        except (AttributeError, OSError):
            pidfd = None  # an old kernel: poll every 50 ms instead
        stdin, stdout = child.stdin.fileno(), child.stdout.fileno()
        os.set_blocking(stdin, False)
        reading = True
        try:
            self._next(child)
            while True:
                left = self._time_left()
                if left <= 0:
                    raise subprocess.TimeoutExpired(child.args, self.wall_s)
                readers = ([] if pidfd is None else [pidfd]) + ([stdout] if reading else [])
                writers = [stdin] if self._pending else []
                step = left if pidfd is not None else min(left, 0.05)
                readable, writable, _ = select.select(readers, writers, [], step)
                if writable:
                    self._write_some(stdin)
                if stdout in readable:
                    data = os.read(stdout, 1 << 20)
                    reading = bool(data)
                    if data and self._heard(data, child):
                        return self._finish(child)
                exited = pidfd in readable if pidfd is not None else child.poll() is not None
                if exited and not (reading and stdout in readable):
                    return child.wait()
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _time_left(self) -> float:
        now = time.monotonic()
        limit = self.deadline
        if self.current is not None:
            limit = min(limit, self.sent_at + self.wall_s)
        return limit - now

    def _next(self, child: subprocess.Popen) -> None:
        """Send the next case that is still to run; close stdin when none is left."""
        while self._order:
            index = self._order.pop(0)
            if self.groups.get(index) in self.timed_out_groups:
                continue
            self.current = index
            self._pending = self.messages[index]
            self.sent_at = time.monotonic()
            return
        self.current = None
        child.stdin.close()

    def _write_some(self, stdin: int) -> None:
        try:
            sent = os.write(stdin, self._pending[:65536])
            self._pending = self._pending[sent:]
        except BlockingIOError:
            pass
        except OSError:  # the runner is gone; its exit wakes us next
            self._pending = b""

    def _heard(self, data: bytes, child: subprocess.Popen) -> bool:
        """Take in the runner's output; True when the conversation is over."""
        try:
            frames = self.reader.feed(data)
        except ProtocolError as exc:
            self.broken = str(exc)
            return True
        for frame in frames:
            if self.current is None or self._pending:  # an answer nobody asked for
                self.broken = "an answer before its case was sent"
                return True
            self.answers[self.current] = Answer(frame, time.monotonic() - self.sent_at)
            group = self.groups.get(self.current)
            if frame.code in TIME_SIGNALS and group is not None:
                self.timed_out_groups.add(group)
            self._next(child)
        return self.current is None

    def _finish(self, child: subprocess.Popen) -> int:
        """The runner's exit code once every case is answered (it exits at the end of its
        input; a runner that does not, or broke the protocol, is killed)."""
        if not self.broken:
            code = _exit_within(child, max(0.1, min(5.0, self.deadline - time.monotonic())))
            if code is not None:
                return code
        child.kill()
        return child.wait()


def _exit_within(child: subprocess.Popen, timeout: float) -> int | None:
    """The child's exit code if it ends within ``timeout`` seconds, else None. Woken by the
    child's pidfd the moment it exits: ``Popen.wait(timeout)`` sleeps in steps of up to 50 ms,
    which every submission would pay."""
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        try:
            return child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        return child.wait() if select.select([pidfd], [], [], timeout)[0] else None
    finally:
        os.close(pidfd)
