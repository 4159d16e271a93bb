"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

from torchx.schedulers.testing import DocstringExamples


class TestExamples(DocstringExamples):
    package = "torchx_slurm"
    #: The modules whose docstrings show examples; each must have at least one.
    modules = [
        "torchx_slurm.array",
        "torchx_slurm.commands",
        "torchx_slurm.options",
        "torchx_slurm.parse",
        "torchx_slurm.request",
        "torchx_slurm.scheduler",
        "torchx_slurm.status",
    ]
