"""The ``acme`` scheduler's run options: one class, every option declared once.

``run_opts()`` (``torchx runopts acme``), the submit (:mod:`acme_torchx.request`),
``list`` and ``.torchxconfig`` all read :class:`AcmeOpts`; an option's help is the
string right below its field.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchx.schedulers.contract.api import StructuredOpts


@dataclass
class AcmeOpts(StructuredOpts):
    queue: str = "default"
    """the Acme Batch queue to submit to"""
