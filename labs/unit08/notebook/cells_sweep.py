"""The unit 08 notebook's deliverable 3: the operating point from a protocol sweep of the tiers.

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
D3 = SETUP.D3
UNKNOWN = SETUP.NOT_YET_KNOWN


def _describe(choice: dict) -> str:
    """A model answer's sentence about one judged choice."""
    best = choice["cheapest"]
    if best == UNKNOWN:
        return "最便宜的可行档位尚不能确定：有别的档位在区间范围内仍可能更便宜"
    if best is None:
        return "没有可行的档位"
    point = choice["points"][best]
    return (
        f"最便宜的可行档位是 `{best}`：最高可行负载 {point['load']:g} 请求/s，goodput "
        f"{point['goodput_per_s']:.2f} 请求/s，每 1,000 个合格请求 "
        f"{point['cost_per_1000']:.4f} 美元"
    )


def _targets(label: str) -> str:
    t = D3["targets"][label]
    return f"达成率 ≥ {t['attainment']:g}、质量通过率 ≥ {t['qualityPassRate']:g}"


def d3_cells(keys: dict) -> list:
    sweep = keys["sweep"]
    doc = json.loads((load_unit(UNIT).lab_dir / D3["protocol"]).read_text(encoding="utf-8"))
    loads = ", ".join(f"{x:g}" for x in doc["loads"])
    tiers = D3["tiers"]
    first, second = list(D3["targets"])
    return [
        text(
            "d3_intro",
            f"""
## 交付 3 · 工作点：最便宜的可行档位

下面的单元格用你的 `policies.py` 和 `measure.py` 按协议 `{D3["protocol"]}` 运行 `sweep.py`：
`tiers/` 里的每个档位（{", ".join(f"`{t}`" for t in tiers)}）× 开环泊松负载 {loads} 请求/s，
每个格子重复 {len(doc["seeds"])} 次（种子见协议文件，按学生分发时每人不同）、
每次 {doc["requestsPerRun"]} 个请求，SLO 为 TTFT ≤
{doc["slo"]["ttftMs"]:g} ms、TPOT ≤ {doc["slo"]["tpotMs"]:g} ms，
质量检查用各档位的 `qualityPassRate`
和每次重复的种子。它打印带区间和结论的表格，把三张图写进 `runs/sweep/`，并返回
`sweep_results`：每次重复的 `measure.replication` 结果（`sweep.py --json` 写出的 `results`）。

这个协议比课程页面的小，区间更宽。用 `experiment.py` 里已经写好的函数在**同一组运行**上按两组
目标各判一次（`parse_protocol` 换掉协议的 `targets` 即可，不要重新运行）：
`experiment.judge`（用你的 `interval` 和 `verdict` 给每个格子下结论）、
`experiment.operating_points`、
`experiment.cheapest`。对每个档位写出它的工作点（结论为“可行”的最高负载）、那里的平均 goodput
和每 1,000 个合格请求的平均成本，没有可行负载的写 `None`；`cheapest` 写最便宜的可行档位，
运行还分不出来时写 `"{UNKNOWN}"`，没有任何档位可行（也没有尚不能确定的格子）时写 `None`。
目标一：{_targets(first)}；目标二：{_targets(second)}。

```python
d3 = {{"{first}": {{"points": {{"large-paged": {{"load": ..., "goodput_per_s": ...,
                                           "cost_per_1000": ...}}, "small-int8": None, ...}},
                  "cheapest": "..."}},
      "{second}": {{...}}}}
```
""",
        ),
        locked_code(
            "d3_run",
            f'sweep_protocol, sweep_results = run_sweep("{D3["protocol"]}")',
        ),
        answer_code(
            "d3_answer",
            f"""
import experiment
import measure
from servesim.protocol import parse_protocol
from servesim.tiers import load_tier

TARGETS = {D3["targets"]!r}
TIERS = [load_tier(f"tiers/{{name}}.json") for name in {tiers!r}]
### BEGIN SOLUTION
d3 = {{}}
for label, targets in TARGETS.items():
    judged = parse_protocol({{**sweep_protocol.to_json(), "targets": targets}}, label)
    cells = experiment.judge(judged, sweep_results, measure)
    points = experiment.operating_points(TIERS, cells)
    choice = experiment.cheapest(TIERS, cells, points)
    if choice.best is not None and choice.decided:
        cheapest = choice.best.tier.name
    else:
        cheapest = None if choice.decided else "{UNKNOWN}"
    d3[label] = {{
        "points": {{
            p.tier.name: None
            if p.cell is None
            else {{
                "load": p.cell.load,
                "goodput_per_s": p.cell.figures["goodput"].mean,
                "cost_per_1000": p.cost.mean,
            }}
            for p in points
        }},
        "cheapest": cheapest,
    }}
### END SOLUTION
""",
        ),
        test_code(
            f"d3_{first}",
            3,
            f"目标一（{_targets(first)}）下各档位的工作点与最便宜的可行档位。本地只检查答案的形状；",
            f'check_choice(d3["{first}"], {tiers!r}, "d3[\'{first}\']")',
            ("d3",),
        ),
        test_code(
            f"d3_{second}",
            2,
            f"目标二（{_targets(second)}）下的选择。本地只检查答案的形状；",
            f'check_choice(d3["{second}"], {tiers!r}, "d3[\'{second}\']")',
            ("d3",),
        ),
        text(
            "d3_explain_prompt",
            """
**问题 3（人工评分）**：写出你的工作点论证。
(a) 两组目标下，最便宜的可行档位各是什么（或为什么尚不能确定）？引用表格里的区间和“还需”一栏。
(b) 说明拒绝、取消、质量不通过和超 SLO 分别怎样进入了成本的分母；质量抽签为什么要带上每次
重复的种子？
(c) 课程页面用更大的协议（更多请求、更多重复）给出了确定的答案。你的结论在什么范围内成立？
要让它成立，你会怎样改协议？
""",
        ),
        manual_answer(
            "d3_explain",
            4,
            f"""
### BEGIN SOLUTION
（参考答案里的数字来自随课程发布的协议（种子 {", ".join(map(str, doc["seeds"]))}）；
学生的种子不同，按他们自己的数字批改。）
(a) 目标一（{_targets(first)}）：{_describe(sweep[first])}。目标二（{_targets(second)}）：
{_describe(sweep[second])}。一个格子只有在区间整个越过目标时才算可行；区间跨过目标的格子是
“尚不能确定”；这样的格子落在更便宜的档位上时，最便宜的档位也就定不下来，表格的“还需”一栏给出大约要多少次
重复。
(b) 达成率的分母是全部已提交请求：被拒绝、被取消的请求没有成功，质量检查没通过或超 SLO 的成功请求
不合格，它们都在分母里、都不在分子里；成本按 goodput（合格请求/s）分摊，所以每一种失败都直接抬高
成本。质量抽签带上种子，每次重复才会各自抽签；只按请求 id 抽，每个种子的 id 都一样，重复就等于
同一批结果抄了几遍，区间会窄得不真实。
(c) 只对这份协议成立：这条 trace 的请求长度分布、这几档负载、泊松到达、这组 SLO 和目标、
{len(doc["seeds"])} 次各 {doc["requestsPerRun"]} 个请求的重复。负载步长很粗，真实的可行上限在
两个网格点之间。要让结论更确定：增加重复（按“还需”一栏）或加长运行，在不确定的负载附近加密网格；换成更突发的
到达或更长的提示都要重新扫描。
### END SOLUTION
""",
        ),
    ]
