"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

from torchx.schedulers.testing import DocstringExamples


class TestExamples(DocstringExamples):
    package = "torchx_lsf"
    #: The modules whose docstrings show examples; each must have at least one.
    modules = [
        "torchx_lsf.commands",
        "torchx_lsf.options",
        "torchx_lsf.parse",
        "torchx_lsf.request",
        "torchx_lsf.scheduler",
    ]
