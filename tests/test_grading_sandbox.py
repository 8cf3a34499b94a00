"""The sandbox on its own: raw code (no static screen) run in a sandboxed kernel.

The screen keeps graded answers away from these calls; here they run anyway, to show what the
sandbox alone guarantees: nothing hidden is visible, nothing outside is writable, no network,
limits on memory, file size and processes, nothing outlives the kernel.
"""

from __future__ import annotations

import json
import os
import sysconfig
import uuid
from pathlib import Path

import nbformat
import pytest

from autograder.sandbox import Limits, unavailable
from autograder.unit import Job, _execute
from coursefiles import REPO

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")]
MARKER = f"tio-detached-{uuid.uuid4().hex[:8]}"

PROBE = '''
import json, os, socket, subprocess, sys
report = {}
report["uid"] = os.getuid()
report["visible"] = {p: os.path.exists(p) for p in __PATHS__}
report["env"] = sorted(os.environ)
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


def _alive(marker: str) -> bool:
    for pid in os.listdir("/proc"):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


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
               str(REPO / "tensorcourse" / "evil.py"), str(subs / "other.ipynb")]
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
    assert report["uid"] == 65534
    assert report["visible"] == {str(REPO / "solutions"): False, str(REPO / "autograder"): False,
                                 str(workdir): False, str(subs): False,
                                 str(REPO / "tensorcourse"): True, str(site): True}
    assert "TIO_GRADER_SECRET" not in report["env"] and "JPY_PARENT_PID" not in report["env"]
    assert report["written"] == []
    assert report["network"] is False
    assert report["memory"] == "refused" and report["file"] == "refused"
    assert report["processes"] < 200
    assert not cut
    assert not _alive(MARKER), "a detached process outlived the sandbox"
    assert not (site / "evil.pth").exists() and not (REPO / "tensorcourse" / "evil.py").exists()
    assert (workdir / "gradebook.db").read_text() == ""
