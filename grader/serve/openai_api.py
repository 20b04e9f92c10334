"""The OpenAI API's request bodies and response shapes, as far as ``infralab serve`` speaks it.

``parse(path, body, ...)`` turns a POST body into an ``Ask`` or raises ``ApiError``, whose
``body()`` is OpenAI's error shape ``{"error": {"message", "type", "param", "code"}}`` and
whose ``status`` is the HTTP status: 400 for a malformed body or a field out of range, 404 for
an unknown model. The fields read, and how each maps to the trace (``docs/serve.md``):

- ``model``: must be the served model's name (``/v1/models``);
- ``prompt`` (completions; a string) or ``messages`` (chat; ``[{"role", "content"}]``);
- ``max_tokens`` (or ``max_completion_tokens``, chat): the most output tokens (default 16);
  the trace's ``maxOutputTokens``, and its ``outputTokens`` unless a stop string ends it;
- ``stop``: a string or a list of up to 4 non-empty strings: the output ends after the token
  that completes one (the text returned stops before it);
- ``stream`` and ``stream_options.include_usage``;
- ``deadline_ms`` (an extra body field, not OpenAI's; a number > 0): the trace's
  ``deadlineMs``, the time after arrival by which the first token must come.

Other fields (``temperature``, ``top_p``, ``n`` = 1, ``user``, ...) are accepted and do not
change anything: decoding is greedy.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass

DEFAULT_MAX_TOKENS = 16
MAX_STOPS = 4
COMPLETIONS, CHAT = "/v1/completions", "/v1/chat/completions"


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str, param=None, code=None):
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = (
            status,
            message,
            kind,
            param,
            code,
        )

    def body(self) -> dict:
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        }


def bad(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, "invalid_request_error", param)


@dataclass(frozen=True)
class Ask:
    """One validated request: what the session schedules and how the reply is shaped."""

    chat: bool
    prompt: str  # completions' prompt, or the chat rendered as text (``tokenizer.chat``)
    max_tokens: int
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool
    deadline_ms: float | None


def parse(path: str, raw: bytes, model_name: str, chat_text) -> Ask:
    """``raw`` (the POST body of ``path``) as an ``Ask``; ``chat_text(messages)`` renders a
    chat as the prompt text. Raises ``ApiError``."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad(f"the request body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str):
        raise bad("'model' is required (a string)", "model")
    if model != model_name:
        raise ApiError(
            404,
            f"The model `{model}` does not exist (this server serves `{model_name}`)",
            "NotFoundError",
            "model",
            "model_not_found",
        )
    chat = path == CHAT
    prompt = chat_text(_messages(body)) if chat else _prompt(body)
    limit = body.get("max_completion_tokens") if chat else None
    max_tokens = _count(body.get("max_tokens") if limit is None else limit, "max_tokens")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad("'stream' must be true or false", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise bad("'stream_options' must be an object", "stream_options")
    if body.get("n", 1) != 1:
        raise bad("only n = 1 is supported", "n")
    return Ask(
        chat,
        prompt,
        max_tokens,
        _stops(body.get("stop")),
        stream,
        bool(options.get("include_usage", False)),
        _deadline(body.get("deadline_ms")),
    )


def _prompt(body: dict) -> str:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str) or not prompt:
        raise bad("'prompt' must be a non-empty string", "prompt")
    return prompt


def _messages(body: dict) -> list[dict]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' must be a non-empty list", "messages")
    for i, m in enumerate(messages):
        ok = isinstance(m, dict) and isinstance(m.get("role"), str)
        if not ok or not isinstance(m.get("content"), str):
            raise bad(f"messages[{i}] must have a string 'role' and 'content'", "messages")
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def _count(value, param: str) -> int:
    if value is None:
        return DEFAULT_MAX_TOKENS
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise bad(f"'{param}' must be an integer >= 1, got {value!r}", param)
    return value


def _stops(value) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    ok = isinstance(stops, list) and all(isinstance(s, str) and s for s in stops)
    if not ok or len(stops) > MAX_STOPS:
        raise bad(f"'stop' must be a string or a list of up to {MAX_STOPS} strings", "stop")
    return tuple(stops)


def _deadline(value) -> float | None:
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise bad(f"'deadline_ms' must be a number > 0, got {value!r}", "deadline_ms")
    return float(value)


# -- responses -------------------------------------------------------------------------------


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def chunk(ask: Ask, rid: str, model: str, text: str | None, finish: str | None) -> dict:
    """One streamed event: a text piece, or (``finish``) the last one."""
    if ask.chat:
        delta = {} if text is None else {"role": "assistant", "content": text}
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        kind = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": text or "", "finish_reason": finish, "logprobs": None}
        kind = "text_completion"
    return _envelope(rid, kind, model, [choice])


def whole(ask: Ask, rid: str, model: str, text: str, finish: str, used: dict) -> dict:
    """The non-streamed reply."""
    if ask.chat:
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": finish}
        kind = "chat.completion"
    else:
        choice = {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}
        kind = "text_completion"
    return {**_envelope(rid, kind, model, [choice]), "usage": used}


def usage_chunk(ask: Ask, rid: str, model: str, used: dict) -> dict:
    kind = "chat.completion.chunk" if ask.chat else "text_completion"
    return {**_envelope(rid, kind, model, []), "usage": used}


def _envelope(rid: str, kind: str, model: str, choices: list) -> dict:
    return {
        "id": rid,
        "object": kind,
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }


def models(model: str) -> dict:
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": 0, "owned_by": "infralab"}],
    }
