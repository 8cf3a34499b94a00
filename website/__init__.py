"""The course website: ``website/build.py`` (``python3 tio.py site``), Sphinx config, home page."""
