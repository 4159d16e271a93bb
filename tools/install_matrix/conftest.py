"""The install matrix: fresh environments holding only built wheels and their PyPI dependencies.

``nox -s install_matrix`` runs these tests. Each distribution (and the example
vendor plugin, and the fixture plugins under ``fixtures/``) is built into a wheel
at most once per test session; each row of the matrix is a new virtual
environment (``uv venv``) into which ``uv pip install`` puts those wheel files
and whatever they require from PyPI, nothing else. Commands then run in that
environment with a private ``HOME`` and state directories, from a temporary
working directory, so neither the source tree nor the developer's own
configuration can leak in::

    def test_something(make_env):
        env = make_env("cli", "torchx-cli")        # torchx-cli and the siblings it needs
        result = env.torchx("plugins")             # the installed `torchx` command
        assert result.returncode == 0

Set ``TORCHX_MATRIX_WHEELS=DIR`` to install wheels already built into ``DIR`` (or
its sub-folders, as ``nox -s build`` leaves them in ``dist/``) instead of building.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = HERE / "fixtures"
#: utils.echo with an image: a container scheduler refuses the components' default "."
#: at dry run, before anything a test of it looks at
ECHO = ("utils.echo", "--msg", "hi", "--image", "busybox:1")

#: Project folders by distribution name: the repository's, the vendor plugin, the fixtures.
PROJECTS: dict[str, Path] = {}
for _folder in [
    *sorted((REPO / "packages").glob("*")),
    *sorted((REPO / "plugins").glob("*")),
    REPO / "examples" / "vendor-plugin",
    *sorted(FIXTURES.glob("*")),
]:
    if (_folder / "pyproject.toml").is_file():
        _name = tomllib.loads((_folder / "pyproject.toml").read_text())["project"]["name"]
        PROJECTS[_name] = _folder


def _requires(name: str) -> list[str]:
    """Names of the projects above that ``name`` requires, transitively (no extras)."""
    import re

    found: list[str] = []

    def visit(project: str) -> None:
        meta = tomllib.loads((PROJECTS[project] / "pyproject.toml").read_text())["project"]
        for req in meta.get("dependencies", []):
            match = re.match(r"[A-Za-z0-9_.\-]+", req)
            dep = match.group(0).lower().replace("_", "-") if match else ""
            if dep in PROJECTS and dep not in found:
                found.append(dep)
                visit(dep)

    visit(name)
    return found


def _uv() -> str:
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is needed to build wheels and make environments: pip install uv")
    return uv


class Wheels:
    """Wheel files by distribution name, each built at most once per test session."""

    def __init__(self, out: Path, prebuilt: Path | None) -> None:
        self.out = out
        self.prebuilt = prebuilt
        self._built: dict[str, Path] = {}

    def __getitem__(self, name: str) -> Path:
        if name not in self._built:
            self._built[name] = self._find(name) or self._build(name)
        return self._built[name]

    def _find(self, name: str) -> Path | None:
        if self.prebuilt is None:
            return None
        stem = name.replace("-", "_")
        found = sorted(self.prebuilt.rglob(f"{stem}-*.whl"))
        return found[-1] if len(found) == 1 else None

    def _build(self, name: str) -> Path:
        folder = PROJECTS[name]
        out = self.out / name
        proc = subprocess.run(
            [_uv(), "build", "-q", "--wheel", "--out-dir", str(out), str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        wheels = sorted(out.glob("*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            pytest.fail(f"building {name} from {folder} failed:\n{proc.stdout}{proc.stderr}")
        return wheels[0]


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    prebuilt = os.environ.get("TORCHX_MATRIX_WHEELS")
    return Wheels(tmp_path_factory.mktemp("wheels"), Path(prebuilt).resolve() if prebuilt else None)


@dataclass
class Env:
    """One fresh virtual environment and a way to run commands in it, isolated."""

    root: Path
    work: Path  # working directory and private HOME of the commands

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    @property
    def environ(self) -> dict[str, str]:
        home = self.work / "home"
        return {
            "PATH": f"{self.bin}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "TORCHX_HOME": str(self.work / "torchx-state"),
            "ACME_BATCH_HOME": str(self.work / "acme-batch"),
            "LANG": "C.UTF-8",
            "COLUMNS": "200",
        }

    def run(
        self, *argv: str | Path, timeout: float = 120, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(a) for a in argv],
            cwd=self.work,
            env=self.environ,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            pytest.fail(
                f"{' '.join(map(str, argv))} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
        return proc

    def torchx(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Runs the installed ``torchx`` command (its console script in this environment)."""
        return self.run(self.bin / "torchx", *args, timeout=timeout)

    def python_code(self, code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-c", code, timeout=timeout)

    def uv_pip(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        """``uv pip ARGS`` against this environment (install or uninstall a wheel later)."""
        proc = subprocess.run(
            [_uv(), "pip", *map(str, args), "--python", str(self.python)],
            cwd=self.work,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def installed(self) -> set[str]:
        """Normalized names of every distribution installed in the environment."""
        code = (
            "import importlib.metadata as m, re\n"
            "for d in m.distributions():\n"
            "    print(re.sub(r'[-_.]+', '-', d.metadata['Name']).lower())\n"
        )
        return set(self.python_code(code).stdout.split())


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    """The stdout of a command that must succeed: exit status 0 and no traceback."""
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


#: Runs ``torchx *argv`` in-process, then says which of ``modules`` it imported and how it exited.
_LOADED = (
    "import sys, runpy\n"
    "sys.argv = ['torchx', *{argv!r}]\n"
    "code = 0\n"
    "try:\n"
    "    runpy.run_module('torchx.cli.main', run_name='__main__')\n"
    "except SystemExit as e:\n"
    "    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)\n"
    "print()\n"
    "print('LOADED=' + ','.join(m for m in {modules!r} if m in sys.modules))\n"
    "print(f'EXIT={{code}}')\n"
)


def loaded(env: Env, modules: Sequence[str], *argv: str) -> str:
    """Which of ``modules`` (an SDK's) ``torchx *argv`` imported, comma-separated ("": none).

    The command runs in ``env``'s interpreter, as the console script would run it, and
    must succeed (exit status 0, no traceback): a command refused before it got to the
    SDK (a mistyped option, a dry run that fails) imports nothing, and must not pass a
    "never imports the SDK" check for it.
    """
    proc = env.python_code(_LOADED.format(argv=list(argv), modules=tuple(modules)))
    lines = proc.stdout.splitlines()
    said = [x for x in lines if x.startswith(("LOADED=", "EXIT="))]
    assert len(said) == 2, f"torchx {' '.join(argv)}: no report\n{proc.stdout}\n{proc.stderr}"
    assert said[1] == "EXIT=0" and proc.returncode == 0, (
        f"torchx {' '.join(argv)} exited {said[1].removeprefix('EXIT=')}\n"
        f"{proc.stdout}\n{proc.stderr}"
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return said[0].removeprefix("LOADED=")


def stop_acme_tasks(env: Env) -> None:
    """Kills any Acme Batch task still running in ``env`` (tests stop what they start)."""
    for pid_file in (env.work / "acme-batch").glob("*/*/*/pid"):
        if not (pid_file.parent / "exit").exists():
            try:
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError):
                pass


#: The type of the ``make_env`` fixture.
MakeEnv = Callable[..., Env]


@pytest.fixture(scope="module")
def make_env(wheels: Wheels, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Env]:
    """``make_env(label, *dists, then=(...))``: a new environment with those wheels.

    Each distribution comes with the repository siblings it requires (as wheels
    too); PyPI supplies the rest. ``then`` names distributions installed by a second,
    separate ``uv pip install`` (to vary the install order); ``pypi`` adds
    requirements from PyPI to the first one (tools such as mypy).
    """

    def make(label: str, *dists: str, then: Sequence[str] = (), pypi: Sequence[str] = ()) -> Env:
        base = tmp_path_factory.mktemp(label)
        env = Env(base / "venv", base / "work")
        (env.work / "home").mkdir(parents=True)
        uv = _uv()
        subprocess.run(
            [uv, "venv", "-q", "--python", sys.executable, str(env.root)],
            check=True,
            capture_output=True,
        )
        for batch, extra in ((dists, pypi), (then, ())):
            if not batch and not extra:
                continue
            names = list(dict.fromkeys([d for name in batch for d in [*_requires(name), name]]))
            proc = subprocess.run(
                [uv, "pip", "install", "-q", "--python", str(env.python)]
                + [str(wheels[name]) for name in names]
                + list(extra),
                capture_output=True,
                text=True,
                check=False,
                cwd=base,  # away from the repository's pyproject.toml
            )
            if proc.returncode != 0:
                pytest.fail(f"installing {names} failed:\n{proc.stdout}{proc.stderr}")
        return env

    return make
