"""Write ``unit07.ipynb``, the unit's nbgrader source notebook, from the cells below.

Run ``python labs/unit07/notebook/build_notebook.py`` after editing; a test checks that the
committed notebook is what this script writes. The notebook is nbgrader's *source* version:
solution regions and model answers are removed by ``nbgrader generate_assignment``.

Autograder tests never hold expected numbers, and the notebook's kernel never sees one: a test
cell hands its answers in (``hand_in``) and the grader judges them outside the kernel with the
checks in ``answer_keys.py`` (``CHECKS``), against answer keys computed at grading time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

from grader.course import nbcells
from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text

UNIT = "unit07"
NOTEBOOK = Path(__file__).resolve().parent / f"{UNIT}.ipynb"
POLICY_POINTS = 4


# The shared helpers cell is real Python in its own file, so it is linted like any other code.
SETUP = (Path(__file__).resolve().parent / "setup_cell.py").read_text(encoding="utf-8").rstrip()
SETUP += "\n\n\n" + nbcells.HAND_IN


def cells() -> list:
    times = 'shape(["arrival", "first", "finish"])'
    return [
        text(
            "intro",
            """
# 第 07 单元 · 调度对照:谁先走,谁在等?

这本笔记本把本单元的三项交付放在一起。它在**本文件夹**里运行 `simulate.py`,用的是**你自己的**
`policies.py`,所以请先完成 `policies.py` 里的 `fcfs` 和 `chunked`,再从上到下依次运行各单元格。

几条约定:

- 时间一律以毫秒为单位,写数字即可(例如 `2.25`),不要写字符串。
- 「预测」单元格要在运行模拟**之前**填写:预测不按对错计分,但必须是数字;它的意义在于和实测对照。
- 不要删除、复制或改动只读单元格;写在 `YOUR CODE HERE` / `YOUR ANSWER HERE` 的位置。
- 自动评分时,笔记本会在干净的课程文件夹中重新运行;`simulate.py`、`servesim/` 和 trace
  会换回课程原版,只有 `policies.py` 和笔记本里的答案来自你。
- 文字题用中文回答,TA 人工评分;请引用具体的时刻和事件,而不是只写结论。
""",
        ),
        locked_code("setup", SETUP),
        text(
            "policies_intro",
            f"""
## 准备 · 你的调度策略（第 1–2 部分）

`policies.py` 中的两个函数决定每一次提交做什么:`fcfs` 先把等待队首的 prefill 一次做完,
`chunked` 在每个周期里先给正在生成的请求一个 decode batch,再做队首最多 `chunk` 个 prefill
token。函数上方的 docstring 写明了完整规则;在实验文件夹里运行 `python3 run_tests.py`
(或装了 pytest 时 `python3 -m pytest -q`)会给出本地反馈。

下面的检查先在 `mixed` 上试运行你的策略;评分时,评分器还会在笔记本之外,用**你没有见过的
trace** 在隔离的子进程中运行你提交的 `policies.py`,按得分比例折算(共 {POLICY_POINTS} 分)。
""",
        ),
        test_code(
            "policies_hidden",
            POLICY_POINTS,
            "你的 policies.py。本地先在 mixed 上试运行;",
            'simulate("--trace", "mixed", "--policy", "both", "--chunk", "2")',
        ),
        text(
            "d1_intro",
            """
## 交付 1 · 逐 token 重算 `mixed`

`mixed` 里有三条请求:A 在 0 ms 到达(输入 2,输出 12),L 在 2 ms 带着 12 个输入 token
到达(输出 2),S 在 4 ms 到达(输入 1,输出 4)。下面的单元格用两种策略运行它
(`chunked` 取 `--chunk 2`),并把原始时序写进 `runs/mixed.json`。

请**只根据运行文件里的 `arrivalMs` 和 `tokenTimesMs`** 重算,不要照抄打印出来的表:

- `arrival`:请求的到达时刻;`first`:第一个 token 的时刻;`finish`:最后一个 token 的时刻;
- A 的最长 ITL:A 相邻两个 token 时刻之差的最大值。

答案的形状:

```python
d1_times = {"fcfs": {"A": {"arrival": ..., "first": ..., "finish": ...}, "L": {...}, "S": {...}},
            "chunked": {...}}
d1_a_max_itl = {"fcfs": ..., "chunked": ...}
```
""",
        ),
        locked_code(
            "d1_run",
            'simulate("--trace", "mixed", "--policy", "both", "--chunk", "2",'
            ' "--output", "runs/mixed.json")',
        ),
        answer_code(
            "d1_answer",
            """
mixed = load_runs("runs/mixed.json")  # {"fcfs": run, "chunked": run}
### BEGIN SOLUTION
d1_times = {}
d1_a_max_itl = {}
for policy, run in mixed.items():
    d1_times[policy] = {}
    for request in run["requests"]:
        tokens = request["tokenTimesMs"]
        d1_times[policy][request["id"]] = {
            "arrival": request["arrivalMs"],
            "first": tokens[0],
            "finish": tokens[-1],
        }
        if request["id"] == "A":
            d1_a_max_itl[policy] = max(b - a for a, b in zip(tokens, tokens[1:]))
### END SOLUTION
""",
        ),
        test_code(
            "d1_fcfs",
            2,
            "fcfs 下 A、L、S 的三个时刻。本地只检查答案的形状;",
            f'check_numbers(d1_times, shape(POLICIES, shape("ALS", {times})), "d1_times")',
            ("d1_times",),
        ),
        test_code(
            "d1_chunked",
            2,
            "chunked 下 A、L、S 的三个时刻。本地只检查答案的形状;",
            f'check_numbers(d1_times, shape(POLICIES, shape("ALS", {times})), "d1_times")',
            ("d1_times",),
        ),
        test_code(
            "d1_itl",
            2,
            "A 的最长 ITL。本地只检查答案的形状;",
            'check_numbers(d1_a_max_itl, shape(POLICIES), "d1_a_max_itl")',
            ("d1_a_max_itl",),
        ),
        text(
            "d1_explain_prompt",
            """
**问题 1(人工评分)**:用 `runs/mixed.json` 里的 `events`(每次提交的开始、结束时刻和内容)
说明:为什么换成 `chunked` 之后 A 的最长 ITL 变短了,而 S 的首 token 反而更晚?请至少引用
两次具体的提交,并说明 A 的 TTFT 为什么在两种策略下相同。
""",
        ),
        manual_answer(
            "d1_explain",
            3,
            """
### BEGIN SOLUTION
在 `fcfs` 下,A 在 2.25 ms 得到首 token 后,下一次提交是 L 的整段 prefill(2.25→14.50 ms),
接着是 S 的 prefill(14.50→15.75 ms),直到 15.75→17.00 ms 的 decode batch A 才拿到第二个
token,中间隔了 14.75 ms。`chunked` 每个周期先提交一个 decode batch(1.25 ms),再做 L 的
2 个 token(2.25 ms),A 两个 token 之间最多只隔一个块加一个 decode,即 3.50 ms。代价是 L
被拆成六块、每块前面都插了 decode,L 的 prefill 直到 23.25 ms 才完成;S 排在 L 之后
(FIFO 不变),首 token 推迟到 25.75 ms。A 的首 token 在 L 到达之前就已经发生,调度策略
改不了已经发生的 TTFT。
### END SOLUTION
""",
        ),
        text(
            "d2_intro",
            """
## 交付 2 · 反例:`prefill-only`

`prefill-only` 只有一条请求 P:输入 12 个 token,只输出 1 个 token,所以它从不进入 decode。
我们分别用每次提交 0.25 ms 和 0 ms 的开销运行两种策略(`chunked` 取 `--chunk 2`)。

**先预测,再运行。** 在下一个单元格写下你手算的结果:两种开销下各策略的结束时刻,以及
开销为 0.25 ms 时各策略一共提交了几次。

```python
d2_prediction = {"0.25": {"fcfs": ..., "chunked": ...},
                 "0": {"fcfs": ..., "chunked": ...},
                 "submissions": {"fcfs": ..., "chunked": ...}}
```
""",
        ),
        answer_code(
            "d2_prediction_answer",
            """
### BEGIN SOLUTION
d2_prediction = {
    "0.25": {"fcfs": 12 * 1.0 + 0.25, "chunked": 12 * 1.0 + 6 * 0.25},
    "0": {"fcfs": 12 * 1.0, "chunked": 12 * 1.0},
    "submissions": {"fcfs": 1, "chunked": 12 // 2},
}
### END SOLUTION
""",
        ),
        test_code(
            "d2_prediction",
            1,
            "预测已填写。不按对错计分。",
            'check_numbers(d2_prediction, shape(["0.25", "0", "submissions"], shape(POLICIES)),'
            ' "d2_prediction")',
            ("d2_prediction",),
        ),
        locked_code(
            "d2_run",
            """
simulate("--trace", "prefill-only", "--policy", "both", "--chunk", "2",
         "--output", "runs/prefill-only-0.25.json")
simulate("--trace", "prefill-only", "--policy", "both", "--chunk", "2", "--overhead-ms", "0",
         "--output", "runs/prefill-only-0.json")
""",
        ),
        text(
            "d2_outputs_intro",
            """
现在从两个运行文件里读出实测值,填进同样形状的 `d2_outputs`:结束时刻取 P 的最后一个
token 时刻,提交次数取开销为 0.25 ms 那次运行里 `events` 的条数。
""",
        ),
        answer_code(
            "d2_answer",
            """
runs_025 = load_runs("runs/prefill-only-0.25.json")
runs_0 = load_runs("runs/prefill-only-0.json")
### BEGIN SOLUTION
d2_outputs = {
    "0.25": {p: run["requests"][0]["tokenTimesMs"][-1] for p, run in runs_025.items()},
    "0": {p: run["requests"][0]["tokenTimesMs"][-1] for p, run in runs_0.items()},
    "submissions": {p: len(run["events"]) for p, run in runs_025.items()},
}
### END SOLUTION
""",
        ),
        test_code(
            "d2_outputs",
            2,
            "prefill-only 的实测值。本地只检查答案的形状;",
            'check_numbers(d2_outputs, shape(["0.25", "0", "submissions"], shape(POLICIES)),'
            ' "d2_outputs")',
            ("d2_outputs",),
        ),
        text(
            "d2_explain_prompt",
            """
**问题 2(人工评分)**:对照你的预测和实测,把两件事分开说清楚:(a) 调度次序在这条 trace
上改变了什么、没改变什么;(b) 每次提交的固定开销贡献了多少。为什么「开销设为 0 时两种策略
一样快」并不能推出「分块在任何负载下都没有代价」,也不能推出「分块总是更慢」?
""",
        ),
        manual_answer(
            "d2_explain",
            2,
            """
### BEGIN SOLUTION
这条 trace 里没有正在 decode 的请求需要保护,所以次序没有可改善的对象:两种策略做的都是
同样 12 个 prefill token,纯计算都是 12 ms。差别全部来自提交次数:`fcfs` 提交 1 次,多
0.25 ms;`chunk=2` 提交 6 次,多 1.50 ms,所以是 12.25 对 13.50 ms。把开销设为 0 后两者都是
12 ms,说明这 1.25 ms 的差距是提交开销,不是次序。结论只对这个设备模型和这条 trace 成立:
有 decode 需要保护时(如 `mixed`),分块换来的是更短的 ITL;开销越大、块越小,代价越高。
### END SOLUTION
""",
        ),
        text(
            "d3_intro",
            """
## 交付 3 · 陌生负载:`unseen`,`--chunk 4`

`unseen` 的请求见 `traces/unseen.json`。这次不要沿用 `mixed` 的答案,先根据它的到达时刻和
token 数手算:**U2 的首 token 时刻**(绝对时刻,不是 TTFT)和 **U1 的最长停顿**(U1 相邻
两个 token 之间的最长间隔),两种策略各一个值(`chunked` 取 `--chunk 4`)。

```python
d3_prediction = {"U2_first": {"fcfs": ..., "chunked": ...},
                 "U1_stall": {"fcfs": ..., "chunked": ...}}
```
""",
        ),
        answer_code(
            "d3_prediction_answer",
            """
### BEGIN SOLUTION
# fcfs: U1 prefill ends at 3.25; U2's 10 tokens run 3.25 -> 13.50 in one submission.
# U1 then waits for U2, U3 and U4's prefills before its next decode: 3.25 -> 23.25.
# chunk=4: U2 needs chunks of 4, 4, 2, each after a 1.25 ms decode: 3.25 + 3 * 1.25 + 10 + 3 * 0.25.
d3_prediction = {
    "U2_first": {"fcfs": 3.25 + 10.25, "chunked": 3.25 + 3 * 1.25 + 10 + 3 * 0.25},
    "U1_stall": {"fcfs": 10.25 + 2.25 + 6.25 + 1.25, "chunked": 4.25 + 1.25},
}
### END SOLUTION
""",
        ),
        test_code(
            "d3_prediction",
            1,
            "预测已填写。不按对错计分。",
            'check_numbers(d3_prediction, shape(["U2_first", "U1_stall"], shape(POLICIES)),'
            ' "d3_prediction")',
            ("d3_prediction",),
        ),
        locked_code(
            "d3_run",
            'simulate("--trace", "unseen", "--policy", "both", "--chunk", "4",'
            ' "--output", "runs/unseen.json")',
        ),
        text(
            "d3_verified_intro",
            """
用 `runs/unseen.json` 的 `tokenTimesMs` 核对,填进同样形状的 `d3_verified`。如果实测和预测
不一样,不要改预测,在下面的文字题里说明差在哪一步。
""",
        ),
        answer_code(
            "d3_answer",
            """
unseen = load_runs("runs/unseen.json")
### BEGIN SOLUTION
def _tokens(run, request_id):
    return next(r for r in run["requests"] if r["id"] == request_id)["tokenTimesMs"]


d3_verified = {"U2_first": {}, "U1_stall": {}}
for policy, run in unseen.items():
    d3_verified["U2_first"][policy] = _tokens(run, "U2")[0]
    u1 = _tokens(run, "U1")
    d3_verified["U1_stall"][policy] = max(b - a for a, b in zip(u1, u1[1:]))
### END SOLUTION
""",
        ),
        test_code(
            "d3_verified",
            2,
            "unseen 的实测值。本地只检查答案的形状;",
            'check_numbers(d3_verified, shape(["U2_first", "U1_stall"], shape(POLICIES)),'
            ' "d3_verified")',
            ("d3_verified",),
        ),
        text(
            "d3_explain_prompt",
            """
**问题 3(人工评分)**:
(a) 写出一个条件:它一旦改变,你在这条 trace 上对两种策略的排名就需要重新测量。说明它会通过
哪条时间线改变结果。
(b) 说出本实验的虚拟设备**没有**建模、而真实推理引擎里会影响这个排名的两个机制,
并各用一句话说明它们可能怎样改变结论。
""",
        ),
        manual_answer(
            "d3_explain",
            3,
            """
### BEGIN SOLUTION
(a) 每次提交的开销:如果它从 0.25 ms 增大到几毫秒,`chunk=4` 多出的提交次数会让 U2、U3、U4
的首 token 继续推后,而 U1 的停顿收益不变,排名可能翻转;请求长度比例、到达间隔、chunk 大小
改变时同样要重测。
(b) 一是 decode 的真实耗时随 batch 大小、序列长度和 kernel 变化,不是固定 1 ms,插入的
decode 不再「便宜」;二是 KV cache 容量有限,引擎可能拒绝接纳、抢占并重算请求,
此时谁先拿到首 token 还取决于显存水位。前缀缓存也会让部分 prefill 直接跳过。
### END SOLUTION
""",
        ),
        text(
            "submit",
            """
## 提交前

1. 重启内核并从头运行全部单元格(Kernel → Restart & Run All),确认没有报错。
2. 保存笔记本,连同 `policies.py` 一起提交;`runs/` 里的文件会在评分时重新生成。
""",
        ),
    ]


def build() -> nbformat.NotebookNode:
    notebook = new_notebook(
        cells=cells(),
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    # Stable cell ids keep the committed file byte-identical across rebuilds.
    for cell in notebook.cells:
        cell["id"] = cell.metadata["nbgrader"]["grade_id"].replace("_", "-")
    nbformat.validate(notebook)
    return notebook


def render() -> str:
    return nbformat.writes(build()) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text_out = render()
    if argv == ["--check"]:
        current = NOTEBOOK.read_text(encoding="utf-8") if NOTEBOOK.exists() else ""
        if current != text_out:
            print(f"stale: {NOTEBOOK.name} (run build_notebook.py)", file=sys.stderr)
            return 1
        return 0
    NOTEBOOK.write_text(text_out, encoding="utf-8")
    print(f"wrote {NOTEBOOK.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
