"""``infralab release student|autograder|nbgrader``: the release artefacts of a unit."""

from __future__ import annotations

from pathlib import Path

from ..course import nbgrader_course, release_checks
from ..units import UnitError, course_root, load_unit
from .common import add_unit, show_path, stale_golden

_KINDS = (
    (
        "student",
        "the lab folder as students get it (infra-lab-<unit>.zip holding infra-lab-<unit>/), with "
        "no hidden traces, golden "
        "files, solutions or grader code",
    ),
    (
        "autograder",
        "Gradescope's infra-lab-<unit>-autograder.zip (setup.sh, run_autograder, grader, lab "
        "folder, hidden "
        "traces, golden)",
    ),
)


def _refusal(args, unit) -> str | None:
    """The first release check of this kind that fails and was not waived, as its message:
    every release ships the lab folder, so a stale one is refused first; the bundle also
    refuses hidden material git has not committed."""
    if not args.allow_stale_starter and (stale := release_checks.stale_starter(unit)):
        return stale
    if args.action == "autograder" and not args.allow_uncommitted:
        return release_checks.uncommitted_hidden(unit)
    return None


_STALE_WAIVER = (
    "release although starter sync would change the lab folder (the handout's points table, "
    "stubs, lab.json, public snapshots)"
)
_WAIVERS = {
    "student": (),
    "autograder": (
        (
            release_checks.UNCOMMITTED_FLAG,
            "release although traces/<unit> or labs/<unit> has changes git has not committed",
        ),
    ),
}


def _release(args, extra: list[str]) -> int:
    from ..course import release

    unit = load_unit(args.unit)
    refusal = _refusal(args, unit)
    if refusal:
        raise UnitError(refusal)
    out = Path(args.out) if args.out else course_root() / "dist" / unit.id
    if out.exists() and not out.is_dir():
        raise UnitError(f"--out {out}: exists and is not a folder")
    if args.action == "student" and (args.roster or args.student):
        return _release_variants(args, unit, out)
    if args.action == "student":
        dest = release.build_student_zip(unit, out / release.student_zip_name(unit))
    else:
        stale = stale_golden(unit)
        if stale:
            raise UnitError(
                f"golden files are not up to date ({stale[0].path.name}: {stale[0].reason}); "
                f"run: infralab golden --unit {unit.id}"
            )
        variants = _bundle_variants(args, unit)
        dest = release.build_autograder_zip(unit, out / release.autograder_zip_name(unit), variants)
    print(f"wrote {show_path(dest)}")
    return 0


def _bundle_variants(args, unit):
    """The class's variants for the bundle (``--roster`` with ``--secret``), else None."""
    if not args.roster:
        if args.secret:
            raise UnitError("--secret: the bundle ships variants only with --roster")
        return None
    from ..variants import bundle, keys, roster

    ids = roster.read_roster(Path(args.roster))
    return bundle.bundle_variants(unit, ids, keys.load_secret(args.secret))


def _release_variants(args, unit, out: Path) -> int:
    """Per-student variants: the roster and the secret are checked before anything is built."""
    from ..variants import keys, roster
    from ..variants.release import release_students

    ids = roster.read_roster(Path(args.roster)) if args.roster else None
    chosen = [roster.check_id(s.strip(), "--student") for s in args.student or ()]
    if ids is not None and (stray := [s for s in chosen if s not in ids]):
        raise UnitError(f"--student {stray[0]}: not in the roster {args.roster}")
    secret = keys.load_secret(args.secret)
    folders = release_students(unit, chosen or ids, secret, out)
    for folder in folders:
        print(f"wrote {show_path(folder)}")
    print(f"{len(folders)} student lab folder(s) and zip(s) in {show_path(out)}")
    return 0


def _add_variant_options(parser, kind: str) -> None:
    parser.add_argument(
        "--roster",
        metavar="CSV",
        help="per-student variants: one lab folder and zip per row of this CSV ('id' column)"
        if kind == "student"
        else "with --secret: ship every roster student's variant (hidden traces, golden; not the "
        "secret); grading then takes the student from Gradescope's submission_metadata.json",
    )
    if kind == "student":
        parser.add_argument(
            "--student",
            action="append",
            metavar="ID",
            help="only this student's variant (repeatable; with --roster, an id in it): how a "
            "TA regenerates one student's lab",
        )
    parser.add_argument(
        "--secret",
        metavar="FILE",
        help="the course's variant secret (default: $INFRALAB_VARIANT_SECRET, else "
        "variant.secret in the course root); never give it to a student",
    )


def add_release(commands) -> None:
    release_cmd = commands.add_parser(
        "release", help="build release artefacts: student zip, Gradescope bundle, nbgrader course"
    )
    release_sub = release_cmd.add_subparsers(dest="action", required=True)
    for kind, text in _KINDS:
        release_kind = release_sub.add_parser(kind, help=text, description=text)
        add_unit(release_kind)
        release_kind.add_argument(
            "--out", metavar="DIR", help="output folder (default: dist/<unit>)"
        )
        release_kind.add_argument(
            release_checks.STALE_FLAG,
            release_checks.STALE_FLAG_OLD,
            dest="allow_stale_starter",
            action="store_true",
            help=_STALE_WAIVER,
        )
        for flag, waives in _WAIVERS[kind]:
            release_kind.add_argument(flag, action="store_true", help=waives)
        _add_variant_options(release_kind, kind)
        release_kind.set_defaults(handler=_release)
    nbgrader_course.add_parser(release_sub)
