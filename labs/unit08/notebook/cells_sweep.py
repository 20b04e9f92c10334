"""The unit 08 notebook's deliverable 3: the operating point from a sweep of the tiers.

``keys`` are the answer keys (``answer_keys.KEYS``), used only for the figures the model
answers quote; the test cells ask the trusted grader for them at grading time.
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.course import nbcells
from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text
from grader.plugins import load_file
from grader.units import load_unit

HERE = Path(__file__).resolve().parent
UNIT = "unit08"
D3 = load_file(HERE / "notebook_setup.py").D3
claim = load_file(HERE / "cells.py").claim


def hidden(body: str) -> str:
    return nbcells.hidden(body, UNIT)


def d3_cells(keys: dict) -> list:
    sweep = keys["sweep"]
    best = sweep["target"]["cheapest"]
    point = sweep["target"]["points"][best]
    strict_best = sweep["strict"]["cheapest"]
    strict_point = sweep["strict"]["points"][strict_best]
    tier_file = load_unit(UNIT).lab_dir / "tiers" / f"{best}.json"
    quality = json.loads(tier_file.read_text(encoding="utf-8"))
    claim(
        quality["qualityPassRate"] < D3["strict_target"] and strict_best != best,
        "the cheapest tier's quality pass rate is below the strict target",
    )
    loads = ", ".join(f"{x:g}" for x in D3["loads"])
    tiers = D3["tiers"]
    run_sweep = (
        f'sweep_points = run_sweep("{D3["trace"]}", {D3["loads"]!r}, {D3["requests"]}, '
        f"{D3['seed']}, {D3['slo_ttft_ms']!r}, {D3['slo_tpot_ms']!r})"
    )
    return [
        text(
            "d3_intro",
            f"""
## 交付 3 · 工作点:最便宜的可行档位

下面的单元格用你的 `policies.py` 和 `measure.py` 做一次 `sweep.py` 式的扫描:`tiers/` 里的
每个档位({", ".join(f"`{t}`" for t in tiers)})× 开环负载 {loads} 请求/秒,每次
{D3["requests"]} 个请求(种子 {D3["seed"]}),SLO 为 TTFT ≤ {D3["slo_ttft_ms"]:g} ms、
TPOT ≤ {D3["slo_tpot_ms"]:g} ms,质量检查用各档位的 `qualityPassRate`。它打印表格,把两张图写进
`runs/sweep/`,并返回 `sweep_points`:{{档位名: {{"price": 每小时价格, "points": {{负载: Point}}}}}}
(`Point` 的字段见 `sweep.py`,其中 `point.goodput` 是你的 `measure.goodput` 的结果)。

对每个档位,找出对已提交请求的达成率 ≥ 目标的**最高**负载(工作点),记下那里的负载、goodput
(请求/秒)和每 1,000 个合格请求的成本 = 每小时价格 / (goodput × 3600) × 1000;没有可行负载的
档位写 `None`。成本最低的档位是最便宜的可行档位(全都不可行时写 `None`)。目标取
{D3["target"]:g};然后**不重新运行**,在同一组点上把目标提高到 {D3["strict_target"]:g} 再选一次。

```python
d3 = {{"target": {{"points": {{"large-paged": {{"load": ..., "goodput_per_s": ...,
                                          "cost_per_1000": ...}}, "small-int8": None, ...}},
                 "cheapest": "..."}},
      "strict": {{...}}}}
```
""",
        ),
        locked_code("d3_run", run_sweep),
        answer_code(
            "d3_answer",
            f"""
TARGETS = {{"target": {D3["target"]!r}, "strict": {D3["strict_target"]!r}}}
### BEGIN SOLUTION
d3 = {{}}
for label, target in TARGETS.items():
    points, best, best_cost = {{}}, None, math.inf
    for tier, entry in sweep_points.items():
        feasible = [
            load
            for load, point in entry["points"].items()
            if point.goodput.attainment_over_submitted >= target
        ]
        if not feasible:
            points[tier] = None
            continue
        load = max(feasible)
        goodput = entry["points"][load].goodput.goodput_per_s
        cost = entry["price"] / (goodput * 3600) * 1000
        points[tier] = {{"load": load, "goodput_per_s": goodput, "cost_per_1000": cost}}
        if cost < best_cost:
            best, best_cost = tier, cost
    d3[label] = {{"points": points, "cheapest": best}}
### END SOLUTION
""",
        ),
        test_code(
            "d3_target",
            3,
            f"目标 {D3['target']:g} 下各档位的工作点与最便宜的可行档位。本地只检查答案的形状;",
            f'check_choice(d3["target"], {tiers!r}, "d3[\'target\']")\n\n'
            + hidden(
                '_key = _trusted("expected", "sweep")\n'
                'check_close(d3["target"], _key["target"], "d3[\'target\']")'
            ),
        ),
        test_code(
            "d3_strict",
            2,
            f"目标 {D3['strict_target']:g} 下的选择。本地只检查答案的形状;",
            f'check_choice(d3["strict"], {tiers!r}, "d3[\'strict\']")\n\n'
            + hidden(
                '_key = _trusted("expected", "sweep")\n'
                'check_close(d3["strict"], _key["strict"], "d3[\'strict\']")'
            ),
        ),
        text(
            "d3_explain_prompt",
            """
**问题 3(人工评分)**:写出你的工作点论证。
(a) 目标下最便宜的可行档位是哪个?它的最高可行负载、goodput 和每 1,000 个合格请求的成本是多少?
说明拒绝、取消、质量不通过和超 SLO 分别怎样进入了这个数字的分母。
(b) 写出**一个**会改变这个选择的条件,用数字说明它如何改变(可以用上面提高目标的结果,也可以
自己再跑一次 `python3 sweep.py`,例如更严的 TTFT、更突发的到达或不同的请求长度)。
(c) 你的结论在什么范围内成立?
""",
        ),
        manual_answer(
            "d3_explain",
            4,
            f"""
### BEGIN SOLUTION
(a) 目标 {D3["target"]:g} 下最便宜的可行档位是 `{best}`:最高可行负载 {point["load"]:g} 请求/秒,
goodput {point["goodput_per_s"]:.2f} 请求/秒,每 1,000 个合格请求
{point["cost_per_1000"]:.4f} 美元。达成率的分母是全部已提交请求:被拒绝、被取消的请求没有
完成,质量检查没通过的请求不算成功,超 SLO 的请求不合格,它们都在分母里、都不在分子里;成本
按 goodput(合格请求/秒)摊,所以每一种失败都直接抬高成本。
(b) 把目标提高到 {D3["strict_target"]:g}:`{best}` 的质量通过率本身就低于这个目标,在任何负载下
都不可行,最便宜的可行档位变成 `{strict_best}`(最高可行负载 {strict_point["load"]:g} 请求/秒,
每 1,000 个合格请求 {strict_point["cost_per_1000"]:.4f} 美元)。便宜的档位靠更快的步骤换来了
更低的质量,对质量要求一变,结论就变。
(c) 只对这条 trace 的请求长度分布、这几档负载、这个种子、泊松到达和这组 SLO 成立;负载步长是
1 请求/秒,真实的可行上限在两个网格点之间。换成更突发的到达或更长的提示都要重新扫描。
### END SOLUTION
""",
        ),
    ]
