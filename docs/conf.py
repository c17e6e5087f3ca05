"""Sphinx configuration for the omnigraph documentation.

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (``tests/test_docs.py``
runs exactly this with warnings as errors). Pages are MyST markdown; the CLI reference, the
dataset catalogue and the pretrained-model page are generated at build time by the local
extension ``docs/_ext/omnigraph_docs.py`` from the argparse parsers, ``datasets/catalogue.json``
and ``pretrained/*.md``.
"""
from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))  # document the working tree, not an older installed copy

import omnigraph

project = "omnigraph"
author = "omnigraph developers"
copyright = "2026, omnigraph developers"
release = omnigraph.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "omnigraph_docs",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/.ipynb_checkpoints"]

# MyST: $...$ maths, ::: fences, anchors for ## and ### so that [text](page.md#heading) links resolve
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# autodoc: signatures without the (long) type hints, which live in the docstrings anyway
autodoc_typehints = "none"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autoclass_content = "class"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

html_theme = "alabaster"
html_title = f"omnigraph {release}"
html_static_path: list[str] = []
# the committed benchmark folders hold CSV/JSON/PNG next to their markdown; only pages are sources
html_copy_source = False


def _skip_sklearn_request_methods(app, what, name, obj, skip, options):
    """scikit-learn's BaseEstimator adds ``set_fit_request`` / ``set_score_request`` (metadata routing) to
    every subclass; their docstrings cite sklearn's own glossary. They are sklearn's API, not ours."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_request_methods)
