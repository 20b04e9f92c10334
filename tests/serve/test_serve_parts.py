"""The serve package's parts on their own (no server, no model): stop strings on streamed
text, the live source's hand-over of arrivals and disconnects, the byte tokenizer, the OpenAI
body parser and the metrics text."""

from __future__ import annotations

import threading

import pytest
from servesim.sequence import Phase, Status
from servesim.trace import Request

from grader.serve import openai_api
from grader.serve.metrics import Metrics
from grader.serve.source import LiveSource
from grader.serve.stops import StopCutter
from grader.serve.tokenizer import ByteTokenizer, TokenizerError


def cut(stops, pieces):
    cutter = StopCutter(tuple(stops))
    sent = [cutter.feed(p) for p in pieces]
    return "".join(sent) + cutter.flush(), cutter.stopped


def test_stop_strings_are_never_sent_even_split_across_pieces():
    assert cut(["END"], ["ab", "cE", "N", "Dxyz"]) == ("abc", True)
    assert cut(["END"], ["ab", "cE", "N"]) == ("abcEN", False)  # held, then flushed
    assert cut(["xx", "b"], ["a", "bxx"]) == ("a", True)  # the earliest match wins
    assert cut([], ["a", "b"]) == ("ab", False)
    cutter = StopCutter(("ab",))
    assert cutter.feed("za") == "z"  # "a" may begin "ab": held back
    assert cutter.feed("c") == "ac"


def request(rid: str) -> Request:
    return Request(rid, 0.0, 4, 8)


def test_arrivals_are_stamped_in_order_and_due_at_their_stamp():
    source = LiveSource()
    a = source.submit(request("a"))
    b = source.submit(request("b"))
    assert 0 <= a.arrival_ms <= b.arrival_ms <= source.now_ms()
    assert source.next_ms() == a.arrival_ms
    assert source.pop_due(a.arrival_ms).id == "a"
    assert source.pop_due(b.arrival_ms).id == "b"
    assert source.pop_due(source.now_ms()) is None and source  # open: more may come
    source.close()
    assert source.submit(request("c")) is None and not source


def test_a_disconnect_before_admission_is_its_cancel_time():
    source = LiveSource()
    stamped = source.submit(request("a"))
    source.disconnect("a")
    seq = source.pop_due(source.now_ms())
    assert seq.cancel_ms > 0 and source.late_cancels == []  # admitted with its cancel
    assert stamped.arrival_ms + seq.cancel_ms <= source.now_ms()


def test_a_disconnect_after_admission_is_a_late_cancel_and_after_leaving_nothing():
    source = LiveSource()
    source.submit(request("a"))
    source.submit(request("b"))
    a = source.pop_due(source.now_ms())
    b = source.pop_due(source.now_ms())
    a.phase = b.phase = Phase.PREFILL  # what the engine does at admission
    b.status = Status.COMPLETED  # b has left
    source.disconnect("a")
    source.disconnect("b")
    source.disconnect("a")  # a second disconnect changes nothing
    assert source.pop_due(source.now_ms()) is None
    assert source.late_cancels == [a] and a.cancel_ms > 0 and b.cancel_ms is None


def test_idle_waits_for_a_request_and_returns_at_once_when_closed():
    source = LiveSource()
    clock = source.now_ms()
    threading.Timer(0.05, lambda: source.submit(request("a"))).start()
    woke = source.idle(clock, clock)  # nothing known: wait for the next request
    assert source.pop_due(woke).id == "a"
    future = source.now_ms() + 30.0
    assert source.idle(source.now_ms(), future) == future  # a known wake time, nothing comes
    source.close()
    now = source.now_ms()
    assert now <= source.idle(now, now) <= source.now_ms()


def test_byte_tokenizer_round_trips_utf8_text():
    tok = ByteTokenizer(256)
    ids = tok.encode("héllo, 世界")
    decoder = tok.decoder()
    assert "".join(decoder.piece(i) for i in ids) == "héllo, 世界"
    assert tok.decoder().piece(300) == "\ufffd"
    with pytest.raises(TokenizerError, match="256"):
        ByteTokenizer(255)


def test_the_body_parser_maps_fields_and_names_the_bad_one():
    body = b'{"model": "m", "prompt": "p", "max_tokens": 3, "stop": "x", "deadline_ms": 5}'
    ask = openai_api.parse(openai_api.COMPLETIONS, body, "m", None)
    assert (ask.max_tokens, ask.stop, ask.deadline_ms, ask.stream) == (3, ("x",), 5.0, False)
    chat = openai_api.parse(
        openai_api.CHAT,
        b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
        "m",
        lambda messages: messages[0]["content"],
    )
    assert chat.chat and chat.prompt == "hi" and chat.max_tokens == openai_api.DEFAULT_MAX_TOKENS
    with pytest.raises(openai_api.ApiError) as caught:
        openai_api.parse(openai_api.COMPLETIONS, b'{"model": "m", "prompt": 3}', "m", None)
    assert caught.value.status == 400 and caught.value.body()["error"]["param"] == "prompt"


def test_metrics_text_has_vllm_names_and_cumulative_buckets():
    metrics = Metrics("tiny")
    for seconds in (0.002, 0.03, 7.0):
        metrics.ttft.observe(seconds)
    metrics.add("vllm:num_preemptions_total", 2)
    text = metrics.render()
    assert 'vllm:num_preemptions_total{model_name="tiny"} 2' in text
    assert 'vllm:time_to_first_token_seconds_bucket{model_name="tiny",le="0.005"} 1' in text
    assert 'vllm:time_to_first_token_seconds_bucket{model_name="tiny",le="+Inf"} 3' in text
    assert 'vllm:time_to_first_token_seconds_count{model_name="tiny"} 3' in text
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
        assert f"# TYPE {name} gauge" in text
    assert "# TYPE vllm:kv_cache_usage_perc gauge" in text


def test_the_saved_byte_tokenizer_encodes_as_the_servers(tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    from grader.serve.tokenizer import save_byte_tokenizer

    save_byte_tokenizer(tmp_path)
    saved = transformers.AutoTokenizer.from_pretrained(str(tmp_path), local_files_only=True)
    text = "héllo, 世界 \x00\x7f ~!"
    assert saved.encode(text) == ByteTokenizer(256).encode(text)
    assert saved.decode(ByteTokenizer(256).encode(text)) == text and len(saved) == 256


def test_serve_without_torch_names_the_extra(monkeypatch, capsys):
    import sys

    from grader.cli import main

    monkeypatch.setitem(sys.modules, "torch", None)  # the import fails as if not installed
    for module in [m for m in sys.modules if m.startswith("realdevice")]:
        monkeypatch.delitem(sys.modules, module)
    argv = ["serve", "--unit", "unit07", "--reference", "--policy", "fcfs", "--port", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("infralab serve: error:") and "\n" not in err
    assert "PyTorch" in err and "'runner' extra" in err
