"""Accessibility checks in a real browser: axe-core, colour modes, a phone's width.

axe-core (Deque's rules engine, the one browser devtools use) comes from npm, installed
once into ``.test-output/axe/`` (``npm install --prefix .test-output/axe axe-core@AXE``;
``.ci/run`` does it first) and reused after. Without npm and without that folder the
checks skip and say why. Only *serious* and *critical* violations fail a test; every
violation found is written to ``.test-output/a11y/`` with the page it was on.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from coursefiles import REPO

AXE = "4.10.3"  # the axe-core version the checks run (pinned: new rules come with new versions)
AXE_DIR = REPO / ".test-output" / "axe"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
REPORTS = REPO / ".test-output" / "a11y"
PHONE = {"width": 390, "height": 844}
FAILING = ("serious", "critical")


def axe_script() -> Path:
    """axe.min.js, installed with npm the first time; skips when that cannot be done."""
    installed = AXE_DIR / "node_modules" / "axe-core" / "package.json"
    if AXE_JS.exists() and json.loads(installed.read_text()).get("version") == AXE:
        return AXE_JS
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"axe-core {AXE} is not in {AXE_DIR.relative_to(REPO)} and npm is missing: "
                    "install Node.js's npm (Debian: apt-get install npm) or run "
                    f"`npm install --prefix .test-output/axe axe-core@{AXE}` elsewhere and copy it")
    AXE_DIR.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--prefix", str(AXE_DIR), "--no-audit", "--no-fund",
                           "--no-save", f"axe-core@{AXE}"], capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0 or not AXE_JS.exists():
        pytest.skip(f"`npm install axe-core@{AXE}` failed (no network to the npm registry?): "
                    f"{done.stderr.strip()[-500:]}")
    return AXE_JS


def run_axe(page: Any, name: str) -> list[str]:
    """Run axe on the page as it is now; the serious and critical violations, as lines."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(axe_script()))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => ({target: n.target.join(' '),
                                                  summary: n.failureSummary}))}));
    }""")
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    return [f"{name}: {v['impact']} {v['id']} ({v['help']}): "
            + "; ".join(n["target"] for n in v["nodes"])
            for v in result if v["impact"] in FAILING]


def set_dark(page: Any, dark: bool) -> None:
    """The pydata-sphinx-theme's colour mode, as its switcher sets it."""
    mode = "dark" if dark else "light"
    page.evaluate(f"""() => {{ localStorage.setItem('mode', '{mode}');
        localStorage.setItem('theme', '{mode}');
        document.documentElement.dataset.theme = '{mode}';
        document.documentElement.dataset.mode = '{mode}'; }}""")
    # The theme animates colours: with transitions off, axe never measures a colour halfway
    # (a loaded machine once caught the search button mid-fade, at 3.49:1).
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; "
                               "animation: none !important; }")
    page.wait_for_timeout(150)


# Elements that stick out of the viewport's right edge, outside anything that scrolls on its
# own (code blocks, wide outputs, tables wrapped in a scroller): what makes the page scroll.
OVERFLOW = """() => {
    const w = document.documentElement.clientWidth;
    const scrolls = el => { for (let e = el; e && e !== document.body; e = e.parentElement) {
        const s = getComputedStyle(e);
        if (['auto', 'scroll', 'hidden'].includes(s.overflowX) && e.scrollWidth > e.clientWidth - 1
            && e !== el) return true;
        if (e.closest('pre, .highlight, .output, .cell_output, details')
            && ['auto', 'scroll'].includes(s.overflowX)) return true; }
        return false; };
    const out = [];
    if (document.documentElement.scrollWidth > w + 1) {
        for (const el of document.body.querySelectorAll('*')) {
            const r = el.getBoundingClientRect();
            if (r.width && r.right > w + 1 && getComputedStyle(el).position !== 'fixed'
                && !scrolls(el) && !el.closest('pre')) {
                out.push(el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined
                         ? '.' + String(el.className).split(' ').join('.') : '')
                         + ' right=' + Math.round(r.right));
            }
            if (out.length > 5) break;
        }
        out.unshift('page scrollWidth ' + document.documentElement.scrollWidth + ' > ' + w);
    }
    return out;
}"""


def horizontal_overflow(page: Any) -> list[str]:
    """Why the page scrolls sideways (empty when it does not)."""
    return page.evaluate(OVERFLOW)
