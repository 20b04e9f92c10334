"""``/metrics``: the session's figures in Prometheus' text format, under vLLM's metric names.

vLLM (V1) names used here, each labelled ``model_name``: ``vllm:num_requests_running`` and
``vllm:num_requests_waiting`` (gauges, as of the last decision point),
``vllm:kv_cache_usage_perc`` (the real cache's pages in use over its pages, 0-1),
``vllm:num_preemptions_total``, ``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
``vllm:prefix_cache_queries_total`` and ``vllm:prefix_cache_hits_total`` (prompt tokens looked
up in the prefix cache at a request's first prefill, and those it held), and
``vllm:request_success_total`` (by ``finished_reason``); histograms
``vllm:time_to_first_token_seconds``, ``vllm:inter_token_latency_seconds`` and
``vllm:e2e_request_latency_seconds``. Latencies are the runner's clock, as in the run file.
One gauge is the course's own (vLLM has no output-buffer pauses):
``infralab:num_requests_paused``, the streams paused now by a full output buffer.

The engine thread writes; handlers read ``render()``; one lock keeps a scrape consistent.
"""

from __future__ import annotations

import threading
from bisect import bisect_left

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0)
ITL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0)
E2E_BUCKETS = (0.01, 0.05, 0.1, 0.3, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 60.0)


class Histogram:
    def __init__(self, name: str, doc: str, buckets: tuple[float, ...]):
        self.name, self.doc, self.buckets = name, doc, buckets
        self.counts = [0] * (len(buckets) + 1)  # the last: above every bound
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.buckets, seconds)] += 1
        self.sum += seconds

    def lines(self, label: str) -> list[str]:
        out = [f"# HELP {self.name} {self.doc}", f"# TYPE {self.name} histogram"]
        total = 0
        for bound, count in zip((*self.buckets, "+Inf"), self.counts, strict=True):
            total += count
            out.append(f'{self.name}_bucket{{{label},le="{bound}"}} {total}')
        out.append(f"{self.name}_sum{{{label}}} {self.sum!r}")
        out.append(f"{self.name}_count{{{label}}} {total}")
        return out


class Metrics:
    def __init__(self, model_name: str):
        self.label = f'model_name="{model_name}"'
        self.lock = threading.Lock()
        self.running = self.waiting = 0
        self.kv_usage = 0.0
        self.paused = None  # () -> the streams paused now (the engine's own count), once known
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.finished: dict[str, int] = {}
        self.ttft = Histogram(
            "vllm:time_to_first_token_seconds", "Time to first token.", TTFT_BUCKETS
        )
        self.itl = Histogram(
            "vllm:inter_token_latency_seconds", "Inter-token latency.", ITL_BUCKETS
        )
        self.e2e = Histogram(
            "vllm:e2e_request_latency_seconds", "End-to-end request latency.", E2E_BUCKETS
        )

    def add(self, counter: str, amount: int = 1) -> None:
        with self.lock:
            self.counters[counter] += amount

    def finish(self, reason: str, e2e_s: float) -> None:
        with self.lock:
            self.finished[reason] = self.finished.get(reason, 0) + 1
            self.e2e.observe(e2e_s)

    def render(self) -> str:
        label = self.label
        paused = 0 if self.paused is None else self.paused()
        with self.lock:
            lines = []
            for name, kind, doc, value in (
                ("vllm:num_requests_running", "gauge", "Requests in decode.", self.running),
                ("vllm:num_requests_waiting", "gauge", "Requests waiting.", self.waiting),
                ("vllm:kv_cache_usage_perc", "gauge", "KV cache usage, 0-1.", self.kv_usage),
                ("infralab:num_requests_paused", "gauge", "Streams paused.", paused),
            ):
                lines += [
                    f"# HELP {name} {doc}",
                    f"# TYPE {name} {kind}",
                    f"{name}{{{label}}} {value}",
                ]
            for name, doc in COUNTERS.items():
                lines += [f"# HELP {name} {doc}", f"# TYPE {name} counter"]
                lines.append(f"{name}{{{label}}} {self.counters[name]}")
            name = "vllm:request_success_total"
            lines += [f"# HELP {name} Finished requests.", f"# TYPE {name} counter"]
            for reason, count in sorted(self.finished.items()):
                lines.append(f'{name}{{{label},finished_reason="{reason}"}} {count}')
            for hist in (self.ttft, self.itl, self.e2e):
                lines += hist.lines(label)
        return "\n".join(lines) + "\n"


COUNTERS = {
    "vllm:num_preemptions_total": "Preemptions (recompute).",
    "vllm:prompt_tokens_total": "Prompt tokens of admitted requests.",
    "vllm:generation_tokens_total": "Generated tokens.",
    "vllm:prefix_cache_queries_total": "Prompt tokens looked up in the prefix cache.",
    "vllm:prefix_cache_hits_total": "Prompt tokens found in the prefix cache.",
}
