"""The website's published address and its workflow follow the course's one setting.

Fast checks (no build): the README's "Read it online" link is the GitHub Pages address of
the repository in ``[tool.tensorcourse]``, and the Pages workflow builds with the course's
own command and publishes what it writes.
"""

from __future__ import annotations

from autograder.course import publication
from coursefiles import REPO


def pages_url() -> str:
    owner, name = publication().owner_name.split("/")
    url = f"https://{owner.lower()}.github.io/{name}/"
    assert publication().site == url  # what feedback pages link to (misconceptions' sections)
    return url


def test_readme_links_to_the_published_site():
    assert pages_url() in (REPO / "README.md").read_text(), \
        f"README should link to {pages_url()} (the Pages address of [tool.tensorcourse])"


def test_the_pages_workflow_builds_with_tio_and_uploads_the_html():
    workflow = (REPO / ".github" / "workflows" / "pages.yml").read_text()
    assert "python3 tio.py site" in workflow
    assert "path: .site/html" in workflow and "actions/deploy-pages" in workflow


def test_readme_says_what_the_course_does_for_accessibility_and_how_to_report_a_barrier():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Accessibility", 1)[1].split("\n## ", 1)[0]
    for words in ("WCAG 2.1 AA", ".describe()", "alt", "deuteranopia", "keyboard", "axe-core",
                  "390 px", "Found a barrier?"):
        assert words in section, words
    assert f"{publication().repository}/issues/new" in section
    # Each claim names the test that holds it.
    for test in ("tests/test_viz_colours.py", "tests/test_browser.py"):
        assert test in section and (REPO / test).exists()
