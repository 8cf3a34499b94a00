"""One sandbox, one budget (autograder/sandbox/cgroup.py): memory and tasks bound a sandbox as a whole.

The attack: a cell starts several processes, each under ``--memory``, together over it (what a
``DataLoader(num_workers=4)`` did with 4.8 GB under ``--memory 4096``). With a cgroup, or the
fallback's measure, that sandbox is stopped and loses the tests it had left; an honest kernel
graded at the same time is untouched; the group is gone afterwards.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline.unit import Job, _execute
from autograder.sandbox import cgroup
from autograder.sandbox.cgroup import GRADER_RESERVE, MIB, Support, jobs_that_fit
from autograder.sandbox.flood import GRADER_HELD_BYTES
from autograder.sandbox.launch import Limits, unavailable
from coursefiles import REPO, process_alive

needs_sandbox = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")
needs_group = pytest.mark.skipif(cgroup.support().mode == "none",
                                 reason=f"no cgroup here: {cgroup.support().why}")

# Three processes of 300 MiB each (touched: b"x" * n is written), each under the 768 MiB
# budget (the least ipykernel starts with), together over it.
SPREAD = '''
import subprocess, sys
hogs = [subprocess.Popen([sys.executable, "-c",
                          "import time; b = b'x' * (300 << 20); print('held', flush=True); "
                          "time.sleep(60)"]) for _ in range(3)]
for hog in hogs:
    hog.wait()
'''
HONEST = "b = b'x' * (50 << 20)\nprint('honest', len(b) >> 20)"
BUDGET = Limits(cell_timeout=90, notebook_timeout=120, memory_bytes=768 * MIB, processes=64)


def _notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def _ours() -> list[str]:
    """Groups this process made that still exist."""
    mine = f"{cgroup.PREFIX}{os.getpid()}-"
    return [f"{p}/{n}" for p in set(cgroup.support().parents.values()) if p.is_dir()
            for n in os.listdir(p) if n.startswith(mine)]


def _grade_both(limits: Limits) -> dict[str, tuple[nbformat.NotebookNode, str]]:
    """The attack and an honest control, graded at the same time."""
    jobs = {"attack": _notebook("print('before')", SPREAD, "print('after')"),
            "honest": _notebook(HONEST, "print('after')")}
    done: dict[str, tuple[nbformat.NotebookNode, str]] = {}

    def run(name: str) -> None:
        done[name] = _execute(jobs[name], Job(name, "none", "none", b"", "", "", limits, True,
                                              [str(REPO)]))
    threads = [threading.Thread(target=run, args=(n,)) for n in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done


def _assert_attack_stopped(done: dict[str, tuple[nbformat.NotebookNode, str]]) -> None:
    attack, cut = done["attack"]
    assert cut.startswith("memory budget exceeded"), (cut, attack.cells[1].get("outputs"))
    assert "768 MiB" in cut
    assert "before" in _text(attack.cells[0])
    assert "after" not in _text(attack.cells[2]), "a cell after the budget was exceeded ran"
    honest, honest_cut = done["honest"]
    assert honest_cut == ""
    assert "honest 50" in _text(honest.cells[0]) and "after" in _text(honest.cells[1])


@pytest.mark.slow
@needs_sandbox
@needs_group
def test_processes_over_the_budget_together_are_stopped_alone():
    done = _grade_both(BUDGET)
    _assert_attack_stopped(done)
    assert _ours() == [], "a sandbox's group outlived its kernel"


@pytest.mark.slow
@needs_sandbox
def test_the_fallback_measures_the_whole_sandbox(monkeypatch):
    """No cgroup (a normal user without delegation): the grader adds up what the sandbox's
    processes hold and stops it above the budget."""
    monkeypatch.setattr(cgroup, "support", lambda: Support("none", why="test"))
    _assert_attack_stopped(_grade_both(BUDGET))


# Memory no process maps: files written (never mapped) into the sandbox's private tmpfs
# mounts, 5 x 60 MiB in each (under RLIMIT_FSIZE and each mount's size), 900 MiB together; and
# a memfd, which would be counted nowhere, is refused.
TMPFS_HOG = '''
import os, time
try:
    os.memfd_create("hoard")
    print("MEMFD made", flush=True)
except OSError as err:
    print("MEMFD refused", err.errno, flush=True)
for folder in ("/tmp", "/dev/shm", os.path.expanduser("~")):
    for i in range(5):
        with open(os.path.join(folder, f"hoard{i}"), "wb") as fh:
            fh.write(b"x" * (60 << 20))
print("written", flush=True)
time.sleep(60)
'''


@pytest.mark.slow
@needs_sandbox
def test_the_fallback_counts_the_sandboxs_tmpfs_and_refuses_memfd(monkeypatch):
    """What the fallback's PSS total cannot see is counted (tmpfs) or refused (memfd): the red
    team of #29 held 3 GiB under --memory 2048 that way."""
    import errno
    monkeypatch.setattr(cgroup, "support", lambda: Support("none", why="test"))
    nb, cut = _execute(_notebook("print('before')", TMPFS_HOG, "print('after')"),
                       Job("tmpfs", "none", "none", b"", "", "", BUDGET, True, [str(REPO)]))
    text = _text(nb.cells[1])
    assert f"MEMFD refused {errno.ENOSYS}" in text, nb.cells[1].get("outputs")
    assert cut.startswith("memory budget exceeded"), (cut, nb.cells[1].get("outputs"))
    assert "after" not in _text(nb.cells[2])


MARK = f"119.{uuid.uuid4().int % 10**9:09d}"   # sleep's argument: names this test's children
BOMB = '''
import os
started = 0
try:
    for _ in range(400):
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "__MARK__"])
        started += 1
except OSError as err:
    print("REFUSED", started, err.errno, flush=True)
'''.replace("__MARK__", MARK)


@pytest.mark.slow
@needs_group
def test_the_task_limit_holds_a_fork_bomb_and_nothing_outlives_the_group():
    """Unsandboxed, so that no RLIMIT_NPROC and no PID namespace help (as root: only the group
    bounds it; bounded at 400 anyway): pids.max refuses the fork, close() kills every child."""
    if "pids" not in cgroup.support().parents:
        pytest.skip("no pids controller here")
    nb, cut = _execute(_notebook(BOMB, "print('after')"),
                       Job("bomb", "none", "none", b"", "", "",
                           Limits(cell_timeout=60, notebook_timeout=120, processes=32), False, []))
    text = _text(nb.cells[0])
    assert "REFUSED" in text, nb.cells[0].get("outputs")
    assert int(text.split("REFUSED")[1].split()[0]) < 32
    assert not cut and "after" in _text(nb.cells[1])
    assert _ours() == []
    assert not process_alive(MARK), "a forked child outlived the group"


@needs_group
def test_a_dead_graders_groups_are_swept():
    where = cgroup.support()
    dead = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000
    made = [parent / f"{cgroup.PREFIX}{dead}-1-abcd" for parent in set(where.parents.values())]
    for folder in made:
        folder.mkdir()
    live = cgroup.Group(64 * MIB, 8)
    try:
        removed = cgroup.sweep_abandoned(where)
        assert set(made) <= set(removed)
        # Any other group swept was a dead grader's too: one killed earlier on this machine
        # (test_grading_cluster SIGKILLs a grading Dask worker, which cannot remove its own).
        for folder in set(removed) - set(made):
            owner, _, rest = folder.name[len(cgroup.PREFIX):].partition("-")
            assert cgroup._start_time(int(owner)) != rest.rpartition("-")[0], \
                f"{folder}: its grader is alive"
        assert not any(f.exists() for f in made)
        assert all(d.is_dir() for d in live.dirs.values()), "a live grader's group was swept"
    finally:
        live.close()
    assert _ours() == []


def test_jobs_never_promise_more_memory_than_the_machine_has():
    gib = 1024 * MIB
    assert jobs_that_fit(4, 2 * gib, 16 * gib) == (4, "")
    fit, why = jobs_that_fit(8, 4 * gib, 13 * gib)          # 12.5 GiB usable: 3 sandboxes
    assert fit == 3 and "grading 3 at a time" in why and "--jobs 8" in why
    fit, why = jobs_that_fit(2, 6 * gib, 4 * gib)
    assert fit == 0 and "lower --memory" in why and f"{(4 * gib - GRADER_RESERVE) // MIB} MiB" in why
    assert jobs_that_fit(1, gib, gib + GRADER_RESERVE) == (1, "")
    # What each notebook's output may make the grader hold counts per job (autograder/sandbox/flood.py).
    held = GRADER_HELD_BYTES
    assert jobs_that_fit(4, 2 * gib, 8 * gib + GRADER_RESERVE, held)[0] == 3
    fit, why = jobs_that_fit(1, gib, gib + GRADER_RESERVE, held)
    assert fit == 0 and f"{held // MIB} MiB per notebook" in why
    assert f"at most {(gib - held) // MIB} MiB" in why


def test_fallback_arithmetic_and_the_mode_is_said():
    # A hard split of 6 GiB over 256 tasks is 24 MiB a process: less than torch's import needs,
    # which is why the fallback measures the total instead (autograder/sandbox/cgroup.py).
    assert cgroup.fallback_hard_share(6144 * MIB, 256) == 24 * MIB
    assert cgroup.fallback_hard_share(512 * MIB, 0) == 512 * MIB
    line = Support("none", why="not root").describe(512 * MIB, 64)
    assert "no cgroup here (not root)" in line and "512 MiB" in line and "not a hard bound" in line
    line = Support("v1", {"memory": Path("/m/tio-grader")}).describe(512 * MIB, 64)
    assert "cgroup v1" in line and "512 MiB and 64 tasks for all its processes together" in line


def test_the_launcher_refuses_to_run_outside_its_group(tmp_path):
    """A group the launcher cannot join: nothing runs (the kernel never starts, not graded)."""
    import subprocess
    import sys

    from autograder.sandbox.launch import LIMITER

    missing = tmp_path / "no-such-group" / "cgroup.procs"
    run = subprocess.run([sys.executable, "-I", "-S", str(LIMITER),
                          f"as={1 << 30},cg={os.fsencode(missing).hex()}", "--",
                          "sh", "-c", "echo ran"], capture_output=True, text=True)
    assert run.returncode == 127 and "ran" not in run.stdout
    assert "cannot join the sandbox's cgroup" in run.stderr


@pytest.mark.skipif(os.geteuid() != 0 or cgroup.support().mode == "none",
                    reason="needs root and a cgroup root made groups in")
def test_a_normal_user_falls_back_where_roots_groups_are_closed_to_it():
    """Root's grading leaves the groups' parent (root's, 0755): a normal user grading next on the
    same host must fall back, not fail every notebook with "cannot make the sandbox's cgroup"."""
    import shutil
    import subprocess
    import sys

    if not shutil.which("setpriv"):
        pytest.skip("no setpriv to run as an unprivileged user")
    readable = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               "test", "-r", str(REPO / "autograder" / "sandbox" / "cgroup.py")])
    if readable.returncode != 0:
        pytest.skip("the unprivileged user cannot read this checkout (a private parent folder)")
    probe = "from autograder.sandbox import cgroup; s = cgroup.support(); print(s.mode); print(s.why)"
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "HOME": "/tmp"}, timeout=120)
    assert run.returncode == 0, run.stderr
    mode, why = run.stdout.splitlines()[:2]
    assert mode == "none" and "not root" in why, run.stdout
