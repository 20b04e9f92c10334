"""The unit 09 notebook's exercise 31.13: the diagnosis of a grown tail and what to do.

``keys`` are the answer keys (``answer_keys.KEYS``), used only for the figures the model
answer quotes and for the claims the build checks; the test cells hand the student's answers
to the trusted grader, which computes the keys at grading time.
"""

from __future__ import annotations

from pathlib import Path

from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text
from grader.plugins import load_file

HERE = Path(__file__).resolve().parent
SETUP = load_file(HERE / "notebook_setup.py")
claim = load_file(HERE / "cells.py").claim


D3_RUN = """
import ex31_13

baseline = tailruns.baseline_run()  # 轻负载的另一次抽样：诊断的对照
situations = {name: tailruns.engine_run(rows()) for name, rows in tailruns.SITUATIONS.items()}
# 每种诊断意味着的处置，也在引擎上跑一遍（ex31_13.py 的 FOLLOW_UPS）
follow_ups = {
    name: {
        label: tailruns.engine_run(tailruns.SITUATIONS[name](), **settings)
        for label, settings in ups
    }
    for name, ups in ex31_13.FOLLOW_UPS.items()
}
CAUSES = [cause.value for cause in measure.Cause]
print("device:", tailruns.DEVICE)
for name, ups in follow_ups.items():
    print(name, "->", list(ups))
"""


def _ms(x: float) -> str:
    return f"{x:.1f} ms"


def d3_cells(keys: dict) -> list:
    causes, after = keys["diagnosis"]["causes"], keys["diagnosis"]["after"]
    expected = {
        "light": "none",
        "overload": "overload",
        "long prompts": "prefill blocking decode",
        "slow clients": "slow clients",
    }
    claim({n: c["cause"] for n, c in causes.items()} == expected, "each situation's cause")
    over = after["overload"]
    cap, k16, k48 = list(over)
    claim(over[cap]["p99_wait_ms"] < causes["overload"]["p99_wait_ms"], "a queue cap cuts waits")
    claim(over[cap]["rejected"] > 0, "a queue cap rejects requests")
    claim(over[k16]["cause"] == "overload" and over[k48]["cause"] == "none", "K = 48 is enough")
    claim(over[cap]["cause"] == "overload", "a queue cap alone leaves the device overloaded")
    long_first = next(iter(after["long prompts"]))
    slow_up = next(iter(after["slow clients"]))
    claim(after["slow clients"][slow_up]["cause"] == "slow clients", "a deadline still sees pauses")
    d3_template = ", ".join(f"{n!r}: {{...}}" for n in causes)
    return [
        text(
            "d3_intro",
            f"""
## 习题 31.13 · 显存有余，尾延迟却在变长

`tailruns.py` 的设备有 8,192 页 KV，却最多同时容纳 K = 8 个序列：8 个序列用到的页不到一半，
显存始终大量空闲。它在这台设备上搭出四种情形，每种的原因都是构造出来的：`light`（轻负载，
对照）、`overload`（过载）、`long prompts`（长提示夹在 decode 流中间）、`slow clients`（慢客户端）。
每种情形的数值（到达间隔、长提示的长度和间隔、慢客户端的比例和读速、长度排列的偏移）来自实验
文件夹里的 `tailruns.json`；课程给每位同学单独生成实验文件夹时它每人不同，
所以你算出的数字是你自己的。
显存有余只说明 KV 容量不是瓶颈，并不说明计算、调度或输出路径跟得上。

下面的只读单元格运行全部情形，以及 `ex31_13.py` 为每种诊断准备的处置（接纳控制、加槽位、
分块 prefill、更短的暂停期限）。请用**你的** `measure.diagnose(run, baseline)` 对每次运行做
诊断，写进 `d3`（四种情形）和 `d3_after`（`{{情形: {{处置: 诊断}}}}`），每条诊断写成：

```python
{{"cause": 诊断出的原因（measure.Cause 的 value）, "p99_wait_ms": 等待第一步的 p99,
 "p99_itl_ms": ITL 的 p99, "rejected": 被拒绝的请求数}}
```

`d3` 的形状是 `{{{d3_template}}}`。
""",
        ),
        locked_code("d3_run", D3_RUN),
        answer_code(
            "d3_answer",
            """
### BEGIN SOLUTION
def diagnosis(run):
    got = measure.diagnose(run, baseline)
    ev = got.evidence
    return {
        "cause": got.cause.value,
        "p99_wait_ms": ev.p99_wait_ms,
        "p99_itl_ms": ev.p99_itl_ms,
        "rejected": ev.rejected.num,
    }


d3 = {name: diagnosis(run) for name, run in situations.items()}
d3_after = {name: {label: diagnosis(run) for label, run in runs.items()}
            for name, runs in follow_ups.items()}
### END SOLUTION
for name, row in d3.items():
    print(name, row)
""",
        ),
        test_code(
            "d3_causes",
            2,
            "四种情形的诊断。本地只检查答案的形状；",
            'for name in situations:\n    check_diagnosis(d3.get(name), CAUSES, f"d3[{name!r}]")',
            ("d3",),
        ),
        test_code(
            "d3_after",
            2,
            "每种处置之后的诊断。本地只检查答案的形状；",
            "for name, ups in follow_ups.items():\n"
            "    for label in ups:\n"
            "        check_diagnosis(d3_after.get(name, {}).get(label), CAUSES,"
            ' f"d3_after[{name!r}][{label!r}]")',
            ("d3_after",),
        ),
        text(
            "d3_explain_prompt",
            """
**问题 3（人工评分）**：用你算出的数字回答：(a) 三种原因分别由哪一项证据认出，各自应该调整
准入、调度还是扩容？(b) 过载时决定扩容，新的容量要启动、加载权重、预热之后才能接流量。
在它生效之前应该做什么？怎样确认这样做有效？代价由谁承担，怎样在报告里写清楚？
""",
        ),
        manual_answer(
            "d3_explain",
            3,
            f"""
### BEGIN SOLUTION
（参考答案里的数字来自课程原版的 `tailruns.json`；学生的数值不同，按他们自己的数字批改。）
(a) 过载：后半段的平均排队长度明显高于前半段、等待占驻留时间的比例很高，等待第一步的 p99
达到 {_ms(causes["overload"]["p99_wait_ms"])}（对照只有 {_ms(causes["light"]["p99_wait_ms"])}），
而 ITL 的 p99 只有 {_ms(causes["overload"]["p99_itl_ms"])}：请求不是被慢慢生成，而是在排队。
对策是准入控制加扩容（增加饱和那一段的容量）。长提示阻塞 decode：ITL 的 p99 是
{_ms(causes["long prompts"]["p99_itl_ms"])}，长间隔几乎都由带 prefill 的步结束；这是调度问题，
应当分块 prefill（如处置 `{long_first}`，之后 ITL 的 p99 降到
{_ms(after["long prompts"][long_first]["p99_itl_ms"])}），
同时保留足够的 prefill 份额，否则新请求的等待会变长。慢客户端：流式请求里有相当比例被暂停，
ITL 的 p99 {_ms(causes["slow clients"]["p99_itl_ms"])} 几乎全来自跨越暂停的间隔，排队并不增长；
应当检查背压、缓冲上限与取消的传播，加设备没有用。处置 `{slow_up}` 之后 ITL 的 p99 是
{_ms(after["slow clients"][slow_up]["p99_itl_ms"])}，但这是把停住的流取消换来的：诊断仍是
slow clients，被取消的流拿不到完整输出，报告里要把它们算作已提交请求中的取消。
(b) 扩容生效前，按队列预算和期限执行排队或拒绝，让积压停止增长：本次运行中处置 `{cap}` 把等待
第一步的 p99 从 {_ms(causes["overload"]["p99_wait_ms"])} 降到 {_ms(over[cap]["p99_wait_ms"])}，
代价是拒绝了 {over[cap]["rejected"]:g} 个请求。被拒绝的请求必须留在“已提交”的分母里报告，
不能只报被服务请求的延迟。排队上限只是挡住积压：加了上限之后诊断仍是 overload，设备还是
跟不上，所以还要扩容，并确认积压确实在消退（后半段的排队不再高于前半段）后再放开限制：
`{k16}` 仍然过载，`{k48}` 之后诊断为 none。
### END SOLUTION
""",
        ),
    ]
