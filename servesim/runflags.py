"""The extended run's ``simulate.py`` flags: limits, offered load, tier and protocol files.

Only labs whose lab.json says ``"runFile": "extended"`` get them, so a plain lab's command
line is unchanged. ``add_flags`` declares them; ``resolve`` turns the parsed flags into a ``Setup``
(device, limits, arrival source) or raises ``UsageError`` with one line naming the flag or
field that is wrong.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .arrivals import ClosedLoop
from .device import DeviceProfile
from .tiers import TierError, check_budget, load_tier
from .trace import Trace
from .usage import UsageError, non_negative

if TYPE_CHECKING:  # imported where a flag uses them: a plain replay never loads them
    from .protocol import Protocol


@dataclass(frozen=True)
class Setup:
    """Everything an extended run needs besides the policy."""

    trace: Trace | None  # open-loop arrivals (None with a closed loop)
    closed: ClosedLoop | None
    device: DeviceProfile
    budget: int | None  # the B the engine enforces (policies with a budget param)
    queue_cap: int | None
    policy: str | None  # the tier's policy, when a tier file gave one
    tier: str | None
    quality_pass_rate: float | None = None  # the tier's
    protocol: Protocol | None = None
    seed: int = 0  # of the arrivals (and, with a protocol, of the quality draws)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--queue-cap", type=_positive_int, help="reject arrivals while this many wait unstarted"
    )
    parser.add_argument(
        "--load",
        help="open:RATE (Poisson, req/s) or closed:USERS:THINK_MS; sizes come from --trace",
    )
    parser.add_argument(
        "--requests", type=_positive_int, help="requests to send with --load (default: the trace's)"
    )
    parser.add_argument(
        "--seed", type=_int, help="seed of --load (default 0; with --protocol its replication's)"
    )
    parser.add_argument(
        "--protocol",
        help="protocol file: its workload (sizes, arrivals at its first load), requests per run "
        "and measurement window replace --trace, --load and --requests unless given",
    )
    parser.add_argument(
        "--replication",
        type=_positive_int,
        default=1,
        help="with --protocol: which replication to run (its seed), 1 = the first",
    )
    parser.add_argument(
        "--tier", help="tier file: its device, policy, budget and queue cap replace the defaults"
    )
    parser.add_argument(
        "--max-active",
        type=_positive_int,
        help="K: sequences holding KV at once (device maxActive)",
    )
    parser.add_argument(
        "--kv-pages", type=_positive_int, help="M: KV pages in the pool (device kvPages)"
    )
    for flag, what in CONTEXT_FLAGS.values():
        parser.add_argument(flag, type=non_negative, help=f"ms per {what} (device {_field(flag)})")
    for flag, (kind, what) in DEVICE_FLAGS.items():
        parser.add_argument(flag, type=kind, help=f"{what} (device {_field(flag)})")


# The context terms of a step's cost (rules.StepTerms): flag and what the coefficient prices.
CONTEXT_FLAGS = {
    "prefill_ms_per_context_token": ("--prefill-ms-per-context-token", "prefill attention pair"),
    "decode_ms_per_context_token": ("--decode-ms-per-context-token", "cached position decoded"),
}


# Further device fields a flag replaces: the step's cost terms, and the streaming output buffer
# (streaming.py; its size turns streaming on).
DEVICE_FLAGS = {
    "--prefill-ms-per-token": (non_negative, "ms per prompt token of a step"),
    "--decode-batch-ms": (non_negative, "ms of a step that decodes"),
    "--decode-ms-per-seq": (non_negative, "ms per sequence a step decodes"),
    "--stream-buffer-bytes": (_positive_int, "per-request output buffer, bytes"),
    "--stream-event-bytes": (_positive_int, "bytes one generated token takes in the buffer"),
    "--stream-low-mark-bytes": (_int, "level at or below which a paused stream resumes"),
    "--stream-pause-deadline-ms": (non_negative, "ms paused after which a stream is cancelled"),
}


def _field(flag: str) -> str:
    head, *rest = flag.lstrip("-").split("-")
    return head + "".join(part.title() for part in rest)


def _device_flags(args, device: DeviceProfile) -> DeviceProfile:
    """``--max-active`` / ``--kv-pages`` replace K and M of the device (tier or profile), the
    context flags its context terms, ``DEVICE_FLAGS`` their fields."""
    if getattr(args, "max_active", None) is not None:
        device = replace(device, max_active=args.max_active)
    if getattr(args, "kv_pages", None) is not None:
        device = replace(device, kv_pages=args.kv_pages)
    for name in CONTEXT_FLAGS:
        if getattr(args, name, None) is not None:
            device = replace(device, **{name: getattr(args, name)})
    fields = {
        flag.lstrip("-").replace("-", "_"): value
        for flag in DEVICE_FLAGS
        if (value := getattr(args, flag.lstrip("-").replace("-", "_"), None)) is not None
    }
    return replace(device, **fields) if fields else device


def read_protocol(args) -> Protocol | None:
    """The ``--protocol`` file, or None; a bad one is a ``UsageError`` naming the field."""
    if not getattr(args, "protocol", None):
        return None
    from .protocol import ProtocolError, load_protocol

    try:
        protocol = load_protocol(args.protocol)
    except ProtocolError as exc:
        raise UsageError(str(exc)) from None
    if args.replication > len(protocol.seeds):
        raise UsageError(
            f"--replication {args.replication}: protocol {protocol.name} has "
            f"{len(protocol.seeds)} replications"
        )
    return protocol


def resolve(
    args, trace: Trace, device: DeviceProfile, policy_names, uses_budget, protocol=None
) -> Setup:
    """The run's setup from the flags; ``uses_budget(name)`` says whether a policy takes B.

    With a ``protocol`` (``read_protocol``), ``trace`` holds the protocol's sizes and, unless
    ``--load`` says otherwise, the arrivals are the protocol's at its first load, with the seed
    of ``--replication``.
    """
    budget, queue_cap, policy, tier_name = getattr(args, "budget", None), args.queue_cap, None, None
    rate = None
    if args.tier:
        try:
            tier = load_tier(args.tier, tuple(policy_names))
        except TierError as exc:
            raise UsageError(str(exc)) from None
        device, policy, tier_name = tier.device, tier.policy, tier.name
        rate = tier.quality_pass_rate
        budget = tier.budget if tier.budget is not None else budget
        queue_cap = tier.queue_cap if args.queue_cap is None else args.queue_cap
        if args.overhead_ms is not None:
            device = replace(device, overhead_ms=args.overhead_ms)
    device = _device_flags(args, device)
    selected = [policy] if policy else [p for p in policy_names if args.policy in (p, "all")]
    engine_budget = budget if any(uses_budget(p) for p in selected) else None
    try:
        check_budget(engine_budget, device, "--budget")
    except TierError as exc:
        raise UsageError(str(exc).replace("field 'budget'", "B")) from None
    seed = args.seed if args.seed is not None else 0
    if protocol is not None and args.seed is None:
        seed = protocol.seeds[args.replication - 1]
    default_requests = protocol.requests_per_run if protocol else len(trace.requests)
    requests = args.requests or default_requests
    closed = None
    if args.load:
        from .load import ClosedLoad, LoadError, open_loop, parse_load

        try:
            load = parse_load(args.load)
        except LoadError as exc:
            raise UsageError(str(exc)) from None
        if isinstance(load, ClosedLoad):
            closed = ClosedLoop(
                load.users, load.think_ms, requests, trace, seed=seed, think=load.think
            )
            trace = None
        else:
            trace = open_loop(trace, load.rate_per_s, requests, seed)
    elif protocol is not None:
        from .protocol import ProtocolError

        try:
            protocol = protocol.narrowed(requests=requests) if args.requests else protocol
        except ProtocolError as exc:
            raise UsageError(str(exc)) from None
        trace, closed = protocol.workload(trace, protocol.loads[0], seed)
    elif args.requests:
        raise UsageError("--requests needs --load (a trace replays all its requests)")
    if closed is not None and len(selected) != 1:
        raise UsageError("a closed loop: choose one --policy (each run has its own arrivals)")
    return Setup(
        trace, closed, device, engine_budget, queue_cap, policy, tier_name, rate, protocol, seed
    )
