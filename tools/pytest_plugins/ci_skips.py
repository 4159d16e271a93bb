"""A pytest plugin that keeps skipped tests from hiding in CI (loaded by every nox session).

A green session can hide a test that never ran: an ``importorskip`` of something the
session forgot to install, a capability missing on the CI machine. So:

* Always: one closing line counts the skips (``ci_skips: N skipped ...``); pytest's
  ``-ra`` (set by each distribution) lists each with its reason.
* Under ``CI=true`` (or ``TORCHX_STRICT_SKIPS=1``, to try it locally) a skipped test
  fails instead, saying why it skipped, and so does a test module skipped as a whole
  (``importorskip`` at import). A test may skip there only if it is marked
  ``@pytest.mark.ci_may_skip(reason="...")``: a capability of the host that CI cannot
  install, said in the reason (it is counted and listed all the same).

An expected failure (``xfail``) is not a skip and is left alone. The noxfile puts this
folder on ``PYTHONPATH`` and passes ``-p ci_skips``; a distribution whose tests use the
marker also registers it in its pytest settings, so that its tests run without the plugin.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

MARKER = "ci_may_skip"
_COUNTS = pytest.StashKey[dict[str, int]]()


def strict() -> bool:
    """Whether a skip fails: in CI (``CI=true``), or when asked (``TORCHX_STRICT_SKIPS=1``)."""
    return os.environ.get("CI") == "true" or os.environ.get("TORCHX_STRICT_SKIPS") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(reason): this test may skip under CI=true (a host capability CI cannot "
        "install); any other skip fails there",
    )
    config.stash[_COUNTS] = {"skipped": 0, "allowed": 0, "failed": 0}


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _fail(report: pytest.TestReport | pytest.CollectReport, what: str) -> None:
    report.outcome = "failed"
    report.longrepr = (
        f"{what} skipped under CI=true, where it must run: {_reason(report)}\n"
        f"(install what it needs in its nox session; or, for a host capability CI cannot "
        f"install, mark it @pytest.mark.{MARKER}(reason=...))"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    counts = item.config.stash[_COUNTS]
    counts["skipped"] += 1
    if item.get_closest_marker(MARKER) is not None:
        counts["allowed"] += 1
    elif strict():
        counts["failed"] += 1
        _fail(report, "test")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if not report.skipped:
        return
    counts = collector.config.stash[_COUNTS]
    counts["skipped"] += 1
    if strict():
        counts["failed"] += 1
        _fail(report, f"{collector.nodeid or 'the test folder'} (every test in it)")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    counts = config.stash[_COUNTS]
    line = f"ci_skips: {counts['skipped']} skipped, {counts['allowed']} of them marked {MARKER}"
    if strict():
        line += f"; strict (CI=true): {counts['failed']} turned into failures"
    else:
        line += "; not strict (CI is not 'true'): skips pass"
    terminalreporter.write_line(line)
