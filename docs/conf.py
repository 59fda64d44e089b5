"""Sphinx configuration: the API reference (numpydoc docstrings) and the guides (Markdown)."""

import bigdr

project = "bigdr"
author = "the bigdr developers"
copyright = "2026, the bigdr developers"
release = version = bigdr.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Attributes are documented in the class docstring (numpydoc's "Attributes" section).
numpydoc_attributes_as_param_list = True
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]
html_theme = "alabaster"
