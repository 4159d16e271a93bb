"""Sphinx configuration of the documentation site (``nox -s docs``; see contributing.md).

Strict by construction: the session runs ``sphinx-build -W --keep-going -n``, so any
warning (a docstring Sphinx cannot parse, a broken link, a reference to a missing
name of the project) fails the build. The pages under ``reference/`` are written from
the installed code at the start of every build (``_ext/torchx_docs.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "torchx microlibraries"
author = "the torchx microlibraries authors"
copyright = "the torchx microlibraries authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "torchx_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["README.md", "_build", "requirements.txt"]

# every reference must resolve (a project name, that is: see _ext/torchx_docs.py)
nitpicky = True

# Markdown: heading anchors for `page.md#section` links, fenced directives
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]
# "--scheduler" stays two hyphens in prose (smart quotes would make an en dash of it)
smartquotes = False
# A code block of a language no lexer knows is a warning too.
highlight_language = "none"

# autodoc: members in source order, type hints in the signature, the class docstring
# alone (its Args: section describes the constructor)
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
autoclass_content = "class"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True

html_theme = "furo"
html_title = "torchx microlibraries"
html_static_path = ["_static"]
# a page without an icon makes the browser ask for /favicon.ico: a 404 in its console
html_favicon = "_static/favicon.svg"
html_show_sourcelink = False
html_copy_source = False
