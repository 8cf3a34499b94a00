"""Where the course lives on disk, and the nbgrader configuration every step shares.

The repository is an nbgrader course whose *source* directory is ``solutions/``
(instructor notebooks: solutions and hidden tests, the source of truth) and whose
*release* directory is ``notebooks/`` (what learners get, generated and
committed). Grading never happens inside the repository: submissions, autograded
copies, feedback and the gradebook live in a working folder (``.grading/`` by
default, ignored by git).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"
# Per-student variants: one manifest per assignment, <assignment>.json (`autograder variants`).
VARIANTS = REPO / "variants"
# A student id: a folder or zip name, a roster entry (\Z: `$` lets a final newline in).
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]*\Z")
DEFAULT_WORKDIR = REPO / ".grading"
PYPROJECT = REPO / "pyproject.toml"
README = REPO / "README.md"

# Assignments are ordered by a two-digit prefix and named for what they teach.
ASSIGNMENT_NAME = re.compile(r"^\d\d-[a-z0-9]+(?:-[a-z0-9]+)*$")

# Seconds a single cell may run during autograding before it is interrupted and
# scored as an error. The slowest solution cell in the course takes a few seconds
# on a 2-core CPU; 60 s leaves room for slow machines without letting an infinite
# loop hold the whole class's grading for long.
DEFAULT_CELL_TIMEOUT = 60

# The stub learners see in place of a solution. Kept close to nbgrader's default so
# nbgrader's own tooling recognises it, with a hint of what to do.
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"


class CourseError(Exception):
    """A problem the user can fix; the message says how. The CLI prints it without a traceback."""


@dataclass(frozen=True)
class Publication:
    """Where the course is published: ``[tool.tensorcourse]`` in pyproject.toml.

    The one setting behind every "Open in Colab" / "Launch Binder" badge and the
    Colab setup cell's ``pip install git+<repository>@<branch>``. A fork changes it
    and runs ``python -m autograder generate``.
    """

    repository: str  # https://github.com/OWNER/NAME
    branch: str

    @property
    def owner_name(self) -> str:
        """``OWNER/NAME``, as Colab's and mybinder.org's GitHub URLs want it."""
        return self.repository.removeprefix("https://github.com/")

    @property
    def site(self) -> str:
        """The website's address: the repository's GitHub Pages (``tio.py site`` builds it)."""
        owner, name = self.owner_name.split("/")
        return f"https://{owner.lower()}.github.io/{name}/"

    def section_url(self, assignment: str, section: str) -> str:
        """The website page of ``assignment`` at the heading ``section``."""
        from tensorcourse.misconceptions import anchor

        return f"{self.site}notebooks/{assignment}/{assignment}.html#{anchor(section)}"


_GITHUB_URL = re.compile(r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_BRANCH = re.compile(r"^[A-Za-z0-9._/-]+$")


def _read_tool_table(path: Path) -> dict:
    """``[tool.tensorcourse]`` of ``path``, with tomllib (Python 3.11+) or a small fallback."""
    text = path.read_text(encoding="utf-8")
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text).get("tool", {}).get("tensorcourse", {})
    return _tool_table_fallback(text)


def _tool_table_fallback(text: str) -> dict[str, str]:
    """Python 3.9/3.10 have no tomllib: the table holds only ``key = "string"`` lines."""
    table: dict[str, str] = {}
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            inside = line.split("#")[0].strip() == "[tool.tensorcourse]"
            continue
        match = re.match(r'^([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*"([^"]*)"\s*(#.*)?$', line)
        if inside and match:
            table[match.group(1)] = match.group(2)
    return table


def publication(pyproject: Path = PYPROJECT) -> Publication:
    """Read and check the repository URL and branch the launch links point at."""
    where = f"[tool.tensorcourse] in {pyproject.name}"
    table = _read_tool_table(pyproject)
    repository = str(table.get("repository", "")).strip().rstrip("/")
    repository = repository[:-4] if repository.endswith(".git") else repository
    branch = str(table.get("branch", "")).strip()
    if not _GITHUB_URL.match(repository):
        raise CourseError(f"{where}: `repository` must be a GitHub URL like "
                          "https://github.com/OWNER/NAME (Colab and mybinder.org open GitHub "
                          f"repositories); it is {table.get('repository')!r}.")
    if not _BRANCH.match(branch) or branch.startswith(("-", "/")) or ".." in branch:
        raise CourseError(f"{where}: `branch` must be a git branch name like main; "
                          f"it is {table.get('branch')!r}.")
    return Publication(repository, branch)


def assignments() -> list[str]:
    """All assignment names in ``solutions/``, in course order."""
    if not SOLUTIONS.is_dir():
        raise CourseError(f"No solutions/ folder at {SOLUTIONS}: run from a course checkout.")
    return sorted(p.name for p in SOLUTIONS.iterdir()
                  if p.is_dir() and ASSIGNMENT_NAME.match(p.name))


def resolve_assignments(names: list[str] | None) -> list[str]:
    """Validate user-given assignment names (or return all of them)."""
    known = assignments()
    if not names:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CourseError(f"Unknown assignment(s) {', '.join(unknown)}. "
                          f"Known: {', '.join(known) or '(none)'}.")
    return list(names)


def notebook_names(assignment: str) -> list[str]:
    """The notebooks (without ``.ipynb``) of one assignment."""
    return sorted(p.stem for p in (SOLUTIONS / assignment).glob("*.ipynb"))


def base_config(root: Path, *, release: Path, db: Path | None) -> Config:
    """nbgrader configuration for a course rooted at ``root`` with sources in ``solutions/``:
    what ``generate`` (release versions) and the gradebook need. Grading does not run
    nbgrader's autograde: ``autograder.pipeline.unit`` executes and scores each notebook itself."""
    c = Config()
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.source_directory = str(SOLUTIONS)
    c.CourseDirectory.release_directory = str(release)
    if db is not None:
        c.CourseDirectory.db_url = f"sqlite:///{db}"
    c.ClearSolutions.code_stub = {"python": CODE_STUB}
    return c
