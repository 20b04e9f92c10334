"""Unit 09's lesson cites one real serving session, kept in labs/unit09/lesson_serve.json under a
key hashed from its inputs: the committed cache must be the one its inputs make, so a site
build from a fresh clone never has to serve (refresh: ``python labs/unit09/lesson_serve.py``)."""

from __future__ import annotations

import json

from grader.sitebuild.plugins import load_module
from grader.units import LABS_DIR, load_unit

serve = load_module(LABS_DIR / "unit09" / "lesson_serve.py")


def test_the_serving_session_cache_is_current():
    doc = json.loads(serve.CACHE.read_text(encoding="utf-8"))
    assert doc["key"] == serve.key(load_unit("unit09")), (
        "labs/unit09/lesson_serve.json is stale: run python labs/unit09/lesson_serve.py"
    )


def test_the_cached_session_is_what_the_lesson_needs():
    data = json.loads(serve.CACHE.read_text(encoding="utf-8"))["data"]
    assert data["replay_problems"] == 0 and data["pages_at_exit"] == 0
    assert len(data["client_ttft_ms"]) == len(data["run_ttft_ms"]) == data["clients"]
    assert data["slow"]["paused_ms"] and data["slow"]["status"] == "completed"
