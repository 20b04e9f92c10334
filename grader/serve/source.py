"""Requests that come over HTTP, as the engine's arrival source (``servesim.arrivals.Arrivals``).

The runner's clock is the wall clock: milliseconds since the session started
(``time.monotonic``). An HTTP handler stamps a request's arrival, or its client's disconnect,
and hands it over under one lock; the engine reads the clock under the same lock. So at a
decision point ``t`` every request stamped at or before ``t`` is already in the inbox and is
admitted there, and every disconnect stamped at or before ``t`` is seen there: the decision
rules (``servesim.decision``) apply to the HTTP times exactly as the replay will apply them to
the run file's trace.

A disconnect becomes the request's ``cancelMs`` (its stamp less its arrival): before admission
the engine admits it with that cancel; after admission it is handed to the engine as a late
cancel; after the request left it changes nothing (a client closing a finished stream).

A streamed request on a device with output buffers logs its client's reads (``readsMs``,
``servesim.readlog``): its handler stamps each event as the client takes it (``read``), under
the same lock, so at a decision point every read stamped by then is in the request's log, as
the replay will see it. The engine idles until each handed-over item's stamp (not the moment it
woke), so a read that drains a paused stream resumes it at the read's time. The run ends only
once every logged stream's handler is done (``finished``): its last reads are in the log.

Only the engine thread calls the ``Arrivals`` methods; handlers call ``submit``, ``disconnect``,
``read``, ``finished`` and ``close``.
"""

from __future__ import annotations

import math
import threading
import time

from servesim.arrivals import trace_of
from servesim.livefeed import Feed, encode
from servesim.sequence import Sequence
from servesim.trace import Request


class LiveSource(Feed):
    def __init__(self, name: str = "served", description: str = "requests served over HTTP"):
        super().__init__()
        self.name, self.description = name, description
        self._lock = threading.Condition()
        self._inbox: list[tuple[str, object, float]] = []  # (kind, item, its stamp)
        self._t0 = time.monotonic()
        self._open = True  # accepting requests (False once closed)
        self._reading: set[str] = set()  # logged streams whose handler is not done
        self.on_left = None  # called with each request as it leaves (engine thread)
        self.journal: list | None = None  # a child's engine follows these (``livefeed``)

    # -- the clock ---------------------------------------------------------------------------

    def _now_ms(self) -> float:
        return (time.monotonic() - self._t0) * 1000.0

    def now_ms(self) -> float:
        """The runner's clock, read under the hand-over lock (see the module)."""
        with self._lock:
            return self._now_ms()

    # -- handlers' side ----------------------------------------------------------------------

    def submit(self, request: Request) -> Request | None:
        """Stamp ``request``'s arrival now and hand it to the engine; the request as stamped,
        or None once the source is closed (no request is accepted after that)."""
        with self._lock:
            if not self._open:
                return None
            stamped = request._replace(arrival_ms=self._now_ms())
            self._inbox.append(("request", stamped, stamped.arrival_ms))
            if stamped.reads_ms is not None:
                self._reading.add(stamped.id)
            self._lock.notify_all()
            return stamped

    def disconnect(self, rid: str) -> None:
        """``rid``'s client went away now: a client cancel (see the module)."""
        with self._lock:
            now = self._now_ms()
            self._inbox.append(("cancel", (rid, now), now))
            self._lock.notify_all()

    def read(self, rid: str) -> None:
        """``rid``'s client took its next streamed event now (a logged stream)."""
        with self._lock:
            now = self._now_ms()
            self._inbox.append(("read", rid, now))
            self._lock.notify_all()

    def finished(self, rid: str) -> None:
        """``rid``'s handler is done: no more reads will come (a logged stream)."""
        with self._lock:
            self._reading.discard(rid)
            self._lock.notify_all()

    def close(self) -> None:
        """Accept no more requests; the engine finishes those it has, then the run ends."""
        with self._lock:
            self._open = False
            self._lock.notify_all()

    @property
    def accepting(self) -> bool:
        return self._open

    # -- the engine's side (``Arrivals``) ------------------------------------------------------

    def __bool__(self) -> bool:
        items = self._drain()
        with self._lock:
            result = bool(self._heap) or self._open or bool(self._reading)
        self._note("b", items, result)
        return result

    def next_ms(self) -> float:
        """The next arrival handed over and not yet due; inf when none is known yet."""
        self._note("n", self._drain())
        return self.next_known()

    def pop_due(self, clock: float):
        self._note("p", self._drain())
        return super().pop_due(clock)

    def idle(self, clock: float, wake: float) -> float:
        """Wait in real time until ``wake`` or until something is handed over (``wake ==
        clock`` or inf: nothing is due, wait for it); the clock then reads the earliest stamp
        handed over (or the wall clock), never more than ``wake``. Closed with nothing left
        to come: at once."""
        known = clock < wake < math.inf
        with self._lock:
            while not self._inbox:
                now = self._now_ms()
                if known and now >= wake:
                    break
                if not known and not (self._open or self._reading):
                    break  # closed: nothing more will come
                self._lock.wait((wake - now) / 1000.0 if known else None)
            first = min((stamp for *_, stamp in self._inbox), default=math.inf)
            now = self._now_ms()
        clock = max(clock, min(now, first, wake if known else math.inf))
        if self.journal is not None:
            self.journal.append(["i", clock])
        return clock

    def left(self, seq: Sequence, at_ms: float) -> None:
        if self.on_left is not None:
            self.on_left(seq)

    def realised(self, source, closed):
        return trace_of(self.name, self.description, self.sequences)

    def _drain(self) -> list:
        """Move what handlers handed over into the engine's queue (engine thread only); the
        items, in the order they were stamped."""
        with self._lock:
            inbox, self._inbox = self._inbox, []
        for item in inbox:
            self.apply(*item)
        return inbox

    def _note(self, kind: str, items: list, *result) -> None:
        if self.journal is not None:
            self.journal.append([kind, encode(items), *result])
