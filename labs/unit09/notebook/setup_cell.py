"""下面各部分共用的小工具。这个单元格是只读的，请直接运行它。"""

import json
import math
import subprocess
import sys
from pathlib import Path

LAB = Path.cwd()  # 笔记本、simulate.py、tailruns.py 和你的 measure.py 在同一个文件夹里
if str(LAB) not in sys.path:
    sys.path.insert(0, str(LAB))  # 让 import measure / import tailruns 找到本文件夹的文件
(LAB / "runs").mkdir(exist_ok=True)
OPTIONAL = "数字或 None"  # 形状模板里的这个位置也可以是 None


def simulate(*args):
    """在本文件夹运行 simulate.py（它会导入你的 policies.py），并打印对照表。"""
    done = subprocess.run(
        [sys.executable, "simulate.py", *args], cwd=LAB, capture_output=True, text=True
    )
    print(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"simulate.py 以退出码 {done.returncode} 结束：{done.stderr.strip()}")


def load_run(path):
    """读取只有一个 run 的运行文件（完整或紧凑格式都行），返回这个完整的 run。"""
    from servesim.compact import expand_run

    document = json.loads((LAB / path).read_text(encoding="utf-8"))
    (run,) = document["runs"]
    return expand_run(run)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_numbers(answer, template, label):
    """检查答案的形状：键与模板一致；模板里的列表要求同样长度的数字列表；最里层是有限的数字
    （模板写 OPTIONAL 的位置也可以是 None）。"""
    if isinstance(template, dict):
        assert isinstance(answer, dict), f"{label} 应该是一个 dict，现在是 {type(answer).__name__}"
        missing = [key for key in template if key not in answer]
        assert not missing, f"{label} 缺少键 {missing}"
        for key, sub in template.items():
            check_numbers(answer[key], sub, f"{label}[{key!r}]")
        return
    if template is OPTIONAL and (answer is None or isinstance(answer, list)):
        for index, value in enumerate(answer or []):  # None，或一个由数字组成的列表
            check_numbers(value, 0, f"{label}[{index}]")
        return
    if isinstance(template, list):
        assert isinstance(answer, list) and len(answer) == len(template), (
            f"{label} 应该是 {len(template)} 个数字的列表，现在是 {answer!r}"
        )
        for index, sub in enumerate(template):
            check_numbers(answer[index], sub, f"{label}[{index}]")
        return
    assert _is_number(answer), f"{label} 应该是一个有限的数字，现在是 {answer!r}"


def check_choice(answer, keys, choices, label):
    """检查选择题的形状：每个键都在，值是 choices 里的一项。"""
    assert isinstance(answer, dict), f"{label} 应该是一个 dict，现在是 {type(answer).__name__}"
    for key in keys:
        assert key in answer, f"{label} 缺少键 {key!r}"
        assert answer[key] in choices, f"{label}[{key!r}] 应该是 {choices} 之一"


def shape(keys, leaf=0):
    """由键列表生成形状模板，例如 shape(["pause_s", "resume_s"])。"""
    return {key: leaf for key in keys}


def check_diagnosis(answer, causes, label):
    """检查一条诊断的形状：cause 是 causes 之一，其余三项是数字（p99 也可以是 None）。"""
    assert isinstance(answer, dict), f"{label} 应该是一个 dict，现在是 {type(answer).__name__}"
    assert answer.get("cause") in causes, f"{label}['cause'] 应该是 {causes} 之一"
    template = {"p99_wait_ms": OPTIONAL, "p99_itl_ms": OPTIONAL, "rejected": 0}
    check_numbers(answer, template, label)
