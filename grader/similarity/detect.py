"""Pairs of submissions whose editable files share code the starter did not give them.

    load_class(unit, paths) -> dict[name, Submission]    every submission read, or one error
    compare(unit, submissions, threshold) -> Comparison  every pair, most similar first

The fingerprints are copydetect's (tokenised with Pygments, names and strings replaced by one
letter each, comments and spaces dropped, k-grams hashed and winnowed; at copydetect's default
thresholds the window is 1, so every k-gram is kept and the result does not depend on the
process's string hashing): renaming variables or moving functions around leaves them as they
were. Every k-gram of the unit's starter files (the given code and the stubs) is
boilerplate, so it counts for no pair, as ``copydetect`` treats its boilerplate folders.

Contracts:

- A pair's similarity for one submission is the share of that submission's own fingerprinted
  code (what is left after the boilerplate) that the other submission holds too, over all the
  editable files both have; ``score`` is the larger of the two sides, as copydetect flags a
  file when its share copied from any other exceeds the display threshold.
- A pair is flagged when ``score >= threshold`` and the shared code is at least
  ``MIN_SHARED`` characters of filtered code (two students who each wrote three lines of their
  own are not evidence of anything).
- Submissions are data: read through ``grader.grading.submission`` (its bounds on entries and
  sizes), an editable file over ``MAX_FILE_BYTES`` refused, decoded as UTF-8 with replacement,
  never imported or run.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from copydetect import CodeFingerprint, compare_files, defaults

from ..grading.submission import Submission, SubmissionError, load_submission, submission_name
from ..units import Unit, UnitError
from . import THRESHOLD

K = defaults.NOISE_THRESHOLD  # copydetect's defaults: matches shorter than this are noise,
WINDOW = defaults.GUARANTEE_THRESHOLD - K + 1  # and every match this long is found
MIN_SHARED = 100  # filtered characters: about five lines of code
MAX_SUBMISSIONS = 2000  # pairs grow with the square; a class is a few hundred
# Tokenising took 67 s for 2.5 MiB of dense code (loaded 2 cores); references are under 20 KiB
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class FileMatch:
    """One editable file of a pair: the shared code's spans, ``(start, end)`` in each text."""

    name: str
    text_a: str
    text_b: str
    spans_a: tuple[tuple[int, int], ...]
    spans_b: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    similarity_a: float  # share of a's own code found in b
    similarity_b: float
    shared: int  # filtered characters a shares with b
    flagged: bool
    files: tuple[FileMatch, ...]

    @property
    def score(self) -> float:
        return max(self.similarity_a, self.similarity_b)


@dataclass(frozen=True)
class Comparison:
    unit: str
    names: tuple[str, ...]
    threshold: float
    pairs: tuple[Pair, ...]  # every pair, highest score first, then by names

    @property
    def flagged(self) -> tuple[Pair, ...]:
        return tuple(pair for pair in self.pairs if pair.flagged)


def load_class(unit: Unit, paths: list[Path]) -> dict[str, Submission]:
    """Each submission by its name (folder name, zip stem); the first bad one is a
    ``UnitError`` naming it (missing, unreadable, no editable file, a duplicate name)."""
    if len(paths) < 2:
        raise UnitError("similarity needs at least two submissions")
    if len(paths) > MAX_SUBMISSIONS:
        raise UnitError(f"similarity compares at most {MAX_SUBMISSIONS} submissions at once")
    found: dict[str, Submission] = {}
    for given in paths:
        path = Path(given)
        name = submission_name(path)
        if name in found:
            raise UnitError(
                f"two submissions are both named '{name}': {found[name].source} and {path}"
            )
        try:
            found[name] = load_submission(path, unit.editable)
        except SubmissionError as exc:
            raise UnitError(str(exc)) from None
        for file, data in found[name].files.items():
            if len(data) > MAX_FILE_BYTES:
                raise UnitError(f"submission {path}: {file} is larger than 256 KiB")
    return found


def compare(unit: Unit, submissions: dict[str, Submission], threshold: float = THRESHOLD):
    """Every pair of ``submissions`` compared over the editable files both hold."""
    if not 0 < threshold <= 1:
        raise UnitError(f"--threshold {threshold}: must be above 0 and at most 1")
    boilerplate = {name: _boilerplate(unit.lab_dir / name) for name in unit.editable}
    prints = {
        (who, name): _fingerprint(name, data, boilerplate[name])
        for who, sub in submissions.items()
        for name, data in sub.files.items()
    }
    names = tuple(sorted(submissions))
    pairs = [
        _pair(a, b, submissions, prints, threshold) for a, b in itertools.combinations(names, 2)
    ]
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return Comparison(unit.id, names, threshold, tuple(pairs))


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _boilerplate(path: Path) -> np.ndarray:
    """Every k-gram hash of a starter file (window 1, as copydetect's own boilerplate)."""
    if not path.is_file():
        raise UnitError(f"{path}: the unit's starter file is missing (infralab starter sync)")
    text = path.read_text(encoding="utf-8")
    return np.array(sorted(_fingerprint(path.name, text.encode(), None, window=1).hashes))


def _fingerprint(name: str, data: bytes, boilerplate, window: int = WINDOW) -> CodeFingerprint:
    return CodeFingerprint(name, K, window, boilerplate, fp=io.StringIO(_text(data)))


def _pair(a: str, b: str, submissions, prints, threshold: float) -> Pair:
    shared_a = shared_b = own_a = own_b = 0.0
    files = []
    for name in sorted(set(submissions[a].files) & set(submissions[b].files)):
        first, second = prints[(a, name)], prints[(b, name)]
        own_a += first.token_coverage
        own_b += second.token_coverage
        overlap, (sim_a, sim_b), (slices_a, slices_b) = compare_files(first, second)
        if not overlap:
            continue
        shared_a += sim_a * first.token_coverage
        shared_b += sim_b * second.token_coverage
        files.append(
            FileMatch(name, first.raw_code, second.raw_code, _spans(slices_a), _spans(slices_b))
        )
    sim_a = shared_a / own_a if own_a else 0.0
    sim_b = shared_b / own_b if own_b else 0.0
    score = max(sim_a, sim_b)
    flagged = score >= threshold and min(shared_a, shared_b) >= MIN_SHARED
    return Pair(a, b, sim_a, sim_b, round(min(shared_a, shared_b)), flagged, tuple(files))


def _spans(slices) -> tuple[tuple[int, int], ...]:
    """copydetect's 2×N array of slice starts and ends as ``(start, end)`` pairs."""
    if len(slices) == 0 or len(slices[0]) == 0:
        return ()
    return tuple((int(start), int(end)) for start, end in zip(slices[0], slices[1]))
