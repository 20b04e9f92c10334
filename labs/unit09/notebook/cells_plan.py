"""The unit 09 notebook's exercise 31.12: the evidence plan, with every denominator named.

``keys`` are the answer keys (``answer_keys.KEYS``), used only for the claims the build checks;
the test cells hand the student's answers to the trusted grader, which computes the keys at
grading time.
"""

from __future__ import annotations

from pathlib import Path

from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text
from grader.plugins import load_file

HERE = Path(__file__).resolve().parent
SETUP = load_file(HERE / "notebook_setup.py")
D2 = SETUP.D2
claim = load_file(HERE / "cells.py").claim


def d2_run_source() -> str:
    spec = D2["recompute"]
    situations = ", ".join(f"{c!r}: {n!r}" for c, n in D2["situations"].items())
    out = f"runs/{spec['trace']}-{spec['policy']}.json"
    return f"""
import measure
import tailruns

# 过载、慢消费者：tailruns.py 的两种情形（fill_slots 调度，31.13 的设备）
evidence_runs = {{
    cause: tailruns.engine_run(tailruns.SITUATIONS[name]())
    for cause, name in {{{situations}}}.items()
}}
# 重算：你的 {spec["policy"]} 在只有 24 页的池子上运行 {spec["trace"]}，会发生抢占
simulate("--trace", "{spec["trace"]}", "--device-profile", "{spec["device"]}",
         "--policy", "{spec["policy"]}", "--output", "{out}")
evidence_runs["recompute"] = load_run("{out}")
evidence_runs = {{cause: evidence_runs[cause] for cause in {SETUP.D2_RUNS!r}}}
MEASURES = {SETUP.D2_MEASURES!r}
DENOMINATORS = {SETUP.D2_DENOMINATORS!r}
"""


def share(pair: list) -> str:
    return f"{100 * pair[0] / pair[1]:.1f} %"


def d2_shape() -> str:
    leaf = (
        '{"prefill_amplification": [0, 0], "waiting_share": [0, 0], "mean_queue": 0,'
        ' "itl_gaps": [0, 0, 0], "slow_clients": OPTIONAL}'
    )
    return f'check_numbers(d2, shape({SETUP.D2_RUNS!r}, {leaf}), "d2")'


def d2_cells(keys: dict) -> list:
    key = keys["evidence"]
    figures, plan, denominators = key["figures"], key["plan"], key["denominators"]
    claim(sorted(plan) == sorted(SETUP.D2_RUNS), "each measurement singles out one run")
    claim(
        all(d in SETUP.D2_DENOMINATORS for d in denominators.values()),
        "the right denominators are among the choices",
    )
    amp = figures["recompute"]["prefill_amplification"]
    claim(amp[0] > amp[1], "the recompute run executes more prefill than it needed")
    over, slow = figures["overload"], figures["slow clients"]["slow_clients"]
    claim(slow is not None and 0 < slow[0] < slow[1], "some, not all, slow streams paused")
    rejected = keys["diagnosis"]["causes"]["slow clients"]["rejected"]
    claim(rejected == 0, "the slow-client run rejects nothing")
    return [
        text(
            "d2_intro",
            f"""
## 习题 31.12 · 证据方案：把三种原因分开

尾延迟变长时，三种原因看上去很像：**过载**（到达的请求比设备服务得快，队列越排越长）、
**重算放大**（抢占之后 prefill 要重跑，设备做了重复的功）、**慢消费者**（客户端读得慢，
输出缓冲满了，流被暂停）。一套证据方案要给每种原因一个测量，并且写清每个比例的分母：
“暂停的请求 / 有输出的请求”和“暂停的请求 / 全部提交的请求”是两个不同的数。

下面的只读单元格准备三次运行，每次的原因都是构造出来的：

- `overload`：`tailruns.py` 的过载情形，到达间隔远小于轻负载（课程原版每 40 ms 一个；你的数值见
  实验文件夹里的 `tailruns.json`），超过 K = 8 个槽位能服务的速率；
- `recompute`：**你的** `{D2["recompute"]["policy"]}` 在
  `{D2["recompute"]["device"]}`（24 页）上运行
  `{D2["recompute"]["trace"]}`，页不够时要抢占、之后重跑 prefill；
- `slow clients`：`tailruns.py` 的慢客户端情形，一部分请求的客户端读得比输出慢（课程原版是每四个
  请求里有一个每秒只读 1,500 字节；你的比例和读速见 `tailruns.json`）。

请对每次运行，用**你的** `measure.py` 算出（比例写成 `[num, den]`）：

- `prefill_amplification`：执行的 prefill token / 新的 prompt token；
- `waiting_share`：等待第一步的时间 / 在系统中的时间；
- `mean_queue`：从第一个到达到最后一个到达之间，排队请求数的时间加权均值；
- `itl_gaps`：`itl_split` 的三类间隔各有几个：`[with_prefill, without_prefill, paused]`；
- `slow_clients`：`slow_clients(run).paused` 的 `[num, den]`；运行没有流式输出证据时写 `None`。
""",
        ),
        locked_code("d2_run", d2_run_source()),
        answer_code(
            "d2_answer",
            """
### BEGIN SOLUTION
def pair(ratio):
    return [ratio.num, ratio.den]


d2 = {}
for cause, run in evidence_runs.items():
    arrivals = [r["arrivalMs"] for r in run["requests"]]
    split = measure.itl_split(run)
    slow = measure.slow_clients(run)
    d2[cause] = {
        "prefill_amplification": pair(measure.prefill_amplification(run)),
        "waiting_share": pair(measure.waiting_share(run)),
        "mean_queue": measure.mean_queue(run, min(arrivals), max(arrivals)),
        "itl_gaps": [len(split.with_prefill), len(split.without_prefill), len(split.paused)],
        "slow_clients": None if slow is None else pair(slow.paused),
    }
### END SOLUTION
for cause, row in d2.items():
    print(cause, row)
""",
        ),
        test_code(
            "d2_figures",
            2,
            "三次运行的测量值。本地只检查答案的形状；",
            d2_shape(),
            ("d2",),
        ),
        text(
            "d2_plan_intro",
            f"""
现在写出方案。`d2_plan` 把每次运行（`{"`、`".join(SETUP.D2_RUNS)}`）对应到能把它的原因
单独认出来的那个测量（`{"`、`".join(SETUP.D2_MEASURES)}` 之一）：这个测量在它自己的运行
里最大（`slow_clients` 看暂停的比例，`None` 当作 0）。请用上面的 `d2` 算出来，而不是凭印象填。

`d2_denominators` 给这三个测量各写明分母，从下面的候选里选一个（原样抄写英文短语，和
`Ratio.what` 里 “/” 后面的写法一致）：

{chr(10).join(f"- `{d}`" for d in SETUP.D2_DENOMINATORS)}
""",
        ),
        answer_code(
            "d2_plan_answer",
            """
def share(pair):
    return 0.0 if pair is None or not pair[1] else pair[0] / pair[1]


### BEGIN SOLUTION
d2_plan = {max(d2, key=lambda cause: share(d2[cause][name])): name for name in MEASURES}
d2_denominators = {
    "prefill_amplification": "new prompt tokens",
    "waiting_share": "ms in the system (prefilled)",
    "slow_clients": "requests streamed",
}
### END SOLUTION
print(d2_plan)
print(d2_denominators)
""",
        ),
        test_code(
            "d2_plan",
            2,
            "方案与分母。本地只检查答案的形状；",
            f'check_choice(d2_plan, {SETUP.D2_RUNS!r}, MEASURES, "d2_plan")\n'
            'check_choice(d2_denominators, MEASURES, DENOMINATORS, "d2_denominators")',
            ("d2_plan", "d2_denominators"),
        ),
        text(
            "d2_explain_prompt",
            """
**问题 2（人工评分）**：(a) 这三次运行的到达时刻都事先定好，不受响应快慢影响（开环）。
如果改成闭环（每个用户等上一个响应结束再发下一个），过载的证据会怎样变化？(b) 用你算出的
数字说明：慢客户端的比例如果改用“全部提交的请求”做分母、重算放大如果改用“执行的 prefill
token”做分母，各会得出什么数，为什么是错的？(c) 只报告成功请求的平均速度，会漏掉什么？
""",
        ),
        manual_answer(
            "d2_explain",
            2,
            f"""
### BEGIN SOLUTION
（参考答案里的数字来自课程原版的 `tailruns.json` 和 `traces/evict.json`；学生的数值不同，
按他们自己的数字批改。）
(a) 开环按外部时钟发请求，设备跟不上时队列持续增长：`overload` 的平均排队是
{over["mean_queue"]:.1f} 个请求，等待占在系统中时间的 {share(over["waiting_share"])}。闭环里
下一个请求要等上一个响应，过载时到达率自动下降，队列不再增长，过载就被“藏”进了更低的吞吐里。
(b) 慢客户端：{slow[0]:g} / {slow[1]:g} 是有输出的请求里被暂停的比例。被拒绝、在排队时被取消的
请求从未开始输出，本来就不可能被暂停；把它们算进分母只会把比例压低，拒绝越多越显得“慢客户端
少”（这次运行没有拒绝，两个分母碰巧相等，换一次过载的运行就不相等了）。重算放大：
{amp[0]:g} / {amp[1]:g} 是执行的 prefill token 与新 prompt token 之比；换成执行量做分母，比值
恒为 1，重算就看不见了。(c) 超时、被取消、被拒绝的请求不在“成功请求”里，只看它们的平均
速度，最慢的那部分恰好被丢掉；报告要写明提交、成功、拒绝、取消各多少，以及每个比例的分母。
### END SOLUTION
""",
        ),
    ]
