"""The replay's checks of a run file that need no device rule: the requests against the trace,
how an event is described in messages, and the reported token times against the rebuilt ones."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(slots=True)
class Where:
    """How messages name an event (``event #k at t ms (what it holds)``), written out only when a
    message uses it: most events of a run raise none."""

    k: int
    event: dict

    def __str__(self) -> str:
        ev = self.event
        what = describe_batch(ev.get("decode", []), ev.get("prefill", []), ev.get("preempt"))
        return f"event #{self.k} at {fmt_ms(ev['startMs'])} ({what})"


SHOWN_MEMBERS = 6  # members of one kind a description lists before "and N more"
SHOWN_ID_CHARS = 40  # characters of an id a message quotes


def short_id(rid) -> str:
    """An id as messages quote it: at most ``SHOWN_ID_CHARS`` characters."""
    text = str(rid)
    return text if len(text) <= SHOWN_ID_CHARS else text[: SHOWN_ID_CHARS - 1] + "…"


def _listed(ids: list) -> str:
    shown = ", ".join(short_id(i) for i in ids[:SHOWN_MEMBERS])
    return shown + (f", and {len(ids) - SHOWN_MEMBERS} more" if len(ids) > SHOWN_MEMBERS else "")


def describe_batch(decode: list[str], prefill: list[dict], preempt=None) -> str:
    """``decode [A, S]``, ``prefill L tokens 0–2``, ``preempt [B]``, joined by ``+``.

    Bounded whatever the batch holds: a few members of each kind, then how many more.
    """
    parts = [f"preempt [{_listed(preempt)}]"] if preempt else []
    if decode:
        parts.append(f"decode [{_listed(decode)}]")
    for chunk in prefill[:SHOWN_MEMBERS]:
        start = chunk["fromToken"]
        parts.append(f"prefill {short_id(chunk['id'])} tokens {start}–{start + chunk['tokens']}")
    if len(prefill) > SHOWN_MEMBERS:
        parts.append(f"{len(prefill) - SHOWN_MEMBERS} more chunks")
    return " + ".join(parts) or "empty submission"


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
