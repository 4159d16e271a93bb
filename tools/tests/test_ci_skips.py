"""tools/pytest_plugins/ci_skips.py: skips are counted; under CI=true they fail unless allowed."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TOOLS, write

TESTS = """
import pytest

def test_passes():
    pass

def test_skips_inside():
    pytest.skip("no frobnicator")

@pytest.mark.skipif(True, reason="by a marker")
def test_skipped_by_a_marker():
    pass

@pytest.mark.ci_may_skip(reason="the host's")
def test_allowed_to_skip():
    pytest.skip("no cgroup v2 here")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_to_fail():
    assert False
"""

MODULE_SKIP = """
import pytest
pytest.importorskip("a_module_nobody_installed")

def test_never_collected():
    pass
"""


def _pytest(folder: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TORCHX_STRICT_SKIPS")}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = str(TOOLS / "pytest_plugins")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "ci_skips", "-ra"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    write(tmp_path / "test_some.py", TESTS)
    write(tmp_path / "pytest.ini", "[pytest]\naddopts = --strict-markers\n")
    return tmp_path


def test_outside_ci_skips_pass_and_are_counted(suite: Path) -> None:
    proc = _pytest(suite, ci=None)
    assert proc.returncode == 0, proc.stdout
    assert "ci_skips: 3 skipped, 1 of them marked ci_may_skip; not strict" in proc.stdout
    assert "SKIPPED [1] test_some.py:" in proc.stdout  # -ra lists each
    assert "no frobnicator" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("=")  # pytest's closing line last


def test_under_ci_a_skip_fails_unless_marked(suite: Path) -> None:
    proc = _pytest(suite, ci="true")
    assert proc.returncode == 1, proc.stdout
    out = proc.stdout
    assert "FAILED test_some.py::test_skips_inside - test skipped under CI=true" in out
    assert "no frobnicator" in out
    assert "ERROR test_some.py::test_skipped_by_a_marker - test skipped under CI=true" in out
    assert "SKIPPED [1] test_some.py:" in out and "no cgroup v2 here" in out  # listed
    assert "1 xfailed" in out  # an expected failure is not a skip
    assert "ci_skips: 3 skipped, 1 of them marked ci_may_skip; strict (CI=true): 2 turned" in out


def test_under_ci_a_module_skipped_at_import_fails(tmp_path: Path) -> None:
    write(tmp_path / "test_needs_it.py", MODULE_SKIP)
    write(tmp_path / "test_other.py", "def test_runs():\n    pass\n")
    assert _pytest(tmp_path, ci=None).returncode == 0
    proc = _pytest(tmp_path, ci="true")
    assert proc.returncode != 0
    assert "ERROR test_needs_it.py - test_needs_it.py (every test in it) skipped under CI" in (
        proc.stdout
    )
    assert "a_module_nobody_installed" in proc.stdout


def test_ci_false_is_not_strict(suite: Path) -> None:
    assert _pytest(suite, ci="false").returncode == 0


def test_every_nox_pytest_run_loads_the_plugin() -> None:
    tree = ast.parse((REPO / "noxfile.py").read_text())
    runs = {
        func.name: node
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef)
        for node in ast.walk(func)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "pytest"
    }
    # one place runs pytest, and it loads the plugin: every session goes through it
    assert list(runs) == ["run_pytest"]
    args = [a.value for a in runs["run_pytest"].args if isinstance(a, ast.Constant)]
    assert args[:5] == ["pytest", "-p", "no:cacheprovider", "-p", "ci_skips"]
