"""``python -m autograder``: generate, grade, feedback, export.

Each subcommand prints what it did and exits 0; a problem the user can fix is
printed as one clear message (no traceback) with exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from .course import DEFAULT_CELL_TIMEOUT, DEFAULT_WORKDIR, CourseError, resolve_assignments


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m autograder",
        description="The Tensors Inside Out nbgrader pipeline. See autograder/README.md.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="show nbgrader's log")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser("generate", help="solutions/ -> notebooks/ (student versions)")
    g.add_argument("assignments", nargs="*", help="assignment names (default: all)")
    g.add_argument("--check", action="store_true",
                   help="do not write; fail if notebooks/ differs from a fresh generation")

    def workdir_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR,
                        help=f"grading folder (default: {DEFAULT_WORKDIR.name}/ in the repo, "
                        "ignored by git)")

    gr = sub.add_parser("grade", help="autograde a folder of submissions")
    gr.add_argument("submissions", type=Path,
                    help="folder laid out <student>/<assignment>/<notebook>.ipynb, "
                    "or holding <student>.zip files")
    gr.add_argument("assignments", nargs="*", help="assignment names (default: all)")
    gr.add_argument("--timeout", type=int, default=DEFAULT_CELL_TIMEOUT,
                    help=f"seconds a cell may run before it is interrupted and scored 0 "
                    f"(default {DEFAULT_CELL_TIMEOUT})")
    workdir_arg(gr)

    f = sub.add_parser("feedback", help="per-student HTML feedback for graded submissions")
    f.add_argument("assignments", nargs="*", help="assignment names (default: all)")
    workdir_arg(f)

    e = sub.add_parser("export", help="CSV of scores per student and assignment")
    e.add_argument("--output", type=Path, default=None,
                   help="CSV path (default: <workdir>/grades.csv)")
    e.add_argument("--by-cell", action="store_true", help="one row per graded cell")
    workdir_arg(e)
    return p


def _run(args: argparse.Namespace) -> int:
    if args.command == "generate":
        from .generate import drift, generate

        names = resolve_assignments(args.assignments)
        if args.check:
            problems = drift(names)
            if problems:
                print("notebooks/ is out of date with solutions/:")
                print("\n".join(f"  {p}" for p in problems))
                print("Run `python -m autograder generate` and commit the result.")
                return 1
            print(f"notebooks/ matches solutions/ ({len(names)} assignments).")
            return 0
        for folder in generate(names):
            print(f"generated {folder.relative_to(folder.parent.parent)}/")
        return 0

    if args.command == "grade":
        from .grading import grade

        if args.timeout < 1:
            raise CourseError("--timeout must be at least 1 second.")
        names = resolve_assignments(args.assignments)
        results, problems = grade(args.submissions, args.workdir.resolve(), names, args.timeout)
        for r in results:
            flag = "  (see problems)" if r.problem else ""
            print(f"{r.student:<24} {r.assignment:<28} {r.score:6.1f} / {r.max_score:<6.1f}{flag}")
        if problems:
            print("\nProblems:")
            print("\n".join(f"  - {p}" for p in problems))
        print(f"\nGraded {len(results)} submission(s) into {args.workdir}. Next: "
              "`python -m autograder feedback` and `python -m autograder export`.")
        return 0 if results else 1

    if args.command == "feedback":
        from .grading import feedback

        files = feedback(args.workdir.resolve(), resolve_assignments(args.assignments))
        for path in files:
            print(f"wrote {path}")
        print(f"{len(files)} feedback file(s).")
        return 0

    if args.command == "export":
        from .grading import export

        output = args.output or args.workdir / "grades.csv"
        n = export(args.workdir.resolve(), output, by_cell=args.by_cell)
        print(f"wrote {n} row(s) to {output}")
        return 0
    raise AssertionError(args.command)


def _put_interpreter_on_path() -> None:
    # nbgrader shells out to `alembic` (installed next to this Python). Called as
    # `/path/to/venv/bin/python -m autograder` without activating the venv, that folder
    # is not on PATH and every gradebook access would fail with FileNotFoundError.
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _put_interpreter_on_path()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(message)s")
    if not args.verbose:
        # nbgrader logs every step at INFO and kernel chatter at WARNING; the summary says
        # what matters.
        logging.getLogger("traitlets").setLevel(logging.ERROR)
    try:
        return _run(args)
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
