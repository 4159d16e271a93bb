"""The README's shell commands that need no cluster, run verbatim with a fresh ``HOME``.

Each command is read from the README itself, so the README cannot drift from what
works: the completion lines must work on a home that has none of their folders yet,
and the zsh line must work when typed into bash (where ``$fpath`` is empty).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import TORCHX, Cli

README = Path(__file__).resolve().parent.parent / "README.md"

pytestmark = pytest.mark.skipif(not README.exists(), reason="needs the source tree's README")


def _block_after(heading: str) -> list[str]:
    text = README.read_text()
    section = text[text.index(heading) :]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S)
    assert block, f"no sh block after {heading!r}"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _bash(line: str, home: Path) -> None:
    env = {"HOME": str(home), "PATH": f"{Path(TORCHX).parent}:/usr/bin:/bin"}
    subprocess.run(["bash", "-c", line], env=env, cwd=home, check=True, timeout=60)


def test_completion_lines_work_on_a_fresh_home_from_bash(tmp_path: Path) -> None:
    bash_line, zsh_line, fish_line = _block_after("### Shell completion")
    home = tmp_path / "home"
    home.mkdir()
    _bash(bash_line, home)
    script = home / ".local/share/bash-completion/completions/torchx"
    probe = f"source {script}; complete -p torchx"
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    assert "-F _torchx torchx" in out.stdout

    _bash(zsh_line, home)  # typed into bash: nothing may land outside HOME
    assert not Path("/_torchx").exists()
    assert (home / ".zfunc/_torchx").read_text().startswith("#compdef torchx")

    _bash(fish_line, home)
    fish = home / ".config/fish/completions/torchx.fish"
    assert "complete -c torchx" in fish.read_text()


def test_the_source_line_for_machines_without_bash_completion_works(tmp_path: Path) -> None:
    (line,) = re.findall(r"`(source <\(torchx completion bash\))`", README.read_text())
    env = {"HOME": str(tmp_path), "PATH": f"{Path(TORCHX).parent}:/usr/bin:/bin"}
    out = subprocess.run(
        ["bash", "-c", f"{line}; complete -p torchx"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "-F _torchx torchx" in out.stdout


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_finds_the_script_where_the_readme_puts_it(tmp_path: Path) -> None:
    _, zsh_line, _ = _block_after("### Shell completion")
    home = tmp_path / "home"
    home.mkdir()
    _bash(zsh_line, home)
    # what the README says to put in ~/.zshrc, then zsh's own completion lookup
    code = (
        "fpath=(~/.zfunc $fpath); autoload -U compinit && compinit -u -d ~/.zcompdump; "
        "print -r -- ${_comps[torchx]}"
    )
    out = subprocess.run(
        ["zsh", "-f", "-c", code],
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "_torchx"


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_finds_the_script_where_the_readme_puts_it(tmp_path: Path) -> None:
    *_, fish_line = _block_after("### Shell completion")
    home = tmp_path / "home"
    home.mkdir()
    _bash(fish_line, home)
    # fish's own lookup: ~/.config/fish/completions/torchx.fish, loaded on first use
    out = subprocess.run(
        ["fish", "-c", "complete -C 'torchx runo'"],  # the fresh HOME has no config of its own
        # fish loads a command's completions once the command is found on PATH
        env={"HOME": str(home), "PATH": f"{Path(TORCHX).parent}:/usr/bin:/bin"},
        cwd=home,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["runopts"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_the_fish_source_line_works(tmp_path: Path) -> None:
    (line,) = re.findall(r"`(torchx completion fish \| source)`", README.read_text())
    env = {"HOME": str(tmp_path), "PATH": f"{Path(TORCHX).parent}:/usr/bin:/bin"}
    out = subprocess.run(
        ["fish", "--no-config", "-c", f"{line}; complete -C 'torchx runo'"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.split() == ["runopts"]


REPO = Path(__file__).resolve().parents[3]
ROOT_README = REPO / "README.md"


def _sh_lines(readme: Path) -> list[str]:
    """Every command line of the sh blocks (comments and blank lines left out)."""
    blocks = re.findall(r"```sh\n(.*?)```", readme.read_text(), flags=re.S)
    return [line for b in blocks for line in b.splitlines() if line.strip()[:1] not in ("", "#")]


def _one(lines: list[str], start: str) -> str:
    found = [line for line in lines if line.startswith(start)]
    assert len(found) == 1, f"{start!r}: {found}"
    return found[0]


def _shell(cli: Cli, line: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **cli.env, "PATH": f"{Path(TORCHX).parent}:{os.environ['PATH']}"}
    env.pop("TORCHX_DEBUG", None)
    proc = subprocess.run(
        ["bash", "-c", line],
        cwd=cwd or cli.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.skipif(not ROOT_README.exists(), reason="needs the repository's README")
def test_the_quickstart_and_the_follow_commands_of_the_root_readme(cli: Cli) -> None:
    lines = _sh_lines(ROOT_README)
    quick = _one(
        lines,
        "pip install ./packages/torchx-specs ./packages/torchx-runner ./packages/torchx-cli && torchx run",
    )
    run = quick.split(" && ", 1)[1]  # the install is the install matrix's (test_readme_install)
    out = _shell(cli, run).stdout
    for k in range(3):
        assert f"sh/{k} replica {k} of 3: hello" in out and f"sh/{k} replica {k}: done" in out
    handle = out.splitlines()[0]
    example = "local://torchx/sh-abc123"
    follow = [
        line
        for line in lines
        if example in line or line.startswith(("torchx list", "torchx delete"))
    ]
    assert len(follow) == 5, follow
    for line in follow:
        got = _shell(cli, line.replace(example, handle)).stdout
        if line.startswith("torchx list"):
            assert handle in got
        if " log " in line:
            assert got.splitlines() == [
                "sh/0 replica 0 of 3: hello",
                "sh/0 replica 0: done",
                "sh/2 replica 2 of 3: hello",
                "sh/2 replica 2: done",
            ]


@pytest.mark.skipif(not ROOT_README.exists(), reason="needs the repository's README")
def test_the_ddp_dry_run_of_the_root_readme(cli: Cli) -> None:
    line = _one(_sh_lines(ROOT_README), "torchx run --dryrun dist.ddp")
    out = _shell(cli, line, cwd=REPO).stdout  # "from the repository's root"
    assert "torchrun" in out and "examples/ddp/train.py" in out


def test_the_cli_readmes_first_example(cli: Cli) -> None:
    line = _one(_sh_lines(README), "torchx run --log utils.echo")
    out = _shell(cli, line).stdout
    assert "echo/0 hello" in out and "echo/1 hello" in out
