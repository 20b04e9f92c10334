"""Benchmark: the run picture (view.py) of a 20,000-request unit 08 run.

Makes the run with the reference policy (``infralab simulate --unit unit08 --reference``:
the public trace azure-conv-slice's sizes, open-loop arrivals, policy paged on the 256-page
pool; written compact, as simulate.py writes large runs), then times each stage of
``view.py RUN --format chrome-trace`` (read, replay the compact run into columns, page, trace) and
prints the file sizes. With chromium and playwright at hand it also times the page in the
browser: opening it until both tables are drawn, and jumping to the last page of steps.

    .venv/bin/python benchmarks/view_large_run.py [--requests 20000] [--rate 2] [--run RUN]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from servesim.runview import chrome, diff, model, page  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")


def make_run(path: Path, requests: int, rate: float) -> None:
    command = [
        str(REPO / ".venv/bin/infralab"),
        "simulate",
        "--unit",
        "unit08",
        "--reference",
        "--trace",
        "azure-conv-slice",
        "--load",
        f"open:{rate}",
        "--requests",
        str(requests),
        "--policy",
        "paged",
        "--device-profile",
        str(REPO / "starter/unit08/devices/pool-256.json"),
        "--output",
        str(path),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def timed(label: str, work, marks: list):
    start = time.perf_counter()
    result = work()
    marks.append((label, time.perf_counter() - start))
    return result


def browser_times(html: Path) -> list[tuple[str, float]]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return []
    if not CHROMIUM.is_file():
        return []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        tab = browser.new_page()
        start = time.perf_counter()
        tab.goto(html.as_uri())
        tab.wait_for_selector("#steps-body tr")
        tab.wait_for_selector("#lanes-body tr")
        opened = time.perf_counter() - start
        start = time.perf_counter()
        tab.get_by_role("button", name="最后一页").first.click()
        tab.wait_for_function("document.querySelector('#steps-body tr:last-child') !== null")
        last = time.perf_counter() - start
        browser.close()
    return [("browser: open until both tables are drawn", opened), ("browser: last page", last)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=2.0, help="open-loop arrivals per second")
    parser.add_argument("--run", help="an existing run file (skips making one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_path = Path(args.run) if args.run else Path(tmp) / "big.json"
        if not args.run:
            start = time.perf_counter()
            make_run(run_path, args.requests, args.rate)
            print(f"made the run in {time.perf_counter() - start:.1f} s")
        marks: list[tuple[str, float]] = []
        doc = timed("read the run file", lambda: model.read_json(run_path), marks)
        runs = timed("the run entries", lambda: model.runs_of(doc, run_path), marks)
        picture = timed("replay", lambda: model.replay(runs[0]), marks)
        found = timed(
            "first difference (against itself)",
            lambda: diff.first_difference(picture, picture),
            marks,
        )
        text = timed("render the page", lambda: page.render(picture, "big", found, None), marks)
        trace = timed(
            "Chrome trace",
            lambda: json.dumps(chrome.trace_events(picture), separators=(",", ":")),
            marks,
        )
        html = Path(tmp) / "big.html"
        html.write_text(text, encoding="utf-8")
        print(
            f"run: {len(picture.lanes)} requests, {len(picture.steps)} steps; run file "
            f"{run_path.stat().st_size / 1e6:.1f} MB"
        )
        for label, seconds in marks:
            print(f"  {label:40s} {seconds:7.2f} s")
        print(f"  total {sum(s for _, s in marks):.1f} s")
        print(f"page: {len(text.encode()) / 1e6:.2f} MB; Chrome trace: {len(trace) / 1e6:.1f} MB")
        for label, seconds in browser_times(html):
            print(f"  {label:40s} {seconds:7.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
