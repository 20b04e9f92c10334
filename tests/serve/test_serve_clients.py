"""``infralab serve`` with real clients: the official ``openai`` package streams from it, and
the session's run file is a run like any other (schema, the grader's replay with measured
timing, ``infralab view``), whose first-token times agree with what the client measured.

Transport overhead: the client's TTFT runs from just before it sends to when the first event
reaches it; the run file's from the HTTP arrival stamp (the body read) to the end of the step
that made the token, just before it is handed to the connection. So the client's TTFT is never
less than the run file's (both clocks are the same monotonic clock), and it exceeds it by the
connection, the request's parsing and the event's delivery: at most ``TRANSPORT_MS`` here.
"""

from __future__ import annotations

import time

import pytest

from grader.serve.child import Served
from grader.units import load_unit
from grader.verify import verify_run
from grader.verify.runschema import validate_run_file

openai = pytest.importorskip("openai", reason="the openai client (extra 'test')")
pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")

TRANSPORT_MS = 1000.0  # stated bound on client TTFT - run-file TTFT (module docstring)


def client(served: Served):
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="none", max_retries=0)


def stream_timed(api, prompt: str, max_tokens: int):
    """(text, client TTFT in ms, the completion id) of one streamed completion."""
    sent = time.monotonic()
    first, pieces, rid = None, [], None
    for event in api.completions.create(
        model="tiny", prompt=prompt, max_tokens=max_tokens, stream=True
    ):
        rid = event.id
        if first is None and event.choices and event.choices[0].finish_reason is None:
            first = (time.monotonic() - sent) * 1000.0
        pieces += [c.text for c in event.choices]
    return "".join(pieces), first, rid


def test_openai_client_streams_and_the_run_file_replays(tmp_path):
    served = Served(tmp_path, "unit07", "chunked", "--chunk", "8")
    try:
        api = client(served)
        assert [m.id for m in api.models.list().data] == ["tiny"]
        streamed = [stream_timed(api, f"request {i}: hello", 6) for i in range(3)]
        whole = api.completions.create(model="tiny", prompt="abc", max_tokens=5)
        chat = api.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=4
        )
    finally:
        code, err, doc = served.end()
    assert code == 0, err
    assert "KV pages in use at exit: 0" in "\n".join(served.lines)
    assert whole.usage.completion_tokens == 5 and whole.choices[0].finish_reason == "length"
    assert chat.usage.completion_tokens == 4 and chat.choices[0].message.role == "assistant"
    (run,) = doc["runs"]
    assert validate_run_file(load_unit("unit09"), doc) is None  # the extended (lifecycle) format
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    assert run["realDevice"]["mode"] == "serve" and run["events"][-1]["kvPagesHeld"] == 0
    by_id = {r["id"]: r for r in run["requests"]}
    assert len(by_id) == 5
    assert by_id[whole.id]["outputTokens"] == 5 and by_id[chat.id]["outputTokens"] == 4
    overheads = []
    for _, client_ttft, rid in streamed:
        recorded = by_id[rid]["ttftMs"]
        assert recorded <= client_ttft <= recorded + TRANSPORT_MS, (rid, recorded, client_ttft)
        overheads.append(client_ttft - recorded)
    print(f"client TTFT - run-file TTFT: {', '.join(f'{ms:.1f}' for ms in overheads)} ms")
    page = tmp_path / "view.html"
    from grader.cli.main import main

    assert main(["view", str(served.run_file), "--output", str(page)]) == 0
    assert page.stat().st_size > 0


def test_stop_string_ends_the_request_at_its_token(tmp_path):
    served = Served(tmp_path, "unit07", "fcfs", "--max-requests", "3")  # it ends by itself
    try:
        api = client(served)
        free = api.completions.create(model="tiny", prompt="stop here", max_tokens=12)
        text = free.choices[0].text
        stop = text[3]  # a character the greedy output really has (computed, not typed)
        cut = api.completions.create(model="tiny", prompt="stop here", max_tokens=12, stop=stop)
        streamed = "".join(
            c.text
            for e in api.completions.create(
                model="tiny", prompt="stop here", max_tokens=12, stop=[stop], stream=True
            )
            for c in e.choices
        )
    finally:
        code, err, doc = served.end(signalled=False)
    assert code == 0, err
    expected = text[: text.index(stop)]
    assert cut.choices[0].text == expected == streamed
    assert cut.choices[0].finish_reason == "stop"
    assert cut.usage.completion_tokens < 12
    (run,) = doc["runs"]
    record = next(r for r in doc["trace"]["requests"] if r["id"] == cut.id)
    assert record["outputTokens"] == cut.usage.completion_tokens
    assert record["maxOutputTokens"] == 12
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    assert run["events"][-1]["kvPagesHeld"] == 0


def test_deadline_ms_is_the_traces_deadline(tmp_path):
    served = Served(tmp_path, "unit07", "chunked", "--chunk", "1")  # one prompt token a step
    try:
        api = client(served)
        with pytest.raises(openai.APIStatusError) as caught:  # its first step ends past it
            api.completions.create(
                model="tiny", prompt="ten tokens", max_tokens=3, extra_body={"deadline_ms": 1e-3}
            )
        kept = api.completions.create(
            model="tiny", prompt="ok", max_tokens=3, extra_body={"deadline_ms": 60_000}
        )
    finally:
        code, err, doc = served.end()
    assert code == 0, err
    assert caught.value.status_code == 504 and caught.value.type == "deadline_exceeded"
    (run,) = doc["runs"]
    assert [r["deadlineMs"] for r in doc["trace"]["requests"]] == [1e-3, 60_000]
    assert [r["status"] for r in run["requests"]] == ["cancelled", "completed"]
    assert run["requests"][1]["id"] == kept.id
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
