"""Sphinx configuration of the sspgm site (``sphinx-build -W docs docs/_build/html``).

The pages are reStructuredText and MyST Markdown (``docs/*.md``); the CLI
reference is rendered from the parser (``_ext/cli_reference.py``); the
gallery (``docs/gallery``) runs during the build and draws its figures.
"""

import os
import sys

import sspgm

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))

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
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "cli_reference",
    "summaries",
]

smartquotes_action = "qe"  # quotes and ellipses; "--option" keeps its two hyphens

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
suppress_warnings = ["toc.not_included"]
"""A page of docs/ that no section of the index lists yet is still built (reachable by its links
and the search) rather than failing the build; index.rst places every page in a section."""
exclude_patterns = ["_build", "_ext", "examples", "gallery", "validation", "benchmarks"]

autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False
autodoc_default_options = {"member-order": "bysource"}

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "image_scrapers": ("matplotlib",),
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "reset_modules_order": "both",
}

html_theme = "alabaster"
html_title = f"sspgm {release}"
html_theme_options = {
    "description": "Stochastic shortest paths from a generative model, with certificates",
    "fixed_sidebar": True,
    "page_width": "1240px",
    "sidebar_width": "240px",
    "body_max_width": "960px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
