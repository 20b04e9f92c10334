#!/usr/bin/env python3
"""Exercise 31.5 (given; not graded): pages after two sequences grow, from the lab's page rule.

    python3 exercises.py 31.5 [--lengths 257 255] [--grow 2] [--json]

Sequences of 257 and 255 positions each generate two more tokens. With 16-token pages
(``devices/kv-64-pages.json``; ``servesim.rules.pages_for``, the rule the engine charges) they
go from 17 + 16 = 33 pages to 17 + 17 = 34: one more page, though only four positions were
added. The first stays inside its 17th page; the second crosses 256. At 64 KiB of KV per
token (section 31.3's figure) a page is 1 MiB, so the marginal cost is 1 MiB, not the 256 KiB
the four tokens hold.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim import DeviceProfile, rules
from servesim.cliargs import int_at_least

HERE = Path(__file__).resolve().parent
KIB_PER_TOKEN = 64  # section 31.3's example model


def pages(lengths: list[int], grow: int) -> dict:
    doc = json.loads((HERE / "devices" / "kv-64-pages.json").read_text(encoding="utf-8"))
    device = DeviceProfile.from_json(doc["device"], source="devices/kv-64-pages.json")
    before = [rules.pages_for(device, n) for n in lengths]
    after = [rules.pages_for(device, n + grow) for n in lengths]
    added_pages = sum(after) - sum(before)
    return {
        "exercise": "31.5",
        "pageTokens": device.page_tokens,
        "lengths": lengths,
        "grown": [n + grow for n in lengths],
        "pagesBefore": before,
        "pagesAfter": after,
        "totalBefore": sum(before),
        "totalAfter": sum(after),
        "addedKiB": added_pages * device.page_tokens * KIB_PER_TOKEN,
        "tokensKiB": grow * len(lengths) * KIB_PER_TOKEN,
    }


def render(r: dict) -> str:
    rows = ", ".join(
        f"{n} -> {m}: {a} -> {b} pages"
        for n, m, a, b in zip(r["lengths"], r["grown"], r["pagesBefore"], r["pagesAfter"])
    )
    return "\n".join([
        f"exercise 31.5: pages of {r['pageTokens']} tokens ({rows})",
        f"  total {r['totalBefore']} -> {r['totalAfter']} pages",
        f"  allocated {r['addedKiB']} KiB for {r['tokensKiB']} KiB of new KV: pages come whole",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="exercises.py 31.5", description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int_at_least(0), nargs="+", default=[257, 255])
    parser.add_argument("--grow", type=int_at_least(0), default=2, help="tokens each adds (2)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    result = pages(args.lengths, args.grow)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
