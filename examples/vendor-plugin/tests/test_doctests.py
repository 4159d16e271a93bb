"""The examples in acme_torchx's docstrings run as shown, through the kit's helpers."""

from __future__ import annotations

from torchx.schedulers.testing import DocstringExamples


class TestExamples(DocstringExamples):
    package = "acme_torchx"
    #: The modules whose docstrings show examples; each must have at least one.
    modules = ["acme_torchx.batch"]
