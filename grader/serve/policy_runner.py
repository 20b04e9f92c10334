"""A student's policy for ``infralab serve``, INSIDE the grader's sandbox (copied into the case
folder as ``_infralab_serve_runner.py``; standard library and the lab's ``servesim`` only).

    python -I -S -B _infralab_serve_runner.py

It runs an engine of its own (``servesim.simulate``) that follows the server's run from its
journal (``servesim.livefeed.Mirror``), so its policy sees the server's view, and it answers
each call of the student's code with one line on its protocol pipe. Protocol (JSON lines):

    server -> runner   {"setup": {...}}  then journal entries, each a list
    runner -> server   ["batch", {...}] / ["wait", ms] / ["admit", bool] per call, or
                       ["garbage", code] (an answer it cannot send), ["error", type name]
                       (the student's code raised, or the two runs parted), then it exits

The server trusts none of it: it checks every batch with its own engine, bounds every line and
waits for each answer only so long. Before the student's module is imported, fds 0, 1 and 2
point at /dev/null and the protocol moves to fds of its own, so prints go nowhere.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> None:
    inbox = os.fdopen(os.dup(0), "r", encoding="utf-8")
    outbox = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)

    def send(message) -> None:
        outbox.write(json.dumps(message) + "\n")
        outbox.flush()

    def entry():
        line = inbox.readline()
        if not line:
            sys.exit(0)  # the server is done
        return json.loads(line)

    setup = entry()["setup"]
    try:
        run(setup, entry, send)
    except SystemExit:
        raise
    except BaseException as exc:  # the student's code, or the two runs parted
        send(["error", type(exc).__name__])
        sys.exit(1)


def run(setup: dict, entry, send) -> None:
    import policies  # the student's file
    from servesim import Batch, DeviceProfile, Wait, simulate
    from servesim.livefeed import Mirror

    params = setup["params"]
    function = getattr(policies, setup["policy"])

    def policy(view):
        answer = function(view, **params)
        send(_answer(answer, Batch, Wait))
        return answer

    admit = None
    if setup.get("admit"):
        own = getattr(policies, setup["admit"])

        def admit(seq, view):
            said = own(seq, view)
            send(["admit", said] if isinstance(said, bool) else ["garbage", "admit"])
            return said

    mirror = Mirror(entry)
    device = DeviceProfile.from_json(setup["device"])
    options = setup["options"]
    simulate(None, policy, device, execute=mirror.execute, source=mirror, admit=admit, **options)


def _answer(answer, Batch, Wait) -> list:
    """A policy's answer as a protocol line: what it is, never how the student wrote it."""
    if type(answer) is Wait:
        until = answer.until_ms
        ok = isinstance(until, (int, float)) and not isinstance(until, bool)
        return ["wait", until] if ok else ["garbage", "wait"]
    if type(answer) is not Batch:
        return ["garbage", "type"]
    fields = {}
    for name in ("decode", "preempt", "swap_out", "swap_in"):
        ids = getattr(answer, name)
        if type(ids) is not tuple or not all(type(i) is str for i in ids):
            return ["garbage", "ids"]
        fields[name] = list(ids)
    chunks = answer.prefill
    if type(chunks) is not tuple:
        return ["garbage", "chunks"]
    prefill = []
    for c in chunks:
        numbers = all(type(getattr(c, f, None)) is int for f in ("tokens", "cached"))
        if type(getattr(c, "id", None)) is not str or not numbers:
            return ["garbage", "chunks"]
        prefill.append([c.id, c.tokens, c.cached])
    return ["batch", {**fields, "prefill": prefill}]


if __name__ == "__main__":
    main()
