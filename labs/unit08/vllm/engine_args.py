"""Write ``engine_args.txt``: the field names of vLLM's ``EngineArgs`` in the pinned version.

Usage: ``python labs/unit08/vllm/engine_args.py PATH/TO/vllm-<version>/vllm/engine/arg_utils.py``
(the file from vLLM's source distribution of the version the peer scheduler pins, see
``shared/peers/vllm/README.md``). It reads the file with ``ast`` (nothing of vLLM is imported)
and writes one field name a line, after a header naming the version and the file's SHA-256.
The lesson's knob table is checked against this list by ``tests/site/test_vllm_knobs.py``.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from pathlib import Path

VERSION = "0.33.0"
OUT = Path(__file__).with_name("engine_args.txt")


def engine_args(source: str) -> list[str]:
    """The annotated fields of ``class EngineArgs`` in ``source``, in file order."""
    tree = ast.parse(source)
    cls = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EngineArgs"), None
    )
    if cls is None:
        raise ValueError("no class EngineArgs in this file")
    return [
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    data = Path(argv[0]).read_bytes()
    try:
        names = engine_args(data.decode("utf-8"))
    except (ValueError, SyntaxError) as exc:
        print(f"engine_args.py: {argv[0]}: {exc}", file=sys.stderr)
        return 1
    header = [
        f"# vLLM {VERSION}",
        "# fields of EngineArgs in vllm/engine/arg_utils.py",
        f"# sha256 of that file: {hashlib.sha256(data).hexdigest()}",
        "# made by labs/unit08/vllm/engine_args.py; do not edit",
    ]
    OUT.write_text("\n".join(header + names) + "\n", encoding="utf-8")
    print(f"wrote {OUT.name}: {len(names)} fields")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
