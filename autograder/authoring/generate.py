"""``solutions/`` -> ``notebooks/``: the student versions, produced by nbgrader.

nbgrader's ``generate_assignment`` replaces ``### BEGIN SOLUTION`` blocks with a
stub, removes ``### BEGIN HIDDEN TESTS`` blocks, locks the test cells, records
checksums and clears outputs. We run it into a scratch folder and then replace
``notebooks/<assignment>/`` as a whole, so a notebook deleted from ``solutions/``
disappears from ``notebooks/`` too. ``check`` regenerates into a scratch folder and
compares byte for byte with what is committed: CI uses it to fail on drift.

Every student notebook then gets two cells at the top (never written in
``solutions/``): "Open in Colab" / "Launch Binder" badges for that notebook with the torch
builds it was verified on (:mod:`autograder.authoring.verified`, from the committed drift report), and
the Colab setup cell (:mod:`tensorcourse.colab`). The README's badges block
(``<!-- badges:start -->`` ... ``<!-- badges:end -->``) is rewritten too. All of them
come from one setting, ``[tool.tensorcourse]`` in pyproject.toml
(:func:`autograder.course.publication`), and ``check`` covers them.
"""

from __future__ import annotations

import filecmp
import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote

import nbformat

from ..course import NOTEBOOKS, README, CourseError, Publication, base_config, publication

# Markers that must never reach a learner.
SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def _run_nbgrader(assignment: str, release_root: Path) -> None:
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory

    config = base_config(release_root, release=release_root, db=None)
    config.GenerateAssignment.no_database = True
    config.SaveCells.enabled = False  # what nbgrader's --no-db flag sets too
    config.GenerateAssignment.force = True
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = assignment
    converter = GenerateAssignment(coursedir=coursedir, config=config)
    try:
        converter.start()
    except Exception as err:  # nbgrader raises NbGraderException with details in its log
        raise CourseError(f"nbgrader could not generate {assignment}: {err}. "
                          "Check the nbgrader metadata of its cells (see CONTRIBUTING.md).") from err


def _normalise(folder: Path) -> None:
    """Make generated notebooks byte-stable and free of execution traces."""
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
            cell.metadata.pop("execution", None)
        text = nbformat.writes(nb)
        for marker in SECRET_MARKERS:
            if marker in text:
                raise CourseError(f"{path.name}: generated notebook still contains {marker!r}; "
                                  "a solution or hidden-test block is malformed in solutions/.")
        path.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")


# The cells generate puts at the top of every student notebook carry this tag (and fixed
# ids, so the output stays byte-stable): tests and tools tell them from the course's own.
LAUNCH_TAG = "launch"
LAUNCH_CELL_IDS = ("launch-badges", "launch-colab-setup")
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
BADGES_START, BADGES_END = "<!-- badges:start -->", "<!-- badges:end -->"


def colab_url(pub: Publication, path: str) -> str:
    """Colab's "open this notebook from GitHub" URL for ``path`` (relative to the repository)."""
    return f"https://colab.research.google.com/github/{pub.owner_name}/blob/{pub.branch}/{path}"


def binder_url(pub: Publication, path: str) -> str:
    """mybinder.org URL that builds ``binder/`` and opens ``path`` in JupyterLab."""
    return (f"https://mybinder.org/v2/gh/{pub.owner_name}/{quote(pub.branch, safe='')}"
            f"?urlpath={quote('lab/tree/' + path, safe='/')}")


def badges_markdown(pub: Publication, path: str) -> str:
    """The two badges, one line of Markdown, for the notebook at ``path``."""
    return (f"[![Open In Colab]({COLAB_BADGE})]({colab_url(pub, path)}) "
            f"[![Launch Binder]({BINDER_BADGE})]({binder_url(pub, path)})")


def launch_cells(pub: Publication, path: str) -> list[nbformat.NotebookNode]:
    """The badges cell and the Colab setup cell that open every student notebook."""
    from tensorcourse.colab import setup_cell_source

    from .verified import verified_markdown

    assignment = Path(path).parent.name
    badges = nbformat.v4.new_markdown_cell(
        badges_markdown(pub, path) + "\n\n*Colab: run the setup cell below first; for a GPU pick "
        "Runtime > Change runtime type. Binder: CPU only, nothing to install. "
        "Locally: `python3 tio.py lab`.*\n\n" + verified_markdown(assignment, pub),
        id=LAUNCH_CELL_IDS[0], metadata={"tags": [LAUNCH_TAG]})
    setup = nbformat.v4.new_code_cell(setup_cell_source(pub.repository, pub.branch),
                                      id=LAUNCH_CELL_IDS[1], metadata={"tags": [LAUNCH_TAG]})
    return [badges, setup]


def is_launch_cell(cell) -> bool:
    return LAUNCH_TAG in cell.get("metadata", {}).get("tags", [])


def _add_launch_cells(folder: Path, assignment: str, pub: Publication) -> None:
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if any(is_launch_cell(c) for c in nb.cells):
            raise CourseError(f"{assignment}/{path.name}: a cell in solutions/ is tagged "
                              f"{LAUNCH_TAG!r}; that tag is reserved for the cells generate adds.")
        nb.cells[:0] = launch_cells(pub, f"{NOTEBOOKS.name}/{assignment}/{path.name}")
        text = nbformat.writes(nb)
        path.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")


def readme_badges(pub: Publication, first_notebook: str) -> str:
    """The README's generated block, markers included."""
    return (f"{BADGES_START}\n<!-- generated by `python -m autograder generate` from "
            "[tool.tensorcourse] in pyproject.toml: edit that, not this -->\n"
            f"{badges_markdown(pub, first_notebook)}\n{BADGES_END}")


_BADGES_BLOCK = re.compile(re.escape(BADGES_START) + ".*?" + re.escape(BADGES_END), re.DOTALL)


def _first_notebook() -> str:
    from ..course import assignments, notebook_names

    names = assignments()
    if not names or not notebook_names(names[0]):
        raise CourseError("No notebook in solutions/ to point the README's badges at.")
    return f"{NOTEBOOKS.name}/{names[0]}/{notebook_names(names[0])[0]}.ipynb"


def _readme_with_badges(readme: Path, pub: Publication) -> tuple[str, str]:
    """(current text, text with a freshly generated badges block)."""
    text = readme.read_text(encoding="utf-8")
    if len(_BADGES_BLOCK.findall(text)) != 1:
        raise CourseError(f"{readme.name} needs exactly one {BADGES_START} ... {BADGES_END} "
                          "block (on their own lines) for generate to write the launch badges in.")
    return text, _BADGES_BLOCK.sub(lambda _m: readme_badges(pub, _first_notebook()), text)


def write_readme_badges(readme: Path = README) -> bool:
    """Rewrite the README's badges block from the setting; True when it changed."""
    text, fresh = _readme_with_badges(readme, publication())
    if fresh != text:
        readme.write_text(fresh, encoding="utf-8")
    return fresh != text


def generate_into(assignment: str, target_root: Path) -> Path:
    """Generate one assignment into ``target_root/<assignment>/`` and return that folder."""
    with tempfile.TemporaryDirectory(prefix="tio-generate-") as scratch:
        scratch_root = Path(scratch)
        _run_nbgrader(assignment, scratch_root)
        produced = scratch_root / assignment
        if not produced.is_dir():
            raise CourseError(f"nbgrader produced nothing for {assignment}.")
        _normalise(produced)
        _add_launch_cells(produced, assignment, publication())
        dest = target_root / assignment
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(produced, dest)
    return dest


def generate(assignments: list[str]) -> list[Path]:
    """Regenerate ``notebooks/<assignment>/`` for each assignment, and the README's badges."""
    publication()  # a bad setting fails before anything is written
    NOTEBOOKS.mkdir(exist_ok=True)
    folders = [generate_into(a, NOTEBOOKS) for a in assignments]
    if write_readme_badges():
        print(f"updated the badges in {README.name}")
    return folders


def drift(assignments: list[str]) -> list[str]:
    """Files in ``notebooks/`` (and the README's badges) that differ from a fresh generation.

    An empty list means no drift.
    """
    problems: list[str] = []
    readme_now, readme_fresh = _readme_with_badges(README, publication())
    if readme_fresh != readme_now:
        problems.append(f"{README.name}: the badges block differs from "
                        "[tool.tensorcourse] in pyproject.toml")
    with tempfile.TemporaryDirectory(prefix="tio-check-") as scratch:
        for assignment in assignments:
            fresh = generate_into(assignment, Path(scratch))
            committed = NOTEBOOKS / assignment
            if not committed.is_dir():
                problems.append(f"notebooks/{assignment}/ is missing")
                continue
            cmp = filecmp.dircmp(fresh, committed)
            _collect(cmp, f"notebooks/{assignment}", problems)
    return problems


def _collect(cmp: filecmp.dircmp, prefix: str, problems: list[str]) -> None:
    problems += [f"{prefix}/{n} differs" for n in cmp.diff_files]
    problems += [f"{prefix}/{n} is missing" for n in cmp.left_only]
    problems += [f"{prefix}/{n} is not generated from solutions/" for n in cmp.right_only
                 if n != ".ipynb_checkpoints"]
    # dircmp compares shallowly by stat; compare contents of same-named files too.
    for name in cmp.same_files:
        if (Path(cmp.left) / name).read_bytes() != (Path(cmp.right) / name).read_bytes():
            problems.append(f"{prefix}/{name} differs")
    for sub, subcmp in cmp.subdirs.items():
        _collect(subcmp, f"{prefix}/{sub}", problems)
