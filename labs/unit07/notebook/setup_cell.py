"""下面各部分共用的小工具。这个单元格是只读的，请直接运行它。"""

import json
import math
import subprocess
import sys
from pathlib import Path

LAB = Path.cwd()  # 笔记本和 simulate.py 在同一个文件夹里
(LAB / "runs").mkdir(exist_ok=True)
POLICIES = ("fcfs", "chunked")


def simulate(*args):
    """在本文件夹运行 simulate.py（它会导入你的 policies.py），并打印对照表。"""
    done = subprocess.run(
        [sys.executable, "simulate.py", *args], cwd=LAB, capture_output=True, text=True
    )
    print(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"simulate.py 以退出码 {done.returncode} 结束：{done.stderr.strip()}")


def show_trace(name):
    """打印 traces/<name>.json 里的请求：每位同学的 trace 可能是自己的一份，以这里打印的为准。"""
    trace = json.loads((LAB / "traces" / f"{name}.json").read_text(encoding="utf-8"))
    print(f"{'id':>4} {'arrivalMs':>10} {'inputTokens':>12} {'outputTokens':>13}")
    for r in trace["requests"]:
        print(f"{r['id']:>4} {r['arrivalMs']:>10} {r['inputTokens']:>12} {r['outputTokens']:>13}")


def load_runs(path):
    """读取一个运行文件，返回 {策略名：该策略的 run}。"""
    document = json.loads((LAB / path).read_text(encoding="utf-8"))
    return {run["policy"]: run for run in document["runs"]}


def check_numbers(answer, template, label):
    """检查答案的形状：键与模板一致，最里层是有限的数字。"""
    if isinstance(template, dict):
        assert isinstance(answer, dict), f"{label} 应该是一个 dict，现在是 {type(answer).__name__}"
        missing = [key for key in template if key not in answer]
        assert not missing, f"{label} 缺少键 {missing}"
        for key, sub in template.items():
            check_numbers(answer[key], sub, f"{label}[{key!r}]")
        return
    ok = isinstance(answer, (int, float)) and not isinstance(answer, bool)
    assert ok and math.isfinite(answer), f"{label} 应该是一个数字（毫秒或次数），现在是 {answer!r}"


def check_close(answer, expected, label, tol=1e-6):
    """逐项比较答案与期望值，第一处不一致时报错并指出位置。"""
    if isinstance(expected, dict):
        for key, sub in expected.items():
            assert isinstance(answer, dict) and key in answer, f"{label} 缺少键 {key!r}"
            check_close(answer[key], sub, f"{label}[{key!r}]", tol)
        return
    assert abs(answer - expected) <= tol, f"{label} 不对：你的答案是 {answer}"


def shape(keys, leaf=None):
    """由键列表生成形状模板，例如 shape(POLICIES, shape(["A", "L"]))。"""
    return {key: leaf for key in keys}
