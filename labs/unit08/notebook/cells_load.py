"""The unit 08 notebook's deliverable 2: the measurement protocol, closed vs open loop.

``keys`` are the answer keys (``answer_keys.KEYS``), used only for the figures the model
answers quote; the test cells ask the trusted grader for them at grading time.
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text
from grader.plugins import load_file
from grader.units import load_unit

HERE = Path(__file__).resolve().parent
UNIT = "unit08"
SETUP = load_file(HERE / "notebook_setup.py")
D2 = SETUP.D2
LOOP_FIELDS = [
    "p50_ttft",
    "p99_ttft",
    "rejected",
    "cancelled",
    "attainment_submitted",
    "attainment_succeeded",
]
LITTLE_FIELDS = [
    "area_ms",
    "clipped_residence_ms",
    "mean_in_system",
    "completion_rate_per_s",
    "mean_residence_ms",
]


def protocol_doc() -> dict:
    path = load_unit(UNIT).lab_dir / D2["protocol"]
    return json.loads(path.read_text(encoding="utf-8"))


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


claim = load_file(HERE / "cells.py").claim


def _loop_runs(prefix: str, extra: str = "") -> str:
    return (
        f"for k in range(1, REPLICATIONS + 1):\n"
        f'    simulate("--protocol", "{D2["protocol"]}", "--tier", "{D2["tier"]}",'
        f' "--replication", str(k),{extra} "--output", f"runs/{prefix}-{{k}}.json")'
    )


def d2_cells(keys: dict) -> list:
    key = keys["protocol"]
    closed, opened, rate = key["loops"]["closed"], key["loops"]["open"], key["rate"]
    n, above, little = key["replications"], key["open_above_p99"], key["little"]
    doc = protocol_doc()
    users, think = doc["loads"][0], doc["workload"]["arrivals"]["thinkMs"]
    fixed_seeds = ", ".join(map(str, doc["seeds"]))
    claim(
        opened["attainment_submitted"] < closed["attainment_submitted"],
        "the open loop's mean attainment is lower",
    )
    tail = (
        f"{n} 次重复里每一次开环的 p99 都更高"
        if above == n
        else f"开环的 p99 更高只在 {n} 次里的 {above} 次成立"
    )
    return [
        text(
            "d2_intro",
            f"""
## 交付 2 · 测量协议：闭环与开环

协议文件 `{D2["protocol"]}` 描述了这次实验：档位 `{D2["tier"]}`，请求尺寸从
`{doc["workload"]["sizes"]}` 里抽，{users} 个用户，每个用户在上一个请求结束（完成、被拒绝或
被取消）后先思考一段时间再发下一个，思考时间服从均值 {think:g} ms 的指数分布；每次重复
{doc["requestsPerRun"]} 个请求，去掉前 {doc["warmupRequests"]} 个（预热）和最后
{doc["cooldownRequests"]} 个（冷却），重复 {len(doc["seeds"])} 次，每次一个种子（协议文件的
`seeds`）。按学生分发的实验包里每个学生的种子不同，数字也就各不相同。
所有数字都只在协议的测量窗口里算（`measure.replication` 用的 `measurement_window`）。

- **闭环**：就是这个协议，`simulate.py --protocol ... --replication k`。到达取决于完成。
- **开环**：同一个协议，加 `--load open:λ`，到达时刻按速率 λ 的泊松过程事先排好，不管服务器快慢。

要比较两者，平均到达率必须相同。先跑闭环，从它的运行文件里算出它实际达到的 λ，再用这个 λ
跑开环（同样的种子）。

**先预测，再运行。** 在下一个单元格写下你对两种负载下窗口内 p99 TTFT 的估计（毫秒，失败按无穷晚）。
预测不按对错计分，但必须是数字。

```python
d2_prediction = {{"closed": ..., "open": ...}}
```
""",
        ),
        answer_code(
            "d2_prediction_answer",
            """
### BEGIN SOLUTION
# 闭环在变慢时自己少发请求，开环不会；同样的平均速率下，预计开环的尾部更长。
d2_prediction = {"closed": 3000.0, "open": 8000.0}
### END SOLUTION
""",
        ),
        test_code(
            "d2_prediction",
            1,
            "预测已填写。不按对错计分。",
            'check_numbers(d2_prediction, shape(["closed", "open"]), "d2_prediction")',
            ("d2_prediction",),
        ),
        locked_code(
            "d2_closed_run",
            f"REPLICATIONS = {len(doc['seeds'])}\n" + _loop_runs("closed"),
        ),
        text(
            "d2_rate_intro",
            f"""
从 `runs/closed-1.json` … `runs/closed-{len(doc["seeds"])}.json` 算出闭环的平均到达率
（请求/s），两种算法都写，各取所有重复的平均值：

- `measured`：协议窗口内到达的请求数 / 窗口长度（秒），窗口用
  `measurement_window(到达时刻, {doc["warmupRequests"]}, {doc["cooldownRequests"]})`；
- `little`：用 Little 定律，每个用户一个周期是“驻留 + 思考”，所以
  λ = {users} / （平均驻留 + {think / 1000:g} s），平均驻留是这次运行全部请求的
  `statusMs − arrivalMs` 的平均值（换算成秒）。

```python
d2_rate = {{"measured": ..., "little": ...}}
```
""",
        ),
        answer_code(
            "d2_rate_answer",
            f"""
import statistics

from servesim.protocol import measurement_window

closed = [load_requests(f"runs/closed-{{k}}.json") for k in range(1, REPLICATIONS + 1)]
### BEGIN SOLUTION
_measured, _little = [], []
for requests in closed:
    _window = measurement_window(
        [r["arrivalMs"] for r in requests], {doc["warmupRequests"]}, {doc["cooldownRequests"]}
    )
    _measured.append(len(_window.select(requests)) / _window.length_s)
    _residence_s = statistics.fmean(r["statusMs"] - r["arrivalMs"] for r in requests) / 1000
    _little.append({users} / (_residence_s + {think / 1000!r}))
d2_rate = {{"measured": statistics.fmean(_measured), "little": statistics.fmean(_little)}}
### END SOLUTION
""",
        ),
        test_code(
            "d2_rate",
            2,
            "闭环的平均到达率。本地只检查答案的形状；",
            'check_numbers(d2_rate, shape(["measured", "little"]), "d2_rate")',
            ("d2_rate",),
        ),
        text(
            "d2_open_intro",
            """
下面的单元格用你的 `measured`（保留两位小数）跑开环的每一次重复。然后用**你的** `measure.py`
给两种负载的每一次重复算一组数（`measure.replication`，不用质量检查），填进 `d2_loops`，每项取
所有重复的平均值：窗口内已完成请求的 p50 TTFT（nearest-rank），窗口内全部请求的 p99 TTFT（失败
按无穷晚；只要有一次重复是无穷大就写 `None`），窗口内被拒绝、被取消的请求数，以及 SLO 对已提交和
对已成功请求的达成率。`d2_open_above` 数的是：有几次重复里，开环的 p99 比同一种子的闭环 p99
更高（无穷大算更高）。

最后在开环的第 1 次重复上，用 `measure.little` 检验协议窗口里 Little 定律的两边，把它返回的
五个字段填进 `d2_little`。

```python
d2_loops = {"closed": {"p50_ttft": ..., "p99_ttft": ..., "rejected": ..., "cancelled": ...,
                        "attainment_submitted": ..., "attainment_succeeded": ...},
            "open": {...}
d2_open_above = ...
d2_little = {"area_ms": ..., "clipped_residence_ms": ..., "mean_in_system": ...,
             "completion_rate_per_s": ..., "mean_residence_ms": ...}
```
""",
        ),
        locked_code(
            "d2_open_run",
            _loop_runs("open", ' "--load", f"open:{round(d2_rate[\'measured\'], 2)}",'),
        ),
        answer_code(
            "d2_answer",
            f"""
import measure
from servesim.metrics import percentile

SLO2 = measure.Slo(ttft_ms={doc["slo"]["ttftMs"]!r}, tpot_ms={doc["slo"]["tpotMs"]!r})
WARMUP2, COOLDOWN2 = {doc["warmupRequests"]}, {doc["cooldownRequests"]}
TOLERANCE2 = {doc["steadyTolerance"]!r}
loops = {{
    "closed": closed,
    "open": [load_requests(f"runs/open-{{k}}.json") for k in range(1, REPLICATIONS + 1)],
}}
### BEGIN SOLUTION
def _summary(requests):
    got = measure.replication(requests, SLO2, WARMUP2, COOLDOWN2, TOLERANCE2)
    inside = [r for r in requests if got.window_start_ms <= r["arrivalMs"] < got.window_end_ms]
    served = [r["ttftMs"] for r in inside if r["status"] == measure.COMPLETED]
    return {{
        "p50_ttft": percentile(served, 50),
        "p99_ttft": got.p99_ttft_ms,
        "rejected": sum(r["status"] == measure.REJECTED for r in inside),
        "cancelled": sum(r["status"] == measure.CANCELLED for r in inside),
        "attainment_submitted": got.goodput.attainment_over_submitted,
        "attainment_succeeded": got.goodput.attainment_over_succeeded,
    }}


_rows = {{name: [_summary(requests) for requests in runs] for name, runs in loops.items()}}
def _mean(values):
    return None if None in values else statistics.fmean(values)


d2_loops = {{
    name: {{field: _mean([r[field] for r in rows]) for field in rows[0]}}
    for name, rows in _rows.items()
}}
d2_open_above = sum(
    o["p99_ttft"] is None or (c["p99_ttft"] is not None and o["p99_ttft"] > c["p99_ttft"])
    for c, o in zip(_rows["closed"], _rows["open"])
)
_first = loops["open"][0]
_window = measurement_window([r["arrivalMs"] for r in _first], WARMUP2, COOLDOWN2)
_law = measure.little(_first, _window.start_ms, _window.end_ms)
d2_little = {{field: getattr(_law, field) for field in {LITTLE_FIELDS!r}}}
### END SOLUTION
""",
        ),
        test_code(
            "d2_loops",
            3,
            "闭环与开环的尾延迟、失败数和达成率。本地只检查答案的形状；",
            f'check_numbers(d2_loops, shape(["closed", "open"], shape({LOOP_FIELDS!r}, OPTIONAL)),'
            ' "d2_loops")\n'
            'check_numbers({"d2_open_above": d2_open_above}, shape(["d2_open_above"]), "d2")',
            ("d2_loops", "d2_open_above"),
        ),
        test_code(
            "d2_little",
            2,
            "Little 定律的两边。本地检查形状，并检查两边相等；",
            f'check_numbers(d2_little, shape({LITTLE_FIELDS!r}, OPTIONAL), "d2_little")\n'
            'check_close(d2_little["area_ms"], d2_little["clipped_residence_ms"],'
            ' "面积与驻留之和")',
            ("d2_little",),
        ),
        text(
            "d2_explain_prompt",
            """
**问题 2（人工评分）**：
(a) 用你的数字比较闭环与开环：平均到达率相同，尾延迟和达成率有什么不同？“开环的尾部更长”在几次
重复里成立，这够不够下结论？和你的预测差在哪里？
(b) 用这次实验说明什么是“协调遗漏”（coordinated omission）：闭环少测到了哪些请求，为什么？
(c) 如果要对外声称“这个档位在 λ 请求/s 下满足 SLO”，该用哪一种负载测量？Little 定律的两种
λ 和面积检验在这里各起什么作用？
""",
        ),
        manual_answer(
            "d2_explain",
            3,
            f"""
### BEGIN SOLUTION
（参考答案里的数字来自随课程发布的协议（种子 {fixed_seeds}）；学生的种子不同，
按他们自己的数字批改。）
(a) 闭环在协议窗口里实际达到 {rate["measured"]:.2f} 请求/s（{n} 次重复的平均；Little 定律估计为
{rate["little"]:.2f}），开环按 {round(rate["measured"], 2):g} 请求/s 发送。{n} 次重复的平均：
完成请求的
p50 TTFT 闭环 {closed["p50_ttft"]:.0f} ms、开环 {opened["p50_ttft"]:.0f} ms；对已提交请求的达成率
{pct(closed["attainment_submitted"])} 对 {pct(opened["attainment_submitted"])}。{tail}。
平均速率一样，开环的尾部更长、达成率更低；只有 {n} 次重复，写结论时要带上“{n} 次里有几次”。
(b) 闭环里每个用户在等上一个请求结束之前不会发下一个。服务器一旦变慢，{users} 个用户都
卡在等待里，到达率随之下降。闭环回答的是“这些会等回复的用户感受如何”，这本身是一个合理的
问题；但要回答的如果是一股固定的外部到达流（这里是速率 λ 的开环）下的尾延迟，用闭环去测，
拥塞期间本该到达的请求要等拥塞过去才发出，测量里没有它们，尾延迟因此偏低，这才是协调遗漏。
开环按事先排好的时刻发送，保留了这些请求。
(c) 要对外承诺某个速率下的 SLO，应该用开环（或真实 trace 的到达时刻），并按协议重复多次、给出
区间。Little 定律的两种 λ 接近，说明闭环的速率算对了、开环比较的是同一个平均速率；面积等于
驻留之和（{little["area_ms"]:.0f} request·ms，平均 {little["mean_in_system"]:.1f} 个请求在系统中）
说明运行文件里的到达和离开时刻自洽，这是检验，不是对延迟的结论。
### END SOLUTION
""",
        ),
    ]
