"""Sphinx configuration of the sspgm API reference (``sphinx-build -W docs docs/_build``)."""

import sspgm

project = "sspgm"
author = "The sspgm developers"
copyright = "2026, the sspgm developers"
release = sspgm.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]

templates_path = ["_templates"]
exclude_patterns = ["_build"]

autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False
autodoc_default_options = {"member-order": "bysource"}

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "alabaster"
html_title = f"sspgm {release}"
