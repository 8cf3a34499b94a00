"""Grading throughput: serial vs parallel sandboxed grading vs stock ``nbgrader autograde``.

    .venv/bin/python benchmarks/bench_grading.py                # 24 submissions of notebook 01
    .venv/bin/python benchmarks/bench_grading.py -n 8 --no-stock

Builds ``-n`` submissions (a third solved, a third untouched, a third with wrong answers),
then grades the same folder three ways, each from scratch, timing the whole command:

1. ``python -m autograder grade --jobs 1`` (sandboxed, one notebook at a time);
2. ``python -m autograder grade --jobs J`` (sandboxed, J = all CPUs by default);
3. stock ``nbgrader generate_assignment`` + ``nbgrader autograde`` (no sandbox, one at a time).

Prints seconds and submissions per minute for each, the parallel speed-up, and checks that
runs 1 and 2 recorded identical scores (determinism). Wall-clock times on a shared machine
vary with its load: compare runs made back to back, and repeat when in doubt.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from autograder.grading import cell_scores, default_jobs  # noqa: E402
from coursefiles import read, release_path, solution_answers, with_replacements  # noqa: E402
from wrong_answers import wrong_answers  # noqa: E402


def build(folder: Path, assignment: str, n: int) -> list[str]:
    rel, answers = read(release_path(assignment)), solution_answers(assignment)
    table = wrong_answers(assignment)
    mistaken = {gid: table[gid][0][1] for gid in answers if gid in table}
    kinds = [with_replacements(rel, answers), rel, with_replacements(rel, mistaken)]
    students = []
    for i in range(n):
        student = f"s{i:03d}"
        path = folder / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(kinds[i % 3], path)
        students.append(student)
    return students


def timed(cmd: list[str], **kw) -> float:
    start = time.perf_counter()
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, **kw)
    elapsed = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    return elapsed


def ours(subs: Path, workdir: Path, assignment: str, jobs: int) -> float:
    return timed([sys.executable, "-m", "autograder", "grade", str(subs), assignment,
                  "--workdir", str(workdir), "--jobs", str(jobs), "--no-progress"])


def stock(subs: Path, root: Path, assignment: str) -> float:
    """Stock nbgrader, configured only with where things are (its default execution)."""
    shutil.copytree(subs, root / "submitted")
    (root / "exchange").mkdir()
    flags = [f"--CourseDirectory.root={root}", f"--CourseDirectory.source_directory={REPO / 'solutions'}",
             f"--CourseDirectory.db_url=sqlite:///{root / 'gradebook.db'}",
             f"--Exchange.root={root / 'exchange'}", "--force"]
    nbgrader = [sys.executable, "-m", "nbgrader"]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    start = time.perf_counter()
    timed([*nbgrader, "generate_assignment", assignment, "--create", *flags], env=env)
    timed([*nbgrader, "autograde", assignment, "--create", *flags], env=env)
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=24, help="submissions (default 24)")
    p.add_argument("--assignment", default="01-why-tensors")
    p.add_argument("--jobs", type=int, default=default_jobs(), help="parallel run (default: all CPUs)")
    p.add_argument("--no-stock", action="store_true", help="skip stock nbgrader")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="tio-bench-") as tmp:
        tmp_path = Path(tmp)
        subs = tmp_path / "subs"
        students = build(subs, args.assignment, args.n)
        print(f"{args.n} submissions of {args.assignment}; {os.cpu_count()} CPUs; "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        results = {}
        results["serial (--jobs 1)"] = ours(subs, tmp_path / "w1", args.assignment, 1)
        print(f"  serial done in {results['serial (--jobs 1)']:.0f} s", flush=True)
        results[f"parallel (--jobs {args.jobs})"] = ours(subs, tmp_path / "wj", args.assignment, args.jobs)
        if not args.no_stock:
            results["stock nbgrader autograde"] = stock(subs, tmp_path / "stock", args.assignment)
        same = all(cell_scores(tmp_path / "w1", args.assignment, s)
                   == cell_scores(tmp_path / "wj", args.assignment, s) for s in students)
    print(f"\n{'run':<30} {'seconds':>8} {'subs/min':>9}")
    for name, seconds in results.items():
        print(f"{name:<30} {seconds:8.1f} {60 * args.n / seconds:9.2f}")
    serial = results["serial (--jobs 1)"]
    parallel = results[f"parallel (--jobs {args.jobs})"]
    print(f"\nparallel speed-up over serial: {serial / parallel:.2f}x")
    if "stock nbgrader autograde" in results:
        print(f"parallel vs stock nbgrader:    {results['stock nbgrader autograde'] / parallel:.2f}x faster")
    print(f"same scores serial and parallel: {same}  (load average now {os.getloadavg()[0]:.1f})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
