"""Traces whose tail cause is known by construction (exercise 31.13), deterministic by seed.

Every case runs on one device whose memory stays free (a large page pool): what limits it is
K, the cap on sequences holding KV at once, and the step time. With ``TAIL_DEVICE`` a decode
step of 16 sequences takes 10 + 16 x 0.2 = 13.2 ms, so 16 slots serve a 64-token output in about
0.85 s: about 19 requests per second. The kinds:

- ``none``: short prompts at 4 requests/s, a fifth of capacity.
- ``overload``: the same requests at 45 requests/s, more than twice what the slots serve.
- ``prefill-blocking``: the light load plus one 6,000-token prompt a second; its prefill takes
  300 ms as one step (the budget does not chunk it), stalling every decoding stream. Capacity
  is sufficient: the long prompts use a third of the device's time.
- ``slow-clients``: the light load on a streaming device; a quarter of the requests read at
  1,500 bytes/s while their stream produces about 5,000 (64 bytes an event, a token every
  11-13 ms), so their 2 KiB buffer fills within a second. Needs the streaming engine.
- ``mixed-overload-blocking``: short requests at 30/s and three long prompts a second: the
  slots and the long prefills both saturate the device, and each long prefill stalls the
  streams decoding beside it. ``mixed-blocking-slow``: the light load with 1.5 long prompts a
  second on the streaming device (more long prompts than ``prefill-blocking``: the slow
  readers' longer outputs add gaps, and the stalls must stay above 1 % of them to reach the
  p99; at 2 a second the paused streams, which keep their slots, overload the slots too).

``python labs/unit09/tailcases.py [--seed N] [--write DIR]`` prints each case's requests, span
and causes, and with ``--write`` writes each as JSON (trace, device, budget, causes).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, fields
from pathlib import Path

TAIL_DEVICE = {
    "prefillMsPerToken": 0.05,
    "decodeBatchMs": 10.0,
    "decodeMsPerSeq": 0.2,
    "overheadMs": 0.25,
    "maxActive": 16,
    "kvPages": 16384,
    "pageTokens": 16,
}
STREAM_DEVICE = {
    "streamBufferBytes": 2048,
    "streamEventBytes": 64,
    "streamLowMarkBytes": 1024,
    "streamPauseDeadlineMs": 5000.0,
}
BUDGET = 8192  # tokens a step: a 6,000-token prompt goes in one step (no chunking)
LONG_PROMPT = 6000
# requests per second: (short requests, long prompts) of each kind
RATES = {
    "none": (4.0, 0.0),
    "overload": (45.0, 0.0),
    "prefill-blocking": (4.0, 1.0),
    "slow-clients": (4.0, 0.0),
    "mixed-overload-blocking": (30.0, 3.0),
    "mixed-blocking-slow": (4.0, 1.5),
}
FAST_READ, SLOW_READ, SLOW_SHARE = 1_000_000.0, 1500.0, 0.25
REQUESTS = 120

KINDS = {
    "none": frozenset({"NONE"}),
    "overload": frozenset({"OVERLOAD"}),
    "prefill-blocking": frozenset({"PREFILL_BLOCKING"}),
    "slow-clients": frozenset({"SLOW_CLIENTS"}),
    "mixed-overload-blocking": frozenset({"OVERLOAD", "PREFILL_BLOCKING"}),
    "mixed-blocking-slow": frozenset({"PREFILL_BLOCKING", "SLOW_CLIENTS"}),
}


@dataclass(frozen=True)
class TailCase:
    """One constructed case: its trace and device, the policy budget, and its causes (names of
    ``Cause`` members of unit 09's measure.py)."""

    kind: str
    seed: int
    causes: frozenset[str]
    trace: dict
    device: dict
    budget: int = BUDGET

    @property
    def streaming(self) -> bool:
        return "streamBufferBytes" in self.device

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "seed": self.seed,
            "causes": sorted(self.causes),
            "budget": self.budget,
            "device": self.device,
            "trace": self.trace,
        }


def engine_streams() -> bool:
    """Whether this engine knows the streaming device settings (the streaming rules)."""
    from servesim import DeviceProfile

    return "stream_buffer_bytes" in {f.name for f in fields(DeviceProfile)}


def _short_requests(rng: random.Random, rate: float, count: int, prefix: str) -> list[dict]:
    """``count`` Poisson arrivals at ``rate``/s: prompts of 50-300 tokens, 32-96 out."""
    out, clock = [], 0.0
    for i in range(count):
        clock += rng.expovariate(rate) * 1000
        out.append(
            {
                "id": f"{prefix}{i}",
                "arrivalMs": round(clock, 3),
                "inputTokens": rng.randint(50, 300),
                "outputTokens": rng.randint(32, 96),
            }
        )
    return out


def _long_prompts(rng: random.Random, rate: float, span_ms: float) -> list[dict]:
    """Long prompts at ``rate``/s (evenly spaced, jittered) over ``span_ms``, each with a
    short answer."""
    out, clock, i = [], rng.uniform(0.2, 0.8) * 1000 / rate, 0
    while clock < span_ms:
        out.append(
            {
                "id": f"long{i}",
                "arrivalMs": round(clock, 3),
                "inputTokens": LONG_PROMPT + rng.randint(0, 400),
                "outputTokens": rng.randint(4, 8),
            }
        )
        clock += 1000 / rate * rng.uniform(0.8, 1.2)
        i += 1
    return out


def _slow_readers(rng: random.Random, requests: list[dict]) -> None:
    """Give every request a read rate: ``SLOW_SHARE`` of them (chosen by the seed) read slowly
    and get 96-160 output tokens, enough to fill their buffer."""
    slow = set(rng.sample(range(len(requests)), round(SLOW_SHARE * len(requests))))
    for i, request in enumerate(requests):
        request["readBytesPerS"] = SLOW_READ if i in slow else FAST_READ
        if i in slow:
            request["outputTokens"] = rng.randint(96, 160)


def make_case(kind: str, seed: int) -> TailCase:
    """The case ``kind`` (a key of ``KINDS``) drawn with ``seed``; the same seed, the same case."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    rng = random.Random(f"{kind}/{seed}")
    short_rate, long_rate = RATES[kind]
    requests = _short_requests(rng, short_rate, REQUESTS, "r")
    if long_rate:
        requests += _long_prompts(rng, long_rate, requests[-1]["arrivalMs"])
        requests.sort(key=lambda r: r["arrivalMs"])
    device = dict(TAIL_DEVICE)
    if "SLOW_CLIENTS" in KINDS[kind]:
        _slow_readers(rng, requests)
        device |= STREAM_DEVICE
    trace = {"name": f"tail-{kind}-{seed}", "description": _describe(kind), "requests": requests}
    return TailCase(kind, seed, KINDS[kind], trace, device)


def baseline_case(seed: int) -> TailCase:
    """The light-load run a diagnosis compares with: ``none`` drawn with another seed."""
    case = make_case("none", seed + 10_000)
    return TailCase("baseline", seed, frozenset({"NONE"}), case.trace, case.device)


def _describe(kind: str) -> str:
    return f"unit 09 tail case '{kind}' (labs/unit09/tailcases.py): causes " + ", ".join(
        sorted(KINDS[kind])
    )


def run_case(case: TailCase, policy) -> dict:
    """An extended run entry of ``policy(view, budget)`` on the case (reference or student)."""
    from servesim import DeviceProfile, parse_trace, simulate
    from servesim.runfile import build_run

    device = DeviceProfile.from_json(case.device, source=f"tail case {case.kind}")
    trace = parse_trace(case.trace, source=case.trace["name"])
    timeline = simulate(trace, lambda view: policy(view, case.budget), device, budget=case.budget)
    name = getattr(policy, "__name__", "policy")
    return build_run(name, {"budget": case.budget}, device, timeline, None, extended=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", type=Path, help="write one JSON file per case here")
    args = parser.parse_args(argv)
    cases = [make_case(kind, args.seed) for kind in KINDS] + [baseline_case(args.seed)]
    for case in cases:
        reqs = case.trace["requests"]
        span_s = reqs[-1]["arrivalMs"] / 1000
        print(f"{case.kind:<26}{len(reqs):>5} requests over {span_s:6.1f} s  {sorted(case.causes)}")
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            text = json.dumps(case.to_json(), indent=1) + "\n"
            (args.write / f"tail-{case.kind}.json").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
