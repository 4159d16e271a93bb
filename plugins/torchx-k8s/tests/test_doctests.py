"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

from torchx.schedulers.testing import DocstringExamples


class TestExamples(DocstringExamples):
    package = "torchx_k8s"
    #: The modules whose docstrings show examples; each must have at least one.
    modules = [
        "torchx_k8s.labels",
        "torchx_k8s.logs",
        "torchx_k8s.names",
        "torchx_k8s.options",
        "torchx_k8s.pod",
        "torchx_k8s.podenv",
        "torchx_k8s.rbac",
        "torchx_k8s.status",
        "torchx_k8s.yamltext",
    ]
