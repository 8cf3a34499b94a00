"""Sphinx configuration of the course website (copied into .site/src by website/build.py)."""

project = "Tensors Inside Out"
author = "The Tensors Inside Out authors"
copyright = "2026, " + author  # noqa: A001 - Sphinx's name for it
extensions = ["myst_nb"]
# Outputs come from website/build.py (solution notebooks executed on the CPU, copied into
# the student notebooks' demo cells): MyST-NB only renders them.
nb_execution_mode = "off"
myst_enable_extensions = ["html_image", "dollarmath"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,  # each page has its own download link next to the badges
    "use_fullscreen_button": False,
}
# Notebook outputs may carry mimetypes the page does not need (widget views are replaced
# by build.py; text/plain fallbacks exist for the rest).
nb_output_stderr = "remove"
suppress_warnings = ["mystnb.unknown_mime_type"]
