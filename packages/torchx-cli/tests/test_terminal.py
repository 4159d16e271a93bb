"""What a person at a terminal sees: colored prefixes, the live status line, Ctrl-C detaching."""

from __future__ import annotations

import os
import pty
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from helpers import TORCHX, Cli


def _run_on_tty(cli: Cli, *args: str, timeout: float = 60) -> tuple[int, str]:
    """Runs torchx with stdout and stderr on a pseudo-terminal; returns (exit code, output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [TORCHX, *args],
        cwd=cli.work,
        env={**os.environ, **cli.env},
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every holder of the terminal has closed it
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode()


def test_log_prefixes_are_colored_on_a_terminal(cli: Cli) -> None:
    rc, out = _run_on_tty(cli, "run", "--log", "utils.echo", "--msg", "hi", "--num_replicas", "2")
    assert rc == 0, out
    assert "\033[32mecho/0\033[0m hi" in out and "\033[34mecho/1\033[0m hi" in out


def test_wait_shows_a_live_status_line_on_a_terminal(cli: Cli) -> None:
    rc, out = _run_on_tty(cli, "run", "--wait", "utils.sh", "sleep", "1.5")
    assert rc == 0, out
    assert "RUNNING, 1/1 replicas running" in out and "\r\033[K" in out
    assert "State: SUCCEEDED" in out


def test_ctrl_c_detaches_and_says_how_to_reattach_and_cancel(cli: Cli) -> None:
    proc = subprocess.Popen(
        [TORCHX, "run", "--log", "utils.sh", "sh", "-c", "echo started; sleep 60"],
        cwd=cli.work,
        env={**os.environ, **cli.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell without job control starts background jobs with SIGINT ignored, and
        # Python then keeps ignoring it: give torchx the terminal's default, as a user has
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    handle = proc.stdout.readline().strip()
    cli.started.append(handle)
    assert proc.stdout.readline().strip() == "sh/0 started"  # streaming: now interrupt it
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert f"detached: {handle} keeps running" in err
    assert f"torchx log -t {handle}" in err and f"torchx cancel {handle}" in err
    assert "Traceback" not in err
    assert cli.status_json(handle)["state"] == "RUNNING"


def test_completion_scripts_load_in_their_shells(cli: Cli, tmp_path: Path) -> None:
    bash = cli("completion", "bash").stdout
    script = tmp_path / "c.bash"
    script.write_text(bash)
    probe = (
        f"source {script}\n"
        'COMP_WORDS=(torchx run -); COMP_CWORD=2; _torchx; echo "${COMPREPLY[*]}"\n'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout
    for opt in ("--dryrun", "--wait", "--log", "-cfg", "--workspace", "--parent_run_id"):
        assert opt in out.split()


_PROBES = (
    'COMP_WORDS=(torchx run --dr); COMP_CWORD=2; _torchx; echo "opts:${COMPREPLY[*]}"; '
    'COMP_WORDS=(torchx run -s lo); COMP_CWORD=3; _torchx; echo "sched:${COMPREPLY[*]}"; '
    'COMP_WORDS=(torchx run dist.); COMP_CWORD=2; _torchx; echo "comp:${COMPREPLY[*]}"; '
    'COMP_WORDS=(torchx runopts l); COMP_CWORD=2; _torchx; echo "runopts:${COMPREPLY[*]}"'
)


def _probe_lines(out: str) -> dict[str, list[str]]:
    return {
        line.split(":", 1)[0]: line.split(":", 1)[1].split()
        for line in out.splitlines()
        if ":" in line
    }


def test_bash_completes_schedulers_and_components(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "c.bash"
    script.write_text(cli("completion", "bash").stdout)
    out = subprocess.run(
        ["bash", "-c", f"source {script}; {_PROBES}"], capture_output=True, text=True, check=True
    ).stdout
    got = _probe_lines(out)
    assert got["opts"] == ["--dryrun"]
    assert got["sched"] == ["local", "local_cwd"]
    assert got["comp"] == ["dist.ddp", "dist.spmd"]
    assert got["runopts"] == ["local", "local_cwd"]


_COMPONENT_PROBES = (
    'COMP_WORDS=(torchx run utils.echo --); COMP_CWORD=3; _torchx; echo "echo:${COMPREPLY[*]}"; '
    "COMP_WORDS=(torchx run -s local dist.ddp --r); COMP_CWORD=5; _torchx; "
    'echo "ddp:${COMPREPLY[*]}"; '
    "COMP_WORDS=(torchx run -cfg a=1 --wait utils.echo --msg hi --n); COMP_CWORD=8; _torchx; "
    'echo "later:${COMPREPLY[*]}"; '
    'COMP_WORDS=(torchx run --w); COMP_CWORD=2; _torchx; echo "before:${COMPREPLY[*]}"; '
    'COMP_WORDS=(torchx run my.py:fn --); COMP_CWORD=3; _torchx; echo "file:${COMPREPLY[*]}"'
)


def test_bash_completes_a_components_own_options_after_it(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "c.bash"
    script.write_text(cli("completion", "bash").stdout)
    out = subprocess.run(
        ["bash", "-c", f"source {script}; {_COMPONENT_PROBES}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    got = _probe_lines(out)
    # the component's parameters, not run's options (no --wait, no --dryrun)
    assert got["echo"] == ["--help", "--image", "--msg", "--num_replicas"]
    assert got["ddp"] == ["--rdzv_backend", "--rdzv_conf", "--rdzv_port"]
    assert got["later"] == ["--num_replicas"]  # run's valued options skipped to find it
    assert got["before"] == ["--wait", "--workspace"]  # no component yet: run's own
    assert got["file"] == ["--help"]  # a component file is not known to the script


#: fish's own completion of each line (``complete -C``), the candidates it would offer.
_FISH_LINES = {
    "cmds": "torchx ru",
    "runopt": "torchx run --dr",
    "sched": "torchx run -s lo",
    "comp": "torchx run dist.",
    "runopts": "torchx runopts l",
    "cfg": "torchx run -s local -cfg a=1,grace",
    "echo": "torchx run utils.echo --",
    "ddp": "torchx run -s local dist.ddp --r",
    "file": "torchx run my.py:fn --",
    "shells": "torchx completion ",
    "listopt": "torchx list --st",
}


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completion_completes_as_bash_does(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "torchx.fish"
    script.write_text(cli("completion", "fish").stdout)
    handles = [cli("run", "--wait", "utils.echo").stdout.strip() for _ in range(2)]
    probes = "; ".join(
        f"for c in (complete -C {shlex.quote(line)}); echo {key}:(string split -f1 \\t -- $c); end"
        for key, line in [*_FISH_LINES.items(), ("handles", f"{TORCHX} status local://torchx/")]
    )
    out = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; complete -c {TORCHX} -w torchx; {probes}"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **cli.env},
        cwd=cli.work,
    ).stdout
    got: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, _, word = line.partition(":")
        got.setdefault(key, []).append(word)
    assert got["cmds"] == ["run", "runopts"]
    assert got["runopt"] == ["--dryrun"]
    assert got["sched"] == ["local", "local_cwd"]
    assert got["comp"] == ["dist.ddp", "dist.spmd"]
    assert got["runopts"] == ["local", "local_cwd"]
    assert got["cfg"] == ["a=1,grace_period="]
    assert got["echo"] == ["--help", "--image", "--msg", "--num_replicas"]
    assert got["ddp"] == ["--rdzv_backend", "--rdzv_conf", "--rdzv_port"]
    assert got["file"] == ["--help"]
    assert got["shells"] == ["bash", "fish", "zsh"]
    assert got["listopt"] == ["--state"]
    assert sorted(got["handles"]) == sorted(handles)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_works_through_bashcompinit(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "_torchx"
    script.write_text(cli("completion", "zsh").stdout)
    # zsh calls the function as bashcompinit does: sh emulation (0-based arrays); zsh
    # itself then keeps the candidates that match the word being completed
    code = (
        f"autoload -U compinit && compinit -u -d {tmp_path}/zcompdump; source {script}; "
        f"probe() {{ emulate -L sh; setopt kshglob noshglob braceexpand; {_PROBES}; }}; probe"
    )
    out = subprocess.run(
        ["zsh", "-f", "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    got = _probe_lines(out)
    assert "--dryrun" in got["opts"] and "--wait" in got["opts"]
    assert "local" in got["sched"] and "dist.ddp" in got["comp"]


def test_bash_completes_app_handles_from_torchx_list(cli: Cli, tmp_path: Path) -> None:
    handles = [cli("run", "--wait", "utils.echo").stdout.strip() for _ in range(2)]
    other = cli("run", "--wait", "utils.sh", "true").stdout.strip()
    script = tmp_path / "c.bash"
    script.write_text(cli("completion", "bash").stdout)
    # as bash calls it: the word split at ':' (COMP_WORDBREAKS), the whole line in COMP_LINE
    probes = "".join(
        f'COMP_LINE="{TORCHX} {cmd} local://torchx/ec"; COMP_POINT=${{#COMP_LINE}}; '
        f"COMP_WORDS=({TORCHX} {cmd} local : //torchx/ec); COMP_CWORD=4; _torchx; "
        f'echo "{cmd}:${{COMPREPLY[*]}}"; '
        for cmd in ("status", "log", "cancel", "describe", "delete")
    )
    # as zsh's bashcompinit calls it: one word, no COMP_LINE
    probes += (
        f"COMP_LINE=; COMP_WORDS=({TORCHX} status local://torchx/s); COMP_CWORD=2; _torchx; "
        'echo "whole:${COMPREPLY[*]}"; '
        f"COMP_WORDS=({TORCHX} status --); COMP_CWORD=2; _torchx; "
        'echo "option:${COMPREPLY[*]}"'
    )
    out = subprocess.run(
        ["bash", "-c", f"source {script}; {probes}"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **cli.env},
        cwd=cli.work,
    ).stdout
    got = _probe_lines(out)
    for cmd in ("status", "log", "cancel", "describe", "delete"):
        assert sorted(got[cmd]) == sorted(h.removeprefix("local:") for h in handles), out
    assert got["whole"] == [other]
    assert "--json" in got["option"] and not any(w.startswith("local") for w in got["option"])
