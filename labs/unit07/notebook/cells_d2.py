"""Unit 07 notebook, deliverable 2: the counterexample ``prefill-only`` (the prediction, the run,
its outputs and the written explanation)."""

from __future__ import annotations

from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text


def cells() -> list:
    return [
        text(
            "d2_intro",
            """
## 交付 2 · 反例：`prefill-only`

`prefill-only` 只有一条请求 P：输入一段 prompt，只输出 1 个 token，所以它从不进入 decode。
prompt 的 token 数每位同学可能不同（课程页面上的 12 只是例子），以下一个单元格打印的
`traces/prefill-only.json` 为准。我们分别用每次提交 0.25 ms 和 0 ms 的开销运行两种策略
（`chunked` 取 `--chunk 2`）。

**先预测，再运行。** 在下一个单元格写下你手算的结果：两种开销下各策略的结束时刻，以及
开销为 0.25 ms 时各策略一共提交了几次。

```python
d2_prediction = {"0.25": {"fcfs": ..., "chunked": ...},
                 "0": {"fcfs": ..., "chunked": ...},
                 "submissions": {"fcfs": ..., "chunked": ...}}
```
""",
        ),
        locked_code("d2_trace", 'show_trace("prefill-only")'),
        answer_code(
            "d2_prediction_answer",
            """
### BEGIN SOLUTION
trace = json.loads((LAB / "traces" / "prefill-only.json").read_text(encoding="utf-8"))
prompt = trace["requests"][0]["inputTokens"]
chunks = math.ceil(prompt / 2)  # fcfs: one submission; chunk=2: one per 2 prompt tokens
d2_prediction = {
    "0.25": {"fcfs": prompt * 1.0 + 0.25, "chunked": prompt * 1.0 + chunks * 0.25},
    "0": {"fcfs": prompt * 1.0, "chunked": prompt * 1.0},
    "submissions": {"fcfs": 1, "chunked": chunks},
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
现在从两个运行文件里读出实测值，填进同样形状的 `d2_outputs`：结束时刻取 P 的最后一个
token 时刻，提交次数取开销为 0.25 ms 那次运行里 `events` 的条数。
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
            "prefill-only 的实测值。本地只检查答案的形状；",
            'check_numbers(d2_outputs, shape(["0.25", "0", "submissions"], shape(POLICIES)),'
            ' "d2_outputs")',
            ("d2_outputs",),
        ),
        text(
            "d2_explain_prompt",
            """
**问题 2（人工评分）**：对照你的预测和实测，把两件事分开说清楚：(a) 调度次序在这条 trace
上改变了什么、没改变什么；(b) 每次提交的固定开销贡献了多少。为什么“开销设为 0 时两种策略
一样快”既推不出“分块在任何负载下都没有代价”，也推不出“分块总是更慢”？
""",
        ),
        manual_answer(
            "d2_explain",
            2,
            """
### BEGIN SOLUTION
（下面的数字是课程自带的 `prefill-only`（12 个 prompt token）的；学生的 trace 不同时，按同样的
推理对照他自己的数字评分。）
这条 trace 里没有正在 decode 的请求需要保护，所以调度次序没有可以改善的地方：两种策略做的都是
同样 12 个 prefill token，纯计算都是 12 ms。差别全部来自提交次数：`fcfs` 提交 1 次，多
0.25 ms；`chunk=2` 提交 6 次，多 1.50 ms，所以是 12.25 对 13.50 ms。把开销设为 0 后两者都是
12 ms，说明这 1.25 ms 的差距是提交开销，不是次序。结论只对这个设备模型和这条 trace 成立：
有 decode 需要保护时（如 `mixed`），分块换来的是更短的 ITL；开销越大、块越小，代价越高。
### END SOLUTION
""",
        ),
    ]
