"""Unit 07 notebook, deliverable 3: the unseen load ``unseen`` with ``--chunk 4`` (the prediction,
the run, the measured values and the written explanation)."""

from __future__ import annotations

from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text


def cells() -> list:
    return [
        text(
            "d3_intro",
            """
## 交付 3 · 陌生负载：`unseen`（`--chunk 4`）

`unseen` 的请求见 `traces/unseen.json`。这次不要沿用 `mixed` 的答案，先根据它的到达时刻和
token 数手算：**U2 的首 token 时刻**（绝对时刻，不是 TTFT）和 **U1 的最长停顿**（U1 相邻
两个 token 之间的最长间隔），两种策略各一个值（`chunked` 取 `--chunk 4`）。

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
用 `runs/unseen.json` 的 `tokenTimesMs` 核对，填进同样形状的 `d3_verified`。如果实测和预测
不一样，不要改预测，在下面的文字题里说明差在哪一步。
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
            "unseen 的实测值。本地只检查答案的形状；",
            'check_numbers(d3_verified, shape(["U2_first", "U1_stall"], shape(POLICIES)),'
            ' "d3_verified")',
            ("d3_verified",),
        ),
        text(
            "d3_explain_prompt",
            """
**问题 3（人工评分）**：
(a) 写出一个条件：它一旦改变，你在这条 trace 上对两种策略的排名就需要重新测量。说明它会通过
哪条时间线改变结果。
(b) 真实推理引擎里有两个会影响这个排名的机制，本实验的虚拟设备**没有**建模。说出它们，
并各用一句话说明它们可能怎样改变结论。
""",
        ),
        manual_answer(
            "d3_explain",
            3,
            """
### BEGIN SOLUTION
(a) 每次提交的开销：`chunk=4` 的提交次数更多，每次都要付这笔开销。用 `--overhead-ms 3` 重跑，
U1 的最长停顿仍是 `chunk=4` 更短（31.00 对 11.00 ms，0.25 ms 时是 20.00 对 5.50 ms），但 U4 的
首 token 从 22.00 对 30.25 ms 拉开到 33.00 对 66.00 ms：U2、U3、U4 付出的代价涨得比 U1 的收益
快，看重首 token 时排名可能翻转。请求长度比例、到达间隔、chunk 大小改变时同样要重测。
(b) 一是 decode 的真实耗时随 batch 大小、序列长度和 kernel 变化，不是固定 1 ms，插入的
decode 不再“便宜”；二是 KV cache 容量有限，引擎可能拒绝接纳、抢占并重算请求，
此时谁先拿到首 token 还取决于显存水位。前缀缓存也会让部分 prefill 直接跳过。
### END SOLUTION
""",
        ),
    ]
