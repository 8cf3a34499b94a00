"""The sandbox on its own: raw code (no static screen) run in a sandboxed kernel.

The screen keeps graded answers away from these calls; here they run anyway, to show what the
sandbox alone guarantees: nothing hidden is visible, nothing outside is writable, no network,
limits on memory, file size and processes, nothing outlives the kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline.unit import Job, _execute
from autograder.sandbox.launch import UID_BASE, Limits, grader_is_root, unavailable
from coursefiles import REPO, outlived, process_alive

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")]
MARKER = f"tio-detached-{uuid.uuid4().hex[:8]}"

PROBE = '''
import json, os, socket, subprocess, sys
report = {}
report["uid"] = os.getuid()
report["visible"] = {p: os.path.exists(p) for p in __PATHS__}
report["env"] = sorted(os.environ)
leaks = []
for pid in filter(str.isdigit, os.listdir("/proc")):   # bwrap is pid 1 here, as the grader's uid
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            if b"do-not-leak" in fh.read():
                leaks.append(pid)
    except OSError:
        pass
report["environ leaks"] = leaks
written = []
for target in __TARGETS__:
    try:
        with open(target, "w") as fh:
            fh.write("x")
        written.append(target)
    except OSError:
        pass
report["written"] = written
try:
    with open("/dev/null", "w") as fh:
        fh.write("x")
    with open("/dev/shm/ok", "w") as fh:
        fh.write("x")
    report["dev"] = "ok"
except OSError as err:
    report["dev"] = str(err)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    report["network"] = True
except OSError:
    report["network"] = False
try:
    hog = bytearray(12 * 2**30)
    report["memory"] = "allocated"
except MemoryError:
    report["memory"] = "refused"
try:
    with open("/tmp/big", "wb") as fh:
        fh.write(b"0" * (80 * 2**20))
    report["file"] = "written"
except OSError:
    report["file"] = "refused"
children = []
try:
    for _ in range(200):
        children.append(subprocess.Popen(["sleep", "60"]))
    report["processes"] = len(children)
except OSError:
    report["processes"] = len(children)
for child in children:
    child.kill()
    child.wait()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "__MARKER__"],
                 start_new_session=True)
print("REPORT" + json.dumps(report))
'''


def test_sandbox_hides_protects_and_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("TIO_GRADER_SECRET", "do-not-leak")
    workdir, subs = tmp_path / "grading", tmp_path / "subs"
    workdir.mkdir()
    subs.mkdir()
    (workdir / "gradebook.db").write_text("")
    site = Path(sysconfig.get_paths()["purelib"])
    paths = [str(REPO / "solutions"), str(REPO / "autograder"), str(workdir), str(subs),
             str(REPO / "tensorcourse"), str(site)]
    targets = [str(workdir / "gradebook.db"), str(site / "evil.pth"),
               str(REPO / "tensorcourse" / "evil.py"), str(subs / "other.ipynb"),
               "/dev/hoard"]   # /dev is read-only: graded unprivileged it held 3.6 GB (#29)
    nb = nbformat.v4.new_notebook()
    code = PROBE.replace("__PATHS__", repr(paths)).replace("__TARGETS__", repr(targets))
    nb.cells = [nbformat.v4.new_code_cell(code.replace("__MARKER__", MARKER))]
    limits = Limits(cell_timeout=120, memory_bytes=4 * 2**30, file_bytes=64 * 2**20, processes=32)
    job = Job("probe", "none", "none", b"", "", "", limits, True,
              [str(REPO / "solutions"), str(workdir), str(subs), str(REPO)])
    executed, cut = _execute(nb, job)
    text = "".join(o.get("text", "") for o in executed.cells[0].outputs if o.output_type == "stream")
    assert "REPORT" in text, executed.cells[0].outputs
    report = json.loads(text.split("REPORT", 1)[1].splitlines()[0])
    assert report["uid"] == 65534 or (grader_is_root() and report["uid"] >= UID_BASE)
    assert report["visible"] == {str(REPO / "solutions"): False, str(REPO / "autograder"): False,
                                 str(workdir): False, str(subs): False,
                                 str(REPO / "tensorcourse"): True, str(site): True}
    assert "TIO_GRADER_SECRET" not in report["env"] and "JPY_PARENT_PID" not in report["env"]
    assert report["environ leaks"] == [], "a process in the sandbox holds the grader's environment"
    assert report["written"] == []
    assert report["dev"] == "ok"   # /dev/null and /dev/shm still work
    assert report["network"] is False
    assert report["memory"] == "refused" and report["file"] == "refused"
    assert report["processes"] < 200
    assert not cut
    assert not process_alive(MARKER), "a detached process outlived the sandbox"
    assert not (site / "evil.pth").exists() and not (REPO / "tensorcourse" / "evil.py").exists()
    assert (workdir / "gradebook.db").read_text() == ""


ESCAPES = '''
import ctypes, errno, json, os, time
from ipykernel.connect import get_connection_file
report = {"uid": os.getuid()}
for line in open("/proc/self/uid_map"):
    inner, outer, count = map(int, line.split())
    if inner <= os.getuid() < inner + count:
        report["host_uid"] = outer + os.getuid() - inner
sock = os.path.dirname(get_connection_file())
report["socket_dir"] = sock
open(os.path.join(sock, "owner-probe"), "wb").close()

def refused(fn):
    try:
        fn()
    except OSError as err:
        return errno.errorcode.get(err.errno, str(err.errno))
    return False

def sysctl():
    with open("/proc/sys/kernel/core_pattern", "w") as fh:
        fh.write("|/bin/sh")
report["sysctl"] = refused(sysctl)
for where in (sock, "/tmp"):
    path = os.path.join(where, "suid")
    open(path, "wb").close()
    report[f"chmod {where}"] = refused(lambda: os.chmod(path, 0o4755))
    report[f"create {where}"] = refused(
        lambda: os.close(os.open(path + "2", os.O_CREAT | os.O_WRONLY, 0o6755)))
report["mknod"] = refused(lambda: os.mknod(os.path.join(sock, "dev"), 0o600 | 0o20000, os.makedev(1, 3)))
libc = ctypes.CDLL(None, use_errno=True)
report["unshare user"] = libc.unshare(0x10000000) != 0
report["unshare mount"] = libc.unshare(0x00020000) != 0
report["ptrace"] = libc.ptrace(16, 1, 0, 0) != 0   # PTRACE_ATTACH to the namespace's init
report["mode bits"] = sorted(oct(os.stat(os.path.join(sock, n)).st_mode & 0o7777) for n in os.listdir(sock))
print("REPORT" + json.dumps(report), flush=True)
'''

DEEP = '''
import os, time
os.chdir(__SOCK__)
for _ in range(1100):
    os.mkdir("d")
    os.chdir("d")
time.sleep(60)
'''


def _private_tmp(tmp_path, monkeypatch) -> dict[str, int]:
    """Sandboxes' folders go to ``tmp_path``; returns the host owner of what they wrote."""
    import tempfile

    from autograder.sandbox import scratch

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    owners: dict[str, int] = {}
    real = scratch.remove

    def remove(folder):
        probe = Path(folder) / "sock" / "owner-probe"
        if probe.exists():
            owners["owner-probe"] = probe.stat().st_uid
        real(folder)
    monkeypatch.setattr(scratch, "remove", remove)
    return owners


def test_sandbox_is_never_host_root_and_limits_survive(tmp_path, monkeypatch):
    """What an attacker tried: root mapping, sysctls, setuid files, nested namespaces, ptrace,
    and a folder 1,100 levels deep to kill the watchdog (and with it every limit)."""
    owners = _private_tmp(tmp_path, monkeypatch)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(ESCAPES)]
    limits = Limits(cell_timeout=120, notebook_timeout=600)
    job = Job("probe", "none", "none", b"", "", "", limits, True, [str(REPO)])
    executed, cut = _execute(nb, job)
    text = "".join(o.get("text", "") for o in executed.cells[0].outputs if o.output_type == "stream")
    assert "REPORT" in text, executed.cells[0].outputs
    report = json.loads(text.split("REPORT", 1)[1].splitlines()[0])
    # Who the sandbox is on the host: the owner of a file it wrote (uid_map inside nested user
    # namespaces reads relative to bwrap's own, so it cannot tell).
    host_uid = owners["owner-probe"]
    if grader_is_root():
        assert host_uid >= UID_BASE, report
    else:
        assert host_uid == os.getuid() != 0, report
    assert report["sysctl"] in ("EROFS", "EACCES", "EPERM"), report
    for key in [k for k in report if k.startswith(("chmod", "create"))] + ["mknod"]:
        assert report[key] == "EPERM", (key, report)
    assert report["unshare user"] and report["unshare mount"] and report["ptrace"], report
    assert not any(int(m, 8) & 0o6000 for m in report["mode bits"]), report
    assert not cut
    assert outlived(tmp_path) == [], "the sandbox's folder outlived grading"

    # A deep folder: the watchdog measures it (bounded), kills the kernel, cleanup removes it.
    nb.cells = [nbformat.v4.new_code_cell(ESCAPES),
                nbformat.v4.new_code_cell(DEEP.replace("__SOCK__", "report_sock"))]
    nb.cells[1].source = nb.cells[1].source.replace(
        "report_sock", "__import__('os').path.dirname(__import__('ipykernel.connect', "
                       "fromlist=['x']).get_connection_file())")
    start = time.monotonic()
    executed, cut = _execute(nb, Job("probe", "none", "none", b"", "", "",
                                     Limits(cell_timeout=120, notebook_timeout=600), True,
                                     [str(REPO)]))
    assert cut.startswith("scratch folder over its limits"), (cut, executed.cells[1].outputs)
    assert time.monotonic() - start < 60, "the watchdog did not stop the kernel in time"
    assert outlived(tmp_path) == [], "the deep folder outlived grading"


def test_watchdog_measures_wall_time(tmp_path, monkeypatch):
    _private_tmp(tmp_path, monkeypatch)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import time\nwhile True:\n    time.sleep(0.01)")]
    start = time.monotonic()
    _executed, cut = _execute(nb, Job("probe", "none", "none", b"", "", "",
                                      Limits(cell_timeout=300, notebook_timeout=15), True, [str(REPO)]))
    assert cut == "notebook time limit"
    assert time.monotonic() - start < 15 + 20  # kernel start, then the limit, not loop turns


def test_an_environment_under_tmp_is_not_masked(tmp_path, monkeypatch):
    """The sandbox's private /tmp is mounted before the Python folders, which may live there."""
    from autograder.sandbox import launch as sandbox

    _private_tmp(tmp_path / "work", monkeypatch)
    (tmp_path / "work").mkdir()
    pkg = tmp_path / "env" / "tio_probe_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("VALUE = 42\n")
    os.chmod(tmp_path, 0o755)
    real = sandbox._python_dirs
    monkeypatch.setattr(sandbox, "_python_dirs", lambda hidden: [*real(hidden), tmp_path / "env"])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        f"import sys\nsys.path.insert(0, {str(tmp_path / 'env')!r})\nimport tio_probe_pkg\n"
        "print('VALUE', tio_probe_pkg.VALUE)")]
    executed, cut = _execute(nb, Job("probe", "none", "none", b"", "", "", Limits(cell_timeout=120),
                                     True, [str(REPO)]))
    text = "".join(o.get("text", "") for o in executed.cells[0].outputs if o.output_type == "stream")
    assert "VALUE 42" in text, executed.cells[0].outputs



# Run in a process of its own, so that its peak memory is the grader's for this one notebook.
FLOOD = """
import json, resource, sys, time
import nbformat
from autograder.sandbox.launch import Limits
from autograder.pipeline.unit import Job, _execute
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell("print('before')"),
            nbformat.v4.new_code_cell(sys.argv[2]),
            nbformat.v4.new_code_cell("print('after')")]
start = time.monotonic()
executed, cut = _execute(nb, Job("flood", "none", "none", b"", "", "",
                                 Limits(cell_timeout=300, notebook_timeout=600), True, [sys.argv[1]]))
print(json.dumps({"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                  "seconds": time.monotonic() - start, "cut": cut,
                  "outputs": [[o.get("text", o.get("ename", "")) for o in c.outputs]
                              for c in executed.cells],
                  "sizes": [sum(len(json.dumps(o)) for o in c.outputs) for c in executed.cells]}))
"""


def _flood(tmp_path: Path, cell: str) -> dict:
    run = subprocess.run([sys.executable, "-c", FLOOD, str(REPO), cell], cwd=REPO,
                         capture_output=True, text=True, timeout=900,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("cell, bound", [
    # Red team of #29: 120 prints of 60 MB grew the grader to 3.9 GB. Each is one message over
    # the size the grader reads (autograder/sandbox/flood.py): ZMQ drops the connection, the monitor
    # sees it, the notebook stops at once (before the bound: a 15-minute wait for the lost reply).
    ("chunk = 'x' * 60_000_000\nfor i in range(120):\n    print(chunk, flush=True)",
     "one message over 8 MiB"),
    # A raised error of 40 MB: its reply is over the size too (attack corpus: a-huge-error).
    ("raise ValueError('x' * 40_000_000)", "one message over 8 MiB"),
    # Messages each under the size, 400 MB in all: over the notebook's output budget.
    ("import time\nchunk = 'x' * 4_000_000\nfor i in range(100):\n    print(chunk, flush=True)\n"
     "    time.sleep(0.05)", "more than 256 MiB"),
    # 7.8 MB of nested lists, which parsing would make 370 MB of (red team of the flood bound).
    ("class Shown:\n    def _repr_json_(self):\n        deep = {}\n        for i in range(400):\n"
     "            deep = [deep]\n        return [deep] * 9700\n\nShown()", "nested values"),
])
def test_a_flood_of_output_stops_its_notebook_never_the_grader(tmp_path, cell, bound):
    """The flood's notebook is cut (a graded result: the cells after it score 0, the Problems
    line says which bound), the grader's memory stays bounded, and it ends in seconds."""
    report = _flood(tmp_path, cell)
    assert report["cut"].startswith("output flood") and bound in report["cut"], report["cut"]
    assert report["outputs"][0] == ["before\n"]
    assert not any("after" in text for text in report["outputs"][2]), report["outputs"][2]
    assert report["peak_mib"] < 600, report["peak_mib"]
    assert report["seconds"] < 120, report["seconds"]


def test_outputs_the_grader_cannot_keep_cost_only_themselves(tmp_path):
    """Red team of the flood bound: a _repr_mimebundle_ whose text is a number failed nbformat's
    validation in the grader, and the notebook was "not graded" (a 0 dodged at will). Now the
    output is dropped and said so, and the notebook goes on."""
    report = _flood(tmp_path, "class Shown:\n    def _repr_mimebundle_(self, include=None, "
                              "exclude=None):\n        return {'text/plain': 0}\n\nShown()")
    assert report["cut"] == "", report["cut"]
    assert report["outputs"][1] == ["[an output that is not valid in a notebook was dropped]\n"]
    assert report["outputs"][2] == ["after\n"]


def test_the_courses_lines_beyond_the_output_limit_are_kept_as_one_output(tmp_path):
    """Red team of the flood bound: 213,000 one-line 'TIO-' messages, each kept as an output
    object of its own beyond the 1 MiB limit, took the grader to 817 MiB. Kept lines now join
    the cell's last kept output, and each costs its overhead in the budget."""
    report = _flood(tmp_path, "for i in range(40_000):\n    print('TIO-', flush=True)")
    # Within the limit each message is an output (at least 64 bytes of the 1 MiB each); beyond
    # it, one output holds the rest: far fewer than the 40,000 messages.
    assert len(report["outputs"][1]) < (1 << 20) // 64 + 10, len(report["outputs"][1])
    assert sum(text.count("TIO-") for text in report["outputs"][1]) > 1000  # ZMQ may drop some
    # Even when ZMQ dropped the cell's last output (a CI run under load): that cell's loss only.
    assert report["cut"] == "", report["cut"]   # (beyond the limit, "after" itself is dropped)
    assert report["peak_mib"] < 600, report["peak_mib"]


# A cell whose last output ZMQ dropped, made certain: the executor never sees cell 1's "idle".
# Falling behind is made certain too (argv[3]: the reads without a pause that count as behind).
LOST = '''
import json, sys, time
import nbformat
import autograder.sandbox.flood as flood, autograder.pipeline.unit as unit
from autograder.sandbox.launch import Limits
flood.BEHIND_STREAK, flood.QUIET_S, unit.IOPUB_WAIT = int(sys.argv[2]), 5.0, 5
original = unit._LimitedExecute.process_message
def process_message(self, msg, cell, cell_index):
    if cell_index == 1 and msg["content"].get("execution_state") == "idle":
        return None
    return original(self, msg, cell, cell_index)
unit._LimitedExecute.process_message = process_message
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(c) for c in (
    "print('before')", "for i in range(50):\\n    print(i, flush=True)", "print('after')")]
start = time.monotonic()
executed, cut = unit._execute(nb, unit.Job("lost", "none", "none", b"", "", "",
                                           Limits(cell_timeout=120), True, [sys.argv[1]]))
print(json.dumps({"cut": cut, "seconds": time.monotonic() - start,
                  "outputs": [[o.get("text", "") for o in c.outputs] for c in executed.cells]}))
'''


@pytest.mark.parametrize("behind", [True, False])
def test_a_cells_lost_last_output_costs_that_cell_if_it_flooded_else_is_not_graded(behind):
    """CI under load: 40,000 prints, the grader fell behind, ZMQ dropped the cell's last
    output, and the whole notebook was cut (every later cell 0). A flood's lost output now costs
    its own cell, which says so; one lost while the grader kept up is the machine's failure."""
    run = subprocess.run([sys.executable, "-c", LOST, str(REPO), "20" if behind else "100000"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    if behind:
        assert report["cut"] == "", report["cut"]
        assert report["outputs"][1][-1].startswith("[output flood: this cell"), report["outputs"][1]
        assert report["outputs"][2] == ["after\n"]
    else:
        assert report["cut"].startswith("grading stopped early"), report["cut"]
        assert "CellTimeoutError" in report["cut"], report["cut"]
        assert report["outputs"][2] == [], report["outputs"][2]
    assert report["seconds"] < 60, report["seconds"]


def test_an_error_reply_is_kept_within_the_output_bounds(tmp_path):
    """nbgrader adds a cell's error reply whole when no output shows it; an error whose name is
    longer than the 200 characters kept beyond the output limit never matched, so each failing
    cell added up to 8 MiB past every bound. The grader keeps its name and a short text."""
    name = "E" + "x" * 300
    report = _flood(tmp_path, f"class {name}(Exception):\n    pass\n\n"
                              f"raise {name}('y' * 3_000_000)")
    assert report["sizes"][1] < 100_000, report["sizes"]
    assert any(text.startswith(name[:200]) for text in report["outputs"][1])


# What the socket folder (the one host folder a sandbox may write) can hide from a directory
# walk: files deleted while kept open, and a folder made unreadable (red team of #29: 480 MiB
# and 240 MiB, neither cut). 90 MiB either way, over the 64 MiB bound.
HIDE = '''
import os, time
sock = os.path.dirname(__import__('ipykernel.connect', fromlist=['x']).get_connection_file())
kept = []
if __HOW__ == "unlinked":
    for i in range(3):
        path = os.path.join(sock, f"hide{i}")
        fh = open(path, "wb")
        fh.write(b"x" * (30 << 20))
        fh.flush()
        os.unlink(path)
        kept.append(fh)
else:
    folder = os.path.join(sock, "locked")
    os.mkdir(folder)
    for i in range(3):
        with open(os.path.join(folder, f"f{i}"), "wb") as fh:
            fh.write(b"x" * (30 << 20))
    os.chmod(folder, 0)
print("hidden", flush=True)
time.sleep(30)
'''


@pytest.mark.parametrize("how", ["unlinked", "locked"])
def test_the_socket_folder_bound_sees_what_a_walk_cannot(tmp_path, monkeypatch, how):
    _private_tmp(tmp_path, monkeypatch)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(HIDE.replace("__HOW__", repr(how))),
                nbformat.v4.new_code_cell("print('after')")]
    start = time.monotonic()
    executed, cut = _execute(nb, Job("hide", "none", "none", b"", "", "",
                                     Limits(cell_timeout=120, notebook_timeout=600), True,
                                     [str(REPO)]))
    assert cut.startswith("scratch folder over its limits"), (cut, executed.cells[0].get("outputs"))
    assert time.monotonic() - start < 25, "the watchdog did not stop the kernel in time"
    assert outlived(tmp_path) == []
