"""One serving session: HTTP requests scheduled by a unit's policy on the real device.

The engine is ``servesim.simulate`` itself, run once for the whole session in one thread, with
the requests coming from a ``LiveSource`` (HTTP arrivals on the runner's clock) and the real
device behind its ``execute`` hook (``realdevice``: model, paged KV cache; ``LivePages`` keeps
the real cache in step with the engine, so a cancelled request's pages go back once). Every
rule (admission, deadlines, client cancels, output buffers, the token rule) is the engine's.

``execute`` returns the wall time from the decision point to the end of the step (the device's
time plus the host's), so the engine's clock is the wall clock at every step end, the time
the source stamps arrivals and disconnects with. What is new per served request:

- its prompt is its tokenized text (``Executor.add_request(prompt=...)``), its output the
  model's greedy tokens, decoded and handed to its HTTP handler as they come (``Stream``), one
  ``token`` event each;
- on a device with output buffers a streamed request logs its client's reads: its handler
  reports each token event the client took (``LiveSource.read``), and the engine's buffer
  rules pause, resume and stall it from that log; a stalled stream's connection is hung up;
- a stop string ends it at the token that completes it: the engine's ``outputTokens`` and the
  executor's become the tokens it has (``Executor.stop``), so it completes at that step;
- when it leaves (``Arrivals.left``), its handler is told how: completed, rejected at
  admission, cancelled (deadline, client, stalled stream).

At the end the session's run entry is built as ``realdevice``'s live runs are
(``build_run`` and ``runner.annotate``), with the realised trace of the served requests, in the
extended format whatever the unit: a served request may leave early (a disconnect, a stop
string, a deadline), and only that format reports each request's status.
"""

from __future__ import annotations

import itertools
import queue
import threading

from realdevice.livepages import LivePages
from realdevice.runner import annotate, drive
from servesim import rules
from servesim.engine import simulate
from servesim.runfile import build_document, build_run
from servesim.sequence import Status
from servesim.trace import Request

from .metrics import Metrics
from .openai_api import ApiError, Ask, bad
from .source import LiveSource
from .stops import StopCutter


class Stream:
    """One request's channel from the engine thread to its HTTP handler: ``events`` gets one
    ``("token", str)`` per token (the text it releases, maybe ""), ``("text", str)`` for text
    held back until the end, then ``("done", finish_reason)`` or ``("error", ApiError)``.
    ``logged``: its client's reads drive its output buffer (the handler reports each token
    event it wrote, then that it is done); ``hangup``: set by the handler, called when the
    engine gives up on the client (a stalled stream)."""

    def __init__(self, rid: str, ask: Ask, prompt_ids: list[int], decoder):
        self.rid, self.ask, self.prompt_ids = rid, ask, prompt_ids
        self.events: queue.Queue = queue.Queue()
        self.decoder = decoder
        self.cut = StopCutter(ask.stop)
        self.tokens = 0  # token ids received from the executor
        self.times: list[float] = []  # their times on the runner's clock (ms)
        self.arrival_ms = 0.0
        self.logged = False
        self.hangup = None

    @property
    def usage(self) -> tuple[int, int]:
        return len(self.prompt_ids), self.tokens


class Session:
    def __init__(self, profile, spec, real, tokenizer, model_name: str, max_requests=None):
        self.profile, self.spec, self.real = profile, spec, real
        self.tokenizer, self.model_name = tokenizer, model_name
        self.max_requests = max_requests
        self.source = LiveSource(f"served-{spec.name}")
        self.source.on_left = self._left
        self.metrics = Metrics(model_name)
        self.pages = LivePages(real, profile.prefix_caching)
        self._policy = self.pages.wrap(spec.policy)
        self._streams: dict[str, Stream] = {}
        self._lock = threading.Lock()
        self._numbers = itertools.count()
        self._step_start = 0.0
        self._stops: dict[str, int] = {}  # this step's stop strings: id -> its outputTokens
        self.document: dict | None = None
        self.error: str | None = None

    # -- handlers' side ------------------------------------------------------------------------

    def submit(self, ask: Ask) -> Stream:
        """Tokenize and check ``ask``, then hand it to the engine; raises ``ApiError``."""
        ids = self.tokenizer.encode(ask.prompt)
        if not ids:
            raise bad("the prompt has no tokens", "prompt")
        self._fits(len(ids), ask.max_tokens)
        with self._lock:
            number = next(self._numbers)
            if self.max_requests is not None and number >= self.max_requests:
                raise _closed()
            rid = f"cmpl-{number:06d}"
            stream = self._streams[rid] = Stream(rid, ask, ids, self.tokenizer.decoder())
            stream.logged = ask.stream and self.profile.streams
            reads = () if stream.logged else None
            request = Request(
                rid, 0.0, len(ids), ask.max_tokens, deadline_ms=ask.deadline_ms, reads_ms=reads
            )
            stamped = self.source.submit(request)
            if stamped is None:
                del self._streams[rid]
                raise _closed()
            stream.arrival_ms = stamped.arrival_ms
            if self.max_requests is not None and number + 1 >= self.max_requests:
                self.source.close()
        return stream

    def disconnect(self, stream: Stream) -> None:
        """``stream``'s client went away: a client cancel (``LiveSource.disconnect``)."""
        self.source.disconnect(stream.rid)

    def _fits(self, prompt: int, max_tokens: int) -> None:
        """The pool rule (``rules.never_fits``): a request that could never fit alone."""
        if rules.never_fits(self.profile, prompt, 0):
            raise bad(
                f"the prompt is {prompt} tokens: longer than the KV pool "
                f"({self.profile.kv_pages} pages of {self.profile.page_tokens} tokens)",
                "prompt",
            )
        if rules.never_fits(self.profile, prompt, max_tokens):
            raise bad(
                f"max_tokens {max_tokens} with a prompt of {prompt} tokens needs "
                f"{self.profile.pages_for(prompt + max_tokens)} KV pages; the pool has "
                f"{self.profile.kv_pages}",
                "max_tokens",
            )

    # -- the engine thread ---------------------------------------------------------------------

    def run(self) -> None:
        """Serve until the source is closed and every request has left; then build the run."""
        if self.profile.prefix_caching:
            drive(self.real)
        first = len(self.real.submissions)
        spec = self.spec
        try:
            timeline = simulate(
                None,
                self._decide,
                self.profile,
                execute=self._execute,
                source=self.source,
                **spec.simulate_options,
            )
        except Exception as exc:  # a policy that breaks a rule, a device error: end the session
            self.error = f"{type(exc).__name__}: {exc}"
            self._fail_all(exc)
            self._free_all()
            raise
        self.pages.finish(timeline.events)
        self._gauges(0, 0)
        options = {"extended": True, "limits": {"budget": None, "queueCap": None}}
        options.update(spec.run_options)  # a lab with extended runs states its own limits
        run = build_run(spec.name, spec.params, self.profile, timeline, None, **options)
        annotate(run, timeline.events, self.real.submissions[first:], self.profile)
        run["realDevice"] = {**self.real.describe(), "mode": "serve"}
        self.document = build_document(timeline.trace, [run])

    def _decide(self, view):
        self._step_start = view.now_ms
        if self.metrics.paused is None and view.streams is not None:
            streams = view.streams  # the engine's own buffers: their paused count, on scrape
            self.metrics.paused = lambda: len(streams.paused)
        self._gauges(len(view.running), len(view.waiting))
        return self._policy(view)

    def _execute(self, batch, context) -> float:
        executor = self.real.executor
        for chunk in batch.prefill:
            if chunk.id not in executor.states and chunk.id not in executor.outputs:
                stream = self._streams[chunk.id]
                ids = stream.prompt_ids
                executor.add_request(chunk.id, len(ids), stream.ask.max_tokens, prompt=ids)
                self.metrics.add("vllm:prefix_cache_queries_total", len(ids))
                self.metrics.add("vllm:prefix_cache_hits_total", chunk.cached)
                self.metrics.add("vllm:prompt_tokens_total", len(ids))
        if batch.preempt:
            self.metrics.add("vllm:num_preemptions_total", len(batch.preempt))
        measured = self.pages.execute(batch, context)
        took = max(self.source.now_ms() - self._step_start, measured)
        end = self._step_start + took  # what the engine computes: the tokens' time
        self._stops = {}
        for rid in batch.ids:
            stream = self._streams[rid]
            for token in executor.generated(rid)[stream.tokens :]:
                self._emit(stream, token, end)
        self._gauges(None, None)
        if self.source.journal is not None:  # a policy's child follows the run (``remote``)
            self.source.journal.append(["x", took, self._stops])
        return took

    def _emit(self, stream: Stream, token: int, end: float) -> None:
        first = not stream.times
        previous = stream.arrival_ms if first else stream.times[-1]
        (self.metrics.ttft if first else self.metrics.itl).observe((end - previous) / 1000.0)
        self.metrics.add("vllm:generation_tokens_total")
        stream.tokens += 1
        stream.times.append(end)
        stream.events.put(("token", stream.cut.feed(stream.decoder.piece(token))))
        if stream.cut.stopped and stream.tokens < stream.ask.max_tokens:
            self._stop_early(stream)

    def _stop_early(self, stream: Stream) -> None:
        """A stop string matched: this step's token is the request's last (see the module)."""
        seq = self.source.sequence(stream.rid)
        seq.output_tokens = seq.generated + 1  # the engine hands out this step's token next
        self._stops[stream.rid] = seq.output_tokens
        if stream.rid in self.real.executor.states:
            self.real.executor.stop(stream.rid)

    def _left(self, seq) -> None:
        stream = self._streams.pop(seq.id, None)
        if stream is None:
            return
        e2e_s = (seq.status_ms - seq.arrival_ms) / 1000.0
        if seq.status is Status.COMPLETED:
            tail = stream.cut.flush()
            if tail:
                stream.events.put(("text", tail))
            reason = "stop" if stream.cut.stopped else "length"
            stream.events.put(("done", reason))
        elif seq.status is Status.REJECTED:
            reason = "rejected"
            stream.events.put(("error", ApiError(429, _REJECTED, "rejected", None, "rejected")))
        elif seq.cancel_reason == "deadline" and not stream.times:
            reason = "deadline"
            message = f"no first token within deadline_ms {seq.deadline_ms:g}"
            stream.events.put(("error", ApiError(504, message, "deadline_exceeded")))
        else:
            reason = "abort"  # its client went, or its stream stalled: nobody reads a reply
            stream.events.put(("done", reason))
            if seq.cancel_reason == "stalled" and stream.hangup is not None:
                stream.hangup()  # a handler blocked writing to the client stops there
        self.metrics.finish(reason, e2e_s)

    def _gauges(self, running, waiting) -> None:
        pool = self.real.cache.pool
        with self.metrics.lock:
            if running is not None:
                self.metrics.running, self.metrics.waiting = running, waiting
            self.metrics.kv_usage = pool.used / pool.capacity

    def _free_all(self) -> None:
        """After a failed run: every request's pages go back to the real cache."""
        executor, cache = self.real.executor, self.real.cache
        for rid in list(executor.states):
            executor.drop(rid)
        for rid, table in list(cache.tables.items()):
            if not cache.driven:
                cache.free(rid)
                continue
            for page in reversed(list(table.pages)):  # a driven cache: the releases' order
                cache.unref(rid, page)

    def _fail_all(self, exc: Exception) -> None:
        self.source.close()
        error = ApiError(500, f"the server's engine stopped: {exc}", "server_error")
        with self._lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.events.put(("error", error))


_REJECTED = "the scheduler's admission control rejected the request at arrival"


def _closed() -> ApiError:
    return ApiError(503, "the server is not accepting requests", "service_unavailable")
