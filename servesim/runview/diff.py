"""The first step where your run and another differ, in one sentence.

Against a run file the batches are compared step by step (prefill chunks, decoded requests as
a set, preemptions, swaps), then the step times. Against a public test's expected snapshot,
which keeps only token times and statuses, the steps that emit tokens are compared in order
(when, and who gets a token), then the statuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from .model import Picture, Snapshot, Step

TOLERANCE_MS = 1e-6


@dataclass(frozen=True)
class Difference:
    step: int  # the step of yours where it shows (len(steps) when yours has ended)
    en: str  # for the terminal
    zh: str  # for the page


@dataclass(frozen=True)
class _Action:
    key: tuple
    en: str
    zh: str


def first_difference(mine: Picture, other: Picture | Snapshot) -> Difference | None:
    if isinstance(other, Snapshot):
        return _against_snapshot(mine, other)
    return _against_run(mine, other)


def _actions(step: Step) -> list[_Action]:
    found = []
    for rid, start, tokens in step.prefill:
        if start == 0:
            en, zh = f"starts {rid}'s prefill", f"开始 {rid} 的 prefill"
        else:
            en, zh = f"continues {rid}'s prefill", f"继续 {rid} 的 prefill"
        last = start + tokens - 1
        found.append(
            _Action(
                ("prefill", rid, start, tokens),
                f"{en} (tokens {start}..{last})",
                f"{zh}（第 {start}–{last} 个 token）",
            )
        )
    found += [_Action(("decode", rid), f"decodes {rid}", f"decode {rid}") for rid in step.decode]
    found += [_Action(("preempt", r), f"preempts {r}", f"抢占 {r}") for r in step.preempt]
    found += [_Action(("out", r), f"swaps {r} out", f"换出 {r}") for r in step.swap_out]
    found += [_Action(("in", r), f"swaps {r} in", f"换入 {r}") for r in step.swap_in]
    return found


def _phrase(actions: list[_Action]) -> tuple[str, str]:
    """``decodes A, B, starts C's prefill``: decodes named together, at most 6 requests."""
    decodes = [a.key[1] for a in actions if a.key[0] == "decode"]
    others = [a for a in actions if a.key[0] != "decode"]
    en, zh = [], []
    if decodes:
        more = f" and {len(decodes) - 6} more" if len(decodes) > 6 else ""
        more_zh = f" 等 {len(decodes)} 个请求" if len(decodes) > 6 else ""
        en.append(f"decodes {', '.join(decodes[:6])}{more}")
        zh.append(f" decode {'、'.join(decodes[:6])}{more_zh}")  # a space after 运行
    en += [a.en for a in others]
    zh += [a.zh for a in others]
    return ", ".join(en) or "idles", "，".join(zh) or "空闲"


def _against_run(mine: Picture, other: Picture) -> Difference | None:
    for k, (a, b) in enumerate(zip_longest(mine.steps, other.steps)):
        if a is not None and b is not None and _same(a, b):
            continue
        if a is None or b is None:
            en, zh = _phrase(_actions(a or b))
            if a is None:
                return Difference(
                    k,
                    f"step {k}: yours has ended, the reference {en}",
                    f"第 {k} 步：你的运行已结束，参考运行{zh}",
                )
            return Difference(
                k,
                f"step {k}: yours {en}, the reference has ended",
                f"第 {k} 步：你的运行{zh}，参考运行已结束",
            )
        mine_acts, ref_acts = _actions(a), _actions(b)
        mine_keys, ref_keys = {x.key for x in mine_acts}, {x.key for x in ref_acts}
        only_mine = [x for x in mine_acts if x.key not in ref_keys]
        only_ref = [x for x in ref_acts if x.key not in mine_keys]
        if only_mine or only_ref:
            return _sentence(k, only_mine, only_ref)
        if abs(a.end_ms - b.end_ms) > TOLERANCE_MS or abs(a.start_ms - b.start_ms) > TOLERANCE_MS:
            return Difference(
                k,
                f"step {k}: the same batch, but yours runs {a.start_ms:.2f}-{a.end_ms:.2f} ms "
                f"and the reference {b.start_ms:.2f}-{b.end_ms:.2f} ms",
                f"第 {k} 步：批次相同，但你的运行在 {a.start_ms:.2f}–{a.end_ms:.2f} ms，"
                f"参考运行在 {b.start_ms:.2f}–{b.end_ms:.2f} ms",
            )
    return None


def _same(a: Step, b: Step) -> bool:
    """The same step (the quick check that spares building phrases for every step)."""
    return (
        a.prefill == b.prefill
        and (a.decode == b.decode or sorted(a.decode) == sorted(b.decode))
        and tuple(a.preempt) == tuple(b.preempt)
        and tuple(a.swap_out) == tuple(b.swap_out)
        and tuple(a.swap_in) == tuple(b.swap_in)
        and abs(a.end_ms - b.end_ms) <= TOLERANCE_MS
        and abs(a.start_ms - b.start_ms) <= TOLERANCE_MS
    )


def _sentence(k: int, only_mine: list[_Action], only_ref: list[_Action]) -> Difference:
    mine_en, mine_zh = _phrase(only_mine)
    ref_en, ref_zh = _phrase(only_ref)
    if only_mine and only_ref:
        en = f"step {k}: yours {mine_en}, the reference {ref_en}"
        zh = f"第 {k} 步：你的运行{mine_zh}，参考运行{ref_zh}"
    elif only_mine:
        en = f"step {k}: yours {mine_en}, the reference does not"
        zh = f"第 {k} 步：你的运行{mine_zh}，参考运行没有"
    else:
        en = f"step {k}: the reference {ref_en}, yours does not"
        zh = f"第 {k} 步：参考运行{ref_zh}，你的运行没有"
    return Difference(k, en, zh)


def _emitting(steps: list[Step]) -> list[tuple[float, list[tuple[int, str]]]]:
    """Token times of the run, grouped by time as a snapshot is: ``(ms, [(step, id), ...])``
    (steps that take no time, such as a free prefill, end with the step before them)."""
    out: list[tuple[float, list[tuple[int, str]]]] = []
    for s in steps:
        emits = s.emits
        if not emits:
            continue
        if out and abs(out[-1][0] - s.end_ms) <= TOLERANCE_MS:
            out[-1][1].extend((s.index, rid) for rid in emits)
        else:
            out.append((s.end_ms, [(s.index, rid) for rid in emits]))
    return out


def _reference_emits(snapshot: Snapshot) -> list[tuple[float, list[str]]]:
    by_time: dict[float, list[str]] = {}
    for rid, times in snapshot.token_times_ms.items():
        for t in times:
            by_time.setdefault(round(t, 6), []).append(rid)
    return sorted(by_time.items())


def _token_sentence(mine: Picture, a, b) -> Difference:
    """The next token times part: yours at ``a`` (or none), the reference's at ``b``."""
    step = a[1][0][0] if a is not None else len(mine.steps)
    if a is not None:
        rids = [rid for _, rid in a[1]]
        yours_en = f"yours gives a token to {_names(rids)} at {a[0]:.2f} ms"
        yours_zh = f"你的运行在 {a[0]:.2f} ms 给 {_names(rids)} 出 token"
    else:
        yours_en, yours_zh = "yours gives no more tokens", "你的运行不再出 token"
    if b is not None:
        ref_en = f"the reference's next token goes to {_names(b[1])} at {b[0]:.2f} ms"
        ref_zh = f"参考运行下一次在 {b[0]:.2f} ms 给 {_names(b[1])} 出 token"
    else:
        ref_en, ref_zh = "the reference gives no more tokens", "参考运行不再出 token"
    return Difference(
        step, f"step {step}: {yours_en}, {ref_en}", f"第 {step} 步：{yours_zh}，{ref_zh}"
    )


def _names(rids: list[str]) -> str:
    shown = ", ".join(sorted(rids)[:6])
    return shown + (f" and {len(rids) - 6} more" if len(rids) > 6 else "")


def _against_snapshot(mine: Picture, snapshot: Snapshot) -> Difference | None:
    ours, ref = _emitting(mine.steps), _reference_emits(snapshot)
    for k in range(max(len(ours), len(ref))):
        a = ours[k] if k < len(ours) else None
        b = ref[k] if k < len(ref) else None
        if a is None or b is None or abs(a[0] - b[0]) > TOLERANCE_MS:
            return _token_sentence(mine, a, b)
        got = sorted(rid for _, rid in a[1])
        if got != sorted(b[1]):
            extra = [(n, rid) for n, rid in a[1] if got.count(rid) > b[1].count(rid)]
            missing = sorted({rid for rid in b[1] if b[1].count(rid) > got.count(rid)})
            step = extra[0][0] if extra else a[1][0][0]
            mine_en = f"yours gives a token to {_names([r for _, r in extra])}" if extra else ""
            mine_zh = f"你的运行给 {_names([r for _, r in extra])} 出 token" if extra else ""
            ref_en = f"the reference to {_names(missing)}" if missing else "the reference does not"
            ref_zh = f"参考运行给 {_names(missing)}" if missing else "参考运行没有"
            if not extra:
                mine_en, ref_en = (
                    "the reference gives a token to " + _names(missing),
                    "yours does not",
                )
                mine_zh, ref_zh = f"参考运行给 {_names(missing)} 出 token", "你的运行没有"
            return Difference(
                step,
                f"step {step}: at {a[0]:.2f} ms {mine_en}, {ref_en}",
                f"第 {step} 步：在 {a[0]:.2f} ms，{mine_zh}，{ref_zh}",
            )
    for lane in mine.lanes:
        want = snapshot.status.get(lane.id)
        if want is not None and want != lane.status:
            ends = mine.columns.end_ms
            step = next(
                (
                    n
                    for n, t in enumerate(ends)
                    if lane.end_ms is not None and t >= lane.end_ms - TOLERANCE_MS
                ),
                len(ends),
            )
            return Difference(
                step,
                f"step {step}: request {lane.id} is {lane.status} in yours, {want} in the "
                "reference",
                f"第 {step} 步：请求 {lane.id} 在你的运行中{_zh(lane.status)}，"
                f"在参考运行中{_zh(want)}",
            )
    return None


_STATUS_ZH = {
    "completed": "完成",
    "rejected": "被拒绝",
    "cancelled": "被取消",
    "unfinished": "未完成",
}


def _zh(status: str) -> str:
    return _STATUS_ZH.get(status, status)
