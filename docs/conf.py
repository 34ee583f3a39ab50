"""Sphinx configuration for the pyinformers docs (built by ``make docs`` with warnings as errors)."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "pyinformers"
author = "the pyinformers authors"
copyright = "2026, the pyinformers authors"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "sphinx.ext.intersphinx",
    "sphinx.ext.doctest",
]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
intersphinx_mapping = {}
html_theme = "alabaster"
exclude_patterns = ["_build"]
nitpicky = False
