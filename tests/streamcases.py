"""Shared cases of the streaming tests (unit 09, exercise 31.10): the chapter's example device,
traces of streamed requests, a run with its run-file entry, and the replay's named reasons."""

from __future__ import annotations

from servesim import DeviceProfile, parse_trace, simulate
from servesim.runfile import build_run
from stream_policies import backpressure

from grader.verify import replay_run
from grader.verify.problems import ProblemKind

KIB = 1024
STEP_MS = 31.25  # every step of EXAMPLE: 0.25 ms overhead + 31 ms (one prompt token, or a decode)
# The chapter's example 31.10: 384-byte events every 31.25 ms are 12 KiB/s into a 64 KiB
# buffer; the client reads 4 KiB/s; the stream resumes once the buffer is down to 32 KiB.
EXAMPLE = DeviceProfile(
    prefill_ms_per_token=31.0,
    decode_batch_ms=31.0,
    overhead_ms=0.25,
    stream_buffer_bytes=64 * KIB,
    stream_event_bytes=384,
    stream_low_mark_bytes=32 * KIB,
)
READ = 4 * KIB


def stream_trace(*rows):
    """Requests S0, S1, ... from ``(arrivalMs, outputTokens, readBytesPerS or None[, cancelMs])``
    rows, each with a one-token prompt."""
    reqs = []
    for i, (arrival, out, rate, *cancel) in enumerate(rows):
        req = {"id": f"S{i}", "arrivalMs": arrival, "inputTokens": 1, "outputTokens": out}
        if rate is not None:
            req["readBytesPerS"] = rate
        if cancel:
            req["cancelMs"] = cancel[0]
        reqs.append(req)
    return parse_trace({"name": "streams", "requests": reqs})


def counted(policy):
    calls = []

    def wrapped(view):
        calls.append(view.now_ms)
        return policy(view)

    return wrapped, calls


def run_of(trace, device, policy=backpressure):
    timeline = simulate(trace, policy, device)
    return timeline, build_run("p", {}, device, timeline, None, extended=True)


def reasons(run, trace, device) -> dict[str, str]:
    problems, _ = replay_run(run, trace, device.to_json())
    return {p.statistic: p.message for p in problems if p.kind is ProblemKind.INVALID_SCHEDULE}


def entry(run, rid="S0") -> dict:
    return next(r for r in run["requests"] if r["id"] == rid)
