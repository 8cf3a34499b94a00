"""A real browser: JupyterLab from this environment, driven in headless Chromium.

Starts ``python -m jupyterlab`` (this interpreter's environment) on a free localhost port
with a token, in a scratch copy of ``notebooks/``, and drives Debian's Chromium
(``/usr/bin/chromium``, or ``$TIO_CHROMIUM``) with Playwright (never ``playwright install``):

* a scratch notebook shows ``tc.viz.broadcast_explorer()``: the widget renders (controls,
  summary, a drawn PNG), and typing a new shape into one of its text boxes, then picking
  another dtype, redraws it;
* keyboard only: Tab reaches the graph explorer's slider, an arrow key moves it, and the
  figure's text description (its ``alt`` and the "Text description" under it) changes;
  the layout explorer's and the broadcast explorer's menus are opened with Space or Alt+Down,
  changed with the arrows and picked with Enter, and their descriptions follow;
* the student notebook 01 is run through JupyterLab's own *Run* menu; every code cell
  runs, and the only errors are the unsolved exercises' (``NotImplementedError`` from the
  stubs, ``AssertionError`` from a prediction left at ``None``); nbgrader's Validate
  button is there.

Screenshots go to ``.test-output/browser/`` (a CI artifact; git-ignored). Skipped, with
the reason, where Playwright or Chromium is missing (``.ci/run`` installs Chromium).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from coursefiles import NOTEBOOKS, REPO, exercises, nbgrader_meta

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("TIO_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
OUTPUT = REPO / ".test-output" / "browser"
TOKEN = "tio-browser-test"
FIRST = "01-why-tensors"
# Errors an unsolved student notebook is expected to show, in exercise cells only.
UNSOLVED_ERRORS = {"NotImplementedError", "AssertionError"}

WIDGET_NOTEBOOK = [
    "import tensorcourse as tc\nimport tensorcourse.viz\n\n"
    "explorer = tc.viz.broadcast_explorer('3, 1', '4')\nexplorer",
    "print(explorer.state)",
    # The keyboard test's explorers (test_explorers_are_driven_with_the_keyboard_alone).
    "import torch\nw = torch.ones(3, requires_grad=True)\nb = torch.zeros(3, requires_grad=True)\n"
    "graph = tc.viz.graph_explorer((w * 2 + b).sum(), {'w': w, 'b': b})\ngraph",
    "layout = tc.viz.layout_explorer()\nlayout",
]


def _requirements() -> None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("Playwright is not installed (requirements.txt pins it: `python3 tio.py test` "
                    "installs it).")
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"Chromium not found at {CHROMIUM}: install Debian's package "
                    "(`apt-get install chromium`; .ci/run does) or set TIO_CHROMIUM.")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_settings(folder: Path) -> None:
    """JupyterLab settings for a quiet, deterministic session."""
    settings = {
        # No "would you like news?" toast over the notebook, no update checks (no network).
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                         "checkForUpdates": False},
        # Every cell in the DOM, so the test sees all of them.
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    }
    for name, values in settings.items():
        path = folder / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(base URL, root folder) of a JupyterLab started from this environment."""
    _requirements()
    root = tmp_path_factory.mktemp("lab-root")
    home = tmp_path_factory.mktemp("jupyter-home")
    shutil.copytree(NOTEBOOKS / FIRST, root / "notebooks" / FIRST)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in WIDGET_NOTEBOOK]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nbformat.write(nb, root / "widget-check.ipynb")
    _write_settings(home / "lab-settings")
    port = _free_port()
    env = {**os.environ, "TENSORCOURSE_DEVICE": "cpu",
           "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    env.pop("MPLBACKEND", None)  # the kernel's inline backend draws the widget's figures
    log_path = home / "jupyterlab.log"
    log = open(log_path, "w")  # closed at teardown
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--ServerApp.open_browser=False",
         "--ServerApp.allow_root=True", f"--ServerApp.token={TOKEN}", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={root}"],
        env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                request = urllib.request.Request(f"{base}/api/status",
                                                 headers={"Authorization": f"token {TOKEN}"})
                with urllib.request.urlopen(request, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield base, root
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def page(lab):
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        # launch() gives every run a fresh temporary profile (user-data-dir).
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            pg.set_default_timeout(60_000)
            yield pg
        finally:
            browser.close()


# ---- driving JupyterLab ---------------------------------------------------------------------

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def _open(page, base: str, path: str) -> None:
    page.goto(f"{base}/lab/tree/{path}?token={TOKEN}&reset")
    page.wait_for_selector(f"{PANEL} .jp-Cell")
    page.wait_for_selector(f"{PANEL} .jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=90_000)
    # The kernel is connected once the status bar says so ("Python 3 (ipykernel) | Idle").
    page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle$")).wait_for(
        timeout=90_000)


def _menu(page, top: str, item: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{re.escape(top)}$")).click()
    page.locator(".lm-Menu-item", has_text=re.compile(f"^{re.escape(item)}")).first.click()


_PROMPTS = f"""() => [...document.querySelectorAll('{PANEL} .jp-CodeCell .jp-InputPrompt')]
    .map(e => e.textContent.trim())"""


def _wait_for_run(page, first_code_cell: int, timeout_ms: int = 120_000) -> None:
    """Until the run that starts at code cell ``first_code_cell`` has finished (or stopped):
    nothing queued or running, and that cell either ran or is back to ``[ ]:``. The kernel
    aborts requests that reach it while it is still handling an earlier cell's error (seen in
    CI on a loaded machine: the run queued, then every prompt went back to ``[ ]:``); the
    caller then starts the run again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            f"""(first) => {{
                const prompts = ({_PROMPTS})();
                return prompts.length > first && /^\\[(\\d+| )\\]:$/.test(prompts[first])
                    && !prompts.some(t => t === '[*]:');
            }}""", arg=first_code_cell, timeout=timeout_ms)
    except PlaywrightTimeout:
        shot = OUTPUT / "timeout.png"
        page.screenshot(path=str(shot))
        pytest.fail(f"cells did not finish running; prompts {page.evaluate(_PROMPTS)}; "
                    f"screenshot {shot.relative_to(REPO)}")


def _started(page, code_cell: int, timeout_s: float = 20) -> bool:
    """Whether the code cell got queued or ran (its prompt left ``[ ]:``) within the time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        prompts = page.evaluate(_PROMPTS)
        if len(prompts) > code_cell and prompts[code_cell] not in ("[ ]:", ""):
            return True
        time.sleep(0.25)
    return False


def _start(page, code_cell: int, item: str) -> None:
    """Choose ``item`` from the Run menu until code cell ``code_cell`` is queued or running.

    A click can run nothing: while the kernel is still connecting, or (seen once in CI, on a
    loaded machine) when the menu opens under a click that selected the cell too late. Each
    try first selects the cell again; a run that did start is never started twice.
    """
    for _attempt in range(3):
        if code_cell:
            page.locator(f"{PANEL} .jp-CodeCell").nth(code_cell).locator(
                ".jp-InputPrompt").click()
        _menu(page, "Run", item)
        if _started(page, code_cell):
            return
    pytest.fail(f"'{item}' at code cell {code_cell} ran nothing in 3 tries; prompts "
                f"{page.evaluate(_PROMPTS)}")


def _run_everything(page) -> int:
    """Run All Cells, then resume below each cell a kernel error stopped; return the rounds."""
    _start(page, 0, "Run All Cells")
    _wait_for_run(page, 0)
    rounds = 1
    while True:
        prompts = page.evaluate(_PROMPTS)
        todo = [i for i, text in enumerate(prompts) if not re.match(r"^\[\d+\]:$", text)]
        if not todo:
            return rounds
        assert rounds < 30, f"cells never ran: {todo}"
        # An error stops the queue (the kernel aborts what follows): select the first cell
        # that did not run and carry on from there, as a learner would (again, when the
        # kernel aborted the run itself: _wait_for_run).
        _start(page, todo[0], "Run Selected Cell and All Below")
        _wait_for_run(page, todo[0])
        rounds += 1


def _save_and_read(page, path: Path) -> nbformat.NotebookNode:
    """Save from the browser and read what JupyterLab wrote: the outputs it rendered."""
    before = path.stat().st_mtime_ns
    _menu(page, "File", "Save Notebook")
    deadline = time.monotonic() + 30
    while path.stat().st_mtime_ns == before and time.monotonic() < deadline:
        time.sleep(0.2)
    # The save may still be writing (the file is truncated, then written): read it once whole.
    while True:
        try:
            return nbformat.read(path, as_version=4)
        except nbformat.reader.NotJSONError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# ---- the tests ------------------------------------------------------------------------------

def test_broadcast_explorer_renders_and_redraws_when_a_control_changes(lab, page):
    base, root = lab
    started = time.monotonic()
    _open(page, base, "widget-check.ipynb")
    _run_everything(page)
    explorer = page.locator(f"{PANEL} .jp-OutputArea-output .widget-vbox").first
    explorer.wait_for()
    image = explorer.locator(".widget-output img").first
    image.wait_for()
    assert image.evaluate("img => img.complete && img.naturalWidth") > 200, "figure not drawn"
    before_src = image.get_attribute("src")
    assert before_src.startswith("data:image/png")
    summary = explorer.locator(".widget-html-content").first
    assert "result shape (3, 4)" in summary.inner_text()
    page.screenshot(path=str(OUTPUT / "broadcast-explorer-before.png"))

    # Type a new shape for b, as a learner would: the box commits on Enter.
    shape_b = explorer.locator(".widget-text input").nth(1)
    shape_b.fill("2, 1, 4")
    shape_b.press("Enter")
    page.wait_for_function("(old) => { const i = document.querySelector("
                           f"'{PANEL} .widget-output img'); "
                           "return i && i.complete && i.getAttribute('src') !== old; }",
                           arg=before_src)
    assert "result shape (2, 3, 4)" in summary.inner_text()
    after_src = image.get_attribute("src")
    assert after_src != before_src

    # Another dtype from the menu: the bytes change, and so does the figure's title.
    explorer.locator(".widget-dropdown select").select_option("float64")
    page.wait_for_function("(old) => { const i = document.querySelector("
                           f"'{PANEL} .widget-output img'); "
                           "return i && i.complete && i.getAttribute('src') !== old; }",
                           arg=after_src)
    assert "192 B (torch.float64)" in summary.inner_text()
    shot = OUTPUT / "broadcast-explorer.png"
    page.screenshot(path=str(shot))
    print(f"\nbrowser test: widget screenshots in {OUTPUT.relative_to(REPO)}/ "
          f"({time.monotonic() - started:.1f} s)")


def test_student_notebook_01_runs_in_jupyterlab(lab, page):
    base, root = lab
    started = time.monotonic()
    rel = f"notebooks/{FIRST}/{FIRST}.ipynb"
    _open(page, base, rel)
    page.screenshot(path=str(OUTPUT / f"{FIRST}-top.png"))  # the badges and the Colab cell
    toolbar = page.locator(f"{PANEL} .jp-Toolbar").first
    assert toolbar.get_by_text("Validate", exact=True).count() == 1, \
        "nbgrader's Validate button is missing from the notebook toolbar"
    rounds = _run_everything(page)
    nb = _save_and_read(page, root / rel)
    shot = OUTPUT / f"{FIRST}.png"
    page.screenshot(path=str(shot))

    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    assert all(c.get("execution_count") for _, c in code), "some code cells never ran"
    unexpected, errored = [], set()
    for i, cell in code:
        meta = nbgrader_meta(cell)
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                errored.add(i)
                in_exercise = bool(meta.get("solution") or meta.get("grade"))
                # A stub raises NotImplementedError; a test cell may also fail its assert
                # (a prediction left at None).
                expected = in_exercise and out.ename in UNSOLVED_ERRORS and \
                    (out.ename == "NotImplementedError" or bool(meta.get("grade")))
                if not expected:
                    unexpected.append(f"cell {i} ({meta.get('grade_id', 'not an exercise')}): "
                                      f"{out.ename}: {out.evalue}")
            elif out.output_type == "stream" and out.name == "stderr":
                unexpected.append(f"cell {i}: stderr: {out.text[:300]}")
    assert not unexpected, "unexpected errors in the browser:\n" + "\n".join(unexpected)
    silent = [nbgrader_meta(nb.cells[t])["grade_id"] for s, t in exercises(nb)
              if not {s, t} & errored]
    assert exercises(nb) and not silent, f"unsolved exercises that raised nothing: {silent}"
    print(f"\nbrowser test: {len(code)} code cells ran in {rounds} rounds; screenshot "
          f"{shot.relative_to(REPO)} ({time.monotonic() - started:.1f} s)")


_DESCRIPTION = """(box) => { const d = box.querySelector('.widget-output details.tio-figure-text');
    const i = box.querySelector('.widget-output img');
    return d && i ? i.getAttribute('alt') + ' || ' + d.textContent : null; }"""


def _wait_changed(page, box, before: str) -> str:
    """Until the explorer's figure description differs from ``before``; the new one."""
    page.wait_for_function(f"([box, old]) => {{ const now = ({_DESCRIPTION})(box); "
                           "return now !== null && now !== old; }",
                           arg=[box.element_handle(), before], timeout=30_000)
    return box.evaluate(_DESCRIPTION)


def test_explorers_are_driven_with_the_keyboard_alone(lab, page):
    """Tab to a control, an arrow key changes it, the figure and its description redraw."""
    base, root = lab
    _open(page, base, "widget-check.ipynb")
    _run_everything(page)
    boxes = page.locator(f"{PANEL} .jp-OutputArea-output > .widget-vbox")
    graph = boxes.nth(1)
    graph.locator(".widget-output img").wait_for(timeout=30_000)
    before = graph.evaluate(_DESCRIPTION)
    assert before.startswith("Step 0 of 5: SumBackward0 (makes result) runs now.")

    # Keyboard only from here: the "back" button has the focus (as after Tab from the cell
    # above), Tab moves on to the slider, the right arrow moves the slider one step.
    graph.get_by_role("button", name="◀ back").focus()
    page.keyboard.press("Tab")
    focused = page.evaluate("() => [document.activeElement.getAttribute('role'), "
                            "document.activeElement.getAttribute('aria-valuenow')]")
    assert focused[0] == "slider" and float(focused[1]) == 0, f"Tab reached {focused}"
    page.keyboard.press("ArrowRight")
    after = _wait_changed(page, graph, before)
    assert after.startswith("Step 1 of 5: AddBackward0 runs now; 1 done before it.")
    assert "[running now] AddBackward0" in after and "[done] SumBackward0" in after
    assert "Step 1." in graph.locator(".widget-html-content").first.inner_text()
    page.keyboard.press("Tab")  # the slider's readout, then the "next" button
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "next ▶"
    page.keyboard.press("Enter")
    assert _wait_changed(page, graph, after).startswith("Step 2 of 5")
    page.screenshot(path=str(OUTPUT / "keyboard-graph-explorer.png"))

    # The layout explorer's operation menu: Space opens its list, Down moves, Enter picks.
    # (On a closed menu, Up and Down are JupyterLab's "previous/next cell" keys in command
    # mode: the list is opened first, with Space or Alt+Down.)
    layout = boxes.nth(2)
    layout.locator(".widget-output img").wait_for()
    before = layout.evaluate(_DESCRIPTION)
    assert before.startswith("t.transpose(0, 1): Layout of a tensor of shape (6, 4)")
    layout.locator(".widget-dropdown select").first.focus()
    for key in (" ", "ArrowDown", "Enter"):
        page.keyboard.press(key)
    after = _wait_changed(page, layout, before)
    assert not after.startswith("t.transpose(0, 1)")

    # The broadcast explorer's dtype menu: the bytes in the description follow.
    explorer = boxes.nth(0)
    before = explorer.evaluate(_DESCRIPTION)
    explorer.locator(".widget-dropdown select").focus()
    for key in ("Alt+ArrowDown", "ArrowDown", "Enter"):  # float32 -> float64
        page.keyboard.press(key)
    after = _wait_changed(page, explorer, before)
    assert "(float64)" in after and "(float32)" in before
    page.screenshot(path=str(OUTPUT / "keyboard-explorers.png"))
