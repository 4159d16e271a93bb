"""The examples in the torchx.cli modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

from torchx.schedulers.testing import DocstringExamples


class TestExamples(DocstringExamples):
    package = "torchx.cli"
    #: The modules whose docstrings show examples; each must have at least one.
    modules = [
        "torchx.cli.log_attempts",
        "torchx.cli.output",
    ]
