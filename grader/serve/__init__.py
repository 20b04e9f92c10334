"""``infralab serve``: a unit's policy behind an OpenAI-compatible HTTP server.

``source`` (HTTP arrivals and disconnects as the engine's arrival source), ``session`` (the
engine loop on the real device, streams, the run file), ``http`` (the standard-library
server), ``openai_api`` (request validation, response and error shapes), ``stops`` (stop
strings on streamed text), ``tokenizer`` (text in, text out) and ``metrics`` (``/metrics``).
``docs/serve.md`` has the mapping from requests to the trace.
"""
