"""Unit 07 scheduling policies: the file you implement and submit.

A policy is called at every decision point: at the start, whenever a submission ends, and when
an idle device sees a request arrive. It gets a ``SchedulerView`` and returns the next ``Batch``
(one submission). The engine owns the clock, the token times and every sequence's state; a
policy only decides. Useful fields:

- ``view.waiting``: arrived requests whose prefill is not finished, earliest arrival first
  (ties in trace order). ``seq.remaining_prefill`` is how many prompt tokens are left.
- ``view.running``: requests that have their first token and still need more.
- ``view.previous``: the batch that just finished, or ``None`` at the start and after idling.

``Batch.decode_of(seqs)`` builds a decode batch (one token for each); ``Batch.prefill_of(seq, n)``
builds a batch with ``n`` more prompt tokens of ``seq``. The engine calls a policy only when
there is work, and rejects a batch it cannot run with a message that says why.
"""

from servesim import Batch, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    """Complete prefill first, in arrival order.

    While any arrived request waits for prefill, return the whole remaining prefill of the
    earliest one (``view.waiting[0]``) as a single submission. Only when nothing waits, return
    one decode batch holding every running request.
    """
    # YOUR CODE HERE
    raise NotImplementedError("fcfs() is not implemented yet")


def chunked(view: SchedulerView, chunk: int) -> Batch:
    """Chunked prefill: protect running requests with a decode batch before each chunk.

    Each cycle is a decode batch of every running request (skipped when none runs) followed by
    a prefill chunk of at most ``chunk`` tokens of the earliest waiting request (skipped when
    none waits). In terms of one decision: if requests are running and the previous batch was
    not a decode batch, decode all of them; otherwise prefill the next chunk of
    ``view.waiting[0]``; with nothing waiting, decode again.
    """
    # YOUR CODE HERE
    raise NotImplementedError("chunked() is not implemented yet")
