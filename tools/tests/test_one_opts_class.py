"""Every scheduler declares its run options once, as one ``StructuredOpts`` class.

The class is the scheduler's ``opts_class``: ``run_opts()`` (so ``torchx runopts``, the
docs tables and ``.torchxconfig``), submitting and ``list`` all read it. A scheduler
passes here when ``run_opts()`` is exactly its class's options (no ``_run_opts`` of
its own, no workspace option declared elsewhere), so no option is declared twice.

Every installed scheduler is held to it (issue 32 moved the last ones): a new one
declares its options this way from the start.
"""

from __future__ import annotations

from typing import Any

import pytest


def _factories() -> dict[str, Any]:
    from torchx.schedulers import get_scheduler_factories

    return dict(get_scheduler_factories())


def test_the_schedulers_of_this_environment_are_found() -> None:
    # the built-in ones at least: the test below is never run over no scheduler at all
    assert {"local", "local_cwd"} <= set(_factories())


@pytest.mark.parametrize("scheduler", sorted(_factories()))
def test_run_options_come_from_one_structured_opts_class(scheduler: str) -> None:
    from torchx.schedulers.contract.api import Scheduler
    from torchx.specs.structured_opts import StructuredOpts

    sched = _factories()[scheduler](session_name="opts")
    try:
        declared = type(sched).opts_class
        assert declared is not None and issubclass(declared, StructuredOpts), (
            f"{scheduler}: set opts_class to the StructuredOpts class of its run options"
        )
        assert type(sched)._run_opts is Scheduler._run_opts, (
            f"{scheduler} overrides _run_opts: declare every option in {declared.__name__}"
        )
        opts, from_class = sched.run_opts(), declared.as_runopts()
        assert [n for n, _ in opts] == [n for n, _ in from_class], (
            f"{scheduler}: run_opts() has options its {declared.__name__} does not declare"
        )
        assert opts == from_class
    finally:
        sched.close()
