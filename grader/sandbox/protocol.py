"""The parent's half of the runner protocol (``case_runner.py``): the messages it sends and the
frames it reads back, with every length and number bounded before anything is kept.

A frame the runner sends after each case::

    done <exit code> <run state> <stdout bytes> <stderr bytes> <run bytes>
         <stdout size> <stderr size>\\n   (one line)

followed by exactly that many bytes of stdout tail, stderr tail and run file. Anything else
(a longer header, a length above its cap, an unknown state) raises ``ProtocolError``: the
parent then treats the child as broken and stops it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

HEADER_MAX = 200
RUN_STATES = {
    "ok": None,
    "none": None,
    "not-a-plain-file": "not a regular file with one link",
    "too-large": "larger than the cap for this trace",
}


class ProtocolError(Exception):
    """The runner sent something the protocol does not allow."""


@dataclass(frozen=True)
class Frame:
    """One case's results as the runner reported them (sizes already checked)."""

    code: int
    run_state: str
    stdout: bytes
    stderr: bytes
    run: bytes
    stdout_size: int
    stderr_size: int

    @property
    def output(self) -> bytes | None:
        return self.run if self.run_state == "ok" else None

    @property
    def output_error(self) -> str | None:
        return RUN_STATES[self.run_state]


SIMULATE = "simulate.py"


def case_message(name: str, trace_path: Path, argv: list[str], script: str = SIMULATE) -> bytes:
    """``case <length> <name>\\n`` and the JSON body (flags, trace, script) for one case."""
    body = {"argv": list(argv), "trace": Path(trace_path).read_text()}
    if script != SIMULATE:  # a given script of the lab folder, run with --input
        body["script"] = script
    body = json.dumps(body).encode()
    return b"case %d %s\n" % (len(body), name.encode()) + body


class FrameReader:
    """Incremental parser of the runner's frames; ``feed`` returns the frames completed."""

    def __init__(self, run_cap: int, tail_cap: int):
        self.run_cap = run_cap
        self.tail_cap = tail_cap
        self._buffer = b""
        self._header: tuple | None = None

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames = []
        while True:
            if self._header is None:
                end = self._buffer.find(b"\n", 0, HEADER_MAX + 1)
                if end < 0:
                    if len(self._buffer) > HEADER_MAX:
                        raise ProtocolError("a header line is too long")
                    return frames
                self._header = self._parse(self._buffer[:end])
                self._buffer = self._buffer[end + 1 :]
            code, state, lengths, sizes = self._header
            if len(self._buffer) < sum(lengths):
                return frames
            out_len, err_len, _ = lengths
            body, self._buffer = self._buffer[: sum(lengths)], self._buffer[sum(lengths) :]
            frames.append(
                Frame(
                    code=code,
                    run_state=state,
                    stdout=body[:out_len],
                    stderr=body[out_len : out_len + err_len],
                    run=body[out_len + err_len :],
                    stdout_size=sizes[0],
                    stderr_size=sizes[1],
                )
            )
            self._header = None

    def _parse(self, line: bytes) -> tuple:
        parts = line.decode("ascii", "replace").split()
        if len(parts) != 8 or parts[0] != "done" or parts[2] not in RUN_STATES:
            raise ProtocolError("not a done line")
        try:
            numbers = [int(p) for p in (parts[1], *parts[3:])]
        except ValueError:
            raise ProtocolError("a field is not a number") from None
        code, out_len, err_len, run_len, out_size, err_size = numbers
        caps = (self.tail_cap, self.tail_cap, self.run_cap)
        lengths = (out_len, err_len, run_len)
        if not -64 < code < 256 or any(not 0 <= n <= c for n, c in zip(lengths, caps, strict=True)):
            raise ProtocolError("a number is out of range")
        if not (0 <= out_size < 1 << 50 and 0 <= err_size < 1 << 50):
            raise ProtocolError("a size is out of range")
        if parts[2] != "ok" and run_len:
            raise ProtocolError("a rejected run file came with data")
        return code, parts[2], lengths, (out_size, err_size)
