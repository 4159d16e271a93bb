"""Shared helpers for the repository-level tests (run by ``nox -s repo``).

The tools are scripts, not an installed package: put ``tools/`` on ``sys.path``
so the tests import them the way ``python tools/<tool>.py`` does.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent
REPO = TOOLS.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def make_dist(
    root: Path,
    name: str,
    packages: Sequence[str],
    dependencies: Sequence[str] = (),
    extras: Mapping[str, Sequence[str]] | None = None,
    version: str = "0.1.0",
    group: str = "packages",
) -> Path:
    """A minimal distribution folder: pyproject, _version.py, CHANGELOG, one file per package.

    ``packages`` are dotted names: ``torchx.specs`` goes under the ``torchx``
    namespace (no ``__init__.py``), ``torchx_slurm`` is a regular package.
    """
    folder = root / group / name
    deps = ", ".join(f'"{d}"' for d in dependencies)
    extra_lines = "".join(
        f"{extra} = [{', '.join(repr(r) for r in reqs)}]\n"
        for extra, reqs in (extras or {}).items()
    )
    first = packages[0].replace(".", "/")
    write(
        folder / "pyproject.toml",
        f"""
        [project]
        name = "{name}"
        dynamic = ["version"]
        dependencies = [{deps}]

        [project.optional-dependencies]
        """
        + extra_lines
        + f"""
        [tool.hatch.version]
        path = "src/{first}/_version.py"
        """,
    )
    for package in packages:
        path = folder / "src" / package.replace(".", "/")
        write(path / "__init__.py", '"""A package."""\n')
        (path / "py.typed").touch()
    write(folder / "src" / first / "_version.py", f'__version__ = "{version}"\n')
    write(
        folder / "CHANGELOG.md", f"# Changelog of {name}\n\n## {version} (unreleased)\n\n- First.\n"
    )
    return folder


@pytest.fixture
def fake_repo(tmp_path: Path) -> Path:
    """A tree shaped like the repository: specs <- runner <- cli, runner <- plugins."""
    root = tmp_path / "repo"
    make_dist(root, "torchx-specs", ["torchx.specs"])
    make_dist(
        root,
        "torchx-runner",
        ["torchx.runner", "torchx.schedulers", "torchx.components", "torchx.workspace"],
        ["torchx-specs>=0.1,<0.2"],
    )
    make_dist(root, "torchx-cli", ["torchx.cli"], ["torchx-runner>=0.1,<0.2"])
    make_dist(
        root,
        "torchx-docker",
        ["torchx_docker"],
        ["torchx-runner>=0.1,<0.2", "docker>=7"],
        group="plugins",
    )
    make_dist(
        root,
        "torchx-k8s",
        ["torchx_k8s"],
        ["torchx-runner>=0.1,<0.2", "kubernetes>=30"],
        extras={"docker": ["torchx-docker>=0.1,<0.2"]},
        group="plugins",
    )
    make_dist(
        root,
        "torchx-aws",
        ["torchx_aws"],
        ["torchx-runner>=0.1,<0.2", "boto3>=1.34"],
        group="plugins",
    )
    return root


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(
        src,
        dst,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "dist", "build"),
    )
    return dst


def doc_sources(root: Path = REPO) -> list[str]:
    """The Markdown files the documentation is made of (relative to ``root``): the root
    README, each distribution's and example's README, docs/ (any depth), bench/ and dev/.
    The doc tests (commands, Python examples) go through every one of them.

    Files git ignores are left out: the site build writes pages from the code into docs/
    (git-ignored), and those are no source."""
    globs = ("packages/*/README.md", "plugins/*/README.md", "docs/**/*.md", "examples/*/README.md")
    found = ["README.md"]
    for pattern in globs:
        found += sorted(str(p.relative_to(root)) for p in root.glob(pattern))
    found += ["bench/README.md", "dev/README.md"]
    found = [doc for doc in found if (root / doc).is_file()]
    ignored = subprocess.run(
        ["git", "check-ignore", "--stdin"],
        cwd=root,
        input="\n".join(found),
        capture_output=True,
        text=True,
        check=False,
    )
    if ignored.returncode not in (0, 1):  # 1: none ignored
        raise AssertionError(f"git check-ignore failed in {root}: {ignored.stderr.strip()}")
    return [doc for doc in found if doc not in set(ignored.stdout.splitlines())]


def function_source(ref: str) -> tuple[str, str]:
    """The text of the file of test ``path::function`` (relative to the repository) and the
    source of that function; fails when there is no such function."""
    path, _, name = ref.partition("::")
    text = (REPO / path).read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return text, ast.get_source_segment(text, node) or ""
    raise AssertionError(f"{ref}: no such test")
