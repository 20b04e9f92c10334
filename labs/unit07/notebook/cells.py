"""Unit 07's notebook cells, in order: the introduction, the shared helpers, the policy check,
the three deliverables (``cells_d1.py``, ``cells_d2.py``, ``cells_d3.py``) and the checklist
before submitting. Each part is a plug-in file next to this one, loaded by path.
"""

from __future__ import annotations

from pathlib import Path

from grader.course import nbcells
from grader.course.nbcells import locked_code, test_code, text
from grader.plugins import load_file

HERE = Path(__file__).resolve().parent
POLICY_POINTS = 4


# The shared helpers cell is real Python in its own file, so it is linted like any other code.
SETUP = (HERE / "setup_cell.py").read_text(encoding="utf-8").rstrip()
SETUP += "\n\n\n" + nbcells.HAND_IN
DELIVERABLES = ("cells_d1", "cells_d2", "cells_d3")


def cells() -> list:
    deliverables = [c for name in DELIVERABLES for c in load_file(HERE / f"{name}.py").cells()]
    return [
        text(
            "intro",
            """
# 第 07 单元 · 调度对照：谁先走，谁在等？

这本笔记本把本单元的三项交付放在一起。它在**本文件夹**里运行 `simulate.py`，用的是**你自己的**
`policies.py`，所以请先完成 `policies.py` 里的 `fcfs` 和 `chunked`，再从上到下依次运行各单元格。

几条约定：

- 时间一律以毫秒为单位，写数字即可（例如 `2.25`），不要写字符串。
- “预测”单元格要在运行模拟**之前**填写：预测不按对错计分，但必须是数字，它的用处是和实测对照。
- 不要删除、复制或改动只读单元格；写在 `YOUR CODE HERE` / `YOUR ANSWER HERE` 的位置。
- 自动评分时，笔记本会在干净的课程文件夹中重新运行；`simulate.py`、`servesim/` 和 trace
  会换回课程发给你的原版，只有 `policies.py` 和笔记本里的答案来自你。
- 文字题用中文回答，由助教人工评分；请引用具体的时刻和事件，不要只写结论。
""",
        ),
        locked_code("setup", SETUP),
        text(
            "policies_intro",
            f"""
## 准备 · 你的调度策略（第 1–2 部分）

`policies.py` 中的两个函数决定每一次提交做什么：`fcfs` 先把等待队首的 prefill 一次做完，
`chunked` 在每个周期里先给正在生成的请求一个 decode batch，再做队首最多 `chunk` 个 prefill
token。函数上方的 docstring 写明了完整规则；在实验文件夹里运行 `python3 run_tests.py`
（或装了 pytest 时 `python3 -m pytest -q`）会给出本地反馈。

下面的检查先在 `mixed` 上试运行你的策略；评分时，评分器还会在笔记本之外，用**你没有见过的
trace** 在隔离的子进程中运行你提交的 `policies.py`，按得分比例折算（共 {POLICY_POINTS} 分）。
""",
        ),
        test_code(
            "policies_hidden",
            POLICY_POINTS,
            "你的 policies.py。本地先在 mixed 上试运行；",
            'simulate("--trace", "mixed", "--policy", "both", "--chunk", "2")',
        ),
        *deliverables,
        text(
            "submit",
            """
## 提交前

1. 重启内核并从头运行全部单元格（Kernel → Restart & Run All），确认没有报错。
2. 保存笔记本，连同 `policies.py` 一起提交；`runs/` 里的文件会在评分时重新生成。
""",
        ),
    ]
