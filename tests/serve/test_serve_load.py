"""Clients that go away, and a bounded burst on loopback: a disconnect is a client cancel in
the run file (its pages come back once), the server never crashes, ``/metrics`` counts what the
run file holds, and at the end every page of the real cache is free."""

from __future__ import annotations

import json
import re
import socket
import threading
import urllib.request

import pytest

from grader import reference
from grader.serve.child import Served
from grader.units import load_unit
from grader.verify import verify_run
from grader.verify.runschema import validate_run_file

openai = pytest.importorskip("openai", reason="the openai client (extra 'test')")
pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")

LONG = 600  # tokens a disconnecting client asks for (fits unit 09's 40 pages): it goes long before


def stream_then_leave(url: str, prompt: str) -> str:
    """Start a streamed completion, read its first event, close the socket; its id."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"model": "tiny", "prompt": prompt, "max_tokens": LONG, "stream": True})
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        head = f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}"
        sock.sendall(f"{head}\r\nContent-Type: application/json\r\n\r\n{body}".encode())
        seen = b""
        while b"\n\n" not in seen.partition(b"data: ")[2]:
            chunk = sock.recv(4096)
            assert chunk, seen
            seen += chunk
    event = json.loads(seen.partition(b"data: ")[2].partition(b"\n\n")[0])
    return event["id"]


def statuses(run: dict) -> dict[str, str | None]:
    return {r["id"]: r.get("status") for r in run["requests"]}


def test_a_client_that_disconnects_is_a_cancel_and_its_pages_return(tmp_path):
    served = Served(tmp_path, "unit09", "cancel_aware")
    try:
        gone = stream_then_leave(served.url, "leaving early")
        api = openai.OpenAI(base_url=f"{served.url}/v1", api_key="none", max_retries=0)
        after = api.completions.create(model="tiny", prompt="still here", max_tokens=3)
    finally:
        code, err, doc = served.end()
    assert code == 0, err
    (run,) = doc["runs"]
    assert statuses(run) == {gone: "cancelled", after.id: "completed"}
    cancelled = next(r for r in doc["trace"]["requests"] if r["id"] == gone)
    assert cancelled["cancelMs"] > 0 and cancelled["outputTokens"] == LONG
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    assert run["events"][-1]["kvPagesHeld"] == 0
    assert "KV pages in use at exit: 0" in "\n".join(served.lines)
    assert validate_run_file(load_unit("unit09"), doc) is None
    measure = reference.solution_module(load_unit("unit09"), "measure.py")
    evidence = measure.evidence(run)  # the reference measure.py reads it like any run
    assert measure.diagnose(run).cause is measure.Cause.NOT_ENOUGH_EVIDENCE  # two requests
    assert evidence is not None


def scrape(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=60).read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[re.sub(r'model_name="[^"]*",?', "", name).replace("{}", "")] = float(value)
    return values


def test_a_bounded_burst_ends_with_every_page_free(tmp_path):
    served = Served(tmp_path, "unit07", "chunked", "--chunk", "8")
    api = openai.OpenAI(base_url=f"{served.url}/v1", api_key="none", max_retries=0)
    done, left = {}, []

    def one(i: int) -> None:
        if i % 5 == 4:
            left.append(stream_then_leave(served.url, f"burst {i}"[: 4 + i]))
            return
        kind = {"stream": i % 2 == 0, "max_tokens": 4 + (i * 7) % 40}
        if kind["stream"]:
            events = list(api.completions.create(model="tiny", prompt=f"burst {i}", **kind))
            done[events[0].id] = sum(1 for e in events for c in e.choices if c.text)
        else:
            reply = api.completions.create(model="tiny", prompt=f"burst {i}" * i, **kind)
            done[reply.id] = reply.usage.completion_tokens

    try:
        clients = [threading.Thread(target=one, args=(i,)) for i in range(15)]
        for c in clients:
            c.start()
        for c in clients:
            c.join(120)
        metrics = scrape(served.url)
    finally:
        code, err, doc = served.end()
    assert code == 0, err
    assert len(done) == 12 and len(left) == 3
    (run,) = doc["runs"]
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    assert {rid for rid, status in statuses(run).items() if status == "cancelled"} == set(left)
    assert {r["id"] for r in doc["trace"]["requests"] if "cancelMs" in r} == set(left)
    assert run["events"][-1]["kvPagesHeld"] == 0
    assert "KV pages in use at exit: 0" in "\n".join(served.lines)
    completed = [r for r in run["requests"] if r["id"] in done]
    emitted = sum(len(r["tokenTimesMs"]) for r in run["requests"])
    assert metrics["vllm:generation_tokens_total"] <= emitted  # the cancelled ones go on a bit
    assert metrics["vllm:time_to_first_token_seconds_count"] == 15
    assert metrics['vllm:request_success_total{finished_reason="length"}'] == len(completed)
    assert metrics["vllm:num_requests_running"] >= 0 <= metrics["vllm:kv_cache_usage_perc"] <= 1
