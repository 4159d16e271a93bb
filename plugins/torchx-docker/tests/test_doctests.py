"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

from torchx.schedulers.testing import DocstringExamples


class TestExamples(DocstringExamples):
    package = "torchx_docker"
    #: The modules whose docstrings show examples; each must have at least one.
    modules = [
        "torchx_docker.labels",
        "torchx_docker.logs",
        "torchx_docker.options",
        "torchx_docker.status",
        "torchx_docker.wire",
    ]
