"""Every command the README, docs/ and the demo's closing lines show still exists as written.

A docs check, not a run: each ``infralab ...`` command (in a code block or an inline code span)
is parsed by the CLI's own parser, with its placeholders filled in, so a renamed subcommand or
flag fails here; each ``bash scripts/NAME.sh ...`` names a script that exists and extras that
``setup.sh`` accepts; every zip named is one that a release makes. The commands themselves run
in the tests of their areas (release, grade, lab open, trace mutants, site build).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import re
import subprocess
import sys

import pytest

from grader.cli.main import build_parser
from grader.course import release
from grader.units import REPO_ROOT, load_unit

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
DEMO = REPO_ROOT / "scripts" / "demo.sh"
FENCE = re.compile(r"^```.*?$(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`((?:\.venv/bin/)?infralab [^`]+)`")  # may wrap a line
SETUP_EXTRAS = {"site", "traces", "runner", "nbgrader", "similarity", "test"}


def _lines(text: str, inline: bool = True) -> list[tuple[str, bool]]:
    """(command, whole) of code blocks (``whole``: a full command line, backslash continuations
    joined) and inline code spans (a command named in prose, perhaps without its arguments);
    comments dropped, ``&&`` split, lines of output (``...: error: ...``) left out."""
    found = []
    for block in FENCE.findall(text):
        found += [(line, True) for line in block.replace("\\\n", " ").splitlines()]
    if inline:
        found += [(" ".join(span.split()), False) for span in INLINE.findall(text)]
    out = []
    for raw, whole in found:
        line = raw.split(" # ")[0].split("  #")[0].strip()
        if ": error:" in line:
            continue
        out += [(part.strip(), whole) for part in line.split("&&") if part.strip()]
    return out


def _demo_lines() -> list[str]:
    text = DEMO.read_text(encoding="utf-8")
    note = text[text.rindex("<<'NOTE'") : text.rindex("\nNOTE")]
    return _lines(f"```\n{note}\n```\n", inline=False)


def _placeholders(words: list[str]) -> list[list[str]]:
    """Every concrete argv a documented form stands for: ``a|b`` either word, ``[...]``
    optional parts given, ``<unit>`` a real unit, other ``<...>`` a plain value."""
    text = " ".join(words).replace("[", " ").replace("]", " ")
    text = text.replace("<unit>", "unit07").replace("...", " ")
    text = re.sub(r"<[^>]+>", "X", text)
    tokens = ["1" if re.fullmatch(r"[A-Z][A-Z0-9_]*", tok) else tok for tok in text.split()]
    choices = [
        tok.split("|") if "|" in tok and not tok.startswith("-") else [tok] for tok in tokens
    ]
    return [list(argv) for argv in itertools.product(*choices)]


def _commands() -> list[tuple[str, str, bool]]:
    found = []
    for path in DOCS:
        found += [(path.name, *entry) for entry in _lines(path.read_text(encoding="utf-8"))]
    found += [("demo.sh", *entry) for entry in _demo_lines()]
    return found


INFRALAB = sorted(
    {
        (where, line, whole)
        for where, line, whole in _commands()
        if line.removeprefix(".venv/bin/").startswith("infralab ")
    }
)
SCRIPTS = sorted({(w, line) for w, line, _ in _commands() if line.startswith("bash scripts/")})


@functools.cache
def _script_flags(command: str, unit: str | None) -> set[str]:
    """The flags of the lab script ``infralab COMMAND`` runs, from its own --help (a command
    that takes no unit, such as ``view``, is asked without one)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader.cli",
            command,
            *(["--unit", unit] if unit else []),
            "--help",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return set(re.findall(r"--[a-z][a-z0-9-]*", done.stdout))


def _named(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """What is wrong with a command named in prose: a subcommand or a flag that does not exist
    (its other arguments may be left out)."""
    for n, word in enumerate(argv):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if word.startswith("-"):
            known = {o for a in parser._actions for o in a.option_strings}
            if word.split("=")[0] not in known:
                return f"no option {word} (known: {sorted(known)})"
            continue
        if subs and word in subs[0].choices:
            parser = subs[0].choices[word]
        elif subs and all(not w.startswith("-") for w in argv[:n]):
            return f"no subcommand {word!r} (known: {sorted(subs[0].choices)})"
    return None


def test_the_docs_show_commands_of_both_kinds():
    assert len(INFRALAB) >= 30 and len(SCRIPTS) >= 3
    assert any(where == "demo.sh" for where, _, _ in INFRALAB)


@pytest.mark.parametrize(
    ("where", "line", "whole"), INFRALAB, ids=[f"{w}: {c}" for w, c, _ in INFRALAB]
)
def test_infralab_command_parses(where, line, whole):
    words = line.removeprefix(".venv/bin/").split()[1:]
    parser = build_parser()
    for argv in _placeholders(words):
        try:  # as grader.cli.main parses it: flags past the known ones go to a lab script
            args, extra = parser.parse_known_args(argv)
        except SystemExit as exc:  # argparse says why on stderr
            if not whole:  # named in prose: its required arguments may be left out
                wrong = _named(parser, argv)
                assert wrong is None, f"{where}: `{line}`: {wrong}"
                continue
            pytest.fail(
                f"{where}: `{line}` no longer parses as `infralab {' '.join(argv)}` ({exc})"
            )
        if not extra:
            continue
        unit = getattr(args, "unit", None)  # a command without --unit (view) has no attribute
        if not getattr(args, "passthrough", False) or (hasattr(args, "unit") and unit is None):
            assert not extra, f"{where}: `{line}`: unrecognized arguments {extra}"
            continue
        flags = _script_flags(argv[0], unit)
        unknown = [w.split("=")[0] for w in extra if w.startswith("--")]
        unknown = [w for w in unknown if w not in flags]
        assert not unknown, f"{where}: `{line}`: infralab {argv[0]} has no {unknown}"


@pytest.mark.parametrize(("where", "line"), SCRIPTS, ids=[f"{w}: {c}" for w, c in SCRIPTS])
def test_script_command_names_a_script_and_known_extras(where, line):
    words = line.split()
    script = REPO_ROOT / words[1]
    assert script.is_file(), f"{where}: `{line}`: no {words[1]}"
    if script.name == "setup.sh":
        unknown = [w for w in words[2:] if w not in SETUP_EXTRAS]
        assert not unknown, f"{where}: `{line}`: setup.sh has no extra {unknown}"


def test_every_zip_the_docs_name_is_one_a_release_makes():
    units = [load_unit(uid) for uid in ("unit07", "unit08")]
    made = {release.student_zip_name(u) for u in units} | {
        release.autograder_zip_name(u) for u in units
    }
    made |= {f"{release.lab_root(u)}-nbgrader.zip" for u in units}
    named = set()
    for path in DOCS:
        named |= set(re.findall(r"infra-lab-unit\d\d[\w-]*\.zip", path.read_text(encoding="utf-8")))
        bare = re.findall(r"(?<![\w<>-])(?:dist/\S*/)?autograder\.zip", path.read_text("utf-8"))
        assert not bare, f"{path.name} names {bare}: the bundle is infra-lab-<unit>-autograder.zip"
    assert named and named <= made, f"zips no release makes: {sorted(named - made)}"
