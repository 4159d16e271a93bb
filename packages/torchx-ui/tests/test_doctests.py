"""The examples in the torchx.ui modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

from torchx.schedulers.testing import DocstringExamples


class TestExamples(DocstringExamples):
    package = "torchx.ui"
    #: The modules whose docstrings show examples; each must have at least one.
    modules = [
        "torchx.ui.counts",
        "torchx.ui.poller",
        "torchx.ui.security",
    ]
