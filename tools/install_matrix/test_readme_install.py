"""The README's Install commands, run verbatim in fresh virtual environments with pip.

Each line of the README's Install block is read from the README itself and run with
``bash`` in a fresh ``python -m venv`` (which has pip), from a working directory where
``packages/`` and ``plugins/`` are the repository's: the clone form in one environment,
the two wheel lines in another. The line marked ``(not yet published)`` is the package
index form: it is checked to be marked, not run. After installing, the ``torchx``
command must see the Slurm scheduler.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
UNPUBLISHED = "(not yet published)"


def _install_lines() -> list[str]:
    text = README.read_text()
    section = text[text.index("\n## Install\n") :]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S)
    assert block, "the README's Install section has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _venv_and_workdir(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    work = tmp_path / "work"
    work.mkdir()
    for folder in ("packages", "plugins"):
        (work / folder).symlink_to(REPO / folder)
    bin_dir = tmp_path / "venv" / "bin"
    env = {
        **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "UV_")) or k == "LANG"},
        "PATH": f"{bin_dir}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "VIRTUAL_ENV": str(tmp_path / "venv"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    return work, env


def _bash(line: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, f"{line}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def _sees_slurm(work: Path, env: dict[str, str]) -> None:
    proc = _bash("torchx runopts slurm", work, env)
    assert proc.stdout.startswith("slurm:"), proc.stdout


def test_the_index_form_is_marked_as_not_yet_published() -> None:
    lines = _install_lines()
    index = [line for line in lines if "./" not in line and "--find-links" not in line]
    assert index and all(UNPUBLISHED in line for line in index), lines


@pytest.mark.parametrize("form", ["clone", "wheels"])
def test_each_install_form_works_verbatim(form: str, tmp_path: Path) -> None:
    lines = [line for line in _install_lines() if UNPUBLISHED not in line]
    clone = [line for line in lines if line.startswith("pip install ./")]
    wheels = [line for line in lines if line not in clone]
    assert len(clone) == 1 and len(wheels) == 2, lines
    work, env = _venv_and_workdir(tmp_path)
    for line in clone if form == "clone" else wheels:
        _bash(line, work, env)
    if form == "wheels":
        built = sorted(p.name.split("-")[0] for p in (work / "wheels").glob("*.whl"))
        assert built == ["torchx_cli", "torchx_runner", "torchx_slurm", "torchx_specs"]
    _sees_slurm(work, env)


#: Each README's command that shows its clone install works (run after it when the line
#: installs torchx-cli; the line is in that README).
CLI_CHECKS = {
    "packages/torchx-cli/README.md": "torchx run --log utils.echo --msg hello --num_replicas 2",
    "packages/torchx-ui/README.md": "torchx ui --help",
    "plugins/torchx-slurm/README.md": "torchx runopts slurm",
    "plugins/torchx-docker/README.md": "torchx runopts docker",
    "plugins/torchx-aws/README.md": "torchx runopts aws_batch",
    "plugins/torchx-lsf/README.md": "torchx runopts lsf",
    "plugins/torchx-k8s/README.md": (
        "torchx run -s kubernetes --dryrun dist.ddp -j 2x1 --image my/torch:1 --script train.py"
    ),
    "examples/vendor-plugin/README.md": "torchx acme-sizes --min-gpus 1",
}
OTHER_READMES = [
    "packages/torchx-specs/README.md",
    "packages/torchx-runner/README.md",
    *CLI_CHECKS,
]


def _clone_lines() -> list[tuple[str, str]]:
    found = []
    for doc in OTHER_READMES:
        text = (REPO / doc).read_text()
        for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
            found += [
                (doc, line) for line in block.splitlines() if line.startswith("pip install ./")
            ]
    return found


def _import_check(line: str) -> str:
    """Python that imports what ``line`` installs (without the CLI)."""
    imports = ["torchx.specs"]
    if "[yaml]" in line:
        imports.append("yaml")
    if "torchx-runner" in line:
        imports.append("torchx.runner")
    if "[testing]" in line:
        imports += ["torchx.schedulers.testing", "pytest"]
    code = f"import {', '.join(imports)}"
    if "torchx-slurm" in line:
        code += "; from torchx.runner import get_runner; assert 'slurm' in get_runner().scheduler_backends()"
    if "torchx-lsf" in line:
        code += "; from torchx.runner import get_runner; assert 'lsf' in get_runner().scheduler_backends()"
    return f'python -c "{code}"'


@pytest.mark.parametrize(("doc", "line"), _clone_lines(), ids=lambda v: str(v)[:70])
def test_every_readmes_clone_install_works_verbatim(doc: str, line: str, tmp_path: Path) -> None:
    work, env = _venv_and_workdir(tmp_path)
    (work / "examples").symlink_to(REPO / "examples")
    _bash(line, work, env)
    if "torchx-cli" in line:
        check = CLI_CHECKS[doc]
        assert check in (REPO / doc).read_text()
        _bash(check, work, env)
    else:
        _bash(_import_check(line), work, env)
