"""Every scheduler declares its run options once, as one ``StructuredOpts`` class.

The class is the scheduler's ``opts_class``: ``run_opts()`` (so ``torchx runopts``, the
docs tables and ``.torchxconfig``), submitting and ``list`` all read it. A scheduler
passes here when ``run_opts()`` is exactly its class's options (no ``_run_opts`` of
its own, no workspace option declared elsewhere), so no option is declared twice.

``NOT_YET`` lists the schedulers still declaring options by hand, each with who moves
it onto its class (issue 32). It only shrinks: a scheduler that has moved fails here
until its entry is removed, and a new scheduler cannot be added to it.
"""

from __future__ import annotations

from typing import Any

import pytest

#: scheduler -> who migrates its options onto one StructuredOpts class (issue 32)
NOT_YET: dict[str, str] = {
    "kubernetes": "opts",
    "kubernetes_mcad": "opts",
}


def _factories() -> dict[str, Any]:
    from torchx.schedulers import get_scheduler_factories

    return dict(get_scheduler_factories())


def test_the_list_names_only_installed_schedulers() -> None:
    assert sorted(set(NOT_YET) - set(_factories())) == []


@pytest.mark.parametrize("scheduler", sorted(_factories()))
def test_run_options_come_from_one_structured_opts_class(scheduler: str) -> None:
    from torchx.schedulers.contract.api import Scheduler
    from torchx.specs.structured_opts import StructuredOpts

    sched = _factories()[scheduler](session_name="opts")
    try:
        declared = type(sched).opts_class
        if scheduler in NOT_YET:
            assert declared is None, (
                f"{scheduler} declares its options as {declared.__name__}: remove it from "
                "NOT_YET in tools/tests/test_one_opts_class.py"
            )
            return
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
