"""A kernel's private folder: held while in use, removed after, swept when its grader was killed.

Fast (no kernel, no sandbox): the contract of ``autograder.scratch.private_folder`` and
``sweep_abandoned``, the seccomp filter's file living in that folder, and the limiter reading a
descriptor path that holds commas.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.scratch import CLAIMING, LOCK, PREFIX, private_folder, sweep_abandoned
from coursefiles import REPO


@pytest.fixture
def tmpdir_here(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _abandoned(parent: Path, suffix: str) -> Path:
    """A folder as a killed grader leaves it: lock file unheld, contents the sandbox locked."""
    folder = parent / f"{PREFIX}{suffix}"
    (folder / "sock" / "deep").mkdir(parents=True)
    (folder / LOCK).touch()
    (folder / "sock" / "deep" / "kernel.json").write_text("{}")
    os.chmod(folder / "sock" / "deep", 0)
    return folder


def test_private_folder_is_named_only_while_locked_and_removed_after(tmpdir_here):
    with private_folder() as work:
        assert work.parent == tmpdir_here and work.name.startswith(PREFIX)
        assert (work / LOCK).exists() and oct(work.stat().st_mode & 0o777) == "0o700"
        probe = os.open(work / LOCK, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):   # held: another sweep must leave it alone
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(probe)
        assert sweep_abandoned() == [] and work.exists()
        (work / "sock").mkdir()
        (work / "sock" / "f").write_text("x")
    assert list(tmpdir_here.iterdir()) == []


def test_private_folder_is_removed_when_the_block_raises(tmpdir_here):
    with pytest.raises(RuntimeError), private_folder() as work:
        (work / "x").write_text("x")
        raise RuntimeError("grading failed")
    assert list(tmpdir_here.iterdir()) == []


def test_a_folder_left_by_a_killed_grader_is_swept_and_nothing_else(tmpdir_here):
    # A real grader process, killed outright inside its folder: no finally, no atexit runs.
    child = subprocess.run(
        [sys.executable, "-c",
         "import os, signal, tempfile; tempfile.tempdir = os.environ['PARENT']\n"
         "from autograder.scratch import private_folder\n"
         "with private_folder() as work:\n"
         "    (work / 'sock').mkdir(); (work / 'sock' / 'kernel.json').write_text('{}')\n"
         "    os.kill(os.getpid(), signal.SIGKILL)\n"],
        cwd=REPO, env={**os.environ, "PARENT": str(tmpdir_here)}, capture_output=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    (left,) = tmpdir_here.iterdir()
    also = _abandoned(tmpdir_here, "older")
    # Not ours to sweep: no lock file, another name (a folder still being set up), a link.
    kept = [tmpdir_here / f"{PREFIX}no-lock", tmpdir_here / f"{CLAIMING}x", tmpdir_here / "target"]
    for folder in kept:
        folder.mkdir()
    (tmpdir_here / f"{CLAIMING}x" / LOCK).touch()
    (tmpdir_here / f"{PREFIX}link").symlink_to(tmpdir_here / "target")
    (tmpdir_here / "target" / LOCK).touch()

    assert sorted(sweep_abandoned()) == sorted([left, also])
    assert sorted(p.name for p in tmpdir_here.iterdir()) == sorted(
        [f"{PREFIX}no-lock", f"{CLAIMING}x", "target", f"{PREFIX}link"])
    assert (tmpdir_here / "target" / LOCK).exists()   # never followed a link


def test_sweep_runs_before_every_kernel_folder(tmpdir_here):
    left = _abandoned(tmpdir_here, "killed")
    with private_folder():
        assert not left.exists()


def test_seccomp_filter_lives_in_the_kernel_folder(tmpdir_here):
    from autograder.seccomp import SeccompUnavailable, program, write_filter

    try:
        code = program()
    except SeccompUnavailable as err:
        pytest.skip(str(err))
    assert len(code) > 0 and len(code) % 8 == 0   # whole BPF instructions
    with private_folder() as work:
        path = write_filter(work)
        assert path.parent == work and path.read_bytes() == code
        assert oct(path.stat().st_mode & 0o777) == "0o400"
        with pytest.raises(FileExistsError):   # never written over (or through a link)
            write_filter(work)
    assert list(tmpdir_here.iterdir()) == []


def test_limiter_opens_a_descriptor_whose_path_holds_commas(tmp_path):
    folder = tmp_path / "a,b fd=c"
    folder.mkdir()
    (folder / "filter").write_text("the filter\n")
    limiter = REPO / "autograder" / "rlimit_exec.py"
    run = subprocess.run([sys.executable, "-I", "-S", str(limiter),
                          f"fsize={2**20},fd=9:{folder / 'filter'}", "--",
                          "sh", "-c", "cat <&9; ulimit -f"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["the", "filter", str(2**20 // 512)], run.stdout

