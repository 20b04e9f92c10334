"""The unit 09 notebook's cells: introduction, setup, the policy check and exercise 31.10.

Exercise 31.12 is in ``cells_plan.py``, 31.13 in ``cells_diag.py``. ``cells(keys)``
assembles the whole notebook; ``keys`` are the answer keys (``answer_keys.KEYS``), used only
for the figures the model answers quote and for the claims the build checks.
"""

from __future__ import annotations

from pathlib import Path

from grader.course import nbcells
from grader.course.nbcells import answer_code, locked_code, manual_answer, test_code, text
from grader.plugins import load_file

HERE = Path(__file__).resolve().parent
POLICY_POINTS = 4
SETUP = load_file(HERE / "notebook_setup.py")


def claim(holds: bool, what: str) -> None:
    """A statement the notebook's prose makes about the computed figures; the build stops if
    it no longer holds."""
    if not holds:
        raise ValueError(f"unit09 notebook: the prose says {what!r}, which no longer holds")


def setup_source() -> str:
    """The shared helpers cell: real Python in its own file, linted like any other code."""
    setup = (HERE / "setup_cell.py").read_text(encoding="utf-8").rstrip()
    return setup + "\n\n\n" + nbcells.HAND_IN


def intro_cells() -> list:
    return [
        text(
            "intro",
            """
# 第 09 单元 · 交付笔记本：输出缓冲、证据方案与尾延迟诊断

第 31 章最后几道习题问的都是同一件事：尾延迟变长了，原因在哪里。这本笔记本在**本文件夹**
里运行引擎，用**你自己的** `policies.py` 和 `measure.py` 回答其中三题：

- 习题 31.10：快生产、慢消费的输出缓冲多久会满，满了以后请求处于什么状态；
- 习题 31.12：一套能把过载、重算放大和慢消费者分开的证据方案，每个比例都写明分母；
- 习题 31.13：显存还有空余，尾延迟却在变长，怎样诊断，又该怎样处置。

请先完成实验的各部分（`policies.py` 里的策略和 `measure.py` 里的函数），再从上到下依次
运行各单元格。几条约定：

- 时间以毫秒为单位（名字以 `_s` 结尾的以秒为单位），速率以 KiB/s 为单位；写数字，不要写字符串。
- 一个比例写成 `[分子, 分母]` 两个数，和 `measure.Ratio` 的 `num`、`den` 一致。
- 百分位一律用 nearest-rank（`measure.p99`）。TTFT、ITL、prefill、decode 的含义和课上相同。
- 不要删除、复制或改动只读单元格；答案写在 `YOUR CODE HERE` / `YOUR ANSWER HERE` 的位置。
- 自动评分时，笔记本会在干净的课程文件夹里重新运行：`simulate.py`、`servesim/`、
  `tailruns.py`、`ex31_*.py`、`tailruns.json` 和 trace 都换回课程发给你的原样（trace 和
  `tailruns.json` 是你自己的那一份），只有 `policies.py`、`measure.py` 和笔记本里的答案
  来自你。所有数字都要从运行里算出来，抄写常数拿不到分。
- 文字题用中文回答，由助教人工评分。
""",
        ),
        locked_code("setup", setup_source()),
        text(
            "policies_intro",
            f"""
## 准备 · 你的策略和测量函数（第 1–5 部分）

`policies.py` 里的 `cancel_aware`、`prefix_paged`（连同 `grow_holders`）、`prefix_admit` 和
`backpressure` 决定每一步做什么，`measure.py` 里的函数给一次运行找证据、下诊断；契约写在各函数
上方的 docstring 里，在实验文件夹里运行 `python3 run_tests.py` 会给出本地反馈。

下面的检查先在 `shared-prefix` 上试运行你的 `prefix_paged`；评分时，评分器还会在笔记本之外，
用**你没有见过的 trace** 在隔离的子进程中运行你提交的文件，按得分比例折算（共
{POLICY_POINTS} 分）。
""",
        ),
        test_code(
            "policies_hidden",
            POLICY_POINTS,
            "你的 policies.py。本地先在 shared-prefix 上试运行 prefix_paged；",
            'simulate("--trace", "shared-prefix", "--policy", "prefix_paged")',
        ),
    ]


D1_RUN = """
import ex31_10
from servesim.runfile import build_run

# ex31_10.py 的那一个请求，来自 traces/ex31-10.json：1 个 prompt token，输出 token 数和客户端的
# 读速（readBytesPerS）写在这个文件里，读速每位同学各不相同；设备每步 31.25 ms，每个 token
# 事件 384 字节，缓冲 64 KiB，低水位 32 KiB，没有暂停期限。
stream_trace = ex31_10.load_trace()
timeline = ex31_10.simulate(stream_trace, ex31_10.stream_aware, ex31_10.DEVICE)
stream = build_run("stream_aware", {}, ex31_10.DEVICE, timeline, None, extended=True)
(stream_request,) = stream["requests"]
print("device:", {k: v for k, v in stream["device"].items() if k.startswith("stream")})
print("outputTokens:", stream_request["outputTokens"], " readBytesPerS:",
      stream_request["readBytesPerS"])
print("pausedMs:", stream_request["pausedMs"], " bufferPeakBytes:",
      stream_request["bufferPeakBytes"])
print("first tokens (ms):", stream_request["tokenTimesMs"][:4], "...")
"""


def deadline_run() -> dict:
    """ex31_10.py's figures with its pause deadline (quoted by the model answer), the size of
    one token event and the length of a step."""
    from grader.units import load_unit

    keys = load_file(HERE / "answer_keys.py")
    with keys.lab_modules(load_unit("unit09")) as (_, _, ex10, _):
        run = ex10.run_example(ex10.DEADLINE_MS)
        device = {"event_bytes": ex10.DEVICE.stream_event_bytes, "step_ms": ex10.STEP_MS}
        return {"deadline_ms": ex10.DEADLINE_MS, **device, **run}


def d1_cells(keys: dict) -> list:
    fill, stall = keys["fill"], deadline_run()
    claim(stall["status"] == "cancelled", "a stream past its pause deadline is cancelled")
    claim(stall["tokens"] < stall["output_tokens"], "the cancelled stream is not complete")
    net = fill["produce_kib_s"] - fill["read_kib_s"]
    lead_s = (stall["event_bytes"] / 1024 + fill["read_kib_s"] * stall["step_ms"] / 1000) / net
    early = fill["fill_s_formula"] - fill["pause_s"]
    claim(0 < early < lead_s, "the pause is early by under an event and a step's reads")
    claim(fill["resume_s"] > fill["pause_s"], "the stream resumes after the pause")
    rates = load_file(HERE.parent / "public_traces.py").EX31_10_READ_RATES
    claim((min(rates), max(rates)) == (2048, 5120), "a student's client reads 2 to 5 KiB/s")
    fields = SETUP.D1_FIELDS
    return [
        text(
            "d1_intro",
            """
## 习题 31.10 · 输出缓冲多久会满

教材的数字：输出以 12 KiB/s 产生，客户端以 4 KiB/s 读取，空缓冲的容量是 64 KiB。净流入是
两者之差，缓冲从空到满所需的时间就是容量除以净流入：64 / (12 − 4) = 8 s。`ex31_10.py` 在
本实验的引擎上搭出了这个例子，客户端的读速取自实验文件夹里的 `traces/ex31-10.json`：每位
同学拿到的读速各不相同（2 到 5 KiB/s 之间；课程原版的文件是教材的 4 KiB/s），所以填满时间
要从你自己的运行里算。下面的只读单元格运行它（不设暂停期限），得到一个完整的运行记录 `stream`。

引擎只在每一步结束时整块地放入 token 事件，所以“满”的时刻是：缓冲再也放不下一个事件、流
被暂停的那一刻，也就是 `pausedMs` 第一段的起点。请**从这次运行读出**下面各项，写进 `d1`：

- `pause_s`：缓冲第一次满、流被暂停的时刻（秒）；
- `resume_s`：客户端把缓冲读到低水位、流恢复的时刻（秒）；
- `tokens_before_pause`：暂停时刻及之前已产生的 token 数（数 `tokenTimesMs`）；
- `produce_kib_s`：暂停前的产生速率，等于每个事件的字节数（`device["streamEventBytes"]`）乘以
  `tokens_before_pause`，除以最后一个这样的 token 的时刻，再换算成 KiB/s；
- `read_kib_s`：客户端的读取速率（请求记录里的 `readBytesPerS`，换算成 KiB/s）；
- `fill_s_formula`：用上面两个速率和缓冲容量（`device["streamBufferBytes"]`）算出的填满时间（秒）。

最后的 `assert` 把运行得到的 `pause_s` 和公式对上，公式里用的是这次运行自己的数（事件字节数、
步长、缓冲容量和请求的读速），不是教材的 64 / (12 − 4)。引擎要等缓冲放不下下一个完整的事件
才暂停，客户端又要等第一个 token（第一步结束）才开始读，所以 `pause_s` 比公式早，但早不过
“一个事件加上一步的读取量”按净流入速率填进缓冲所需的时间。
""",
        ),
        locked_code("d1_run", D1_RUN),
        answer_code(
            "d1_answer",
            """
KIB = 1024
STEP_S = 0.03125  # 引擎每步的时长（秒）
### BEGIN SOLUTION
pause_ms, resume_ms = stream_request["pausedMs"][0]
before = [t for t in stream_request["tokenTimesMs"] if t <= pause_ms]
produce = stream["device"]["streamEventBytes"] * len(before) / (before[-1] / 1000) / KIB
read = stream_request["readBytesPerS"] / KIB
d1 = {
    "pause_s": pause_ms / 1000,
    "tokens_before_pause": len(before),
    "produce_kib_s": produce,
    "read_kib_s": read,
    "fill_s_formula": stream["device"]["streamBufferBytes"] / KIB / (produce - read),
    "resume_s": resume_ms / 1000,
}
### END SOLUTION
device = stream["device"]
net_kib_s = device["streamEventBytes"] / STEP_S / KIB - stream_request["readBytesPerS"] / KIB
fluid_s = device["streamBufferBytes"] / KIB / net_kib_s  # 流体模型的填满时间
lead_kib = (device["streamEventBytes"] + stream_request["readBytesPerS"] * STEP_S) / KIB
assert 0 <= fluid_s - d1["pause_s"] < lead_kib / net_kib_s, (d1, fluid_s)
print(d1)
""",
        ),
        test_code(
            "d1_fill",
            2,
            "从运行读出的填满时间与两个速率。本地只检查答案的形状；",
            f'check_numbers(d1, shape({fields!r}), "d1")',
            ("d1",),
        ),
        text(
            "d1_explain_prompt",
            """
**问题 1（人工评分）**：缓冲满了以后，这个请求应该处于什么状态？它还占着哪些资源？什么时候
恢复，什么时候放弃？为什么不能把放不下的 token 丢掉、同时仍然把这条流记为完成？
""",
        ),
        manual_answer(
            "d1_explain",
            1,
            f"""
### BEGIN SOLUTION
以课程原版的 `traces/ex31-10.json`（客户端每秒读 {fill["read_kib_s"]:g} KiB）为例：
缓冲满了（{fill["pause_s"]:.3f} s，比流体模型的 {fill["fill_s_formula"]:.3f} s 早，
因为事件是整块放入的）之后，请求进入暂停状态：不再为它 decode，但它的 KV 页和槽位都保留，
客户端继续读缓冲。读到低水位时（本次运行在 {fill["resume_s"]:.3f} s）恢复生成。暂停要有期限：
设备规定 {stall["deadline_ms"] / 1000:g} s 的暂停期限时，这条流在
{stall["status_ms"] / 1000:.3f} s 被取消（原因 {stall["cancel_reason"]}），只生成了
{stall["output_tokens"]} 个里的 {stall["tokens"]} 个 token，页和槽位随之释放。缓冲不能
无限增长；丢掉 token 又把流记成完成，客户端拿到的就是残缺的输出，所以终态要如实记录
（完成或取消），连同客户端最后确认读到的事件。
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
    plan = load_file(HERE / "cells_plan.py")
    diag = load_file(HERE / "cells_diag.py")
    return [
        *intro_cells(),
        *d1_cells(keys),
        *plan.d2_cells(keys),
        *diag.d3_cells(keys),
        *submit_cells(),
    ]
