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
from pathlib import Path

from servesim.usage import UsageError

MAX_FILE = 1 << 20  # the largest editable file a served submission may hold


@dataclass(frozen=True)
class ServeSetup:
    profile: object  # servesim.DeviceProfile
    spec: object  # realdevice.runner.PolicyRun
    real: object  # realdevice.backend.RealDevice
    tokenizer: object
    submission: Submission | None = None  # a student's policies, served from a child


@dataclass
class Submission:
    """A SUBMISSION_DIR's editable files, and what its child is told (``remote``)."""

    files: dict[str, bytes]
    policy: str  # the function the engine calls
    admit: str | None  # the admission function, if the policy has one
    child: object = None  # the ``remote.PolicyChild``, once started

    def module(self):
        """A stand-in for ``policies.py`` whose functions ask the child (bound later)."""
        from types import SimpleNamespace

        def call(name: str):
            def asked(*args, **kwargs):
                return getattr(self.child.module(self.policy, self.admit), name)(*args, **kwargs)

            asked.__name__ = name
            return asked

        names = [self.policy, *([self.admit] if self.admit else [])]
        return SimpleNamespace(**{name: call(name) for name in names})

    def setup(self, profile, spec) -> dict:
        """The child's setup message: what its own engine needs to follow the server's."""
        options = spec.simulate_options
        return {
            "device": profile.to_json(),
            "policy": self.policy,
            "admit": self.admit,
            "params": dict(spec.params),
            "options": {"budget": options.get("budget"), "queue_cap": options.get("queue_cap")},
        }


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
    if len(rest) > 1:
        raise UsageError(f"one SUBMISSION_DIR, got {' '.join(rest)}")
    if rest and served.reference:
        raise UsageError(f"--reference or SUBMISSION_DIR {rest[0]}, not both")
    if not rest and not served.reference:
        raise UsageError("say which policies to serve: --reference or SUBMISSION_DIR")
    submission = None
    if rest:
        spec_of = {p.name: p for p in lab.policies}[policy]
        files = editable_files(unit, Path(rest[0]))
        submission = Submission(files, spec_of.function, spec_of.admit or None)
        policies_module = submission.module()
    else:
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
    return ServeSetup(profile, spec, real, tokenizer, submission)


def editable_files(unit, folder: Path) -> dict[str, bytes]:
    """The unit's editable files found in ``folder`` (``policies.py`` must be one); a
    ``UsageError`` naming what is wrong otherwise. Nothing else of the folder is read."""
    if not folder.is_dir():
        raise UsageError(f"SUBMISSION_DIR {folder}: not a folder")
    files = {}
    for name in unit.editable:
        path = folder / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise UsageError(f"SUBMISSION_DIR {folder}: {name} is not a plain file")
        if path.is_file():
            if path.stat().st_size > MAX_FILE:
                raise UsageError(f"SUBMISSION_DIR {folder}: {name} is over {MAX_FILE} bytes")
            files[name] = path.read_bytes()
    if "policies.py" not in files:
        raise UsageError(f"SUBMISSION_DIR {folder}: no policies.py")
    return files
