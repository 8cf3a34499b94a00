"""A kernel's private folder: held while in use, removed after, swept when its grader was killed.

Fast (no kernel, no sandbox): the contract of ``autograder.sandbox.scratch.private_folder``,
``kernel_parent`` and ``sweep_abandoned``, the seccomp filter's file living in that folder, and
the limiter reading a descriptor path that holds commas.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.sandbox.scratch import (
    CLAIM_STALE,
    CLAIMING,
    LOCK,
    PARENT,
    PREFIX,
    TRASH,
    UnsafeTempDir,
    kernel_parent,
    private_folder,
    sweep_abandoned,
)
from coursefiles import REPO


@pytest.fixture
def parent(tmp_path, monkeypatch) -> Path:
    """This test's kernel parent (``TMPDIR`` is ``tmp_path``), checked empty at the end."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = kernel_parent()
    assert folder == tmp_path / f"{PARENT}{os.getuid()}"
    return folder


def _left(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def _abandoned(parent: Path, name: str, *, lock: bool = True) -> Path:
    """A folder as a killed grader leaves it: contents the sandbox locked, lock file unheld."""
    folder = parent / name
    (folder / "sock" / "deep").mkdir(parents=True)
    if lock:
        (folder / LOCK).touch()
    (folder / "sock" / "deep" / "kernel.json").write_text("{}")
    os.chmod(folder / "sock" / "deep", 0)
    return folder


def test_private_folder_is_named_only_while_locked_and_removed_after(parent):
    assert oct(parent.stat().st_mode & 0o777) == "0o700"
    with private_folder() as work:
        assert work.parent == parent and work.name.startswith(PREFIX)
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
    assert _left(parent) == []


def test_private_folder_is_removed_when_the_block_raises(parent):
    with pytest.raises(RuntimeError), private_folder() as work:
        (work / "x").write_text("x")
        raise RuntimeError("grading failed")
    assert _left(parent) == []


def test_a_folder_left_by_a_killed_grader_is_swept_and_nothing_else(parent):
    # A real grader process, killed outright inside its folder: no finally, no atexit runs.
    child = subprocess.run(
        [sys.executable, "-c",
         "import os, signal, tempfile; tempfile.tempdir = os.environ['TMP_HERE']\n"
         "from autograder.sandbox.scratch import private_folder\n"
         "with private_folder() as work:\n"
         "    (work / 'sock').mkdir(); (work / 'sock' / 'kernel.json').write_text('{}')\n"
         "    os.kill(os.getpid(), signal.SIGKILL)\n"],
        cwd=REPO, env={**os.environ, "TMP_HERE": str(parent.parent)}, capture_output=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    (killed,) = parent.iterdir()
    assert killed.name.startswith(PREFIX)
    swept = [killed,
             _abandoned(parent, f"{PREFIX}cut-short", lock=False),  # removal began, was killed
             _abandoned(parent, f"{TRASH}x", lock=False),           # being removed when killed
             _abandoned(parent, f"{CLAIMING}old")]                   # killed while being set up
    old = time.time() - CLAIM_STALE - 10
    os.utime(parent / f"{CLAIMING}old", (old, old))
    kept = [_abandoned(parent, f"{CLAIMING}new"),    # being set up right now
            _abandoned(parent, "something-else")]
    os.mkfifo(_abandoned(parent, f"{PREFIX}fifo", lock=False) / LOCK)  # not a lock: no hang
    (parent / f"{PREFIX}link").symlink_to(parent / "something-else")
    kept += [parent / f"{PREFIX}fifo", parent / f"{PREFIX}link"]

    assert sorted(sweep_abandoned()) == sorted(swept)
    assert _left(parent) == sorted(p.name for p in kept)
    assert (parent / "something-else" / LOCK).exists()   # never followed the link


def test_sweep_runs_before_every_kernel_folder(parent):
    left = _abandoned(parent, f"{PREFIX}killed")
    with private_folder():
        assert not left.exists()


CASES = ["open to others", "a link", "a file", "too long a path", "inside a folder others write",
         "made by another user", "inside another user's folder"]


@pytest.mark.parametrize("case", CASES)
def test_an_unsafe_kernel_parent_is_refused_with_what_to_do(tmp_path, monkeypatch, case):
    if "another user" in case and os.getuid() != 0:
        pytest.skip("making a folder of another user takes root")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = tmp_path / f"{PARENT}{os.getuid()}"
    if case == "open to others":
        path.mkdir()
        os.chmod(path, 0o777)
    elif case == "a link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        path.symlink_to(tmp_path / "elsewhere")
    elif case == "a file":
        path.write_text("")
    elif case == "too long a path":   # the sockets would not fit an address ("File name too long")
        deep = tmp_path / ("d" * 60)
        deep.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(deep))
    elif case == "inside a folder others write":   # no sticky bit: anyone may rename our folder
        shared = tmp_path / "shared"
        shared.mkdir()
        os.chmod(shared, 0o777)
        monkeypatch.setattr(tempfile, "tempdir", str(shared))
    elif case == "made by another user":   # planted before the grader's first run
        path.mkdir(mode=0o700)
        os.chown(path, 1001, 1001)
    else:
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o755)
        os.chown(theirs, 1001, 1001)
        monkeypatch.setattr(tempfile, "tempdir", str(theirs))
    with pytest.raises(UnsafeTempDir, match="point TMPDIR at a"):
        with private_folder():
            pass
    assert sweep_abandoned() == []   # never raises: the grade's last sweep must not mask errors


def test_grade_refuses_an_unsafe_temp_folder_before_grading(tmp_path):
    shared = tmp_path / "s"   # short: a long path is refused for its length first
    shared.mkdir()
    os.chmod(shared, 0o777)
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "subs"),
                          "--workdir", str(tmp_path / "work"), "--no-progress"], cwd=REPO,
                         env={**os.environ, "TMPDIR": str(shared)}, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode != 0
    assert "cannot grade here" in run.stderr and "no sticky bit" in run.stderr, run.stderr
    assert "container" not in run.stderr.lower(), run.stderr   # not a sandbox problem
    assert list(shared.iterdir()) == []


def test_seccomp_filter_lives_in_the_kernel_folder(parent):
    from autograder.sandbox.seccomp import SeccompUnavailable, program, write_filter

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
    assert _left(parent) == []


def test_limiter_opens_a_descriptor_whose_path_holds_commas(tmp_path):
    folder = tmp_path / "a,b fd=c"
    folder.mkdir()
    (folder / "filter").write_text("the filter\n")
    limiter = REPO / "autograder" / "sandbox" / "rlimit_exec.py"
    run = subprocess.run([sys.executable, "-I", "-S", str(limiter),
                          f"fsize={2**20},fd=9:{folder / 'filter'}", "--",
                          "sh", "-c", "cat <&9; ulimit -f"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["the", "filter", str(2**20 // 512)], run.stdout
