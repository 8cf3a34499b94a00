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

from .course import DEFAULT_CELL_TIMEOUT, DEFAULT_WORKDIR, VARIANTS, CourseError, resolve_assignments
from .sandbox.launch import Limits
from .terminal import safe

UNSANDBOXED_WARNING = ("WARNING: --no-sandbox: learners' code runs with your permissions, can read "
                       "solutions/ and the gradebook, and can change anything you can. Use it only "
                       "for submissions you trust.")


COMMANDS = {
    "generate": "solutions/ -> notebooks/ (student versions)",
    "grade": "autograde a folder of submissions, each in a sandbox",
    "feedback": "per-student HTML feedback for graded submissions",
    "export": "scores per student and assignment: CSV, or Canvas's or Moodle's import file",
    "report": "the class report: scores, exercises, misconceptions, similar answers (HTML)",
    "adjust": "change a graded score by hand, with a reason (kept by every regrade)",
    "due": "set an assignment's due date (late work: see the grading folder's nbgrader_config.py)",
    "extend": "give a student more time on an assignment",
    "variants": "freeze who gets which variant of an assignment's predict exercises, or show one",
}


def _subparser(command: str) -> argparse.ArgumentParser:
    """The parser of one command; options and positionals may come in any order."""
    sp = argparse.ArgumentParser(prog=f"python -m autograder {command}",
                                 description=COMMANDS[command] + ". See autograder/README.md.")
    sp.add_argument("-v", "--verbose", action="store_true", help="show nbgrader's log")

    def workdir_arg() -> None:
        sp.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR,
                        help=f"grading folder (default: {DEFAULT_WORKDIR.name}/ in the repo, "
                        "ignored by git)")

    if command == "generate":
        sp.add_argument("assignments", nargs="*", help="assignment names (default: all)")
        sp.add_argument("--check", action="store_true",
                        help="do not write; fail if notebooks/ differs from a fresh generation")
    elif command == "grade":
        sp.add_argument("submissions", type=Path,
                        help="folder laid out <student>/<assignment>/<notebook>.ipynb, "
                        "or holding <student>.zip files")
        sp.add_argument("assignments", nargs="*", help="assignment names (default: all)")
        sp.add_argument("--timeout", type=int, default=DEFAULT_CELL_TIMEOUT,
                        help=f"seconds a cell may run before it is interrupted and scored 0 "
                        f"(default {DEFAULT_CELL_TIMEOUT})")
        sp.add_argument("--notebook-timeout", type=int, default=Limits.notebook_timeout,
                        help="seconds a whole notebook may run before its kernel is stopped "
                        f"(default {Limits.notebook_timeout})")
        sp.add_argument("--memory", type=int, default=Limits.memory_bytes // 2**20, metavar="MIB",
                        help="address space per kernel process, MiB "
                        f"(default {Limits.memory_bytes // 2**20})")
        sp.add_argument("-j", "--jobs", type=int, default=None,
                        help="notebooks graded at once (default: all CPUs)")
        sp.add_argument("--no-sandbox", action="store_true",
                        help="run kernels WITHOUT bubblewrap: only for submissions you trust "
                        "(warns on every run)")
        sp.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
        sp.add_argument("--retry-failed", action="store_true",
                        help="grade only what is not graded yet in the grading folder (grader "
                        "failures, or a run that stopped before reaching them)")
        sp.add_argument("--fresh-references", action="store_true",
                        help="run every solution's reference again, even one kept from an "
                        "earlier run with the same solution, grader, packages and limits")
        sp.add_argument("--student", action="append", default=[], metavar="ID",
                        help="grade only this student (repeat for more)")
        sp.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786",
                        help="grade on this Dask cluster's workers (each in its sandbox); "
                        "outcomes are recorded here. See autograder/README.md")
        sp.add_argument("--variants", type=Path, default=VARIANTS, metavar="DIR",
                        help="the folder of per-student variant manifests, <assignment>.json "
                        "(default: variants/ in the repo); an assignment without one is graded "
                        "on its published exercises")
        workdir_arg()
    elif command == "feedback":
        sp.add_argument("assignments", nargs="*", help="assignment names (default: all)")
        workdir_arg()
    elif command == "adjust":
        sp.add_argument("student", nargs="?", help="the student's id (folder or zip name)")
        sp.add_argument("assignment", nargs="?", help="the assignment")
        sp.add_argument("--notebook", default=None, help="the notebook (default: the assignment's only one)")
        sp.add_argument("--cell", default="", metavar="GRADE_ID",
                        help="a test cell's grade id (default: the notebook as a whole)")
        sp.add_argument("--score", type=float, default=None, help="set the cell's score to this")
        sp.add_argument("--points", type=float, default=None,
                        help="add these points (negative takes off)")
        sp.add_argument("--reason", default="", help="why: shown on the student's feedback page")
        sp.add_argument("--remove", action="store_true", help="remove this adjustment")
        sp.add_argument("--list", action="store_true", help="list every adjustment")
        workdir_arg()
    elif command == "due":
        sp.add_argument("assignment", help="the assignment")
        sp.add_argument("when", help="'2027-01-15 23:59:00 Europe/Berlin' (no zone: UTC), or none")
        workdir_arg()
    elif command == "extend":
        sp.add_argument("student", help="the student's id")
        sp.add_argument("assignment", help="the assignment")
        sp.add_argument("--hours", type=float, required=True, help="extra time (0 removes it)")
        workdir_arg()
    elif command == "variants":
        sp.add_argument("assignment", help="the assignment")
        sp.add_argument("--roster", type=Path, default=None, metavar="FILE",
                        help="CSV with a `student` column: freeze a variant for each (students "
                        "already in the manifest keep theirs)")
        sp.add_argument("--secret-file", type=Path, default=None, metavar="FILE",
                        help="the course secret (kept out of the repository): with it nobody "
                        "can tell in advance who gets which variant")
        sp.add_argument("--show", default=None, metavar="STUDENT",
                        help="print this student's variants and torch's answers")
        sp.add_argument("--manifest", type=Path, default=None,
                        help="the manifest (default: variants/<assignment>.json in the repo)")
        sp.add_argument("--release", type=Path, default=None, metavar="DIR",
                        help="write DIR/<student>/<assignment>/ for every student in the "
                        "manifest: the released notebook showing their own variants (for a "
                        "course without a JupyterHub)")
    elif command == "report":
        sp.add_argument("assignments", nargs="*", help="assignment names (default: all graded)")
        sp.add_argument("--output", type=Path, default=None,
                        help="folder for the HTML pages (default: <workdir>/report/)")
        sp.add_argument("--roster", type=Path, default=None, metavar="FILE",
                        help="CSV with a `student` column: who should have submitted")
        workdir_arg()
    else:
        sp.add_argument("assignments", nargs="*",
                        help="assignment names (default: all graded); an LMS file gets one "
                             "column for each")
        sp.add_argument("--output", type=Path, default=None,
                        help="CSV path (default: <workdir>/grades.csv, or grades-canvas.csv / "
                             "grades-moodle.csv)")
        sp.add_argument("--by-cell", action="store_true", help="one row per graded cell (csv)")
        sp.add_argument("--format", dest="fmt", choices=["csv", "canvas", "moodle"], default="csv",
                        help="csv (this course's columns), or the import file of Canvas or Moodle")
        sp.add_argument("--roster", type=Path, default=None, metavar="FILE",
                        help="CSV with columns student,name,lms_id,email,section,sis_user_id,"
                             "sis_login_id (only student required): who is in the "
                             "class and their LMS identity (one LMS row per roster student)")
        workdir_arg()
    return sp


def _top_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m autograder",
        description="The Tensors Inside Out nbgrader pipeline. See autograder/README.md.",
        epilog="commands:\n" + "\n".join(f"  {c:<10} {h}" for c, h in COMMANDS.items())
        + "\n\n`python -m autograder COMMAND --help` for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="show nbgrader's log")
    p.add_argument("command", choices=sorted(COMMANDS), metavar="COMMAND")
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def parse(argv: list[str] | None) -> argparse.Namespace:
    """Parse a command line; a command's options and positionals may be intermixed."""
    top = _top_parser().parse_args(argv)
    args = _subparser(top.command).parse_intermixed_args(top.rest)
    args.command = top.command
    args.verbose = args.verbose or top.verbose
    return args


def _run(args: argparse.Namespace) -> int:
    if args.command == "generate":
        from .authoring.generate import drift, generate

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
        return _grade(args)

    if args.command == "feedback":
        from .outputs.feedback import pages as feedback
        from .outputs.feedback import skipped as feedback_skipped

        files = feedback(args.workdir.resolve(), resolve_assignments(args.assignments))
        for path in files:
            print(f"wrote {safe(path)}")
        print(f"{len(files)} feedback file(s).")
        for line in feedback_skipped:
            print(f"  not written: {safe(line)}", file=sys.stderr)
        return 1 if feedback_skipped else 0

    if args.command == "report":
        from .outputs.report import write

        pages = write(args.workdir.resolve(), args.output, args.roster,
                      resolve_assignments(args.assignments) if args.assignments else None)
        print(f"wrote the class report: {pages[0]} ({len(pages) - 1} assignment page(s))")
        return 0

    if args.command in ("adjust", "due", "extend"):
        return _term(args)

    if args.command == "variants":
        return _variants(args)

    if args.command == "export":
        from .outputs.export import export

        name = "grades.csv" if args.fmt == "csv" else f"grades-{args.fmt}.csv"
        output = args.output or args.workdir / name
        n, flagged = export(args.workdir.resolve(), output, by_cell=args.by_cell, fmt=args.fmt,
                            roster=args.roster, assignments=resolve_assignments(
                                args.assignments) if args.assignments else None)
        print(f"wrote {n} row(s) to {output}")
        if flagged:
            print(f"{len(flagged)} need attention before you import (no score is written for "
                  "them, never a 0: regrade what was not graded with `grade --retry-failed`; a "
                  "notebook not submitted is a 0 only if your policy says so, entered by you):")
            for line in flagged[:50]:
                print(f"  {safe(line)}")
            if len(flagged) > 50:
                print(f"  ... and {len(flagged) - 50} more")
        return 0
    raise AssertionError(args.command)


def _variants(args: argparse.Namespace) -> int:
    from .authoring import variants

    (assignment,) = resolve_assignments([args.assignment])
    if args.show:
        print("\n".join(safe(line) for line in variants.show_command(assignment, args.show,
                                                                      args.manifest)))
        return 0
    if args.release:
        written = variants.release_command(assignment, args.release, args.manifest)
        print(f"wrote {len(written)} notebook(s) under {args.release}: hand each student their "
              "folder; grading takes their variants from their id, not from the notebook.")
        return 0
    if not args.roster or not args.secret_file:
        raise CourseError("variants: give --roster and --secret-file to freeze, --show STUDENT "
                          "to show one student's variants, or --release DIR to write one "
                          "notebook per student.")
    path = variants.freeze_command(assignment, args.roster, args.secret_file, args.manifest)
    print(f"wrote {path}: commit it with the release, and put a copy named variants.json next "
          "to each released notebook (on a JupyterHub each learner then sees their own variant).")
    return 0


def _term(args: argparse.Namespace) -> int:
    """adjust, due and extend: they change the gradebook; penalties follow at once."""
    from .course import notebook_names
    from .pipeline import adjustments, term

    workdir = args.workdir.resolve()
    if args.command == "adjust" and args.list:
        for a in adjustments.load(workdir):
            print(f"{safe(a.student)} {a.assignment}/{a.notebook}: {safe(a.describe())} ({a.source})")
        return 0
    if args.command in ("adjust", "extend"):
        if not args.student or not args.assignment:
            raise CourseError(f"{args.command}: give STUDENT and ASSIGNMENT.")
    (assignment,) = resolve_assignments([args.assignment])
    if args.command == "due":
        due = term.set_duedate(workdir, assignment, args.when)
        print(f"{assignment}: due {due:%Y-%m-%d %H:%M} UTC." if due else f"{assignment}: no due date.")
    elif args.command == "extend":
        if args.hours < 0 or args.hours != args.hours:
            raise CourseError("--hours must be 0 (remove) or more.")
        term.set_extension(workdir, args.student, assignment, args.hours)
        print(f"{safe(args.student)}: {args.hours:g} h more on {assignment}." if args.hours
              else f"{safe(args.student)}: no extension on {assignment}.")
    else:
        notebook = args.notebook or notebook_names(assignment)[0]
        print(adjustments.record(workdir, adjustments.Adjustment(
            args.student, assignment, notebook, args.cell, args.score, args.points, args.reason),
            remove=args.remove))
    if (workdir / "gradebook.db").exists():
        term.apply(workdir)
        print("Gradebook updated; run `feedback` again so that students see it.")
    return 0


def _grade(args: argparse.Namespace) -> int:
    from .pipeline.grading import default_jobs, grade, notes_seen
    from .sandbox import cgroup, flood
    from .sandbox.launch import container_hint, unavailable
    from .sandbox.scratch import UnsafeTempDir, kernel_parent

    if args.timeout < 1 or args.notebook_timeout < 1:
        raise CourseError("--timeout and --notebook-timeout must be at least 1 second.")
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        raise CourseError("--jobs must be at least 1.")
    try:
        kernel_parent()   # the kernels' folders: a temp folder others control is refused first
    except UnsafeTempDir as err:
        raise CourseError(f"cannot grade here: {err}.") from None
    if args.no_sandbox:
        print(UNSANDBOXED_WARNING, file=sys.stderr)
    else:
        reason = unavailable()
        if reason:
            raise CourseError(f"cannot sandbox learners' code here: {reason}.\n{container_hint()}")
    # No names: the assignments the submissions folder holds (one column each in the exports).
    names = resolve_assignments(args.assignments) if args.assignments else None
    if args.memory < 1:
        raise CourseError("--memory must be at least 1 MiB.")
    limits = Limits(cell_timeout=args.timeout, notebook_timeout=args.notebook_timeout,
                    memory_bytes=args.memory * 2**20,
                    cpu_seconds=max(Limits.cpu_seconds, 2 * args.notebook_timeout))
    # Here, before any worker starts: a v2 grader alone in a delegated group moves itself into
    # a leaf, and its workers must start there (autograder.sandbox.cgroup).
    bound = cgroup.support()
    cgroup.sweep_abandoned(bound)
    print(bound.describe(limits.memory_bytes, limits.processes))
    if not args.scheduler:
        # N sandboxes may each fill their budget, and each notebook's output may make the grader
        # hold up to flood.GRADER_HELD_BYTES: never promise more than the machine has.
        fit, why = cgroup.jobs_that_fit(jobs, limits.memory_bytes, cgroup.available_memory(),
                                        flood.GRADER_HELD_BYTES)
        if fit < 1:
            raise CourseError(f"{why}.")
        if why:
            print(f"note: {why}.", file=sys.stderr)
        jobs = fit
    results, problems, tampering = grade(args.submissions, args.workdir.resolve(), names, limits,
                                         jobs=jobs, sandboxed=not args.no_sandbox,
                                         progress=not args.no_progress,
                                         retry_failed=args.retry_failed, students=args.student,
                                         scheduler=args.scheduler,
                                         fresh_references=args.fresh_references,
                                         variants=args.variants)
    # Everything below may quote a submission (names, cell types, errors): printed via safe().
    for note in notes_seen:
        print(f"note: {safe(note)}")
    if not results and args.retry_failed and not problems:
        return 0   # nothing left to regrade: done, not a problem
    for r in results:
        flag = "  (see problems)" if r.problem else ""
        flag = "  (TAMPERING)" if r.tampering else flag
        score = (f"{r.score:6.1f} / {r.max_score:<6.1f}" if r.status == "graded"
                 else f"{'NOT GRADED':>15}")
        print(f"{safe(r.student):<24} {r.assignment:<28} {score}{flag}")
    if problems:
        print("\nProblems:")
        print("\n".join(f"  - {safe(p)}" for p in problems))
    if tampering:
        print("\nTampering (scored 0 where it reached; check these submissions by hand):")
        print("\n".join(f"  - {safe(t)}" for t in tampering))
    failed = [r for r in results if r.status != "graded"]
    where = (f"on the Dask cluster at {safe(args.scheduler)}" if args.scheduler
             else f"{jobs} at a time")
    print(f"\nGraded {len(results) - len(failed)} of {len(results)} submission(s) into "
          f"{args.workdir} ({'sandboxed' if not args.no_sandbox else 'NOT sandboxed'}, {where}). "
          "Next: `python -m autograder feedback`, `report` and `export`.")
    if args.no_sandbox:
        print(UNSANDBOXED_WARNING, file=sys.stderr)
    if failed:
        who = " ".join(f"--student {safe(s)}" for s in sorted({r.student for r in failed}))
        print(f"\n{len(failed)} submission(s) NOT GRADED: the grader failed on them (see Problems); "
              "no score was recorded. Regrade just those with\n"
              f"  python -m autograder grade {safe(args.submissions)} --retry-failed "
              f"--workdir {safe(args.workdir)}\nor one student with {who.split(' --student')[0]}.",
              file=sys.stderr)
        return 3
    return 0 if results else 1


def _put_interpreter_on_path() -> None:
    # nbgrader shells out to `alembic` (installed next to this Python). Called as
    # `/path/to/venv/bin/python -m autograder` without activating the venv, that folder
    # is not on PATH and every gradebook access would fail with FileNotFoundError.
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    _put_interpreter_on_path()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(message)s")
    if not args.verbose:
        # nbgrader logs every step at INFO and kernel chatter at WARNING; the summary says
        # what matters.
        logging.getLogger("traitlets").setLevel(logging.ERROR)
        for handler in logging.getLogger().handlers:
            handler.setLevel(logging.ERROR)  # nbgrader's apps set their own loggers to INFO
    try:
        return _run(args)
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
