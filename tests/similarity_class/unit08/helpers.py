"""Unit 08 (static, continuous, budgeted), written from the handout: small helpers, each
answering one question of the contract."""

from servesim import Batch, PrefillChunk, Wait


def static(view, bucket=0, wait_ms=0):
    if view.running:
        return Batch.decode_of(view.running)
    groups = _groups(view.waiting, bucket)
    limit = view.device.max_active
    for members in groups:
        if _ready(view.now_ms, members, limit, wait_ms):
            return _prefill_all(members if limit is None else members[:limit])
    return Wait(min(members[0].arrival_ms + wait_ms for members in groups))


def continuous(view):
    if view.waiting and _has_slot(view):
        count = len(view.waiting) if view.free_slots is None else view.free_slots
        return _prefill_all(view.waiting[:count])
    return Batch.decode_of(view.running)


def budgeted(view, budget):
    spare = budget - len(view.running)
    gate = _Gate(view)
    parts = []
    for seq in view.waiting:
        if spare <= 0 or not (seq.holds_kv or gate.admit(seq)):
            break
        size = min(spare, seq.remaining_prefill)
        parts.append(PrefillChunk(seq.id, size))
        spare -= size
    return Batch(decode=[s.id for s in view.running], prefill=parts)


def _groups(queue, width):
    """Buckets of the queue, each in queue order, ordered by where their first request stands."""
    keyed = {}
    for s in queue:
        label = (s.prefill_target - 1) // width if width > 0 else -1
        keyed.setdefault(label, []).append(s)
    return list(keyed.values())


def _ready(now, members, limit, wait_ms):
    if limit is not None and len(members) >= limit:
        return True
    return now >= members[0].arrival_ms + wait_ms


def _has_slot(view):
    return view.free_slots is None or view.free_slots > 0


def _prefill_all(seqs):
    return Batch(prefill=[PrefillChunk(s.id, s.remaining_prefill) for s in seqs])


class _Gate:
    """Admission of new holders: K sequences and M pages of reservations at most."""

    def __init__(self, view):
        self.device = view.device
        self.count = view.active
        self.pages = view.pages_reserved if self.device.kv_pages is not None else 0

    def admit(self, seq):
        want = self.device.pages_for(seq.reservation_tokens)
        if self.device.max_active is not None and self.count >= self.device.max_active:
            return False
        if self.device.kv_pages is not None and self.pages + want > self.device.kv_pages:
            return False
        self.count += 1
        self.pages += want
        return True
