"""Slow readers are real: a served stream's output buffer (unit 09's rules, ``servesim``) is
drained by its client's reads on the socket, so a client that stops reading pauses its stream,
reading again resumes it, and one that never reads again is cancelled as stalled (its
connection hung up). Each client is a raw socket with a small receive buffer; the test waits on
known points (the ``infralab:num_requests_paused`` gauge, the finished count, the socket's end),
never on a sleep."""

from __future__ import annotations

import json
import socket
import time

import pytest

from grader.serve.child import Served
from grader.units import load_unit
from grader.verify import verify_run
from grader.verify.runschema import validate_run_file

pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")
from test_serve_load import scrape

TOKENS = 400  # far more events than loopback's buffers and the 4-event output buffer hold
WAIT_S = 120  # the most a known point may take on a loaded machine


def device_file(tmp_path, deadline_ms: float):
    """Unit 09's device with a 256-byte output buffer (four 64-byte events, low mark 128)."""
    profile = json.loads(load_unit("unit09").lab_dir.joinpath("devices/streaming.json").read_text())
    profile["device"] |= {
        "streamBufferBytes": 256,
        "streamLowMarkBytes": 128,
        "streamPauseDeadlineMs": deadline_ms,
    }
    path = tmp_path / "device.json"
    path.write_text(json.dumps(profile))
    return ["--device-profile", str(path)]


def open_stream(url: str, prompt: str) -> socket.socket:
    """A streamed completion sent on a raw socket whose receive buffer is small; nothing read."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.settimeout(WAIT_S)
    sock.connect((host, int(port)))
    body = json.dumps({"model": "tiny", "prompt": prompt, "max_tokens": TOKENS, "stream": True})
    head = f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}"
    sock.sendall(f"{head}\r\nContent-Type: application/json\r\n\r\n{body}".encode())
    return sock


def read_to_end(sock: socket.socket) -> bytes:
    """Everything left on ``sock``, a few bytes at a time, until the server closes it."""
    seen = b""
    while chunk := sock.recv(64):
        seen += chunk
    return seen


def wait_for(url: str, name: str, value: float) -> None:
    ends = time.monotonic() + WAIT_S
    while scrape(url).get(name, 0) < value:
        assert time.monotonic() < ends, f"{name} never reached {value}"
        time.sleep(0.05)  # a poll of a state, not a guess at a speed


def the_run(served: Served):
    code, err, doc = served.end()
    assert code == 0, err
    (run,) = doc["runs"]
    assert validate_run_file(load_unit("unit09"), doc) is None
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    assert run["events"][-1]["kvPagesHeld"] == 0
    assert "KV pages in use at exit: 0" in "\n".join(served.lines)
    return run, {r["id"]: r for r in doc["trace"]["requests"]}


def test_a_reader_that_stops_pauses_its_stream_and_reading_resumes_it(tmp_path):
    served = Served(tmp_path, "unit09", "backpressure", *device_file(tmp_path, 600_000))
    try:
        sock = open_stream(served.url, "read me slowly")
        wait_for(served.url, "infralab:num_requests_paused", 1)
        reply = read_to_end(sock)
        sock.close()
    finally:
        run, trace = the_run(served)
    assert reply.rstrip().endswith(b"data: [DONE]")
    (record,) = run["requests"]
    assert record["status"] == "completed" and len(record["tokenTimesMs"]) == TOKENS
    assert record["pausedMs"] and all(end is not None for _, end in record["pausedMs"])
    assert record["bufferPeakBytes"] == 256 and record["ackMs"] is not None
    reads = trace[record["id"]]["readsMs"]
    assert len(reads) == TOKENS and reads == sorted(reads)
    start, end = record["pausedMs"][0]
    resumed_by = [r for r in reads if record["arrivalMs"] + r <= end]  # the log drained it
    assert sum(t <= start for t in record["tokenTimesMs"]) - len(resumed_by) <= 2
    print(f"pauses {record['pausedMs']}; {len(reads)} reads, the last at {reads[-1]:.1f} ms")


def test_a_reader_that_never_reads_again_is_cancelled_as_stalled(tmp_path):
    served = Served(tmp_path, "unit09", "backpressure", *device_file(tmp_path, 300))
    try:
        sock = open_stream(served.url, "never read")
        wait_for(served.url, 'vllm:request_success_total{finished_reason="abort"}', 1)
        reply = read_to_end(sock)  # the server hung up: the end comes without [DONE]
        sock.close()
    finally:
        run, _ = the_run(served)
    assert b"data: [DONE]" not in reply
    (record,) = run["requests"]
    assert record["status"] == "cancelled" and record["cancelReason"] == "stalled"
    *resumed, (start, end) = record["pausedMs"]  # the socket's buffers took the first events
    assert all(stop is not None for _, stop in resumed)
    assert end is None and record["statusMs"] >= start + 300 and record["ackMs"] is None
    print(f"pauses {record['pausedMs']}; stalled at {record['statusMs']:.1f} ms")
    assert len(record["tokenTimesMs"]) < TOKENS
