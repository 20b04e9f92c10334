"""``benchmarks/variants_class.py`` in its tiniest form: two students, one case, one repeat."""

from __future__ import annotations

import re
import subprocess
import sys

from varianttools import write_secret

from grader.units import REPO_ROOT


def test_the_class_benchmark_runs_and_reports_both_ways(tmp_path):
    done = subprocess.run(
        [
            sys.executable, str(REPO_ROOT / "benchmarks" / "variants_class.py"), "--count", "2",
            "--repeat", "1", "--case", "static-burst", "--jobs", "2",
            "--secret", str(write_secret(tmp_path)),
        ],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"variants: 2 made in [\d.]+ s, median [\d.]+ s, slowest [\d.]+ s", done.stdout
    )
    assert re.search(
        r"2 submissions, median of 1: fixed [\d.]+ s, variants [\d.]+ s, ratio", done.stdout
    )
