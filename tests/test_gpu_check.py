"""The GPU check (`python3 tio.py gpu-check`): its CPU path, its report, its offline bundle.

No GPU is available in CI, so the command's own path is what is tested: `--allow-cpu`
runs the notebooks and the figures on the CPU (tio.py's stage 3 runs all notebooks; here
one), the report has every field, a machine without a GPU is refused without the flag,
and the bundle for CPython 3.12 manylinux is complete (every import the notebooks and the
helper package need resolves from it plus torch/numpy/matplotlib) and small enough.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

from coursefiles import REPO
from tensorcourse import gpu_check

TARGET_ENV = dict(default_environment(), python_version="3.12", python_full_version="3.12.0",
                  sys_platform="linux", platform_system="Linux", platform_machine="x86_64",
                  implementation_name="cpython", platform_python_implementation="CPython",
                  os_name="posix")


def _tio(*args: str, env: dict[str, str] | None = None, timeout: int = 600):
    return subprocess.run([sys.executable, str(REPO / "tio.py"), *args], cwd=REPO, text=True,
                          capture_output=True, env={**os.environ, **(env or {})}, timeout=timeout)


def test_without_a_gpu_it_refuses_unless_allowed(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tensorcourse.gpu_check", "--only", "01",
                           "--output", str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == gpu_check.EXIT_NO_GPU
    assert "--allow-cpu" in done.stderr and not (tmp_path / "report.md").exists()


def test_bad_arguments_are_clear_errors(tmp_path):
    assert gpu_check.main(["--only", "99", "--allow-cpu", "--output", str(tmp_path)]) == 2
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert gpu_check.main(["--bundle", str(tmp_path / "full")]) == 2
    assert gpu_check.main(["--bundle", str(tmp_path / "b"), "--python-version", "twelve"]) == 2


@pytest.mark.slow
def test_allow_cpu_runs_a_notebook_and_writes_the_report(tmp_path):
    done = _tio("gpu-check", "--allow-cpu", "--only", "01", "--output", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["passed"] is True and data["machine"]["torch"]
    (nb,) = data["notebooks"]
    assert nb["name"] == "01-why-tensors" and nb["passed"] and nb["wall_s"] > 0
    assert nb["timings"], "the notebook's tc.measure results are collected"
    labels = {f["label"]: f for f in data["figures"]}
    assert labels["H2D bandwidth, pinned"]["value"] is None  # GPU-only: skipped, saying why
    assert "no CUDA device" in labels["H2D bandwidth, pinned"]["note"]
    assert any(f["value"] for f in data["figures"])  # the CPU ones are measured
    md = (tmp_path / "report.md").read_text()
    for text in ("# GPU check report", "1 of 1 notebooks passed", "## Figures", "01-why-tensors"):
        assert text in md


def test_a_failing_notebook_is_reported_with_its_first_failing_cell(tmp_path):
    import nbformat

    sol = tmp_path / "solutions" / "01-broken"
    sol.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("assert x == 2, 'x is not 2'"),
                                         nbformat.v4.new_code_cell("1 / 0")])
    nbformat.write(nb, sol / "01-broken.ipynb")
    work = tmp_path / "work"
    work.mkdir()
    r = gpu_check.run_notebook(sol / "01-broken.ipynb", timeout=60, workdir=work)
    assert not r.passed and r.first_error["cell"] == 1 and "x is not 2" in r.first_error["error"]
    md, _ = gpu_check.write_report(tmp_path / "out", gpu_check.machine_facts(), [r], [])
    assert "**FAIL**" in md.read_text() and "0 of 1 notebooks passed" in md.read_text()


def _imports(source: str) -> set[str]:
    names = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: skip the cell
        return names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


# Imported only where installed (the cell checks importlib.util.find_spec first).
OPTIONAL = {"torchvision": "04: the resnet18(pretrained=...) myth check"}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    dest = tmp_path_factory.mktemp("bundle") / "gpu-check"
    done = _tio("gpu-check", "--bundle", str(dest), "--python-version", "3.12",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                "--platform", "manylinux2014_x86_64")
    assert done.returncode == 0, done.stdout + done.stderr
    return dest


def test_the_bundle_is_small_and_has_everything(bundle):
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["bytes"] < gpu_check.BUNDLE_TARGET_BYTES, f"{manifest['bytes'] / 2**20:.1f} MiB"
    assert sorted(manifest["notebooks"]) == sorted(
        p.name for p in (REPO / "solutions").iterdir() if p.is_dir())
    assert (bundle / "run.py").exists() and (bundle / "tensorcourse" / "gpu_check.py").exists()
    names = {w.split("-")[0].lower() for w in manifest["wheels"]}
    assert {"nbclient", "nbformat", "ipykernel", "ipywidgets"} <= names
    assert not names & set(gpu_check.FROM_MACHINE), "the machine's own torch/numpy must be used"


def test_every_requirement_of_every_bundled_wheel_is_in_the_bundle(bundle):
    have = set(gpu_check.FROM_MACHINE)
    wheels = sorted((bundle / "wheels").glob("*.whl"))
    have |= {w.name.split("-")[0].lower().replace("_", "-") for w in wheels}
    missing = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            text = z.read(meta).decode()
        for line in text.splitlines():
            if not line.startswith("Requires-Dist:"):
                continue
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker and not req.marker.evaluate({**TARGET_ENV, "extra": ""}):
                continue
            if req.name.lower().replace("_", "-") not in have:
                missing.append(f"{wheel.name} needs {req}")
    assert not missing, "\n".join(missing)


def test_every_import_of_the_notebooks_and_the_helper_resolves(bundle):
    import nbformat

    needed: dict[str, str] = {}
    for nb_path in sorted((bundle / "solutions").glob("*/*.ipynb")):
        for cell in nbformat.read(nb_path, as_version=4).cells:
            if cell.cell_type == "code":
                for name in _imports(cell.source):
                    needed.setdefault(name, nb_path.name)
    assert not (bundle / "autograder").exists(), "the learner's package stands alone (#32)"
    for py in (bundle / "tensorcourse").rglob("*.py"):
        for name in _imports(py.read_text()):
            needed.setdefault(name, str(py.relative_to(bundle)))
    provided = (set(gpu_check.FROM_MACHINE) | {"tensorcourse"}
                | set(sys.stdlib_module_names)
                | {"functorch", "torchgen"}     # shipped inside the torch wheel
                | {"PIL"}                       # pillow: a dependency of matplotlib (10's myth check)
                | set(OPTIONAL))
    for wheel in (bundle / "wheels").glob("*.whl"):
        provided |= gpu_check._zip_top_levels(wheel)
    # The kernel itself: nbclient starts `python -m ipykernel_launcher`.
    needed.update({"ipykernel_launcher": "the kernel", "nbclient": "the runner"})
    unresolved = {n: where for n, where in needed.items() if n not in provided}
    assert not unresolved, f"imports the bundle does not provide: {unresolved}"
