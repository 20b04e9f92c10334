"""The lesson's Chinese for what ``ex31_13.py`` and ``measure.diagnose()`` write in English.

The page quotes the program's reasons and follow-up labels; it shows them in Chinese with the
program's own figures. Each English text is matched whole by one pattern and its numbers are
carried over as written; a text no pattern matches stops the build (a new wording is translated,
never shown half in English).
"""

from __future__ import annotations

import re

from grader.sitebuild.claims import BuildError

N = r"(\d+(?:\.\d+)?)"
WHY = (
    (
        rf"p99 wait {N} ms \(baseline {N}\), p99 ITL {N} ms \(baseline {N}\): within {N} x the "
        "baseline",
        "p99 等待 {0} ms（基线 {1} ms），p99 ITL {2} ms（基线 {3} ms）：都在基线的 {4} 倍以内",
    ),
    (
        rf"p99 wait {N} ms \(baseline {N}\), p99 ITL {N} ms \(baseline {N}\): grown, and no rule "
        "explains it",
        "p99 等待 {0} ms（基线 {1} ms），p99 ITL {2} ms（基线 {3} ms）："
        "尾部变长了，但没有哪条规则能解释",
    ),
    (
        rf"mean queue {N} then {N} requests, waiting {N} of residence, {N} of {N} submitted "
        "rejected",
        "平均排队从 {0} 个请求涨到 {1} 个；等待占在系统时间的 {2}；提交的 {4} 个里拒绝了 {3} 个",
    ),
    (
        rf"p99 ITL {N} ms > {N} x the decode-only median {N} ms; {N} of {N} long gaps ended by "
        "prefill steps",
        "p99 ITL {0} ms，超过只含 decode 的步的间隔中位数 {2} ms 的 {1} 倍；"
        "{4} 个长间隔里 {3} 个结束于含 prefill 的步",
    ),
    (
        rf"{N} of {N} streamed requests paused, {N} cancelled as stalled",
        "流式输出的 {1} 个请求里 {0} 个暂停过，{2} 个在暂停期限处被取消",
    ),
    (
        rf"{N} requests got a first token; a p99 needs {N}",
        "{0} 个请求拿到首 token，算 p99 至少要 {1} 个",
    ),
)
LABEL = (
    (
        rf"admission control: queue cap {N}, until capacity is warm",
        "准入控制：队列上限 {0}，撑到新容量预热好",
    ),
    (rf"capacity added: K = {N} slots", "加容量：K = {0} 个序列"),
    (rf"chunked prefill: budget {N} tokens a step", "分块 prefill：每步 token 预算 {0}"),
    (rf"pause deadline {N} s: stalled streams are cancelled", "暂停期限 {0} s：读不动的流被取消"),
)
LOAD = {"light": "轻负载", "overload": "过载", "long prompts": "长提示", "slow clients": "慢客户端"}


def _translate(text: str, table, what: str) -> str:
    for pattern, zh in table:
        match = re.fullmatch(pattern, text)
        if match:
            return zh.format(*match.groups())
    raise BuildError(f"unit09 lesson: no Chinese for the {what} {text!r} (lesson_text.py)")


def why_zh(text: str) -> str:
    """``diagnose()``'s reason in Chinese, with its figures as the program wrote them."""
    return _translate(text, WHY, "diagnosis reason")


def label_zh(text: str) -> str:
    """A follow-up run's label from ``ex31_13.py`` in Chinese."""
    return _translate(text, LABEL, "follow-up label")


def label_value(text: str) -> str:
    """The setting a follow-up label names (its first figure: the queue cap, K, the budget)."""
    match = re.search(N, text)
    if not match:
        raise BuildError(f"unit09 lesson: the follow-up label {text!r} names no setting")
    return match.group(1)


def load_zh(name: str) -> str:
    """A load's name in Chinese (the program's name stays beside it on the page)."""
    if name not in LOAD:
        raise BuildError(f"unit09 lesson: no Chinese for the load {name!r} (lesson_text.py)")
    return LOAD[name]
