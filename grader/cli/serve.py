"""``infralab serve``: a unit's policy behind an OpenAI-compatible HTTP server (``grader.serve``).

The session ends on SIGINT or SIGTERM (a second one exits at once, with no run file), after
``--max-requests`` requests have been accepted and have left, or after ``--duration`` seconds:
no request is accepted after that, those already in finish, and the run file (``--run-file``)
is written. The ready line (``serving on http://127.0.0.1:PORT``) is printed once the port
listens; ``--port 0`` picks a free one.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

from ..units import load_unit

READY = "serving on http://"


def add_serve(commands) -> None:
    parser = commands.add_parser(
        "serve",
        help="serve a unit's policy on a real model over the OpenAI API (loopback)",
        description="Serve /v1/completions, /v1/chat/completions, /v1/models, /health and "
        "/metrics on 127.0.0.1, scheduling every request with the unit's policy on the "
        "reference runner (live mode). Usage: infralab serve --unit U --policy P "
        "(--reference | SUBMISSION_DIR) [flags]. Flags after the known ones go to the lab's "
        "run_gpu.py parser (e.g. --kv-pages 64, --chunk 16, --device-profile FILE). "
        "docs/serve.md has the request mapping.",
    )
    parser.add_argument("--unit", required=True)
    parser.add_argument("--policy", required=True, help="one policy of the unit")
    parser.add_argument("--reference", action="store_true", help="the reference solution")
    parser.add_argument("--model", default="tiny", help="a preset (default tiny) or a folder")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda if available")
    parser.add_argument("--port", type=int, default=8000, help="default 8000; 0: any free port")
    parser.add_argument("--run-file", metavar="OUT", help="write the session's run file here")
    parser.add_argument("--max-requests", type=int, help="end after this many requests")
    parser.add_argument("--duration", type=float, help="end after this many seconds")
    parser.set_defaults(handler=_serve, passthrough=True)


def _serve(args, extra: list[str]) -> int:
    from servesim.usage import UsageError

    problem = _usage_problem(args)
    if problem:
        print(f"infralab serve: error: {problem}", file=sys.stderr)
        return 2
    try:
        importlib.import_module("realdevice.runsetup")  # needs torch (the 'runner' extra)
    except ImportError as exc:
        print(f"infralab serve: error: {exc}", file=sys.stderr)
        return 2
    from .. import reference
    from ..sandbox import SandboxError
    from ..serve import setup
    from ..serve.session import Session

    unit = load_unit(args.unit)
    run_argv = [*extra, "--model", args.model, *(["--device", args.device] if args.device else [])]
    try:
        plan = setup.resolve(unit, args, reference.solution_policies, run_argv)
    except UsageError as exc:
        print(f"infralab serve: error: {exc}", file=sys.stderr)
        return 2
    session = Session(
        plan.profile, plan.spec, plan.real, plan.tokenizer, args.model, args.max_requests
    )
    try:
        child = _child(unit, plan, session)
    except SandboxError as exc:
        print(f"infralab serve: error: the policy's sandbox: {exc}", file=sys.stderr)
        return 2
    try:
        return _serve_with(args, unit, plan, session)
    finally:
        if child is not None:
            child.close()


def _child(unit, plan, session):
    """A SUBMISSION_DIR's policies in a sandboxed child that follows the session's engine
    (``grader.serve.remote``); None for the reference."""
    if plan.submission is None:
        return None
    from ..labfolder import built
    from ..serve.remote import PolicyChild

    session.source.journal = []
    setup = plan.submission.setup(plan.profile, plan.spec)
    files = plan.submission.files
    plan.submission.child = PolicyChild(built(unit), files, setup, session.source.journal)
    return plan.submission.child


def _serve_with(args, unit, plan, session) -> int:
    from servesim.runfile import dumps, write_atomic

    from ..serve.http import HOST, Server

    try:
        server = Server(args.port, session)
    except OSError as exc:
        print(f"infralab serve: error: port {args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    engine = threading.Thread(target=_engine, args=(session,), name="engine")
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _ending(session))
    http = threading.Thread(target=server.serve_forever, name="http", daemon=True)
    http.start()
    engine.start()
    port = server.server_address[1]
    print(
        f"infralab serve: {unit.id} policy {args.policy}, model {args.model}: {READY}{HOST}:{port}",
        flush=True,
    )
    ends = None if args.duration is None else time.monotonic() + args.duration
    while engine.is_alive():
        engine.join(timeout=0.1)
        if ends is not None and time.monotonic() >= ends:
            session.source.close()
    server.shutdown()
    server.server_close()  # waits for every handler to finish its reply
    held = plan.real.cache.pool.used
    if session.error:
        print(f"stopped; KV pages in use at exit: {held}", flush=True)
        print(f"infralab serve: error: {session.error}", file=sys.stderr)
        return 3
    run = session.document["runs"][0]
    print(f"served {len(run['requests'])} requests; KV pages in use at exit: {held}")
    if args.run_file:
        write_atomic(Path(args.run_file), dumps(session.document))
        print(f"wrote {args.run_file}")
    return 0


def _ending(session):
    """The first SIGINT/SIGTERM ends the session cleanly; a second one exits at once (130),
    writing no run file."""
    signals = []

    def handler(signum, frame):
        signals.append(signum)
        if len(signals) > 1:
            print("infralab serve: stopped without a run file", file=sys.stderr, flush=True)
            os._exit(130)
        session.source.close()

    return handler


def _engine(session) -> None:
    with contextlib.suppress(Exception):  # session.error holds it; main() reports it
        session.run()


def _usage_problem(args) -> str | None:
    for flag, value in (("--max-requests", args.max_requests), ("--duration", args.duration)):
        if value is not None and value <= 0:
            return f"{flag} must be > 0, got {value}"
    if not 0 <= args.port <= 65535:
        return f"--port must be 0-65535, got {args.port}"
    return None
