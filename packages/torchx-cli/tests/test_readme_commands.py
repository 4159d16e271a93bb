"""The README's shell commands that need no cluster, run verbatim with a fresh ``HOME``.

Each command is read from the README itself, so the README cannot drift from what
works: the completion lines must work on a home that has none of their folders yet,
and the zsh line must work when typed into bash (where ``$fpath`` is empty).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import TORCHX

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
    bash_line, zsh_line = _block_after("### Shell completion")
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


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_finds_the_script_where_the_readme_puts_it(tmp_path: Path) -> None:
    _, zsh_line = _block_after("### Shell completion")
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
