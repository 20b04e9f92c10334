"""Bad input gets OpenAI's error shape and status; the server keeps serving afterwards and
the session's run file holds only the requests it accepted."""

from __future__ import annotations

import http.client
import json

import pytest

from grader.serve.child import Served
from grader.verify import verify_run

openai = pytest.importorskip("openai", reason="the openai client (extra 'test')")
pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")

POOL = ("--kv-pages", "4", "--page-tokens", "16")  # 64 token positions in all


def post(url: str, path: str, body: bytes) -> tuple[int, dict]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("POST", path, body, {"Content-Type": "application/json"})
    reply = conn.getresponse()
    doc = json.loads(reply.read())
    conn.close()
    return reply.status, doc


def error_of(doc: dict) -> dict:
    assert set(doc) == {"error"}
    assert set(doc["error"]) == {"message", "type", "param", "code"}
    assert doc["error"]["message"]
    return doc["error"]


def test_bad_requests_get_openai_errors_and_the_server_goes_on(tmp_path):
    served = Served(tmp_path, "unit07", "fcfs", *POOL)
    try:
        cases = {
            "not json": (b"{not json", 400, None),
            "not an object": (b"[1, 2]", 400, None),
            "no model": (json.dumps({"prompt": "x"}).encode(), 400, "model"),
            "bad max_tokens": (_body(max_tokens=0), 400, "max_tokens"),
            "bad stop": (_body(stop=[1]), 400, "stop"),
            "bad deadline": (_body(deadline_ms=-1), 400, "deadline_ms"),
            "empty prompt": (_body(prompt=""), 400, "prompt"),
            "over the pool": (_body(max_tokens=60), 400, "max_tokens"),
            "prompt over the pool": (_body(prompt="x" * 65, max_tokens=1), 400, "prompt"),
            "unknown model": (_body(model="gpt-9"), 404, "model"),
        }
        for name, (body, status, param) in cases.items():
            got, doc = post(served.url, "/v1/completions", body)
            assert got == status, name
            assert error_of(doc)["param"] == param, name
        got, doc = post(served.url, "/v1/embeddings", _body())
        assert got == 404 and error_of(doc)
        api = openai.OpenAI(base_url=f"{served.url}/v1", api_key="none", max_retries=0)
        with pytest.raises(openai.NotFoundError) as caught:
            api.completions.create(model="gpt-9", prompt="x", max_tokens=2)
        assert caught.value.code == "model_not_found"
        with pytest.raises(openai.BadRequestError) as caught:
            api.completions.create(model="tiny", prompt="x" * 10, max_tokens=60)
        assert caught.value.status_code == 400
        fits = api.completions.create(model="tiny", prompt="x" * 10, max_tokens=54)
        assert fits.usage.completion_tokens == 54  # 10 + 54 = 64: exactly the pool
    finally:
        code, err, doc = served.end()
    assert code == 0, err
    (run,) = doc["runs"]
    assert [r["id"] for r in run["requests"]] == [fits.id]
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    assert run["events"][-1]["kvPagesHeld"] == 0


def _body(**fields) -> bytes:
    return json.dumps({"model": "tiny", "prompt": "hello", "max_tokens": 4, **fields}).encode()
