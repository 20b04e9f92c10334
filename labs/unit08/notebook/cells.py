"""The unit 08 notebook's cells: introduction, setup, the policy check and deliverable 1.

Deliverables 2 and 3 are in ``cells_load.py`` and ``cells_sweep.py``. ``cells(keys)``
assembles the whole notebook; ``keys`` are the answer keys (``answer_keys.KEYS``), used only
for the figures the model answers quote.
"""

from __future__ import annotations

from pathlib import Path

from grader.course import nbcells
from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text
from grader.plugins import load_file

HERE = Path(__file__).resolve().parent
UNIT = "unit08"
POLICY_POINTS = 4
SETUP = load_file(HERE / "notebook_setup.py")
D1 = SETUP.D1
D1_COUNTS, D1_RATES, D1_TPOT = (SETUP.D1_FIELDS[k] for k in ("counts", "rates", "tpot"))
D1_OPTIONAL = SETUP.D1_OPTIONAL


def d1_shape(fields: list[str]) -> str:
    """The local shape check of ``d1`` restricted to ``fields``, as notebook code."""
    required = [f for f in fields if f not in D1_OPTIONAL]
    optional = [f for f in fields if f in D1_OPTIONAL]
    parts = [f"shape({required!r})"] if required else []
    parts += [f"shape({optional!r}, OPTIONAL)"] if optional else []
    leaf = parts[0] if len(parts) == 1 else "{" + ", ".join(f"**{x}" for x in parts) + "}"
    return f'check_numbers(d1, shape({D1["policies"]!r}, {leaf}), "d1")'


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def claim(holds: bool, what: str) -> None:
    """A statement a model answer makes about the computed figures; the build stops if false."""
    if not holds:
        raise ValueError(f"unit08 notebook: a model answer says {what!r}, which no longer holds")


def setup_source() -> str:
    """The shared helpers cell: real Python in its own file, linted like any other code."""
    setup = (HERE / "setup_cell.py").read_text(encoding="utf-8").rstrip()
    return setup + "\n\n\n" + nbcells.HAND_IN


def intro_cells() -> list:
    return [
        text(
            "intro",
            """
# 第 08 单元 · 交付笔记本：测量协议与工作点

第 07 单元问的是“这个请求为什么在等”；这本笔记本问的是“这套配置值不值得上线”。它在
**本文件夹**里运行 `simulate.py` 和 `sweep.py`，用的是**你自己的** `policies.py` 和
`measure.py`。请先完成实验的第 1–3 部分（`static`、`continuous`、`budgeted`、`paged` 和
`measure.py` 里的函数），再从上到下依次运行各单元格。

几条约定：

- 时间以毫秒为单位，速率以“请求/s”为单位，达成率写成 0 到 1 之间的小数；写数字，不要写字符串。
- 百分位一律用 nearest-rank（`servesim.metrics.percentile`）。
- 被拒绝（rejected）和被取消（cancelled）的请求也是“已提交”的请求，留在每一个分母里。
- 不要删除、复制或改动只读单元格；答案写在 `YOUR CODE HERE` / `YOUR ANSWER HERE` 的位置。
- 自动评分时，笔记本会在干净的课程文件夹里重新运行：`simulate.py`、`sweep.py`、`servesim/`、
  trace、协议和档位文件都换回课程发给你的原样（trace 和协议的种子是你自己的那一份），只有
  `policies.py`、`measure.py` 和笔记本里的答案来自你。
- 文字题用中文回答，由助教人工评分。每个数字旁边写明它的分母和加权方式。
""",
        ),
        locked_code("setup", setup_source()),
        text(
            "policies_intro",
            f"""
## 准备 · 你的策略和测量函数（第 1–3 部分）

`policies.py` 决定每一步做什么，`measure.py` 决定怎样给一次运行算账。两份文件的契约都写在
各函数上方的 docstring 里；在实验文件夹里运行 `python3 run_tests.py` 会给出本地反馈。

下面的检查先在 `kv-pages` 上试运行你的 `paged`；评分时，评分器还会在笔记本之外，用**你没有
见过的 trace** 在隔离的子进程中运行你提交的两份文件，按得分比例折算（共 {POLICY_POINTS} 分）。
""",
        ),
        test_code(
            "policies_hidden",
            POLICY_POINTS,
            "你的 policies.py 和 measure.py。本地先在 kv-pages 上试运行 paged；",
            'simulate("--trace", "kv-pages", "--device-profile", "devices/kv-64-pages.json",'
            ' "--policy", "paged")',
        ),
    ]


def d1_cells(keys: dict) -> list:
    b, p = keys["goodput"]["budgeted"], keys["goodput"]["paged"]
    claim(b["rejected"] > p["rejected"], "budgeted rejects more than paged")
    claim(b["succeeded"] < p["succeeded"], "paged succeeds more often")
    claim(
        all(x["attainment_succeeded"] > x["attainment_submitted"] for x in (b, p)),
        "attainment over succeeded looks better than over submitted",
    )
    return [
        text(
            "d1_intro",
            f"""
## 交付 1 · 把失败留在分母里：`burst` 上的 goodput

`burst` 是一条开环 trace：每秒约 4 个请求的泊松流，5 s 处半秒内又涌进 30 个；每个请求声明
最多 1,024 个输出 token，首 token 期限 3 s。我们把它放到一台资源很紧的设备上
（`{D1["device"]}`：K = 16，M = 256 页），再把排队上限设为 `--queue-cap {D1["queue_cap"]}`，
分别用 `budgeted`（按声明的上界预留 KV）和 `paged`（动态增长、重算抢占）运行。

SLO：TTFT ≤ {D1["slo_ttft_ms"]:g} ms，TPOT ≤ {D1["slo_tpot_ms"]:g} ms。测量窗口用本单元唯一的
定义 `measurement_window`（`servesim.protocol`，实验说明“实验协议”一节）：一条 trace 没有预热，
冷却为 1，所以窗口是 [第一个到达, 最后一个到达)，请求按到达时刻归属窗口，最后到达的那个请求不在
窗口里；所有速率都除以窗口长度。这里没有质量检查，完成的请求都算通过。
请用**你的** `measure.py` 从两个运行文件算出每个策略的：

- `submitted`、`rejected`、`cancelled`：窗口内提交、被拒绝、被取消的请求数；
- `succeeded`：窗口内完成的请求数（教材的定义：不论质量）；`qualifying`：其中满足全部目标的请求数；
- `goodput_per_s`：合格请求数 / 窗口长度；`attainment_submitted`、`attainment_succeeded`：
  SLO 达成率，分母分别是已提交和已成功的请求数（没有成功请求时后者为 `None`）；
- `tpot_request_weighted`、`tpot_token_weighted`：完成请求的 TPOT 均值，按请求加权和按
  token 加权。

```python
d1 = {{"budgeted": {{"submitted": ..., "rejected": ..., ..., "tpot_token_weighted": ...}},
      "paged": {{...}}}}
```
""",
        ),
        locked_code(
            "d1_run",
            "\n".join(
                f'simulate("--trace", "{D1["trace"]}", "--device-profile", "{D1["device"]}",'
                f' "--queue-cap", "{D1["queue_cap"]}", "--policy", "{policy}",'
                f' "--output", "runs/burst-{policy}.json")'
                for policy in D1["policies"]
            ),
        ),
        answer_code(
            "d1_answer",
            f"""
import measure

from servesim.protocol import measurement_window

SLO = measure.Slo(ttft_ms={D1["slo_ttft_ms"]!r}, tpot_ms={D1["slo_tpot_ms"]!r})
WARMUP, COOLDOWN = {D1["warmup"]!r}, {D1["cooldown"]!r}
burst = {{p: load_requests(f"runs/burst-{{p}}.json") for p in {D1["policies"]!r}}}
### BEGIN SOLUTION
d1 = {{}}
for policy, requests in burst.items():
    window = measurement_window([r["arrivalMs"] for r in requests], WARMUP, COOLDOWN)
    inside = window.select(requests)
    report = measure.goodput(requests, SLO, window.start_ms, window.end_ms)
    by_request, by_token = measure.tpot_means(inside)
    d1[policy] = {{
        "submitted": report.submitted,
        "rejected": sum(r["status"] == measure.REJECTED for r in inside),
        "cancelled": sum(r["status"] == measure.CANCELLED for r in inside),
        "succeeded": report.succeeded,
        "qualifying": report.qualifying,
        "goodput_per_s": report.goodput_per_s,
        "attainment_submitted": report.attainment_over_submitted,
        "attainment_succeeded": report.attainment_over_succeeded,
        "tpot_request_weighted": by_request,
        "tpot_token_weighted": by_token,
    }}
### END SOLUTION
""",
        ),
        test_code(
            "d1_counts",
            2,
            "五个请求数。本地只检查答案的形状；",
            d1_shape(D1_COUNTS),
            ("d1",),
        ),
        test_code(
            "d1_rates",
            2,
            "goodput 与两种分母的达成率。本地只检查答案的形状；",
            d1_shape(D1_RATES),
            ("d1",),
        ),
        test_code(
            "d1_tpot",
            1,
            "两种加权的 TPOT 均值。本地只检查答案的形状；",
            d1_shape(D1_TPOT),
            ("d1",),
        ),
        text(
            "d1_explain_prompt",
            """
**问题 1（人工评分）**：用你算出的数字回答：(a) 两个策略各有多少请求没有进入“成功”，分别是
怎么失败的？(b) 如果只报告“对成功请求”的达成率，读者会得出什么结论，这个结论错在哪里？
(c) 两种加权的 TPOT 均值为什么不相等，哪一种更接近“用户平均感受到的出字速度”？
""",
        ),
        manual_answer(
            "d1_explain",
            2,
            f"""
### BEGIN SOLUTION
(a) 两个策略都提交了 {b["submitted"]} 个请求。`budgeted` 按 1,024 个输出的上界预留页，同时
只能容纳很少几个请求，排队很快到上限：被拒绝 {b["rejected"]} 个、超过首 token 期限被取消
{b["cancelled"]} 个，只成功 {b["succeeded"]} 个；`paged` 不预留，同时容纳的请求多得多，被拒绝
{p["rejected"]} 个、被取消 {p["cancelled"]} 个，成功 {p["succeeded"]} 个（代价是重算抢占）。
(b) 对成功请求的达成率是 {pct(b["attainment_succeeded"])}（budgeted）和
{pct(p["attainment_succeeded"])}（paged）；对已提交请求只有
{pct(b["attainment_submitted"])} 和 {pct(p["attainment_submitted"])}，goodput 只有
{b["goodput_per_s"]:.2f} 和 {p["goodput_per_s"]:.2f} 请求/s。被拒绝、被取消的请求在前一种分母里
消失了：一个请求被拒掉或取消，就不再拉低那个比例，读者看不出有多少请求根本没被服务，
所以它不能单独报告。
(c) 按 token 加权时，长输出的每一个间隔都算一次，长请求的权重更大；按请求加权时每个请求一票
（budgeted {b["tpot_request_weighted"]:.2f} 对 {b["tpot_token_weighted"]:.2f} ms，paged
{p["tpot_request_weighted"]:.2f} 对 {p["tpot_token_weighted"]:.2f} ms）。问“一个普通用户等一个字
要多久”，用按请求加权；问“设备产出每个 token 的平均节奏”，用按 token 加权。
### END SOLUTION
""",
        ),
    ]


def submit_cells() -> list:
    return [
        text(
            "submit",
            """
## 提交前

1. 重启内核并从头运行全部单元格（Kernel → Restart & Run All），确认没有报错。
2. 保存笔记本，连同 `policies.py` 和 `measure.py` 一起提交；`runs/` 里的文件会在评分时重新生成。
""",
        )
    ]


def cells(keys: dict) -> list:
    protocol = load_file(HERE / "cells_load.py")
    operating_point = load_file(HERE / "cells_sweep.py")
    return [
        *intro_cells(),
        *d1_cells(keys),
        *protocol.d2_cells(keys),
        *operating_point.d3_cells(keys),
        *submit_cells(),
    ]
