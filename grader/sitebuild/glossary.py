"""The course glossary: ``labs/glossary.yaml``, one list of terms for every unit's pages.

::

    terms:
      - id: operating-point            # the anchor: glossary.html#operating-point
        term: "工作点"                  # the one Chinese word every page uses
        en: "operating point"
        text: "..."                     # what it means, in Chinese
        vllm: "max_num_seqs"            # optional: the vLLM knob it corresponds to
        formula: "count(window, completed, quality, slo) / count(window)"  # optional, see
                                        # formula.py; tests evaluate it against measure.py, and a
                                        # latency formula ("(u[O] - u[1]) / (O - 1)") against
                                        # servesim.metrics, the grader's metric code
        units: [<unit id>, ...]          # optional: units whose lesson uses it

A bad file stops the build with one error naming the entry.
"""

from __future__ import annotations

import re
from pathlib import Path

from .claims import BuildError
from .formula import required_words

FILE = "glossary.yaml"
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_FIELDS = {"id", "term", "en", "text", "vllm", "units", "formula"}


def load_glossary(labs_dir: Path) -> list[dict]:
    """The glossary's terms in file order ([] when the course has none)."""
    import yaml

    path = Path(labs_dir) / FILE
    if not path.is_file():
        return []
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise BuildError(f"{FILE}: not valid YAML ({exc})") from None
    terms = doc.get("terms") if isinstance(doc, dict) else None
    if not isinstance(terms, list):
        raise BuildError(f"{FILE}: must be a mapping with a list 'terms'")
    seen = set()
    for n, item in enumerate(terms, start=1):
        where = f"{FILE}: terms #{n}"
        if not isinstance(item, dict) or set(item) - _FIELDS:
            raise BuildError(f"{where}: must be a mapping of {sorted(_FIELDS)}")
        for key in ("id", "term", "en", "text"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise BuildError(f"{where}: field '{key}' must be a non-empty string")
        if not _ID.match(item["id"]) or item["id"] in seen:
            raise BuildError(f"{where}: id '{item['id']}' must be unique lower-case words")
        seen.add(item["id"])
        if "formula" in item:
            _check_definition(item, where)
    return terms


def _check_definition(item: dict, where: str) -> None:
    """The text of a term with a formula names every set and the denominator the formula has."""
    if not isinstance(item["formula"], str):
        raise BuildError(f"{where}: field 'formula' must be a string")
    try:
        words = required_words(item["formula"])
    except BuildError as exc:
        raise BuildError(f"{where}: {exc}") from None
    missing = [w for w in words if w not in item["text"]]
    if missing:
        raise BuildError(f"{where}: the text leaves out what its formula counts: {missing}")
