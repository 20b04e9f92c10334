"""The HTTP layer: a standard-library ``ThreadingHTTPServer`` on loopback, one thread per
connection, each handing its request to the session and relaying what the engine sends back.

GET ``/health`` (200 while serving), ``/v1/models``, ``/metrics`` (Prometheus text); POST
``/v1/completions`` and ``/v1/chat/completions``, streamed as server-sent events
(``data: {json}`` lines, then ``data: [DONE]``) or as one JSON body. An error before the first
token is an HTTP status with OpenAI's error shape (``openai_api.ApiError``); a stream's
headers are sent with its first piece of text, so a deadline or a rejection can still be one.

A client that goes away is seen either when a write fails or, while its handler waits for the
engine, when its socket reads as closed (polled every ``POLL_S``): the handler then tells the
session once (``Session.disconnect``), which makes it a client cancel at that time.

A logged stream (``Stream.logged``: streamed, on a device with output buffers) is how a slow
reader reaches the engine: its socket's send buffer is made small (``SEND_BUFFER``), so a write
returns only once the client has read enough to make room, and the handler reports each token
event as read when its write returned (``LiveSource.read``). A stalled stream's socket is shut
down by the engine thread (``Stream.hangup``), which ends a write blocked on it.
"""

from __future__ import annotations

import contextlib
import json
import queue
import select
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import openai_api
from .openai_api import CHAT, COMPLETIONS, ApiError, bad

HOST = "127.0.0.1"
POLL_S = 0.02
MAX_BODY = 1 << 20
SEND_BUFFER = 4096  # bytes asked for a logged stream's socket send buffer (Linux doubles it)
GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close waits for every handler to finish its reply
    block_on_close = True

    def __init__(self, port: int, session):
        self.session = session
        super().__init__((HOST, port), Handler)

    def handle_error(self, request, client_address):
        """A client gone while its reply was written is not a server error."""
        if not isinstance(sys.exc_info()[1], GONE):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    server_version = "infralab-serve"
    timeout = 60  # a client that stops reading for this long is gone

    def log_message(self, format, *args):
        pass  # one line per request would drown the session's own output

    def do_GET(self):
        session = self.server.session
        if self.path == "/health":  # 503 once the engine stopped with an error
            self._send(503 if session.error else 200, b"", "text/plain")
        elif self.path == "/v1/models":
            self._json(200, openai_api.models(session.model_name))
        elif self.path == "/metrics":
            self._send(200, session.metrics.render().encode(), "text/plain; version=0.0.4")
        else:
            self._error(ApiError(404, f"no route {self.path}", "NotFoundError"))

    def do_POST(self):
        session = self.server.session
        try:
            if self.path not in (COMPLETIONS, CHAT):
                raise ApiError(404, f"no route {self.path}", "NotFoundError")
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit() or int(length) > MAX_BODY:
                raise bad(f"the body needs a Content-Length of at most {MAX_BODY} bytes")
            raw = self.rfile.read(int(length))
            ask = openai_api.parse(self.path, raw, session.model_name, session.tokenizer.chat)
            stream = session.submit(ask)
        except ApiError as exc:
            self._error(exc)
            return
        try:
            if ask.stream:
                self._stream(session, stream)
            else:
                self._whole(session, stream)
        except GONE:
            session.disconnect(stream)
        except OSError:  # the engine hung up a stalled stream's socket
            session.disconnect(stream)
        finally:
            if stream.logged:
                session.source.finished(stream.rid)

    # -- replies -----------------------------------------------------------------------------

    def _stream(self, session, stream) -> None:
        ask, model, started = stream.ask, session.model_name, False
        if stream.logged:
            sock = self.connection
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            stream.hangup = lambda: _shut(sock)
        while (event := self._next(session, stream)) is not None:
            kind, value = event
            if kind == "error" and not started:
                self._error(value)
                return
            if not started:
                self._start_events()
                started = True
            if kind in ("text", "token"):
                if value:
                    self._event(openai_api.chunk(ask, stream.rid, model, value, None))
                if kind == "token" and stream.logged:
                    session.source.read(stream.rid)  # its write returned: the client took it
                continue
            finish = value if kind == "done" else "abort"
            self._event(openai_api.chunk(ask, stream.rid, model, None, finish))
            if ask.include_usage:
                used = openai_api.usage(*stream.usage)
                self._event(openai_api.usage_chunk(ask, stream.rid, model, used))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            return

    def _whole(self, session, stream) -> None:
        pieces = []
        while (event := self._next(session, stream)) is not None:
            kind, value = event
            if kind in ("text", "token"):
                pieces.append(value)
            elif kind == "error":
                self._error(value)
                return
            else:
                used = openai_api.usage(*stream.usage)
                doc = openai_api.whole(
                    stream.ask, stream.rid, session.model_name, "".join(pieces), value, used
                )
                self._json(200, doc)
                return

    def _next(self, session, stream):
        """The engine's next event for ``stream``, or None when the client went away."""
        while True:
            try:
                return stream.events.get(timeout=POLL_S)
            except queue.Empty:
                if self._gone():
                    session.disconnect(stream)
                    return None

    def _gone(self) -> bool:
        """The client closed its end (a readable socket with nothing to read)."""
        sock = self.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _start_events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

    def _event(self, doc: dict) -> None:
        self.wfile.write(b"data: " + json.dumps(doc).encode() + b"\n\n")
        self.wfile.flush()

    def _error(self, exc: ApiError) -> None:
        self._json(exc.status, exc.body())

    def _json(self, status: int, doc: dict) -> None:
        self._send(status, json.dumps(doc).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _shut(sock: socket.socket) -> None:
    """End both directions of ``sock`` (a stalled stream's); already closed is fine."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
