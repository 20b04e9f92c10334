"""Unit 07 notebook, deliverable 1: the token-by-token recount of ``mixed`` (the run, the
times of every request under both policies, the ITL check and the written explanation)."""

from __future__ import annotations

from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text


def cells() -> list:
    times = 'shape(["arrival", "first", "finish"])'
    return [
        text(
            "d1_intro",
            """
## 交付 1 · 逐 token 重算 `mixed`

`mixed` 里有三条请求，角色和课程里的例子一样：A 在 0 ms 到达，输入很短（一个块装得下）、
输出很长；L 紧接着带着很长的输入到达，这时 A 的输出还远没结束，L 自己只输出几个 token；S 在
L 之后不久到达，输入很短。具体的到达时刻和 token 数每位同学可能不同，课程页面上的数字只是
例子：你的请求在 `traces/mixed.json` 里，下面第一个单元格会把它们打印出来。第二个单元格用
两种策略运行它（`chunked` 取 `--chunk 2`），并把原始时序写进 `runs/mixed.json`。

请**只根据运行文件里的 `arrivalMs` 和 `tokenTimesMs`** 重算，不要照抄打印出来的表：

- `arrival`：请求的到达时刻；`first`：第一个 token 的时刻；`finish`：最后一个 token 的时刻；
- A 的最长 ITL：A 相邻两个 token 的时刻之差的最大值。

答案的形状：

```python
d1_times = {"fcfs": {"A": {"arrival": ..., "first": ..., "finish": ...}, "L": {...}, "S": {...}},
            "chunked": {...}}
d1_a_max_itl = {"fcfs": ..., "chunked": ...}
```
""",
        ),
        locked_code("d1_trace", 'show_trace("mixed")'),
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
            "fcfs 下 A、L、S 的三个时刻。本地只检查答案的形状；",
            f'check_numbers(d1_times, shape(POLICIES, shape("ALS", {times})), "d1_times")',
            ("d1_times",),
        ),
        test_code(
            "d1_chunked",
            2,
            "chunked 下 A、L、S 的三个时刻。本地只检查答案的形状；",
            f'check_numbers(d1_times, shape(POLICIES, shape("ALS", {times})), "d1_times")',
            ("d1_times",),
        ),
        test_code(
            "d1_itl",
            2,
            "A 的最长 ITL。本地只检查答案的形状；",
            'check_numbers(d1_a_max_itl, shape(POLICIES), "d1_a_max_itl")',
            ("d1_a_max_itl",),
        ),
        text(
            "d1_explain_prompt",
            """
**问题 1（人工评分）**：用 `runs/mixed.json` 里的 `events`（每次提交的开始、结束时刻和内容）
说明：为什么换成 `chunked` 之后 A 的最长 ITL 变短了，而 S 的首 token 反而更晚？请至少引用
两次具体的提交，并说明 A 的 TTFT 为什么在两种策略下相同。
""",
        ),
        manual_answer(
            "d1_explain",
            3,
            """
### BEGIN SOLUTION
（下面的数字是课程自带的 `mixed` 的；学生的 trace 不同时，按同样的推理对照他自己的 `events`
评分。）
在 `fcfs` 下，A 在 2.25 ms 得到首 token 后，下一次提交是 L 的整段 prefill（2.25→14.50 ms），
接着是 S 的 prefill（14.50→15.75 ms），到 15.75→17.00 ms 的 decode batch，A 才拿到第二个
token，中间隔了 14.75 ms。`chunked` 每个周期先提交一个 decode batch（1.25 ms），再做 L 的
2 个 token（2.25 ms），A 两个 token 之间最多只隔一个块加一次 decode，即 3.50 ms。代价是：L
拆成六块，每块前面都插了一次 decode，L 的 prefill 到 23.25 ms 才完成；S 排在 L 之后
（FIFO 不变），首 token 推迟到 25.75 ms。A 的 TTFT 相同，是因为 A 的 2 个 prompt token 在
0 ms 开始的第一次提交里一次做完（`chunk=2` 也装得下），L 在 2 ms 到达时这次提交已经开始，
两种策略都在 2.25 ms 给出 A 的首 token；`--chunk 1` 会把 A 的 prefill 也拆开，这个结论就不成立了。
### END SOLUTION
""",
        ),
    ]
