"""The ``acme`` scheduler's run options: one class, every option declared once.

``run_opts()`` (``torchx runopts acme``), the submit (:mod:`acme_torchx.request`,
``AcmeOpts.of(cfg)``), ``list`` (``AcmeOpts.given(cfg)``: only what was given, no
defaults) and ``.torchxconfig`` all read :class:`AcmeOpts`, the scheduler's
``opts_class``. Each field is one option: its type, its default and, through
:func:`~torchx.specs.structured_opts.opt`, its help (and, where needed, its check,
aliases or secrecy).
"""

from __future__ import annotations

from dataclasses import dataclass

from torchx.schedulers.contract.api import StructuredOpts
from torchx.specs.structured_opts import opt


@dataclass(frozen=True, kw_only=True)
class AcmeOpts(StructuredOpts):
    """The run options (``torchx runopts acme``), each declared once: type, default, help."""

    queue: str = opt("default", help="the Acme Batch queue to submit to")
