"""What one ``infralab serve`` session serves with: the device profile, the policy, the real
device and the tokenizer, resolved from the same flags as the lab's ``run_gpu.py``.

The profile is ``run_gpu.py``'s (``--device-profile``, ``--overhead-ms``, ``--page-tokens``,
``--kv-pages``, the policy's parameters such as ``--chunk``), and the real cache is built
from it (``realdevice.runsetup.real_device``). A profile without a page pool (unit 07) gets
the real cache's page count as its ``kvPages``: a served request is refused (HTTP 400) when it
could never fit in the pool, by the engine's own rule (``rules.never_fits``), instead of
overflowing the real cache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from servesim.usage import UsageError


@dataclass(frozen=True)
class ServeSetup:
    profile: object  # servesim.DeviceProfile
    spec: object  # realdevice.runner.PolicyRun
    real: object  # realdevice.backend.RealDevice
    tokenizer: object


def resolve(unit, served, solution_policies, run_argv: list[str]) -> ServeSetup:
    """The session's setup for ``served`` (``--policy``, ``--reference``); ``run_argv``: the
    flags for ``run_gpu.py``'s parser, where a bare word is a SUBMISSION_DIR.
    ``UsageError`` (one line) for anything that cannot be served."""
    from realdevice import runsetup
    from realdevice.cli import build_run_parser
    from servesim.labconfig import load_lab
    from servesim.trace import Trace

    from .tokenizer import TokenizerError, for_model

    lab = load_lab(unit.lab_dir)
    policy = served.policy
    names = [p.name for p in lab.policies]
    if policy not in names:
        raise UsageError(f"--policy {policy}: {unit.id} has the policies {', '.join(names)}")
    args, rest = build_run_parser(lab).parse_known_args([*run_argv, "--policy", policy])
    flags = [word for word in rest if word.startswith("-")]
    if flags:
        raise UsageError(f"unrecognized arguments: {' '.join(flags)}")
    if rest:
        raise UsageError(
            f"SUBMISSION_DIR {rest[0]}: serving a student's policies (in the grader's "
            "sandbox) is not supported yet; use --reference"
        )
    if not served.reference:
        raise UsageError("say which policies to serve: --reference (or SUBMISSION_DIR)")
    policies_module = solution_policies(unit)
    if args.swap_long is not None:
        raise UsageError("--swap-long is not served (run_gpu.py runs it on traces)")
    for flag, value in (("--page-tokens", args.page_tokens), ("--kv-pages", args.kv_pages)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be >= 1, got {value}")
    for flag in ("load", "protocol", "requests", "trace"):
        if getattr(args, flag, None):
            raise UsageError(f"--{flag}: the served requests come over HTTP, not from a workload")
    profile, _, engine = runsetup.resolve_device(lab, args, Trace("served", "", (), {}))
    if args.policy != policy:  # a tier names its own policy
        raise UsageError(f"this tier serves policy {args.policy}: use --policy {args.policy}")
    (spec,) = runsetup.policy_runs(lab, policies_module, args, engine)
    plan = runsetup.RunSetup(profile, None, (), (spec,))
    try:
        real = runsetup.real_device(args, plan, calibrating=False)
        tokenizer = for_model(args.model, real.config.vocab)
    except (RuntimeError, TokenizerError) as exc:
        raise UsageError(str(exc)) from None
    if profile.kv_pages is None:
        profile = replace(profile, kv_pages=real.cache.pool.capacity)
    return ServeSetup(profile, spec, real, tokenizer)
