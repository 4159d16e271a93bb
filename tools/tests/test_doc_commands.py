"""Every command shown in a README or doc is run by a test, or marked as needing what it needs.

The commands are the lines of the ``sh`` blocks of README.md, each distribution's
README, docs/, examples/, bench/ and dev/ (a block of a ``$ `` transcript contributes
its ``$`` lines only). Each must be one of:

* **run by a test**: listed in :data:`RUN_BY` with the test that runs it, which must
  exist; a test that reads the command from the doc itself names the doc in its file,
  one that types it names each of the command's words (placeholders aside) in its
  source. So the doc and the test cannot drift apart silently;
* **a command of this repository's tooling** (``nox -s SESSION``, ``bash .ci/run``,
  ``python bench/run.py``, ``python tools/...``, ``dev/BACKEND``): the session, script
  and options it names must exist (CI runs the sessions; tools/ci_sessions.py checks
  that it runs them all);
* **marked** in the doc by a trailing comment: ``(not yet published)`` for the package
  index form of an install, ``needs a Slurm cluster``, ``needs a Docker engine``,
  ``needs a Kubernetes API server``, ``needs an LSF cluster`` or ``needs torch`` (the e2e and integration sessions run the same commands, typed).

* **a ``torchx`` command no test is listed for**: run here, in an empty temp directory
  with its own ``HOME`` and ``TORCHX_HOME``, by the ``torchx`` that ``nox -s repo``
  installs with the workspace's packages; it must exit 0 within a minute. All of them
  start at once (each has its own directory).

A new command in a doc fails here until it is one of these.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, doc_sources, function_source

DOCS = doc_sources()

MARKS = (
    "(not yet published)",
    "needs a Slurm cluster",
    "needs a Docker engine",
    "needs a Kubernetes API server",
    "needs an LSF cluster",
    "needs torch",
)

#: (doc, the start of a command) -> the test that runs it ("path::function").
RUN_BY: dict[tuple[str, str], str] = {
    # the Quickstart: the install (install matrix) and the run and follow commands (cli)
    (
        "README.md",
        "pip install ./packages/torchx-specs ./packages/torchx-runner ./packages/torchx-cli &&",
    ): "packages/torchx-cli/tests/test_readme_commands.py::test_the_quickstart_and_the_follow_commands_of_the_root_readme",
    **{
        (
            "README.md",
            start,
        ): "packages/torchx-cli/tests/test_readme_commands.py::test_the_quickstart_and_the_follow_commands_of_the_root_readme"
        for start in (
            "torchx list",
            "torchx status local://",
            "torchx log local://",
            "torchx cancel local://",
            "torchx delete --older-than",
        )
    },
    (
        "README.md",
        "pip install ./packages/torchx-specs ./packages/torchx-runner ./packages/torchx-cli ./plugins/torchx-slurm",
    ): "tools/install_matrix/test_readme_install.py::test_each_install_form_works_verbatim",
    (
        "README.md",
        "pip wheel --no-deps -w wheels",
    ): "tools/install_matrix/test_readme_install.py::test_each_install_form_works_verbatim",
    (
        "README.md",
        "pip install --find-links wheels",
    ): "tools/install_matrix/test_readme_install.py::test_each_install_form_works_verbatim",
    (
        "README.md",
        "torchx run --dryrun dist.ddp -j 2x1",
    ): "packages/torchx-cli/tests/test_readme_commands.py::test_the_ddp_dry_run_of_the_root_readme",
    ("README.md", "pip install nox uv && nox"): "tooling",
    # every other README's clone install (and the check after it)
    **{
        (
            doc,
            "pip install ./packages/torchx-specs",
        ): "tools/install_matrix/test_readme_install.py::test_every_readmes_clone_install_works_verbatim"
        for doc in (
            "packages/torchx-runner/README.md",
            "packages/torchx-specs/README.md",
            "packages/torchx-ui/README.md",
            "plugins/torchx-slurm/README.md",
            "plugins/torchx-docker/README.md",
            "plugins/torchx-aws/README.md",
            "plugins/torchx-lsf/README.md",
            "plugins/torchx-k8s/README.md",
            "examples/vendor-plugin/README.md",
        )
    },
    (
        "plugins/torchx-k8s/README.md",
        "torchx run -s kubernetes --dryrun dist.ddp -j 2x1",
    ): "tools/install_matrix/test_readme_install.py::test_every_readmes_clone_install_works_verbatim",
    (
        "plugins/torchx-k8s/README.md",
        "torchx runopts kubernetes",
    ): "tools/install_matrix/test_k8s.py::test_help_local_runs_and_dry_runs_never_import_the_client",
    (
        "plugins/torchx-k8s/README.md",
        "torchx run -s kubernetes_mcad --dryrun dist.ddp -j 2x1",
    ): "tools/install_matrix/test_k8s.py::test_the_readmes_appwrapper_dry_run",
    (
        "plugins/torchx-k8s/README.md",
        "python -m torchx_k8s rbac --namespace team-a",
    ): "plugins/torchx-k8s/tests/test_plugin.py::test_rbac_prints_a_role",
    (
        "packages/torchx-specs/README.md",
        "pip install './packages/torchx-specs[yaml]'",
    ): "tools/install_matrix/test_readme_install.py::test_every_readmes_clone_install_works_verbatim",
    (
        "plugins/torchx-docker/README.md",
        "torchx runopts docker",
    ): "tools/install_matrix/test_readme_install.py::test_every_readmes_clone_install_works_verbatim",
    (
        "plugins/torchx-aws/README.md",
        "torchx runopts aws_batch",
    ): "tools/install_matrix/test_readme_install.py::test_every_readmes_clone_install_works_verbatim",
    (
        "plugins/torchx-aws/README.md",
        "torchx run -s aws_batch --dryrun",
    ): "tools/install_matrix/test_aws.py::test_the_readmes_dry_run",
    (
        "plugins/torchx-slurm/README.md",
        "torchx runopts slurm",
    ): "tools/install_matrix/test_readme_install.py::test_every_readmes_clone_install_works_verbatim",
    (
        "plugins/torchx-lsf/README.md",
        "torchx runopts lsf",
    ): "tools/install_matrix/test_readme_install.py::test_every_readmes_clone_install_works_verbatim",
    # the LSF stand-in's example (nox -s integration_lsf, after dev/lsf up)
    **{
        (
            "dev/README.md",
            start,
        ): "plugins/torchx-lsf/tests/integration/test_dev_readme.py::test_the_stand_ins_example_submits_runs_and_lists"
        for start in ("bsub -J hello", "bjobs -a -noheader -o")
    },
    # the DDP example with real torch (nox -s e2e installs it as the README says)
    ("README.md", "pip install torch numpy"): "noxfile.py::e2e",
    (
        "README.md",
        "torchx run --log dist.ddp -j 1x2 --script examples/ddp/train.py",
    ): "packages/torchx-cli/tests/e2e/test_ddp.py::test_ddp_all_reduce",
    # the CLI README
    (
        "packages/torchx-cli/README.md",
        "torchx run --log utils.echo",
    ): "packages/torchx-cli/tests/test_readme_commands.py::test_the_cli_readmes_first_example",
    (
        "packages/torchx-cli/README.md",
        "mkdir -p ~/.local/share/bash-completion",
    ): "packages/torchx-cli/tests/test_readme_commands.py::test_completion_lines_work_on_a_fresh_home_from_bash",
    (
        "packages/torchx-cli/README.md",
        "mkdir -p ~/.zfunc",
    ): "packages/torchx-cli/tests/test_readme_commands.py::test_zsh_finds_the_script_where_the_readme_puts_it",
    (
        "packages/torchx-cli/README.md",
        "mkdir -p ~/.config/fish/completions",
    ): "packages/torchx-cli/tests/test_readme_commands.py::test_fish_finds_the_script_where_the_readme_puts_it",
    (
        "packages/torchx-cli/README.md",
        "pip install ./packages/torchx-specs ./packages/torchx-runner ./packages/torchx-cli",
    ): "tools/install_matrix/test_readme_install.py::test_each_install_form_works_verbatim",
    # the ui README: each `torchx ui` line served, asked with its token, stopped
    (
        "packages/torchx-ui/README.md",
        "torchx ui",
    ): "packages/torchx-ui/tests/test_readme.py::test_the_readmes_commands_serve_the_page",
    # the runner README's transcript
    (
        "packages/torchx-runner/README.md",
        '$ python follow.py "$(python launch.py)"',
    ): "packages/torchx-runner/tests/test_readme.py::test_launch_then_follow_from_another_process",
    # the vendor plugin, installed beside torchx-cli (install matrix), typed there
    (
        "docs/plugins.md",
        "torchx plugins",
    ): "tools/install_matrix/test_vendor_plugin.py::test_torchx_plugins_lists_every_contribution",
    (
        "docs/plugins.md",
        "torchx acme-sizes --min-gpus 1",
    ): "tools/install_matrix/test_vendor_plugin.py::test_the_cli_command",
    (
        "docs/plugins.md",
        "torchx runopts acme",
    ): "tools/install_matrix/test_vendor_plugin.py::test_the_scheduler_runopts",
    (
        "docs/plugins.md",
        "torchx run -s acme --dryrun acme.hello",
    ): "tools/install_matrix/test_vendor_plugin.py::test_dryrun_on_the_scheduler_submits_nothing",
    (
        "docs/plugins.md",
        "torchx run -s acme --wait acme.hello",
    ): "tools/install_matrix/test_vendor_plugin.py::test_run_and_follow_an_app_from_later_processes",
    (
        "docs/plugins.md",
        "torchx log acme://",
    ): "tools/install_matrix/test_vendor_plugin.py::test_run_and_follow_an_app_from_later_processes",
    (
        "docs/plugins.md",
        "torchx run -s local --dryrun utils.sh -h acme.gpu8",
    ): "tools/install_matrix/test_vendor_plugin.py::test_the_named_resource_with_a_builtin_component",
    (
        "examples/vendor-plugin/README.md",
        "torchx plugins",
    ): "tools/install_matrix/test_vendor_plugin.py::test_torchx_plugins_lists_every_contribution",
    (
        "examples/vendor-plugin/README.md",
        "torchx run -s acme --wait acme.hello",
    ): "tools/install_matrix/test_vendor_plugin.py::test_run_and_follow_an_app_from_later_processes",
    (
        "examples/vendor-plugin/README.md",
        "torchx log acme://",
    ): "tools/install_matrix/test_vendor_plugin.py::test_run_and_follow_an_app_from_later_processes",
    (
        "examples/vendor-plugin/README.md",
        "torchx list -s acme -cfg queue=default",
    ): "tools/install_matrix/test_vendor_plugin.py::test_run_and_follow_an_app_from_later_processes",
    (
        "examples/vendor-plugin/README.md",
        "torchx acme-sizes --min-gpus 1",
    ): "tools/install_matrix/test_vendor_plugin.py::test_the_cli_command",
}

_TOOLING = re.compile(r"^(nox\b|bash \.ci/run\b|python (bench|tools)/|eval \"\$\(dev/|dev/)")


def _commands() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        path = REPO / doc
        if not path.exists():
            continue
        for block in re.findall(r"```(?:sh|bash|shell|console)\n(.*?)```", path.read_text(), re.S):
            lines = [line for line in block.splitlines() if line.strip()]
            transcript = bool(lines) and lines[0].startswith("$ ")
            for line in lines:
                if line.lstrip().startswith("#") or (transcript and not line.startswith("$ ")):
                    continue
                found.append((doc, line.strip()))
    return found


COMMANDS = _commands()


def _covering(doc: str, line: str) -> str | None:
    matches = [test for (d, start), test in RUN_BY.items() if d == doc and line.startswith(start)]
    return max(matches, key=len) if matches else None


def _words(line: str) -> list[str]:
    command = line.removeprefix("$ ").split("  #")[0].split(" # ")[0]
    words = shlex.split(command)
    return [w for w in words[1:] if "://" not in w and not w.startswith("$")]


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) > 50
    assert {doc for doc, _ in COMMANDS} >= {"README.md", "docs/plugins.md", "bench/README.md"}


@pytest.mark.parametrize(("doc", "line"), COMMANDS, ids=[f"{d}: {c[:60]}" for d, c in COMMANDS])
def test_each_command_is_run_by_a_test_or_marked(doc: str, line: str) -> None:
    if any(mark in line for mark in MARKS):
        return
    test = _covering(doc, line)
    if test is None and _TOOLING.match(line):
        _check_tooling(line)
        return
    if test is None and _RUN_HERE.match(line):
        return  # test_each_torchx_command_without_a_test_runs_here
    assert test is not None, (
        f"{doc}: `{line}` is run by no test: add one to RUN_BY in {Path(__file__).name}, "
        f"or mark the line ({', '.join(MARKS)})"
    )
    if test == "tooling":
        return
    file_text, source = function_source(test)
    if Path(doc).name in file_text or doc in file_text:
        return  # the test reads the command from the doc
    missing = [w for w in _words(line) if w not in source and w not in file_text]
    assert not missing, f"{test} does not type {missing} of `{line}` ({doc})"


def test_every_listed_test_exists_and_every_entry_is_used() -> None:
    for test in set(RUN_BY.values()) - {"tooling"}:
        function_source(test)
    used = {
        (doc, start)
        for doc, line in COMMANDS
        for (d, start) in RUN_BY
        if d == doc and line.startswith(start)
    }
    assert set(RUN_BY) == used, f"stale RUN_BY entries: {sorted(set(RUN_BY) - used)}"


def _sessions() -> set[str]:
    text = (REPO / "noxfile.py").read_text()
    names = set(re.findall(r"@nox\.session\((?:[^)]*?name=)?\"?([\w-]*)", text))
    names |= set(re.findall(r"^def (\w+)\(session", text, re.M))
    dists = [
        p.parent.name
        for p in REPO.glob("*/*/pyproject.toml")
        if p.parent.parent.name in ("packages", "plugins")
    ]
    for dist in dists:
        names |= {f"tests-{dist}", f"typecheck-{dist}"}
    return names


def _check_tooling(line: str) -> None:
    command = line.split("  #")[0].split(" # ")[0]
    for part in re.split(r"&&", command):
        words = shlex.split(part.strip().removeprefix("eval "))
        if not words:
            continue
        if words[0] == "nox" and "-s" in words:
            session = words[words.index("-s") + 1]
            assert session in _sessions(), f"`{line}`: no nox session {session!r}"
        elif words[0] == "python":
            script = REPO / words[1]
            assert script.is_file(), f"`{line}`: no {words[1]}"
            text = script.read_text()
            for option in (w for w in words[2:] if w.startswith("--")):
                assert f'"{option}"' in text, f"`{line}`: {words[1]} has no option {option}"
        elif words[0].startswith(("$(dev/", "dev/")):
            tool = words[0].removeprefix("$(").split()[0]
            assert (REPO / tool).is_file(), f"`{line}`: no {tool}"


# --- torchx commands no test is listed for: run here -----------------------------------

_RUN_HERE = re.compile(r"^(\$ )?torchx\s")
TIMEOUT = 60.0


def _runs_here(doc: str, line: str) -> bool:
    return (
        not any(mark in line for mark in MARKS)
        and _covering(doc, line) is None
        and bool(_RUN_HERE.match(line))
    )


RUN_HERE = [(doc, line) for doc, line in COMMANDS if _runs_here(doc, line)]


def start_command(line: str, workdir: Path) -> subprocess.Popen[str]:
    """``line`` by bash in ``workdir`` (also its HOME), this interpreter's bin first on PATH."""
    env = {**os.environ, "HOME": str(workdir), "TORCHX_HOME": str(workdir / "torchx")}
    env.pop("TORCHXCONFIG", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return subprocess.Popen(
        ["bash", "-c", line.removeprefix("$ ")],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_command(proc: subprocess.Popen[str], doc: str, line: str) -> None:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{doc}: `{line}` did not end within {TIMEOUT:.0f} s")
    if proc.returncode != 0:
        tail = "\n".join((err or out).strip().splitlines()[-10:])
        pytest.fail(
            f"{doc}: `{line}` exited {proc.returncode}: make it runnable as shown, list the "
            f"test that runs it in RUN_BY, or mark the line ({', '.join(MARKS)})\n{tail}"
        )


def test_every_torchx_command_without_a_test_runs_here(tmp_path: Path) -> None:
    """All started at once (each in a directory of its own), then each waited for; one
    failure lists them all. (None today: every command has its test.)"""
    procs = {}
    for i, (doc, line) in enumerate(RUN_HERE):
        workdir = tmp_path / str(i)
        workdir.mkdir()
        procs[(doc, line)] = start_command(line, workdir)
    failures = []
    for (doc, line), proc in procs.items():
        try:
            finish_command(proc, doc, line)
        except pytest.fail.Exception as e:
            failures.append(str(e))
    assert not failures, "\n".join(failures)


def test_a_torchx_command_runs_here_and_a_broken_one_fails(tmp_path: Path) -> None:
    assert _runs_here("docs/x.md", "torchx run --dryrun utils.echo --msg hi")
    assert not _runs_here("docs/x.md", "torchx run -s slurm utils.echo  # needs a Slurm cluster")
    finish_command(start_command("torchx run --dryrun utils.echo --msg hi", tmp_path), "d", "ok")
    with pytest.raises(pytest.fail.Exception, match="`torchx nosuchcommand` exited 2"):
        finish_command(start_command("torchx nosuchcommand", tmp_path), "d", "torchx nosuchcommand")
