"""The lesson's figure: exercise 31.10's output buffer over time, drawn from its two runs."""

from __future__ import annotations

from grader.sitebuild.charts import Series, line_chart

KIB = 1024


def _n(value: float) -> str:
    return f"{value:g}"


def buffer_figure(buf: dict) -> str:
    """Buffer occupancy (KiB) against time (s), without and with a pause deadline."""
    deadline_s = buf["deadline_ms"] / 1000
    free = [(t / 1000, level / KIB) for t, level in buf["free_curve"]]
    stall = [(t / 1000, level / KIB) for t, level in buf["stall_curve"]]
    pause, resume = buf["no_deadline"]["pauses_ms"][0]
    cancel = buf["with_deadline"]["status_ms"]
    free_marks = [
        (
            pause / 1000,
            buf["no_deadline"]["buffer_peak_bytes"] / KIB,
            f"暂停：{pause / 1000:.3f} s",
        ),
        (resume / 1000, buf["low_mark_bytes"] / KIB, f"恢复：{resume / 1000:.3f} s"),
    ]
    stall_marks = [(cancel / 1000, stall[-1][1], f"取消（stalled）：{cancel / 1000:.3f} s")]
    series = [
        Series("无期限：暂停后在低水位恢复", free, marks=free_marks),
        Series(f"暂停期限 {_n(deadline_s)} s：到期取消", stall, marks=stall_marks),
    ]
    desc = (
        f"ex31_10.py 的两次运行：一个请求每 {_n(buf['step_ms'])} ms 产出一个 "
        f"{buf['event_bytes']} 字节的事件（{_n(buf['produce_bytes_per_s'] / KIB)} KiB/s），"
        f"客户端每秒读 {_n(buf['read_bytes_per_s'] / KIB)} KiB，缓冲 "
        f"{_n(buf['buffer_bytes'] / KIB)} KiB，低水位 {_n(buf['low_mark_bytes'] / KIB)} KiB。"
        f"纵轴是缓冲里的字节数（KiB），每 {_n(buf['sample_ms'] / 1000)} s 取一次样，"
        f"另加暂停、恢复和取消的时刻；"
        f"三角形标出这些时刻。"
    )
    return line_chart(
        series,
        element_id="buffer-level",
        title="慢客户端的输出缓冲：占用随时间变化",
        desc=desc,
        x_label="时间 (s)",
        y_label="缓冲占用 (KiB)",
        hline=(buf["buffer_bytes"] / KIB, f"容量 {_n(buf['buffer_bytes'] / KIB)} KiB"),
        mark_note="三角形：暂停、恢复、取消",
        end_labels=False,  # the stall run ends on the other line: its name there would cover it
    )
