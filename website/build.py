"""Build the course website: every student notebook as a page, demos executed on the CPU.

    python3 tio.py site            # -> .site/html/index.html (serve it, or open the file)

Why Sphinx with MyST-NB and the Sphinx Book Theme: all three are pip packages kept by
the Executable Books project (the team behind Jupyter Book 1, whose renderer they
are), so the site builds in the course's own Python environment with no Node.js
toolchain, and MyST-NB renders notebooks with their stored outputs exactly as
Jupyter does. Jupyter Book 2 (mystmd) would need Node.js on every machine that
builds the site, CI included.

What a page is. The student notebook (``notebooks/``), never the solution: exercises
appear as tasks with their hints and the ``# YOUR CODE HERE`` stub. Its demo cells
get their outputs from the *solution* notebook executed on the CPU (so figures,
printed tables and drawings appear), copied only to cells whose source is the same
in both versions and that read nothing an answer cell defines (a demo or "Check
yourself" cell calling the solution would publish its results); answer and test cells
stay without output. The Colab setup cell is
dropped (it does nothing outside Colab); the launch badges cell stays and gains a
download link, all from ``[tool.tensorcourse]`` like the notebooks' own badges.
Widgets cannot run on a static page: an explorer's output is its first figure plus
a note with a link that launches the notebook on Binder. Every course figure is an
image file whose ``alt`` is the figure's text summary, with its full text description
in a collapsed ``<details>`` under it (both written by ``tensorcourse.viz`` from the facts
the figure draws).

Executed notebooks are cached in ``.site/cache/`` keyed by the solution notebook,
the helper package and the torch version, so a rebuild after a prose change in one
notebook executes only that one.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SITE = REPO / ".site"
WEBSITE = REPO / "website"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
LAUNCH_PLACEHOLDER = "TIO-LAUNCH-URL"

sys.path.insert(0, str(REPO))
from autograder.authoring.generate import badges_markdown, binder_url, colab_url, is_launch_cell  # noqa: E402
from autograder.authoring.verified import verified_markdown  # noqa: E402
from autograder.course import assignments, publication  # noqa: E402
from tensorcourse.headless import HeadlessClient  # noqa: E402


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:16]


def _helper_digest() -> bytes:
    import torch

    files = sorted((REPO / "tensorcourse").rglob("*.py"))
    return b"".join(f.read_bytes() for f in files) + torch.__version__.encode()


CACHE = SITE / "cache"


def cache_path(assignment: str, helper: bytes | None = None, cache: Path = CACHE) -> Path:
    """Where the executed solution notebook is kept for the current sources and torch."""
    src = REPO / "solutions" / assignment / f"{assignment}.ipynb"
    key = _digest(src.read_bytes(), helper if helper is not None else _helper_digest())
    return cache / f"{assignment}-{key}.ipynb"


def store_executed(assignment: str, nb: nbformat.NotebookNode, cache: Path = CACHE) -> Path:
    """Keep an executed solution notebook (run elsewhere, e.g. by the test suite on the CPU)."""
    cache.mkdir(parents=True, exist_ok=True)
    target = cache_path(assignment, cache=cache)
    for old in cache.glob(f"{assignment}-*.ipynb"):
        old.unlink()
    tmp = target.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(target)  # atomic: a concurrent build never reads half a file
    return target


def execute_solution(assignment: str, cache: Path, helper: bytes) -> tuple[nbformat.NotebookNode, bool]:
    """The solution notebook executed on the CPU; from the cache when nothing changed."""
    cached = cache_path(assignment, helper, cache)
    if cached.exists():
        return nbformat.read(cached, as_version=4), True
    nb = nbformat.read(REPO / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    work = SITE / "work" / assignment
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    client = HeadlessClient(nb, timeout=300, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}})
    client.execute()
    errors = [f"cell {i}: {o.ename}: {o.evalue}" for i, c in enumerate(nb.cells)
              for o in c.get("outputs", []) if o.output_type == "error"]
    if errors:
        raise SystemExit(f"{assignment}: the solution notebook failed on the CPU, so the site "
                         "would show broken demos:\n  " + "\n  ".join(errors[:5]))
    store_executed(assignment, nb, cache)
    return nb, False


def _is_graded(cell: nbformat.NotebookNode) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("solution") or meta.get("grade") or meta.get("task"))


def _answer_names(nb: nbformat.NotebookNode) -> set[str]:
    """Names the answer cells define at top level (functions, classes, assigned names)."""
    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            continue
        for node in ast.parse(cell.source).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _reads_any(source: str, names: set[str]) -> bool:
    """Whether the cell's code mentions one of ``names`` (as a whole word: magics and all)."""
    return any(re.search(rf"\b{re.escape(name)}\b", source) for name in names)


def _launch_note(kind: str) -> nbformat.NotebookNode:
    text = (f'<p class="tio-launch-note"><b>Interactive {kind}.</b> A static page cannot run '
            "Python, so the figure above is its first state. "
            f'<a class="tio-launch" href="{LAUNCH_PLACEHOLDER}">Launch this notebook</a> '
            "on Binder (or use the Colab button at the top) to interact with it.</p>")
    return nbformat.v4.new_output("display_data", data={"text/html": text, "text/plain": kind})


_MD_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+?)(#[^)\s]*)?\)")


def _outside_links_to_github(text: str, assignment: str) -> str:
    """Relative links to repository files that are not pages (README, CONTRIBUTING...) go to GitHub."""
    pub = publication()
    here = Path("notebooks") / assignment

    def fix(m: re.Match[str]) -> str:
        target = os.path.normpath(here / m.group(1))
        if target.startswith("notebooks" + os.sep) and target.endswith(".ipynb"):
            return m.group(0)  # another page of the site: Sphinx resolves and checks it
        return f"]({pub.repository}/blob/{pub.branch}/{Path(target).as_posix()}{m.group(2) or ''})"

    return _MD_LINK.sub(fix, text)


def page_notebook(assignment: str, executed: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student notebook with the executed demo outputs copied in (see the module doc)."""
    student = nbformat.read(REPO / "notebooks" / assignment / f"{assignment}.ipynb", as_version=4)
    by_id = {c.get("id"): c for c in executed.cells}
    answers = _answer_names(executed)
    page = copy.deepcopy(student)
    cells = []
    for cell in page.cells:
        if is_launch_cell(cell) and cell.cell_type == "code":
            continue  # the Colab setup cell
        if cell.cell_type == "markdown":
            cell.source = _outside_links_to_github(cell.source, assignment)
        if is_launch_cell(cell):  # the badges: the same function writes the notebooks' own
            cell.source = (badges_markdown(publication(), f"notebooks/{assignment}/{assignment}.ipynb")
                           + f' <a class="tio-download" href="../../downloads/{assignment}.ipynb" '
                           f'download="{assignment}.ipynb">Download the notebook</a>\n\n'
                           + verified_markdown(assignment, publication()))
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            twin = by_id.get(cell.get("id"))
            if (not _is_graded(cell) and twin is not None and not _is_graded(twin)
                    and twin.source == cell.source and not _reads_any(cell.source, answers)):
                for out in twin.get("outputs", []):
                    if WIDGET_MIME in out.get("data", {}):
                        kind = "explorer"
                        m = re.search(r"(\w+)_explorer\(", cell.source)
                        if m:
                            kind = f"{m.group(1)} explorer"
                        cell.outputs.append(_launch_note(kind))
                    elif out.output_type == "stream" and out.name == "stderr":
                        continue
                    else:
                        cell.outputs.append(_figure_as_image(out))
        cells.append(cell)
    page.cells = cells
    return page


FIGURE_META = "tensorcourse"  # a VizFigure's output metadata: its alt and description


def _figure_as_image(out: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A course figure's output, rendered from its PNG (a file on the site, not inline HTML).

    A figure's display carries the PNG, an HTML version (the image inline with its alt and
    description) and, in ``metadata["tensorcourse"]``, the alt text and the description.
    The page keeps the PNG, so MyST-NB writes it as an image file; :func:`_figure_texts`
    puts the alt and the description back on the built page.
    """
    if FIGURE_META not in out.get("metadata", {}) or "image/png" not in out.get("data", {}):
        return out
    out = copy.deepcopy(out)
    for mime in ("text/html", "text/markdown"):
        out.data.pop(mime, None)
    return out


def _figure_texts(page_nb: nbformat.NotebookNode) -> dict[str, dict[str, str]]:
    """sha256 of each figure's PNG (MyST-NB's image file name) -> its alt and description."""
    import base64

    texts = {}
    for cell in page_nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            meta = out.get("metadata", {}).get(FIGURE_META)
            if meta and "image/png" in out.get("data", {}):
                png = base64.b64decode(out.data["image/png"])
                texts[hashlib.sha256(png).hexdigest()] = dict(meta)
    return texts


_IMG = re.compile(r'<img alt="[^"]*" src="([^"]*/_images/([0-9a-f]{64})\.png)"([^>]*)/?>')


def describe_figures(page: str, texts: dict[str, dict[str, str]]) -> str:
    """Give each course figure on a built page its alt text and its description under it.

    Sphinx writes the image's file name as its alt (what a screen reader would read);
    each figure gets the summary instead, and its full description in a ``<details>``.
    """
    def fix(m: re.Match[str]) -> str:
        meta = texts.get(m.group(2))
        if meta is None:
            return m.group(0)
        return (f'<img alt="{html.escape(meta["alt"])}" src="{m.group(1)}"{m.group(3)}/>'
                '<details class="tio-figure-text"><summary>Text description of the figure'
                f'</summary>{meta["description_html"]}</details>')

    return _IMG.sub(fix, page)


def _title(nb: nbformat.NotebookNode) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return "?"


def _syllabus_rows() -> dict[str, str]:
    """'What you learn' per notebook number, from the README's syllabus table."""
    rows = {}
    for line in (REPO / "README.md").read_text().splitlines():
        m = re.match(r"^\|\s*(\d\d)\s*\|[^|]*\|\s*([^|]+?)\s*\|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def write_sources(src: Path, pages: dict[str, nbformat.NotebookNode]) -> None:
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    shutil.copy2(WEBSITE / "conf.py", src / "conf.py")
    shutil.copytree(WEBSITE / "_static", src / "_static")
    learn = _syllabus_rows()
    table = ["| # | Notebook | What you learn |", "|---|---|---|"]
    for name, nb in pages.items():
        out = src / "notebooks" / name / f"{name}.ipynb"
        out.parent.mkdir(parents=True)
        nbformat.write(nb, out)
        title = _title(nb).split("·", 1)[-1].strip()
        table.append(f"| {name[:2]} | [{title}](notebooks/{name}/{name}.ipynb) | "
                     f"{learn.get(name[:2], '')} |")
    pub = publication()
    first = f"notebooks/{next(iter(pages))}/{next(iter(pages))}.ipynb"
    index = (WEBSITE / "index.md").read_text()
    index = index.replace("{{syllabus}}", "\n".join(table))
    index = index.replace("{{binder}}", binder_url(pub, first)).replace("{{colab}}", colab_url(pub, first))
    index = index.replace("{{repository}}", pub.repository)
    toc = "\n".join(f"notebooks/{n}/{n}" for n in pages)
    index = index.replace("{{toctree}}", toc)
    (src / "index.md").write_text(index)


def _post_process(out: Path, names: list[str]) -> None:
    """Per page: the launch placeholder becomes that notebook's Binder URL; downloads copied."""
    pub = publication()
    downloads = out / "downloads"
    downloads.mkdir(exist_ok=True)
    for name in names:
        shutil.copy2(REPO / "notebooks" / name / f"{name}.ipynb", downloads / f"{name}.ipynb")
        page = out / "notebooks" / name / f"{name}.html"
        text = page.read_text()
        url = html.escape(binder_url(pub, f"notebooks/{name}/{name}.ipynb"))
        built = nbformat.read(SITE / "src" / "notebooks" / name / f"{name}.ipynb", as_version=4)
        text = describe_figures(text, _figure_texts(built))
        page.write_text(text.replace(LAUNCH_PLACEHOLDER, url))


def build(*, jobs: int, only: list[str] | None = None) -> Path:
    """Execute (or reuse), render and post-process; returns the HTML folder."""
    names = [n for n in assignments() if not only or any(n.startswith(o) for o in only)]
    if not names:
        raise SystemExit(f"no notebook matches {only}")
    missing = [n for n in names if not (REPO / "notebooks" / n / f"{n}.ipynb").exists()]
    if missing:
        raise SystemExit(f"no student notebook for {missing}: run `python -m autograder generate`")
    helper = _helper_digest()
    start = time.perf_counter()
    executed: dict[str, nbformat.NotebookNode] = {}
    saved = dict(os.environ)
    os.environ.update({"TENSORCOURSE_DEVICE": "cpu", "MPLBACKEND": "agg"})  # the kernels inherit it
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {n: pool.submit(execute_solution, n, CACHE, helper) for n in names}
            for n in names:
                nb, hit = futures[n].result()
                executed[n] = nb
                print(f"  {n:<40} {'cached' if hit else 'executed'}", flush=True)
    finally:  # the caller's environment (a test process) is left as it was
        os.environ.clear()
        os.environ.update(saved)
    pages = {n: page_notebook(n, executed[n]) for n in names}
    src = SITE / "src"
    write_sources(src, pages)
    out = SITE / "html"
    log = SITE / "sphinx-warnings.log"
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-w", str(log), "-j", "1",
           str(src), str(out)]
    done = subprocess.run(cmd, cwd=REPO)
    # A preview of some notebooks links to pages it did not build: allowed there only.
    allowed = ("myst.xref_missing",) if only else ()
    warnings = [w for w in log.read_text().splitlines()
                if "WARNING" in w and not any(a in w for a in allowed)]
    if done.returncode != 0 or warnings:
        raise SystemExit("the site build failed or warned:\n" + "\n".join(warnings[:40]))
    _post_process(out, names)
    print(f"Site built in {time.perf_counter() - start:.0f} s: {out / 'index.html'}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 tio.py site", description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="notebooks executed at once (default: 2)")
    p.add_argument("--only", nargs="+", metavar="NN", help="only these notebooks (a preview)")
    args = p.parse_args(argv)
    build(jobs=max(1, args.jobs), only=args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
