"""Unit 09's lesson section "serve your policy": one real ``infralab serve`` session, cached.

The session serves the reference ``backpressure`` on the lab's ``devices/streaming.json`` with
the tiny model on the CPU. The official ``openai`` client streams ``CLIENTS`` completions one
after another and times each one's first token; then one slow reader (a raw socket with a
small receive buffer) sends a streamed completion and stops reading until the server's
``infralab:num_requests_paused`` gauge says its stream is paused, then reads it all. The
session's run file is replayed by the grader and read for its tail.

Its results live in ``lesson_serve.json`` under a key hashed from every input (the engine, the
server, the reference policies, the device file and this file). When the key does not match,
the site build makes the session again (it needs the ``runner`` and ``test`` extras) and says
so; ``python labs/unit09/lesson_serve.py`` makes it and writes the cache back.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / "lesson_serve.json"
DEVICE = "devices/streaming.json"
POLICY = "backpressure"
CLIENTS, TOKENS, SLOW_TOKENS = 8, 48, 400
WAIT_S = 120


def _inputs(unit) -> dict[str, bytes]:
    from grader.units import CODE_ROOT

    paths = {f"servesim/{p.name}": p for p in sorted((CODE_ROOT / "servesim").glob("*.py"))}
    paths |= {f"serve/{p.name}": p for p in sorted((CODE_ROOT / "grader/serve").glob("*.py"))}
    paths |= {
        "solutions/policies.py": unit.solutions_dir / "policies.py",
        f"lab/{DEVICE}": unit.lab_dir / DEVICE,
        "lesson_serve.py": Path(__file__),
    }
    return {label: path.read_bytes() for label, path in paths.items()}


def key(unit) -> str:
    digest = hashlib.sha256()
    for label, data in sorted(_inputs(unit).items()):
        digest.update(label.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


def cached(unit) -> dict:
    """The section's results: the cache's when its key matches, else a new session's."""
    want = key(unit)
    try:
        doc = json.loads(CACHE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    if doc.get("key") == want:
        return doc["data"]
    print(f"{CACHE.name} is stale: serving a session for the lesson", file=sys.stderr)
    return session(unit)


def session(unit) -> dict:
    """Serve one session (see the module) and return what the lesson cites."""
    import openai

    from grader.serve.child import Served

    device = unit.lab_dir / DEVICE
    with tempfile.TemporaryDirectory() as tmp:
        served = Served(Path(tmp), unit.id, POLICY, "--device-profile", str(device))
        try:
            api = openai.OpenAI(base_url=f"{served.url}/v1", api_key="none", max_retries=0)
            clients = [_timed(api, f"client {i}: hello") for i in range(CLIENTS)]
            slow = _slow_reader(served.url)
        finally:
            code, err, doc = served.end()
        if code != 0:
            raise RuntimeError(f"the lesson's session failed: {err.strip()}")
    return _results(unit, doc, clients, slow, served.lines)


def _timed(api, prompt: str) -> tuple[str, float]:
    sent, first, rid = time.monotonic(), None, None
    for event in api.completions.create(
        model="tiny", prompt=prompt, max_tokens=TOKENS, stream=True
    ):
        rid = event.id
        if first is None and event.choices and event.choices[0].finish_reason is None:
            first = (time.monotonic() - sent) * 1000.0
    return rid, first


def _slow_reader(url: str) -> bool:
    """A stream whose client stops reading until it is paused, then reads it all; whether the
    reply ended with ``[DONE]``."""
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        sock.settimeout(WAIT_S)
        sock.connect((host, int(port)))
        body = json.dumps(
            {"model": "tiny", "prompt": "slow", "max_tokens": SLOW_TOKENS, "stream": True}
        )
        head = f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}"
        sock.sendall(f"{head}\r\nContent-Type: application/json\r\n\r\n{body}".encode())
        ends = time.monotonic() + WAIT_S
        while _paused(url) < 1:  # a known point: the server's own gauge
            if time.monotonic() > ends:
                raise RuntimeError("the slow reader's stream never paused")
            time.sleep(0.05)
        seen = b""
        while chunk := sock.recv(64):
            seen += chunk
    return seen.rstrip().endswith(b"data: [DONE]")


def _paused(url: str) -> float:
    import urllib.request

    text = urllib.request.urlopen(f"{url}/metrics", timeout=WAIT_S).read().decode()
    line = next(x for x in text.splitlines() if x.startswith("infralab:num_requests_paused"))
    return float(line.rsplit(" ", 1)[1])


def _results(unit, doc, clients, slow_done: bool, lines) -> dict:
    from grader.verify import verify_run

    (run,) = doc["runs"]
    by_id = {r["id"]: r for r in run["requests"]}
    reads = {r["id"]: r.get("readsMs") for r in doc["trace"]["requests"]}
    served = [by_id[rid] for rid, _ in clients]
    slow = next(r for r in run["requests"] if r["id"] not in dict(clients))
    itl = sorted(x for r in served for x in r["itlMs"])
    return {
        "device": run["device"],
        "policy": POLICY,
        "device_file": DEVICE,
        "model": "tiny",
        "clients": CLIENTS,
        "tokens": TOKENS,
        "slow_tokens": SLOW_TOKENS,
        "replay_problems": len(verify_run(run, doc["trace"], run["device"], timing="measured")),
        "pages_at_exit": next(int(x.rsplit(" ", 1)[1]) for x in lines if "in use at exit" in x),
        "client_ttft_ms": [ttft for _, ttft in clients],
        "run_ttft_ms": [r["ttftMs"] for r in served],
        "overhead_ms": [ttft - r["ttftMs"] for (_, ttft), r in zip(clients, served, strict=True)],
        "ttft_p50_ms": _rank(sorted(r["ttftMs"] for r in served), 0.5),
        "ttft_p99_ms": _rank(sorted(r["ttftMs"] for r in served), 0.99),
        "itl_p50_ms": _rank(itl, 0.5),
        "itl_p99_ms": _rank(itl, 0.99),
        "slow": {
            "status": slow["status"],
            "tokens": len(slow["tokenTimesMs"]),
            "paused_ms": slow["pausedMs"],
            "reads": len(reads[slow["id"]] or ()),
            "peak_bytes": slow["bufferPeakBytes"],
            "max_itl_ms": slow["maxItlMs"],
            "done": slow_done,
        },
    }


def _rank(values: list, p: float) -> float:
    """Nearest rank: the ceil(p * n)-th smallest of n values."""
    return values[max(1, math.ceil(p * len(values))) - 1]


def main() -> None:
    from grader.units import load_unit

    unit = load_unit("unit09")
    data = session(unit)
    CACHE.write_text(json.dumps({"key": key(unit), "data": data}, indent=1) + "\n", "utf-8")
    print(f"wrote {CACHE.name}")


if __name__ == "__main__":
    main()
