"""The unit 08 notebook's deliverable 2: the measurement protocol, closed vs open loop.

``keys`` are the answer keys (``answer_keys.KEYS``), used only for the figures the model
answers quote; the test cells ask the trusted grader for them at grading time.
"""

from __future__ import annotations

from pathlib import Path

from grader.course import nbcells
from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text
from grader.plugins import load_file

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
CLOSED = f"closed:{D2['users']}:{D2['think_ms']:g}"


def hidden(body: str) -> str:
    return nbcells.hidden(body, UNIT)


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


claim = load_file(HERE / "cells.py").claim


def _loop_run(load: str, output: str) -> str:
    return (
        f'simulate("--trace", "{D2["trace"]}", "--tier", "{D2["tier"]}", "--load", {load},'
        f' "--requests", "{D2["requests"]}", "--output", "{output}")'
    )


def d2_cells(keys: dict) -> list:
    key = keys["protocol"]
    closed, opened, rate = key["loops"]["closed"], key["loops"]["open"], key["rate"]
    little = key["little"]
    claim(opened["p99_ttft"] > closed["p99_ttft"], "the open loop has the longer tail")
    # one replication of each loop: the attainment may go either way, so the answer reads it off
    lower = opened["attainment_submitted"] < closed["attainment_submitted"]
    return [
        text(
            "d2_intro",
            f"""
## 交付 2 · 测量协议:闭环与开环

同一个档位(`{D2["tier"]}`),同样从 `{D2["trace"]}` 里抽请求尺寸,发 {D2["requests"]} 个请求,
用两种方式施加负载:

- **闭环** `--load {CLOSED}`:{D2["users"]} 个用户,每个用户在上一个请求结束(完成、被拒绝或
  被取消)之后思考 {D2["think_ms"]:g} ms,再发下一个。到达取决于完成。
- **开环** `--load open:λ`:到达时刻按速率 λ 的泊松过程事先排好,不管服务器快慢。

要比较两者,平均到达率必须相同。先跑闭环,从它的运行文件里算出它实际达到的 λ,再用这个 λ
跑开环。

**先预测,再运行。** 在下一个单元格写下你估计的两种负载下完成请求的 p99 TTFT(毫秒)。
预测不按对错计分,但必须是数字。

```python
d2_prediction = {{"closed": ..., "open": ...}}
```
""",
        ),
        answer_code(
            "d2_prediction_answer",
            """
### BEGIN SOLUTION
# 闭环在变慢时自己少发请求,开环不会;同样的平均速率下,预计开环的尾部更长。
d2_prediction = {"closed": 5000.0, "open": 8000.0}
### END SOLUTION
""",
        ),
        test_code(
            "d2_prediction",
            1,
            "预测已填写。不按对错计分。",
            'check_numbers(d2_prediction, shape(["closed", "open"]), "d2_prediction")',
        ),
        locked_code("d2_closed_run", _loop_run(f'"{CLOSED}"', "runs/closed.json")),
        text(
            "d2_rate_intro",
            f"""
从 `runs/closed.json` 算出闭环的平均到达率(请求/秒),两种算法都写:

- `measured`:请求数 / 最后一个请求的到达时刻(换算成秒);
- `little`:用 Little 定律,每个用户一个周期是「驻留 + 思考」,所以
  λ = {D2["users"]} / (平均驻留 + {D2["think_ms"] / 1000:g} s),平均驻留是全部请求的
  `statusMs − arrivalMs` 的平均值(换算成秒)。

```python
d2_rate = {{"measured": ..., "little": ...}}
```
""",
        ),
        answer_code(
            "d2_rate_answer",
            f"""
closed = load_requests("runs/closed.json")
### BEGIN SOLUTION
_last_s = max(r["arrivalMs"] for r in closed) / 1000
_residence_s = sum(r["statusMs"] - r["arrivalMs"] for r in closed) / len(closed) / 1000
d2_rate = {{
    "measured": len(closed) / _last_s,
    "little": {D2["users"]} / (_residence_s + {D2["think_ms"] / 1000!r}),
}}
### END SOLUTION
""",
        ),
        test_code(
            "d2_rate",
            2,
            "闭环的平均到达率。本地只检查答案的形状;",
            'check_numbers(d2_rate, shape(["measured", "little"]), "d2_rate")\n\n'
            + hidden(
                '_key = _trusted("expected", "protocol")\n'
                'check_close(d2_rate, _key["rate"], "d2_rate")'
            ),
        ),
        text(
            "d2_open_intro",
            f"""
下面的单元格用你的 `measured`(保留两位小数)跑开环。然后用**你的** `measure.py` 给两次运行
各算一组数,填进 `d2_loops`:完成请求的 p50、p99 TTFT(nearest-rank),被拒绝、被取消的请求数,
以及 SLO(TTFT ≤ {D2["slo_ttft_ms"]:g} ms,TPOT ≤ {D2["slo_tpot_ms"]:g} ms)对已提交和对已成功
请求的达成率(观察窗覆盖全部请求的到达;档位的质量检查这里不用)。

最后在开环运行上,用 `measure.little` 检验 [{D2["little_start_ms"]:g}, {D2["little_end_ms"]:g}] ms
这个窗口里 Little 定律的两边,把它返回的五个字段填进 `d2_little`。

```python
d2_loops = {{"closed": {{"p50_ttft": ..., "p99_ttft": ..., "rejected": ..., "cancelled": ...,
                        "attainment_submitted": ..., "attainment_succeeded": ...}},
            "open": {{...}}}}
d2_little = {{"area_ms": ..., "clipped_residence_ms": ..., "mean_in_system": ...,
             "completion_rate_per_s": ..., "mean_residence_ms": ...}}
```
""",
        ),
        locked_code(
            "d2_open_run",
            _loop_run("f\"open:{round(d2_rate['measured'], 2)}\"", "runs/open.json"),
        ),
        answer_code(
            "d2_answer",
            f"""
import measure
from servesim.metrics import percentile

SLO2 = measure.Slo(ttft_ms={D2["slo_ttft_ms"]!r}, tpot_ms={D2["slo_tpot_ms"]!r})
loops = {{"closed": closed, "open": load_requests("runs/open.json")}}
### BEGIN SOLUTION
d2_loops = {{}}
for name, requests in loops.items():
    ttfts = [r["ttftMs"] for r in requests if r["status"] == measure.COMPLETED]
    report = measure.goodput(requests, SLO2, 0.0, max(r["statusMs"] for r in requests) + 1)
    d2_loops[name] = {{
        "p50_ttft": percentile(ttfts, 50),
        "p99_ttft": percentile(ttfts, 99),
        "rejected": sum(r["status"] == measure.REJECTED for r in requests),
        "cancelled": sum(r["status"] == measure.CANCELLED for r in requests),
        "attainment_submitted": report.attainment_over_submitted,
        "attainment_succeeded": report.attainment_over_succeeded,
    }}
_little = measure.little(loops["open"], {D2["little_start_ms"]!r}, {D2["little_end_ms"]!r})
d2_little = {{field: getattr(_little, field) for field in {LITTLE_FIELDS!r}}}
### END SOLUTION
""",
        ),
        test_code(
            "d2_loops",
            3,
            "闭环与开环的尾延迟、失败数和达成率。本地只检查答案的形状;",
            f'check_numbers(d2_loops, shape(["closed", "open"], shape({LOOP_FIELDS!r}, OPTIONAL)),'
            ' "d2_loops")\n\n'
            + hidden(
                '_key = _trusted("expected", "protocol")\n'
                'check_close(d2_loops, _key["loops"], "d2_loops")'
            ),
        ),
        test_code(
            "d2_little",
            2,
            "Little 定律的两边。本地检查形状,并检查两边相等;",
            f'check_numbers(d2_little, shape({LITTLE_FIELDS!r}, OPTIONAL), "d2_little")\n'
            'check_close(d2_little["area_ms"], d2_little["clipped_residence_ms"], "面积与驻留之和")'
            "\n\n"
            + hidden(
                '_key = _trusted("expected", "protocol")\n'
                'check_close(d2_little, _key["little"], "d2_little")'
            ),
        ),
        text(
            "d2_explain_prompt",
            """
**问题 2(人工评分)**:
(a) 用你的两组数字比较闭环与开环:平均到达率相同,尾延迟和达成率有什么不同?和你的预测差在哪里?
(b) 用这次实验说明什么是「协调遗漏」(coordinated omission):闭环少测到了哪些请求,为什么?
(c) 如果要对外声称「这个档位在 λ 请求/秒下满足 SLO」,该用哪一种负载测量?Little 定律的两种
λ 和面积检验在这里各起什么作用?
""",
        ),
        manual_answer(
            "d2_explain",
            3,
            f"""
### BEGIN SOLUTION
(a) 闭环实际达到 {rate["measured"]:.2f} 请求/秒(Little 定律估计 {rate["little"]:.2f}),开环按
{round(rate["measured"], 2):g} 请求/秒发送。完成请求的 p99 TTFT:闭环 {closed["p99_ttft"]:.0f} ms,
开环 {opened["p99_ttft"]:.0f} ms;p50 分别是 {closed["p50_ttft"]:.0f} 和 {opened["p50_ttft"]:.0f} ms;
对已提交请求的达成率 {pct(closed["attainment_submitted"])} 对
{pct(opened["attainment_submitted"])}。平均速率一样,开环的尾部更长,
达成率{"更低" if lower else "反而更高"}(这只是每种负载各一次运行,方向要用多次重复才能下结论)。
(b) 闭环里每个用户在等上一个请求结束之前不会发下一个。服务器一旦变慢,{D2["users"]} 个用户都
卡在等待里,到达率自动下降,拥塞期间「本该到达」的请求被推迟到拥塞过去以后才发出,测量里
根本没有它们,尾延迟因此被低估。真实用户不会因为别人慢就不来,开环保留了这些请求。
(c) 要对外承诺某个速率下的 SLO,应该用开环(或真实 trace 的到达时刻)。Little 定律的两种 λ
接近,说明闭环的速率算对了、开环比较的是同一个平均速率;面积等于驻留之和
({little["area_ms"]:.0f} request·ms,平均 {little["mean_in_system"]:.1f} 个请求在系统中)说明运行
文件里的到达和离开时刻自洽,这是检验,不是对延迟的结论。
### END SOLUTION
""",
        ),
    ]
