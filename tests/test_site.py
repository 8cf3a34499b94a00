"""The course website (`python3 tio.py site`): it builds, and a real browser finds what it promises.

The build itself fails on any Sphinx warning.
Then, on the built HTML:

* every notebook has a page, with its figures, Binder and Colab buttons pointing where the
  notebooks' own badges point (one setting, ``[tool.tensorcourse]``), and a download link;
* every internal link resolves to a file of the site;
* no solution code, no hidden test and no nbgrader marker appears anywhere (checked line by
  line against ``solutions/``);
* headless Chromium (Debian's, through Playwright) opens the home page and every notebook
  page, and the figures have loaded; screenshots go to ``.test-output/site/``;
* accessibility: every course figure has a specific ``alt`` (its summary, never a file name)
  and its full text description under it; axe-core (``tests/a11y.py``) finds no serious or
  critical violation on the home page, the notebook pages with the most figures, tables, code
  blocks and figure descriptions (``axe_pages``; every page with ``TIO_A11Y_ALL_PAGES=1``, as
  the weekly workflow runs it) in light and dark modes and at a 390 px phone width, and on a
  sample of the grader's feedback page; at that width no page scrolls sideways (only code
  blocks do); screenshots ``*-dark.png``, ``*-phone.png``, ``feedback-*.png``.

Marked ``site``: `tio.py test` runs these after the rest of the suite, when the executed
notebooks the suite stored let the build skip executing them again.
"""

from __future__ import annotations

import functools
import html
import http.server
import os
import re
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import nbformat
import pytest

from coursefiles import REPO, assignments, read, release_path, solution_path

sys.path.insert(0, str(REPO))
from autograder.authoring.generate import binder_url, colab_url  # noqa: E402
from autograder.course import publication  # noqa: E402
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


# ---- accessibility (issue 22): text alternatives, axe-core, colour modes, a phone's width ----

_IMG_TAG = re.compile(r"<img\b[^>]*>")


def _attr(tag: str, name: str) -> str | None:
    m = re.search(rf'\b{name}="([^"]*)"', tag)
    return html.unescape(m.group(1)) if m else None


@pytest.mark.parametrize("name", ALL)
def test_every_figure_has_a_specific_alt_and_its_description_under_it(site, name):
    page = _page(site, name)
    own = [t for t in _IMG_TAG.findall(page) if not (_attr(t, "src") or "").startswith("http")]
    assert len(own) >= _figures_in(name)
    bad = []
    for tag in own:
        alt, src = _attr(tag, "alt") or "", _attr(tag, "src") or ""
        file = src.rsplit("/", 1)[-1]
        generic = alt.strip().lower() in {"", "image", "figure", "png", "output"}
        if generic or file in alt or re.search(r"\.(png|svg|jpe?g)\b", alt) or len(alt) < 40 \
                or not re.search(r"\d", alt) \
                or not re.search(r"shape|graph|node|Broadcast|Layout", alt):
            bad.append(f"{file[:16]}: alt={alt[:80]!r}")
    assert not bad, "figures without a specific alt:\n" + "\n".join(bad)
    # Each figure's full description follows it, collapsed.
    assert page.count('<details class="tio-figure-text">') == len(own)


def test_figure_descriptions_are_attached_by_file_hash():
    texts = {"ab" * 32: {"alt": 'Layout of "x" (2, 3)', "description_html": "<p>facts</p>"}}
    page = (f'<div><img alt="../../_images/{"ab" * 32}.png" src="../../_images/{"ab" * 32}.png" />'
            f'<img alt="../../_images/{"cd" * 32}.png" src="../../_images/{"cd" * 32}.png" /></div>')
    out = site_build.describe_figures(page, texts)
    assert 'alt="Layout of &quot;x&quot; (2, 3)"' in out and "<p>facts</p></details>" in out
    assert f'alt="../../_images/{"cd" * 32}.png"' in out  # not a course figure: left alone


def _feedback_sample() -> str:
    from autograder.outputs.feedback import render
    from autograder.pipeline.unit import TestResult
    from tensorcourse.misconceptions import catalog

    tests = [TestResult("ex1-strides", True, "", ""),
             TestResult("ex2-broadcast", False, "failed",
                         "AssertionError: expected stride (1, 3), got (3, 1); a very long message "
                         "with_a_long_identifier_that_must_wrap_on_a_phone_screen_instead_of_scrolling",
                         next(iter(catalog()))),  # the likely misconception, with its link
             TestResult("ex3-graph", False, "timeout", "the cell ran past its time limit")]
    return render("alice", "01-why-tensors", "01-why-tensors", tests,
                  {"ex1-strides": 2.0, "ex2-broadcast": 3.0, "ex3-graph": 1.0})


# axe-core in three modes on every page is most of this file's time. The pages share one
# template and differ in content, so .ci/run checks the home page and the notebook pages with
# the most of each kind of content axe and a phone's width judge differently (figures, tables,
# code blocks, figure descriptions); TIO_A11Y_ALL_PAGES=1 checks every page, as the weekly
# workflow (.github/workflows/weekly.yml) does.
A11Y_CONTENT = {"figures": r"<img\b", "tables": r"<table\b", "code blocks": r"<pre\b",
                "descriptions": r"<details\b"}


def axe_pages(site: Path) -> dict[str, str]:
    """{notebook page: why it is checked}: each with the most of one kind of content, or all."""
    if os.environ.get("TIO_A11Y_ALL_PAGES") == "1":
        return {name: "every page (TIO_A11Y_ALL_PAGES=1)" for name in ALL}
    picks: dict[str, str] = {}
    for kind, pattern in A11Y_CONTENT.items():
        most = max(ALL, key=lambda n: len(re.findall(pattern, _page(site, n))))
        picks[most] = f"{picks[most]}, {kind}" if most in picks else f"the most {kind}"
    return picks


def test_the_axe_sample_covers_each_kind_of_content(site):
    picks = axe_pages(site)
    if os.environ.get("TIO_A11Y_ALL_PAGES") == "1":
        assert list(picks) == ALL
        return
    assert 1 <= len(picks) <= len(A11Y_CONTENT)
    reasons = ", ".join(picks.values())
    for kind in A11Y_CONTENT:
        assert kind in reasons, f"no page picked for its {kind}: {picks}"
    for name, why in picks.items():
        if why.startswith("the most"):
            for kind in why.removeprefix("the most ").split(", "):
                counts = {n: len(re.findall(A11Y_CONTENT[kind], _page(site, n))) for n in ALL}
                assert counts[name] == max(counts.values()) > 0, (name, kind, counts)


@pytest.mark.browser
def test_axe_finds_no_serious_violation_light_dark_and_at_a_phone_width(served, site):
    """Home page and the sampled notebook pages (axe_pages): axe-core in light and dark modes
    and at 390 px wide. Every page: nothing scrolls sideways at 390 px."""
    from a11y import PHONE, horizontal_overflow, run_axe, set_dark
    from test_browser import CHROMIUM, CHROMIUM_ARGS, _requirements

    _requirements()
    from a11y import axe_script

    axe_script()  # skips here, saying why, when axe-core cannot be installed
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(parents=True, exist_ok=True)
    urls = [("index", served + "index.html")] + [
        (n, urljoin(served, f"notebooks/{n}/{n}.html")) for n in ALL]
    sampled = {"index", *axe_pages(site)}
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        desktop = browser.new_page(viewport={"width": 1280, "height": 900})
        phone = browser.new_page(viewport=PHONE, is_mobile=True, has_touch=True)
        for name, url in urls:
            if name in sampled:
                desktop.goto(url, wait_until="load")
                for dark in (False, True):
                    set_dark(desktop, dark)
                    problems += run_axe(desktop, f"{name}-{'dark' if dark else 'light'}")
                desktop.screenshot(path=str(OUTPUT / f"{name}-dark.png"))
            phone.goto(url, wait_until="load")
            set_dark(phone, False)
            # Every figure's description open, as a reader would: it must not widen the page.
            phone.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            if name in sampled:
                problems += run_axe(phone, f"{name}-phone")
            problems += [f"{name} at {PHONE['width']} px scrolls sideways: {line}"
                         for line in horizontal_overflow(phone)]
            phone.screenshot(path=str(OUTPUT / f"{name}-phone.png"))
        browser.close()
    assert not problems, "accessibility problems (details in .test-output/a11y/):\n" + \
        "\n".join(problems)


@pytest.mark.browser
def test_axe_finds_no_serious_violation_in_grader_feedback():
    """A sample of autograder.outputs.feedback.render's page: light and dark schemes, 390 px wide."""
    from a11y import PHONE, axe_script, horizontal_overflow, run_axe
    from test_browser import CHROMIUM, CHROMIUM_ARGS, _requirements

    _requirements()
    axe_script()
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        desktop = browser.new_page(viewport={"width": 1280, "height": 900})
        phone = browser.new_page(viewport=PHONE, is_mobile=True, has_touch=True)
        feedback = _feedback_sample()
        for scheme in ("light", "dark"):
            desktop.emulate_media(color_scheme=scheme)
            desktop.set_content(feedback)
            problems += run_axe(desktop, f"feedback-{scheme}")
            desktop.screenshot(path=str(OUTPUT / f"feedback-{scheme}.png"))
        phone.set_content(feedback)
        problems += run_axe(phone, "feedback-phone")
        problems += [f"feedback at {PHONE['width']} px scrolls sideways: {line}"
                     for line in horizontal_overflow(phone)]
        phone.screenshot(path=str(OUTPUT / "feedback-phone.png"))
        browser.close()
    assert not problems, "accessibility problems (details in .test-output/a11y/):\n" + \
        "\n".join(problems)
