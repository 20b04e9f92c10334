"""Which engine rule refused a step, from the child's stderr: the kind of a crash.

The lab's engine checks every step a policy returns and stops the run with one line
(``simulate.py: error: policy P: batch at 3.50 ms: 513 new positions, token budget 512``). That
line comes from the untrusted child, so it is only ever *matched*: against the fixed patterns
below, each the shape of one message of ``servesim/engine.py``, ``servesim/contract.py`` (what
a policy returns, against its contract) and ``servesim/rules.py``. The
result is the name of a check (``rejected-budget``...); the catalogue gives the text a student
sees. Nothing of the line itself (ids, times, sizes) is kept, and a submission that prints a
line of its own can at most pick one of these fixed kinds.
"""

from __future__ import annotations

import re

_ERROR_LINE = re.compile(r"^simulate\.py: error: (.{0,400})$", re.M)

PATTERNS = {
    "rejected-budget": re.compile(r"new positions, token budget \d+$"),
    "rejected-max-active": re.compile(r"active sequences, cap \d+$"),
    # the second form: a device with a prefix cache, whose pool counts shared pages once
    "rejected-kv-pages": re.compile(
        r"needs \d+ KV pages, budget \d+$|needs \d+ more KV pages, \d+ free$"
    ),
    "rejected-not-running": re.compile(r"decode of '.*' at .* ms: it is not running$"),
    "rejected-prefill-size": re.compile(r"prefill of '.*' at .* ms: .* tokens, must be 1\.\.\d+$"),
    "rejected-no-prefill": re.compile(
        r"prefill of '.*' at .* ms: it has not arrived or needs no prefill$"
    ),
    "rejected-preempt": re.compile(r"preempt of '.*' at .* ms: it holds no KV cache$"),
    "rejected-paused": re.compile(
        r"'.*' is paused: its output buffer holds \d+ of \d+ bytes, no room for another "
        r"\d+-byte event, so it may not be decoded or prefilled until it drains to the low "
        r"mark \(\d+ bytes\) at .* ms$"
    ),
    "rejected-twice": re.compile(r"a request appears twice in the batch at .* ms$"),
    "rejected-empty": re.compile(r"empty batch at .* ms although work is waiting$"),
    "rejected-not-a-batch": re.compile(r" returned .*; expected a Batch$"),
    "rejected-token-type": re.compile(
        r" returned a Batch whose prefill chunk for .* has tokens of type .*; "
        r"expected an int number of prompt tokens$"
    ),
    "rejected-member-type": re.compile(
        r" returned a Batch (whose|with a prefill chunk whose) .*; expected a list of "
        r"(request ids \(str\)|PrefillChunk\(id, tokens\))$"
    ),
    "rejected-unknown-id": re.compile(
        r" returned a Batch whose \w+ names .*, which no request of the trace has; "
        r"expected ids of the requests in the view$"
    ),
    "rejected-admit-type": re.compile(r" returned .*; expected True or False$"),
    "rejected-changed-view": re.compile(
        r" changed its view \(.*\); expected a policy that only reads the view and returns a "
        r"Batch \(the engine changes the sequences when it runs the batch\)$"
    ),
}


TEXTS = {  # what a student reads when the catalogue has nothing more specific
    "rejected-budget": "returned a step with more new positions than the token budget B",
    "rejected-max-active": "returned a step after which more sequences hold KV than K allows",
    "rejected-kv-pages": "returned a step that needs more KV pages than M",
    "rejected-not-running": "decoded a sequence that is not running (finished, preempted or "
    "not yet through its prefill)",
    "rejected-prefill-size": "gave a prefill chunk no tokens, or more than its request has left",
    "rejected-no-prefill": "prefilled a request that has not arrived or needs no prefill",
    "rejected-preempt": "preempted a sequence that holds no KV cache",
    "rejected-paused": "decoded or prefilled a stream whose output buffer is full (paused): "
    "it gets no tokens until its client drains it to the low mark",
    "rejected-twice": "named one request twice in a step",
    "rejected-empty": "returned an empty step while work was waiting",
    "rejected-not-a-batch": "returned something that is not a Batch",
    "rejected-token-type": "gave a prefill chunk a token count that is not an int "
    "(a float from a division, for instance)",
    "rejected-member-type": "returned a Batch whose members are not lists of request ids "
    "(str) and PrefillChunk objects (sequences instead of their ids, for instance)",
    "rejected-unknown-id": "named a request id in a Batch that no request of the trace has",
    "rejected-admit-type": "returned something other than True or False from the admission hook",
    "rejected-changed-view": "changed its view (a list, a sequence or its token times; policies "
    "only read the view, and the engine updates its state when it runs the batch)",
}


def rejection(stderr: str) -> str | None:
    """The check name of the engine rule the last error line of ``stderr`` reports, or None."""
    lines = _ERROR_LINE.findall(stderr or "")
    if not lines:
        return None
    last = lines[-1]
    return next((name for name, pattern in PATTERNS.items() if pattern.search(last)), None)
