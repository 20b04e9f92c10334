"""The replay's checks of a run file that need no device rule: the requests against the trace,
and the reported token times against the rebuilt ones."""

from __future__ import annotations

from .problems import Collector, ProblemKind, close_ms, fmt_ms

BAD = ProblemKind.INVALID_SCHEDULE


def requests_match_trace(requests: list[dict], trace, found: Collector) -> bool:
    """The run lists the trace's requests in trace order, each with its id, arrivalMs,
    inputTokens and outputTokens (what the replay reads a request's reported status by)."""
    specs = trace.requests
    if len(requests) != len(specs):
        found.add(  # the run's own count is not quoted: it is the file's to choose
            BAD, "requests", f"the run does not list the trace's {len(specs)} requests"
        )
        return False
    for number, (req, spec) in enumerate(zip(requests, specs, strict=True), 1):
        if not (
            req.get("id") == spec.id
            and close_ms(req.get("arrivalMs"), spec.arrival_ms)
            and (req.get("inputTokens"), req.get("outputTokens"))
            == (spec.input_tokens, spec.output_tokens)
        ):
            found.add(
                BAD,
                "requests",
                f"request #{number} of the run is not request '{spec.id}' of the trace "
                "(id, arrivalMs, inputTokens and outputTokens must match, in trace order)",
            )
            return False
    return True


def check_token_times(requests: list[dict], replay, found: Collector) -> None:
    for req in requests:
        rebuilt, reported = replay.token_times[req["id"]], req["tokenTimesMs"]
        if len(reported) != len(rebuilt):
            found.add(
                BAD,
                "tokenTimesMs",
                f"'{req['id']}' gets {len(rebuilt)} tokens from the events, but its "
                f"tokenTimesMs lists a different number",
            )
            continue
        for j, (a, b) in enumerate(zip(reported, rebuilt, strict=False)):
            if not close_ms(a, b):
                found.add(
                    BAD,
                    "tokenTimesMs",
                    f"token {j + 1} of '{req['id']}' is reported at {fmt_ms(a)}, but the event "
                    f"that produced it ends at {fmt_ms(b)}",
                    b,
                )
                break
