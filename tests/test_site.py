"""The course website (`python3 tio.py site`): it builds, and a real browser finds what it promises.

The build itself fails on any Sphinx warning.
Then, on the built HTML:

* every notebook has a page, with its figures, Binder and Colab buttons pointing where the
  notebooks' own badges point (one setting, ``[tool.tensorcourse]``), and a download link;
* every internal link resolves to a file of the site;
* no solution code, no hidden test and no nbgrader marker appears anywhere (checked line by
  line against ``solutions/``);
* headless Chromium (Debian's, through Playwright) opens the home page and every notebook
  page, and the figures have loaded; screenshots go to ``.test-output/site/``.

Marked ``site``: `tio.py test` runs these after the rest of the suite, when the executed
notebooks the suite stored let the build skip executing them again.
"""

from __future__ import annotations

import functools
import html
import http.server
import re
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import nbformat
import pytest

from coursefiles import REPO, assignments, read, release_path, solution_path

sys.path.insert(0, str(REPO))
from autograder.course import publication  # noqa: E402
from autograder.generate import binder_url, colab_url  # noqa: E402
from website import build as site_build  # noqa: E402

pytestmark = [pytest.mark.site, pytest.mark.slow]
OUTPUT = REPO / ".test-output" / "site"
ALL = assignments()
SECRET_BLOCKS = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)


@pytest.fixture(scope="module")
def site() -> Path:
    return site_build.build(jobs=2)


def _page(site: Path, name: str) -> str:
    return (site / "notebooks" / name / f"{name}.html").read_text()


def _built(name: str) -> nbformat.NotebookNode:
    """The page's notebook as the build wrote it (student cells, executed demo outputs)."""
    return nbformat.read(REPO / ".site" / "src" / "notebooks" / name / f"{name}.ipynb", as_version=4)


def _figures_in(name: str) -> int:
    return sum("image/png" in o.get("data", {}) for c in _built(name).cells
               if c.cell_type == "code" for o in c.outputs)


def _text(page: str) -> str:
    """What a reader sees: tags dropped, entities decoded, whitespace collapsed."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())


def test_home_page_lists_every_notebook(site):
    home = (site / "index.html").read_text()
    for name in ALL:
        assert f"notebooks/{name}/{name}.html" in home, f"{name} missing from the home page"
    text = _text(home)
    for words in ("Who it is for", "How to start", "Syllabus", "Binder", "Colab", "Instructors"):
        assert words in text


@pytest.mark.parametrize("name", ALL)
def test_each_page_has_launch_buttons_download_and_figures(site, name):
    page = _page(site, name)
    pub = publication()
    path = f"notebooks/{name}/{name}.ipynb"
    assert f'href="{html.escape(colab_url(pub, path))}"' in page, "Colab button"
    assert f'href="{html.escape(binder_url(pub, path))}"' in page, "Binder button"
    assert f'href="../../downloads/{name}.ipynb"' in page and (site / "downloads" / f"{name}.ipynb").exists()
    built = _built(name)
    # The site's own images (the badges are external <img>s and do not count).
    assert len(re.findall(r'<img[^>]*src="(?!https?:)', page)) >= _figures_in(name)
    # No result computed by a solution: no "Check yourself" table, no output of a cell that
    # uses what an answer cell defines.
    assert not re.search(r"\byours\s+truth\b", _text(page)), "a reveal table with the solution's answers"
    executed_demos = sum(bool(c.outputs) for c in built.cells if c.cell_type == "code")
    assert executed_demos > 0, "the demos were executed: their outputs are on the page"
    if "_explorer(" in "".join(c.source for c in built.cells if c.cell_type == "code"):
        assert "tio-launch-note" in page and "TIO-LAUNCH-URL" not in page


def test_every_internal_link_resolves(site):
    broken = []
    # Pages, not the theme's template fragments that Sphinx copies into _static/.
    for page in (p for p in site.rglob("*.html") if p.relative_to(site).parts[0] != "_static"):
        for href in re.findall(r'href="([^"]+)"', page.read_text()):
            href = html.unescape(href)
            if urlparse(href).scheme or href.startswith(("#", "mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(href.split("#")[0].split("?")[0])).resolve()
            if href.split("#")[0] and not target.exists():
                broken.append(f"{page.relative_to(site)} -> {href}")
    assert not broken, "broken links:\n" + "\n".join(broken[:30])


def test_no_solution_or_hidden_test_anywhere(site):
    pages = {p: _text(p.read_text()) for p in site.rglob("*.html")}
    sources = {p: p.read_text() for p in site.rglob("*") if p.suffix in {".ipynb", ".txt", ".js", ".md"}}
    leaks = []
    # What learners see anyway: every student notebook, whitespace collapsed (pages collapse it too).
    public = " ".join(" ".join(c.source.split()) for n in ALL for c in read(release_path(n)).cells)
    for name in ALL:
        for cell in read(solution_path(name)).cells:
            for _, block in SECRET_BLOCKS.findall(cell.source):
                for line in block.splitlines():
                    line = line.strip()
                    if len(line) < 16 or line.startswith("#") or " ".join(line.split()) in public:
                        continue  # too short to be telling, a comment, or shown to learners anyway
                    squashed = " ".join(line.split())
                    where = [str(p.relative_to(site)) for p, t in {**pages, **sources}.items()
                             if squashed in t or line in t]
                    if where:
                        leaks.append(f"{name}: {line!r} in {where[:3]}")
    for p, t in {**pages, **sources}.items():
        for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            if marker in t:
                leaks.append(f"{p.relative_to(site)} holds {marker!r}")
    assert not leaks, "solution or hidden-test text on the site:\n" + "\n".join(leaks[:30])


@pytest.fixture(scope="module")
def served(site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.mark.browser
def test_a_real_browser_opens_every_page(served):
    from test_browser import CHROMIUM, CHROMIUM_ARGS, _requirements

    _requirements()
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(parents=True, exist_ok=True)
    urls = [("index", served + "index.html")] + [
        (n, urljoin(served, f"notebooks/{n}/{n}.html")) for n in ALL]
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for name, url in urls:
            response = page.goto(url, wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"{name}: HTTP {response and response.status}")
                continue
            page.screenshot(path=str(OUTPUT / f"{name}.png"))
            if name == "index":
                links = page.locator("a[href*='notebooks/']").count()
                if links < len(ALL):
                    problems.append(f"home page links to {links} notebook pages, not {len(ALL)}")
                continue
            # The site's own images (figures): the badge images come from the badge services,
            # which this machine cannot reach (no network in tests), so they are not counted.
            broken = page.evaluate("""() => Array.from(document.images)
                .filter(i => i.src.startsWith(location.origin))
                .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))""")
            figures = page.evaluate("""() => Array.from(document.images)
                .filter(i => i.src.startsWith(location.origin) || i.src.startsWith('data:'))
                .filter(i => i.complete && i.naturalWidth > 0).length""")
            if broken:
                problems.append(f"{name}: images that did not load: {broken[:3]}")
            if figures < min(1, _figures_in(name)):
                problems.append(f"{name}: no figure shown")
            if page.locator("a[href^='https://colab.research.google.com/github/']").count() < 1 \
                    or page.locator("a[href^='https://mybinder.org/v2/gh/']").count() < 1:
                problems.append(f"{name}: no launch buttons")
            title = page.title()
            if name[:2] not in title:
                problems.append(f"{name}: page title {title!r}")
        browser.close()
    assert not problems, "\n".join(problems)
