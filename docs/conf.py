"""Sphinx configuration: the API reference (numpydoc docstrings) and the guides (Markdown)."""

import bigdr
from bigdr.registry import METHODS

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
# The estimators' Parameters sections, which the command line's options and help are built from:
# every parameter documented and every documented one real (PR01, PR02), each with a type and a
# description (PR04, PR07). Other objects are not held to it yet.
_ESTIMATORS = "|".join(m.target.split(":")[1] for m in METHODS.values())
numpydoc_validation_checks = {"PR01", "PR02", "PR04", "PR07"}
numpydoc_validation_exclude = {rf"^(?!bigdr\.({_ESTIMATORS})$)"}
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]
html_theme = "alabaster"
