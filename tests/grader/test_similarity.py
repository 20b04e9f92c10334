"""``infralab similarity``: copies are found, work written independently is not, the starter
alone makes no pair alike; bad input is one error line with nothing written; submissions are
hostile (never run, bounded, their text escaped on the page and neutralised in the CSV).

The classes are made by ``tests/similarity_class/build.py`` from implementations written each
on its own from the handout (four of unit 07; three of unit 08's ``static``, ``continuous`` and
``budgeted``; three of unit 09's ``p99``, ``prefill_amplification``, ``waiting_share`` and
``mean_queue``; all score full marks on their cases), one more and a disguised copy of it (which
scores the same), the reference and two untouched starters.
"""

from __future__ import annotations

import csv
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from similarity_class.build import disguised, filled, solved

from grader.cli.main import main
from grader.similarity import THRESHOLD
from grader.units import load_unit

pytest.importorskip("copydetect", reason="needs the similarity extra")
from grader.similarity import detect

CLASSES = Path(__file__).parents[1] / "similarity_class"


def _submit(root: Path, name: str, files: dict[str, str], as_zip: bool = False) -> Path:
    """A submission as a student hands it in: a folder, or a zip of one (with a top folder)."""
    if as_zip:
        path = root / f"{name}.zip"
        with zipfile.ZipFile(path, "w") as archive:
            for file, text in files.items():
                archive.writestr(f"{name}/{file}", text)
        return path
    folder = root / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text, encoding="utf-8")
    return folder


def _run(tmp_path: Path, unit: str, subs: list[Path], *flags: str):
    out = tmp_path / "report"
    code = main(["similarity", "--unit", unit, *map(str, subs), "--out", str(out), *flags])
    return code, out


def _pairs(out: Path) -> dict[frozenset, dict]:
    with (out / "pairs.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {frozenset((r["submission_a"], r["submission_b"])): r for r in rows}


def _score(row: dict) -> float:
    return max(float(row["similarity_a"]), float(row["similarity_b"]))


def _class(root: Path, unit_id: str) -> list[Path]:
    """The unit's implementations, a disguised copy of ``original``, the reference and two
    untouched starters, as submissions in ``root`` (the copy as a zip)."""
    unit = load_unit(unit_id)
    starter = {n: (unit.lab_dir / n).read_text(encoding="utf-8") for n in unit.editable}
    texts = {}
    for path in sorted((CLASSES / unit_id).glob("*.py")):
        code = path.read_text(encoding="utf-8")
        texts[path.stem] = {n: filled(text, code) for n, text in starter.items()}
        assert texts[path.stem] != starter, path
    texts["copy"] = {
        n: text if text == starter[n] else disguised(text) for n, text in texts["original"].items()
    }
    texts["reference"] = {
        n: solved((unit.solutions_dir / n).read_text(encoding="utf-8")) for n in unit.editable
    }
    texts["untouched1"] = texts["untouched2"] = starter
    return [_submit(root, n, files, as_zip=n == "copy") for n, files in texts.items()]


@pytest.fixture(scope="module")
def class07(tmp_path_factory):
    root = tmp_path_factory.mktemp("class07")
    starter = (load_unit("unit07").lab_dir / "policies.py").read_text(encoding="utf-8")
    return root, _class(root, "unit07"), starter


# The largest share between two submissions written apart, as measured (docs/ta.md)
CLOSEST_APART = {"unit07": 0.33, "unit08": 0.47, "unit09": 0.61}


@pytest.mark.parametrize("unit_id", sorted(CLOSEST_APART))
def test_copies_are_found_and_independent_work_is_not(tmp_path, unit_id, capsys):
    (tmp_path / "class").mkdir()
    subs = _class(tmp_path / "class", unit_id)
    code, out = _run(tmp_path, unit_id, subs)
    assert code == 0
    pairs = _pairs(out)
    assert len(pairs) == len(subs) * (len(subs) - 1) // 2
    flagged = {pair for pair, row in pairs.items() if row["flagged"] == "yes"}
    assert flagged == {frozenset(("copy", "original"))}
    assert _score(pairs[frozenset(("copy", "original"))]) >= 0.9
    apart = {p.stem for p in (CLASSES / unit_id).glob("*.py")} - {"original"}
    assert len(apart) >= 3
    closest = max(_score(row) for pair, row in pairs.items() if pair & apart)
    assert closest == pytest.approx(CLOSEST_APART[unit_id], abs=0.005)
    assert closest < THRESHOLD
    assert _score(pairs[frozenset(("untouched1", "untouched2"))]) == 0
    assert "copy and original" in capsys.readouterr().out


def test_the_starter_alone_makes_no_pair_alike(tmp_path, class07, monkeypatch):
    """Untouched starters share every line, yet score 0; without the boilerplate they are
    flagged (so the check above could fail)."""
    _, subs, _ = class07
    untouched = [s for s in subs if s.name.startswith("untouched")]
    pair = frozenset(s.name for s in untouched)
    assert _run(tmp_path, "unit07", untouched)[0] == 0
    assert _pairs(tmp_path / "report")[pair]["similarity_a"] == "0.000"
    monkeypatch.setattr(detect, "_boilerplate", lambda path: [])
    assert _run(tmp_path, "unit07", untouched)[0] == 0
    assert _pairs(tmp_path / "report")[pair]["flagged"] == "yes"


@pytest.mark.parametrize("unit_id", ["unit07", "unit08", "unit09"])
def test_each_unit_finds_a_disguised_reference_and_not_the_starter(tmp_path, unit_id):
    unit = load_unit(unit_id)
    starter = {n: (unit.lab_dir / n).read_text(encoding="utf-8") for n in unit.editable}
    reference = {
        n: solved((unit.solutions_dir / n).read_text(encoding="utf-8")) for n in unit.editable
    }
    copy = {n: disguised(text) for n, text in reference.items()}
    subs = [
        _submit(tmp_path, "stub1", starter),
        _submit(tmp_path, "stub2", starter, as_zip=True),
        _submit(tmp_path, "reference", reference),
        _submit(tmp_path, "copy", copy, as_zip=True),
    ]
    code, out = _run(tmp_path, unit_id, subs)
    assert code == 0
    flagged = {pair for pair, row in _pairs(out).items() if row["flagged"] == "yes"}
    assert flagged == {frozenset(("copy", "reference"))}
    assert _score(_pairs(out)[frozenset(("stub1", "stub2"))]) == 0


def _one_error(capsys, out: Path, needle: str) -> None:
    err = capsys.readouterr().err.strip()
    assert err.startswith("infralab: error:") and "\n" not in err, err
    assert needle in err, err
    assert not out.exists()


def test_bad_submissions_are_one_error_and_nothing_written(tmp_path, class07, capsys):
    _, subs, _ = class07
    good = subs[:2]
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("hi", encoding="utf-8")
    cases = [
        (tmp_path / "absent", "no such file or folder"),
        (tmp_path / "broken.zip", "not a readable zip file"),
        (tmp_path / "notes", "none of the editable files (policies.py)"),
        (good[0], "both named"),
    ]
    for bad, needle in cases:
        code, out = _run(tmp_path, "unit07", [*good, bad])
        assert code == 2
        _one_error(capsys, out, needle)
    assert _run(tmp_path, "unit07", good[:1])[0] == 2
    _one_error(capsys, tmp_path / "report", "at least two submissions")
    (tmp_path / "file").write_text("", encoding="utf-8")
    assert main(["similarity", "--unit", "unit07", *map(str, good), "--out", f"{tmp_path}/file"])
    assert "exists and is not a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run(tmp_path, "unit07", good, "--threshold", "1.5")
    assert "--threshold" in capsys.readouterr().err and not (tmp_path / "report").exists()


def test_what_is_read_is_bounded(tmp_path, class07, capsys, monkeypatch):
    _, subs, starter = class07
    for size, needle in ((1 << 20, "larger than 1 MiB"), (256 << 10, "larger than 256 KiB")):
        big = _submit(tmp_path, f"big{size}", {"policies.py": starter + "#" * size})
        assert _run(tmp_path, "unit07", [subs[0], big])[0] == 2
        _one_error(capsys, tmp_path / "report", needle)
    from grader.grading import submission

    monkeypatch.setattr(submission, "MAX_ENTRIES", 3)
    many = _submit(tmp_path, "many", {f"f{i}.txt": "" for i in range(4)} | {"policies.py": ""})
    assert _run(tmp_path, "unit07", [subs[0], many])[0] == 2
    _one_error(capsys, tmp_path / "report", "more than 3 files")


HOSTILE = '"</code></pre><script>alert(1)</script><!--<img src=x onerror=alert(2)>&amp;'


def test_submitted_code_is_never_run_and_reaches_the_page_as_text(tmp_path, class07):
    _, _, starter = class07
    ran = tmp_path / "ran"
    body = (CLASSES / "unit07" / "original.py").read_text(encoding="utf-8")
    text = filled(starter, body).replace(
        '"""Unit 07 scheduling', f'open({str(ran)!r}, \'w\').write({HOSTILE!r})\n"""Unit 07', 1
    )
    text += f"\n\ndef shout():\n    return {HOSTILE!r}  # {HOSTILE}\n"
    subs = [
        _submit(tmp_path, "+cmd", {"policies.py": text}),
        _submit(tmp_path, "@SUM(A1)", {"policies.py": disguised(text)}, as_zip=True),
    ]
    code, out = _run(tmp_path, "unit07", subs)
    assert code == 0 and not ran.exists()
    assert [r["flagged"] for r in _pairs(out).values()] == ["yes"]
    rows = (out / "pairs.csv").read_text(encoding="utf-8").splitlines()
    assert rows[1].startswith("'+cmd,'@SUM_A1_,")

    class Reader(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.tags, self.code, self.in_pre = [], [], False

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self.in_pre = self.in_pre or tag == "pre"

        def handle_endtag(self, tag):
            self.in_pre = self.in_pre and tag != "pre"

        def handle_data(self, data):
            if self.in_pre:
                self.code.append(data)

    reader = Reader()
    reader.feed((out / "similarity.html").read_text(encoding="utf-8"))
    assert "script" not in reader.tags and "img" not in reader.tags
    assert reader.tags.count("pre") == 2
    assert HOSTILE in "".join(reader.code)
    assert oct(out.stat().st_mode & 0o777) == "0o700"
    assert {oct(p.stat().st_mode & 0o777) for p in out.iterdir()} == {"0o600"}


def test_the_page_shows_the_code_of_the_first_flagged_pairs_only(tmp_path, class07, monkeypatch):
    from grader.similarity import page

    _, subs, _ = class07
    monkeypatch.setattr(page, "DETAILS_SHOWN", 0)
    assert _run(tmp_path, "unit07", subs)[0] == 0
    html = (tmp_path / "report" / "similarity.html").read_text(encoding="utf-8")
    assert "<pre" not in html and "pairs.csv lists all 1." in html


def test_the_default_threshold_is_the_one_documented():
    doc = (Path(__file__).parents[2] / "docs" / "ta.md").read_text(encoding="utf-8")
    assert f"--threshold {THRESHOLD}" in doc and f"{detect.MIN_SHARED} characters" in doc
