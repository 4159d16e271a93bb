"""CI runs the sessions it claims, and fails when one of them did not run or pass.

tools/ci_sessions.py names the sessions (from noxfile.py, checked against what nox
sees) and checks nox's ``--report`` afterwards; ``.ci/run`` is run here for real against
a small noxfile whose sessions need no virtualenv, to show it fails when an expected
session is skipped, missing or defined without being listed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import ci_sessions
import pytest
from conftest import REPO, write


def test_ci_runs_every_integration_session_of_the_noxfile() -> None:
    # what .ci/run will run is what noxfile.py defines: they cannot drift apart
    names = ci_sessions.integration_sessions()
    assert names == ci_sessions.listed_integration()
    assert "integration_slurm" in names


def test_the_default_sessions_are_the_readmes_test_command() -> None:
    names = ci_sessions.default_sessions()
    assert {"lint", "repo", "e2e", "tests-torchx-runner"} <= set(names)
    assert not any(n.startswith("integration") for n in names)


def _noxfile(root: Path, body: str) -> Path:
    return write(
        root / "noxfile.py",
        "import nox\n\nnox.options.sessions = ['unit']\n\n"
        "@nox.session(venv_backend='none')\ndef unit(session):\n    session.log('ran')\n\n"
        + textwrap.dedent(body),
    )


def test_an_integration_session_missing_from_the_list_fails_loudly(tmp_path: Path) -> None:
    _noxfile(
        tmp_path,
        """
        INTEGRATION_SESSIONS = ("integration_a",)

        @nox.session(venv_backend="none")
        def integration_a(session):
            pass

        @nox.session(name="integration_b", venv_backend="none")
        def _b(session):
            pass
        """,
    )
    with pytest.raises(ci_sessions.CiSessionError, match="defines integration_b but"):
        ci_sessions.integration_sessions(tmp_path)


@pytest.mark.parametrize(
    ("listing", "message"),
    [
        ('INTEGRATION_SESSIONS = ("integration_a", "integration_gone")', "lists integration_gone"),
        ("INTEGRATION_SESSIONS = ()", "is empty"),
        ("INTEGRATION_SESSIONS = tuple(['integration_a'])", "must be a literal tuple"),
        ("INTEGRATION_SESSIONS = 'integration_a'", "must be a tuple of strings"),
        ("OTHER = ()", "no INTEGRATION_SESSIONS"),
    ],
)
def test_a_bad_list_fails_loudly(tmp_path: Path, listing: str, message: str) -> None:
    _noxfile(
        tmp_path,
        listing + '\n\n@nox.session(venv_backend="none")\ndef integration_a(session):\n    pass\n',
    )
    with pytest.raises(ci_sessions.CiSessionError, match=message):
        ci_sessions.integration_sessions(tmp_path)


def test_a_noxfile_nox_cannot_load_fails_loudly(tmp_path: Path) -> None:
    write(
        tmp_path / "noxfile.py", "INTEGRATION_SESSIONS = ('integration_a',)\nraise SystemExit(4)\n"
    )
    with pytest.raises(ci_sessions.CiSessionError, match="nox --list --json -k integration exited"):
        ci_sessions.integration_sessions(tmp_path)


def _report(path: Path, **results: str) -> Path:
    sessions = ",".join(
        f'{{"name": "{n}", "result": "{r}", "reason": null, "signatures": [], "args": {{}}}}'
        for n, r in results.items()
    )
    path.write_text(f'{{"result": 1, "sessions": [{sessions}]}}')
    return path


def test_the_report_check_wants_every_expected_session_passed(tmp_path: Path) -> None:
    report = _report(tmp_path / "r.json", a="success", b="skipped", c="failed")
    assert ci_sessions.check_report(report, ["a"]) == []
    assert ci_sessions.check_report(report, ["a", "b", "c", "d"]) == [
        "session b did not pass: skipped",
        "session c did not pass: failed",
        "session d did not run (not in r.json)",
    ]
    assert ci_sessions.check_report(report, []) == [
        "no session was expected: nothing would be checked"
    ]
    assert "no nox report" in ci_sessions.check_report(tmp_path / "none.json", ["a"])[0]
    (tmp_path / "bad.json").write_text("[]")
    assert "not a nox report" in ci_sessions.check_report(tmp_path / "bad.json", ["a"])[0]


def test_the_tools_ci_installs_are_pinned_exactly() -> None:
    pins = {}
    for line in (REPO / ".ci" / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and re.fullmatch(r"[0-9][0-9.]*", version), line
            pins[name] = version
    assert {"nox", "uv"} <= set(pins)
    # the workspace's dev group asks for the same nox
    assert f'"nox=={pins["nox"]}"' in (REPO / "pyproject.toml").read_text()


# -- .ci/run itself, against a noxfile of sessions that need no virtualenv ----------------


def _ci_repo(tmp_path: Path, integration: str) -> Path:
    root = tmp_path / "repo"
    for rel in (".ci/run", ".ci/requirements.txt", "tools/ci_sessions.py"):
        write(root / rel, (REPO / rel).read_text())
    packaging = """
        @nox.session(venv_backend="none")
        def build(session):
            session.log("built")

        @nox.session(venv_backend="none")
        def install_matrix(session):
            session.log("installed")

        @nox.session(venv_backend="none")
        def stress(session):
            session.log("stressed")

        @nox.session(venv_backend="none")
        def docs(session):
            session.log("docs built")

        @nox.session(venv_backend="none")
        def docs_browser(session):
            import os
            session.log("browser on " + os.environ.get("TORCHX_DOCS_SITE", "no site"))

        @nox.session(venv_backend="none")
        def ui_browser(session):
            session.log("ui in the browser")
        """
    _noxfile(root, textwrap.dedent(packaging) + textwrap.dedent(integration))
    return root


# what .ci/run hands the sessions when the folder beside the checkout holds it; the
# variables of the CI running these tests must not leak into the run under test
_CI_DATA = {
    "TORCHX_K8S_UPSTREAM_CRDS": "k8s-crds",
    "TORCHX_DEV_K8S_VOLCANO_ARCHIVE": "third_party/volcano-v1.5.1.tar.gz",
}


def _run_ci(root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``bash .ci/run`` in ``root``; its pip step recorded, not run (the pins are installed)."""
    bin_dir = tmp_path / "bin"
    pip_log = tmp_path / "pip.log"
    python = write(
        bin_dir / "python",
        f"""
        #!/bin/sh
        if [ "$1" = -m ] && [ "$2" = pip ]; then echo "$@" >> {pip_log}; exit 0; fi
        exec {sys.executable} "$@"
        """,
    )
    python.chmod(0o755)
    # a zsh on PATH, so that .ci/run has nothing to apt-get
    write(bin_dir / "zsh", "#!/bin/sh\nexit 0\n").chmod(0o755)
    env = {
        **{k: v for k, v in os.environ.items() if k not in _CI_DATA},
        "PYTHON": str(python),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    proc = subprocess.run(
        ["bash", str(root / ".ci" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    # the tools come from the pinned requirements, nothing else
    assert pip_log.read_text().split() == [
        *[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            ".ci/requirements.txt",
        ]
    ]
    return proc


def test_ci_passes_when_every_expected_session_ran(tmp_path: Path) -> None:
    root = _ci_repo(
        tmp_path,
        """
        INTEGRATION_SESSIONS = ("integration_a",)

        @nox.session(venv_backend="none")
        def integration_a(session):
            session.log("integration ran")
        """,
    )
    proc = _run_ci(root, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "integration ran" in proc.stderr
    assert proc.stdout.rstrip().endswith("== CI passed")
    assert "1 sessions ran and passed: integration_a" in proc.stdout
    assert "docs built" in proc.stderr  # the documentation site is built by CI
    assert "1 sessions ran and passed: docs" in proc.stdout
    # then that site in the browser, not a second build
    assert f"browser on {root / 'build' / 'site'}" in proc.stderr
    assert "2 sessions ran and passed: docs_browser ui_browser" in proc.stdout
    assert "ui in the browser" in proc.stderr  # torchx ui's page in the browser too


@pytest.mark.parametrize("present", [True, False])
def test_ci_hands_the_sessions_the_data_beside_the_checkout(tmp_path: Path, present: bool) -> None:
    """The upstream CRDs and Volcano's archive, by absolute path, only when they are there."""
    root = _ci_repo(
        tmp_path,
        """
        INTEGRATION_SESSIONS = ("integration_a",)

        @nox.session(venv_backend="none")
        def integration_a(session):
            import os
            for name in ("TORCHX_K8S_UPSTREAM_CRDS", "TORCHX_DEV_K8S_VOLCANO_ARCHIVE"):
                session.log(name + " is " + os.environ.get(name, "unset"))
        """,
    )
    beside = tmp_path / "shared"
    if present:
        (beside / "k8s-crds").mkdir(parents=True)
        write(beside / "third_party" / "volcano-v1.5.1.tar.gz", "")
    proc = _run_ci(root, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name, rel in _CI_DATA.items():
        [seen] = re.findall(rf"{name} is (\S+)", proc.stderr)
        if present:
            assert Path(seen).is_absolute() and Path(seen).resolve() == (beside / rel).resolve()
        else:
            assert seen == "unset"


def test_ci_fails_when_an_integration_session_skips(tmp_path: Path) -> None:
    root = _ci_repo(
        tmp_path,
        """
        INTEGRATION_SESSIONS = ("integration_a",)

        @nox.session(venv_backend="none")
        def integration_a(session):
            session.skip("no backend here")
        """,
    )
    proc = _run_ci(root, tmp_path)
    # nox itself exits 0 for a skipped session: the report check is what fails
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "session integration_a did not pass: skipped: no backend here" in proc.stderr
    assert "== CI passed" not in proc.stdout


def test_ci_fails_before_running_anything_when_a_session_is_not_listed(tmp_path: Path) -> None:
    root = _ci_repo(
        tmp_path,
        """
        INTEGRATION_SESSIONS = ("integration_a",)

        @nox.session(venv_backend="none")
        def integration_a(session):
            pass

        @nox.session(venv_backend="none")
        def integration_new(session):
            pass
        """,
    )
    proc = _run_ci(root, tmp_path)
    assert proc.returncode == 1
    assert "defines integration_new but INTEGRATION_SESSIONS does not list it" in proc.stderr
    assert "== default" not in proc.stdout
