"""下面各部分共用的小工具。这个单元格是只读的，请直接运行它。"""

import json
import math
import subprocess
import sys
from pathlib import Path

LAB = Path.cwd()  # 笔记本、simulate.py、sweep.py 和你的 measure.py 在同一个文件夹里
if str(LAB) not in sys.path:
    sys.path.insert(0, str(LAB))  # 让 import measure / import sweep 找到本文件夹的文件
(LAB / "runs").mkdir(exist_ok=True)
OPTIONAL = "数字或 None"  # 形状模板里的这个位置也可以是 None（例如没有成功请求时的达成率）
POINT = ("load", "goodput_per_s", "cost_per_1000")  # 一个档位的工作点


def simulate(*args):
    """在本文件夹运行 simulate.py（它会导入你的 policies.py），并打印对照表。"""
    done = subprocess.run(
        [sys.executable, "simulate.py", *args], cwd=LAB, capture_output=True, text=True
    )
    print(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"simulate.py 以退出码 {done.returncode} 结束：{done.stderr.strip()}")


def load_runs(path):
    """读取一个运行文件（完整或紧凑格式都行），返回 {策略名：该策略的完整 run}。"""
    from servesim.compact import expand_run

    document = json.loads((LAB / path).read_text(encoding="utf-8"))
    return {run["policy"]: expand_run(run) for run in document["runs"]}


def load_requests(path):
    """只有一个 run 的运行文件（闭环、开环、档位运行）：返回它的请求记录列表。"""
    (run,) = load_runs(path).values()
    return run["requests"]


def run_sweep(protocol):
    """用你的 policies.py 和 measure.py 按协议文件运行 sweep.py
    （打印表格，三张图写进 runs/sweep/），返回（协议，每次重复的结果列表）。"""
    from servesim.protocol import load_protocol

    out = LAB / "runs" / "sweep.json"
    done = subprocess.run(
        [sys.executable, "sweep.py", "--protocol", protocol, "--json", str(out)],
        cwd=LAB,
        capture_output=True,
        text=True,
    )
    print(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"sweep.py 以退出码 {done.returncode} 结束：{done.stderr.strip()}")
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    return load_protocol(LAB / protocol), results


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_numbers(answer, template, label):
    """检查答案的形状：键与模板一致，最里层是有限的数字（模板写 OPTIONAL 的位置也可以是 None）。"""
    if isinstance(template, dict):
        assert isinstance(answer, dict), f"{label} 应该是一个 dict，现在是 {type(answer).__name__}"
        missing = [key for key in template if key not in answer]
        assert not missing, f"{label} 缺少键 {missing}"
        for key, sub in template.items():
            check_numbers(answer[key], sub, f"{label}[{key!r}]")
        return
    if template is None:  # 这一层还要另外检查（见 check_choice）
        assert isinstance(answer, dict) or answer is None, f"{label} 应该是 dict 或 None"
        return
    ok = _is_number(answer) or (template is OPTIONAL and answer is None)
    assert ok, f"{label} 应该是一个有限的数字，现在是 {answer!r}"


NOT_YET_KNOWN = "not yet known"  # 运行还分不出最便宜的档位时 cheapest 写这个


def check_choice(answer, tiers, label):
    """检查工作点答案的形状：每个档位是 None（不可行）或三个数字，最便宜的是档位名、
    NOT_YET_KNOWN 或 None。"""
    assert isinstance(answer, dict), f"{label} 应该是一个 dict，现在是 {type(answer).__name__}"
    missing = [key for key in ("points", "cheapest") if key not in answer]
    assert not missing, f"{label} 缺少键 {missing}"
    check_numbers(answer["points"], shape(tiers, None), f"{label}['points']")
    for tier in tiers:
        point = answer["points"][tier]
        if point is not None:
            check_numbers(point, shape(POINT), f"{label}['points'][{tier!r}]")
    cheapest = answer["cheapest"]
    assert cheapest is None or cheapest == NOT_YET_KNOWN or cheapest in tiers, (
        f"{label}['cheapest'] 应该是档位名、{NOT_YET_KNOWN!r} 或 None"
    )


def check_close(answer, expected, label, tol=1e-6):
    """逐项比较答案与期望值（数字按相对误差 tol），第一处不一致时报错并指出位置。"""
    if isinstance(expected, dict):
        assert isinstance(answer, dict), f"{label} 应该是一个 dict"
        for key, sub in expected.items():
            assert key in answer, f"{label} 缺少键 {key!r}"
            check_close(answer[key], sub, f"{label}[{key!r}]", tol)
        return
    if _is_number(expected):
        ok = _is_number(answer) and abs(answer - expected) <= tol * max(1.0, abs(expected))
    else:
        ok = answer == expected
    assert ok, f"{label} 不对：你的答案是 {answer!r}"


def shape(keys, leaf=0):
    """由键列表生成形状模板，例如 shape(["budgeted", "paged"], shape(["submitted"]))。"""
    return {key: leaf for key in keys}
