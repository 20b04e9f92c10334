"""Stop strings on streamed text: what may be sent now, and whether a stop string matched.

``feed(piece)`` takes the next decoded text and returns what can be sent: everything before a
matched stop string (then ``stopped`` is true and later text is dropped), or everything except
a tail that could still be the start of a stop string (held back until the next piece shows
whether it is). ``flush()`` returns the held tail when the output ends without a match. So the
client never sees any part of a stop string, as with OpenAI's API.
"""

from __future__ import annotations


class StopCutter:
    def __init__(self, stops: tuple[str, ...]):
        self.stops = stops
        self.text = ""  # everything decoded so far
        self.sent = 0  # characters of ``text`` already returned
        self.stopped = False

    def feed(self, piece: str) -> str:
        if self.stopped:
            return ""
        self.text += piece
        hits = [i for i in (self.text.find(s) for s in self.stops) if i >= 0]
        if hits:
            self.stopped = True
            return self._send(min(hits))
        return self._send(len(self.text) - self._held())

    def flush(self) -> str:
        return "" if self.stopped else self._send(len(self.text))

    def _held(self) -> int:
        """The longest tail of ``text`` that is a proper prefix of a stop string."""
        longest = 0
        for stop in self.stops:
            for k in range(min(len(stop) - 1, len(self.text)), longest, -1):
                if self.text.endswith(stop[:k]):
                    longest = k
                    break
        return longest

    def _send(self, upto: int) -> str:
        upto = max(upto, self.sent)
        out, self.sent = self.text[self.sent : upto], upto
        return out
