"""What one ``run_gpu.py`` invocation runs: the device profile, the trace and the policies.

The profile is the virtual device after every flag: ``--device-profile``; in unit 08 the tier,
K (``--max-active``), M (``--kv-pages``), the context costs, ``--load``/``--protocol`` and the
queue cap, exactly as ``simulate.py`` resolves them (``servesim.runflags``); ``--page-tokens``;
in unit 07 the runner's own ``--kv-pages``. The real KV cache is built from that profile
(``real_device``): its page size, its page count when it has a pool (M), and its host pool when
it swaps; only a profile without a pool leaves the page count to a memory budget. So the pages
the virtual schedule counts are the pages the real cache holds.

Each policy becomes a ``PolicyRun`` with what the engine enforces for it (``budget`` when the
policy takes one, the queue cap, the ``admit`` hook of the goodput challenge, a closed loop);
``--swap-long N`` (devices with ``hostPages``) wraps it in ``servesim.swapping.swap_long``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from servesim import rules
from servesim.cliargs import device_from_args
from servesim.device import DeviceProfile
from servesim.policycall import admit_hook, selected_policies
from servesim.swapping import swap_long
from servesim.trace import Trace, read_trace_file, resolve_trace
from servesim.usage import UsageError

from . import calibrate
from .backend import RealDevice
from .runner import PolicyRun

# Without --trace, --calibrate compares live runs with the calibrated simulation on the lab's
# public traces of at most this many requests (the lesson's worked examples): on CPU a trace of
# a hundred requests takes a minute per policy.
COMPARE_MAX_REQUESTS = 16


@dataclass(frozen=True)
class RunSetup:
    profile: DeviceProfile
    trace: Trace | None  # the run's arrivals (None: a closed loop makes them as it goes)
    traces: tuple[Trace, ...]  # what --calibrate compares on: --trace, or the small public ones
    policies: tuple[PolicyRun, ...]


def resolve(lab, args, policies_module) -> RunSetup:
    """The run the flags ask for; a ``UsageError`` (one line) when a flag cannot be used."""
    for flag, value in (("--page-tokens", args.page_tokens), ("--kv-pages", args.kv_pages)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be >= 1, got {value}")
    protocol = None
    if lab.extended_runs:
        from servesim import runflags

        protocol = runflags.read_protocol(args)
    names = [args.trace or protocol.sizes] if args.trace or protocol else list(lab.public_traces)
    traces = tuple(read_trace_file(resolve_trace(name, lab.traces_dir)) for name in names)
    if not (args.trace or protocol):  # --calibrate's comparison: the small lesson traces
        traces = tuple(t for t in traces if len(t.requests) <= COMPARE_MAX_REQUESTS)
    device, trace, engine = resolve_device(lab, args, traces[0], protocol)
    if not lab.extended_runs:
        _every_request_fits(device, traces)
    if args.swap_long is not None and not device.swaps:
        raise UsageError("--swap-long needs a device with a host pool (hostPages > 0)")
    runs = policy_runs(lab, policies_module, args, engine, args.swap_long)
    return RunSetup(device, trace, traces, tuple(runs))


def resolve_device(lab, args, trace: Trace, protocol=None):
    """``(profile, trace, engine)`` after every flag: the profile (``--device-profile``; in a
    lab with extended runs the tier, K, M, budget and queue cap by ``servesim.runflags``, which
    may also set ``args.policy`` and replace ``trace``; else the runner's own ``--kv-pages``;
    ``--page-tokens``) and the engine's limits (``budget``, ``queue_cap``, ``closed``)."""
    device = device_from_args(lab, args)
    engine = {"budget": None, "queue_cap": None, "closed": None}
    if lab.extended_runs:
        from servesim import runflags

        uses_budget = lambda name: "budget" in lab.policy(name).params  # noqa: E731
        setup = runflags.resolve(
            args, trace, device, [p.name for p in lab.policies], uses_budget, protocol
        )
        device, trace = setup.device, setup.trace
        engine = {"budget": setup.budget, "queue_cap": setup.queue_cap, "closed": setup.closed}
        if setup.policy:
            args.policy = setup.policy
    elif args.kv_pages is not None:
        device = replace(device, kv_pages=args.kv_pages)
    if args.page_tokens is not None:
        device = replace(device, page_tokens=args.page_tokens)
    return device, trace, engine


def _every_request_fits(device: DeviceProfile, traces) -> None:
    """Unit 07's run files have no rejected requests: a pool that cannot hold one request
    alone is a usage error here, not a rejection at arrival."""
    for trace in traces:
        for r in trace.requests:
            if rules.never_fits(device, r.input_tokens, r.output_tokens):
                raise UsageError(
                    f"--kv-pages {device.kv_pages}: request '{r.id}' alone needs "
                    f"{device.pages_for(r.input_tokens + r.output_tokens)} pages of "
                    f"{device.page_tokens} tokens"
                )


def policy_runs(lab, policies_module, args, engine: dict, swap_min: int | None = None):
    """A ``PolicyRun`` for each selected policy, in the lab's order.

    In a lab with extended run files (unit 08) the engine also enforces ``engine``'s budget
    (for the policies that take one), queue cap, closed loop and the policy's admission hook,
    and the run file records the budget and the queue cap.
    """
    budget = engine.get("budget")
    overrides = {} if budget is None else {"budget": budget}
    runs = []
    for spec, params, policy in selected_policies(
        lab, policies_module, args.policy, args, overrides
    ):
        options, run_options = {}, {}
        if lab.extended_runs:
            limits = {"budget": params.get("budget"), "queueCap": engine.get("queue_cap")}
            options = {
                "budget": limits["budget"],
                "queue_cap": limits["queueCap"],
                "admit": admit_hook(spec, policies_module, lab),
                "closed": engine.get("closed"),
            }
            run_options = {"extended": True, "limits": limits}
        chosen = policy if swap_min is None else swap_long(policy, swap_min)
        runs.append(PolicyRun(spec.name, params, chosen, options, run_options))
    return runs


def real_device(args, setup: RunSetup, *, calibrating: bool) -> RealDevice:
    """The real device for ``setup``: the profile's pages and page size (see the module)."""
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be >= 1, got {args.threads}")
    if args.threads or device == "cpu":
        torch.set_num_threads(args.threads or 1)
    profile = setup.profile
    kv_pages = profile.kv_pages
    if calibrating:  # the grid's largest shape must fit; without M, every lesson request too
        grid = calibrate.GRIDS[args.grid or device].pages_needed(profile.page_tokens)
        if kv_pages is None:
            kv_pages = sum(
                profile.pages_for(r.input_tokens + r.output_tokens)
                for trace in setup.traces
                for r in trace.requests
            )
        kv_pages = max(grid, kv_pages)
    return RealDevice(
        args.model,
        device=device,
        dtype=args.dtype,
        page_tokens=profile.page_tokens,
        kv_pages=kv_pages,
        host_pages=profile.host_pages,
        attention=args.attention,
    )
