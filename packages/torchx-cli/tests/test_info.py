"""Commands about the installation: runopts, builtins, configure, plugins (with broken plugins)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers import Cli


def _plugin_dir(root: Path) -> Path:
    """A folder for PYTHONPATH holding three installed 'distributions' that go wrong.

    * broken-plugin: its ``torchx`` module does not import; its legacy scheduler
      entry point names a module that does not exist; it also claims ``local``.
    * extra-commands: adds a working ``hello`` command and a ``boom`` command whose
      reference cannot be imported.
    """
    d = root / "plugins"
    d.mkdir()
    info = d / "broken_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[torchx]\nbroken = broken_plugin_mod\n"
        "[torchx.schedulers]\n"
        "local = torchx.schedulers.local_scheduler:create_scheduler\n"
        "badsched = nonexistent_mod:create_scheduler\n"
    )
    info = d / "extra_commands-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: extra-commands\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text("[torchx]\nextra = extra_commands_plugin\n")
    (d / "extra_commands_plugin.py").write_text(
        textwrap.dedent(
            """
            from torchx.specs.hookspecs import hookimpl

            class Hello:
                help = "say hello"

                def add_arguments(self, parser):
                    parser.add_argument("--name", default="world")

                def run(self, args):
                    import atexit

                    atexit.register(print, "bye")  # the quick exit still runs atexit handlers
                    print(f"hello {args.name}")
                    return 0

            @hookimpl
            def torchx_cli_commands():
                return {"hello": "extra_commands_plugin:Hello", "boom": "no_such_module:Cmd"}

            def not_a_resource():
                return {"cpu": 1}

            @hookimpl
            def torchx_named_resources():
                return {"odd.size": "extra_commands_plugin:not_a_resource"}
            """
        )
    )
    return d


def test_runopts_every_scheduler_and_one(cli: Cli) -> None:
    out = cli("runopts").stdout
    assert "local:" in out and "local_cwd:" in out and "log_dir" in out and "grace_period" in out
    one = cli("runopts", "local").stdout
    assert one.startswith("local:") and "local_cwd:" not in one
    err = cli("runopts", "lcoal", rc=2).stderr
    assert "unknown scheduler 'lcoal'" in err and "did you mean 'local'" in err


def test_runopts_wraps_its_help_to_the_terminal_as_argparse_does(cli: Cli) -> None:
    wide = cli("runopts", "local", env={"COLUMNS": "400"}).stdout.splitlines()
    narrow = cli("runopts", "local", env={"COLUMNS": "80"}).stdout.splitlines()
    assert max(len(line) for line in wide) > 78  # the help runs on when there is room
    assert max(len(line) for line in narrow) <= 78  # COLUMNS less 2, as argparse
    assert " ".join(" ".join(narrow).split()) == " ".join(" ".join(wide).split())  # all kept
    (grace,) = [i for i, line in enumerate(narrow) if line.split()[:1] == ["grace_period"]]
    # too narrow beside the columns: the help goes under them, every line at one indent
    assert narrow[grace].split() == ["grace_period", "float", "(default:", "10.0)"]
    assert (
        narrow[grace + 1]
        == "        seconds between SIGTERM and SIGKILL when cancelling or restarting"
    )
    assert narrow[grace + 2] == "        replicas"


def test_runopts_survives_a_broken_plugin(cli: Cli) -> None:
    env = {"PYTHONPATH": str(_plugin_dir(cli.root))}
    proc = cli("runopts", rc=1, env=env)
    assert "local:" in proc.stdout and "grace_period" in proc.stdout
    assert "badsched:" in proc.stderr and "nonexistent_mod" in proc.stderr


def test_unknown_scheduler_names_the_plugins_that_failed_to_load(cli: Cli) -> None:
    env = {"PYTHONPATH": str(_plugin_dir(cli.root))}
    for name, says in (
        ("slurm", "scheduler 'slurm' is provided by torchx-slurm, which is not installed"),
        ("slurmx", "unknown scheduler 'slurmx'"),
    ):
        err = cli("run", "-s", name, "utils.echo", rc=2, env=env).stderr
        assert says in err
        assert "plugins that failed to load: broken-plugin" in err and "torchx plugins" in err
        err = cli("run", "-s", name, "utils.echo", rc=2).stderr  # nothing broken: no such hint
        assert says in err and "failed to load" not in err


def test_builtins_lists_and_prints(cli: Cli) -> None:
    out = cli("builtins").stdout
    assert out.startswith("Found ") and "dist.ddp" in out and "utils.echo" in out
    src = cli("builtins", "--print", "utils.echo").stdout
    assert "\ndef echo(" in src and "AppDef" in src
    err = cli("builtins", "--print", "utils.ecoh", rc=2).stderr
    assert "did you mean 'utils.echo'" in err


def test_builtins_print_gives_a_file_that_runs_and_can_be_edited(cli: Cli) -> None:
    # what a component uses from its module (imports, DEFAULT_IMAGE, helpers) comes with it
    (cli.work / "ddp.py").write_text(cli("builtins", "--print", "dist.ddp").stdout)
    (cli.work / "train.py").write_text("print('trained')\n")
    out = cli("run", "--dryrun", "ddp.py:ddp", "-j", "1x2", "--script", "train.py").stdout
    assert "torchrun" in out and "--nproc_per_node 2" in out and "train.py" in out
    echo = cli("builtins", "--print", "utils.echo").stdout
    assert echo.startswith("# utils.echo: ") and "torchx run echo.py:echo" in echo
    (cli.work / "echo.py").write_text(echo.replace('"hello world"', '"edited default"'))
    assert "echo/0 edited default" in cli("run", "--log", "echo.py:echo").stdout


def test_configure_print_and_all_as_upstream(cli: Cli) -> None:
    printed = cli("configure", "--print", "-s", "local").stdout
    assert printed.startswith("# .torchxconfig") and "[local]\n" in printed
    assert not (cli.work / ".torchxconfig").exists()  # --print writes no file
    everything = cli("configure", "-a", "--print", "-s", "local").stdout
    assert "#grace_period = " in everything and "#grace_period" not in printed
    cli("configure", "-a", "-s", "local")
    assert (cli.work / ".torchxconfig").read_text() == everything
    # --print works beside an existing file; writing over it is refused
    assert cli("configure", "--print", "-s", "local").stdout == printed
    assert "configure --print" in cli("configure", rc=2).stderr


def test_configure_writes_a_torchxconfig_that_runs(cli: Cli) -> None:
    out = cli("configure", "-s", "local").stdout
    assert out.strip() == "wrote .torchxconfig"
    text = (cli.work / ".torchxconfig").read_text()
    assert "[local]" in text and "[local_cwd]" not in text
    assert "already" in cli("configure", rc=2).stderr  # never overwrites
    (cli.work / ".torchxconfig").unlink()
    cli("configure", "--all")
    text = (cli.work / ".torchxconfig").read_text()
    assert "[local]" in text and "[local_cwd]" in text and "grace_period" in text
    cli("run", "--dryrun", "utils.echo")  # the written file is valid
    err = cli("configure", "--path", "other.cfg", "-s", "locl", rc=2).stderr
    assert "locl" in err and not (cli.work / "other.cfg").exists()


def test_plugins_reports_versions_clashes_and_failures(cli: Cli) -> None:
    env = {"PYTHONPATH": str(_plugin_dir(cli.root))}
    out = cli("plugins", env=env).stdout
    assert "torchx-cli 0.1" in out and "torchx-runner 0.1" in out
    assert "extra-commands 2.0\n    named_resources: odd.size\n    cli_commands: boom, hello" in out
    assert "name clashes" in out and "scheduler 'local'" in out and "using torchx-runner" in out
    assert "plugins that failed to load" in out and "broken_plugin_mod" in out
    # broken-plugin's section says what it lost, never that it contributes nothing
    broken = out.split("broken-plugin 1.0\n", 1)[1].split("\n\n", 1)[0]
    assert "lost the name clash of scheduler 'local' to torchx-runner" in broken
    assert "contributes nothing" not in broken
    checked = cli("plugins", "--check", rc=1, env=env).stdout
    assert "nonexistent_mod" in checked and "no_such_module" in checked
    # --check imports and calls what plain 'plugins' only lists, and says what it checked
    assert "odd.size" in out and "not a Resource" not in out and "checked" not in out
    assert "(torchx: odd.size): returned a dict, not a Resource" in checked
    assert "checked 3 schedulers, 52 named resources, " in checked and "problems (above)" in checked
    doc = json.loads(cli("plugins", "--json", env=env).stdout)
    assert doc["formatVersion"] == "torchx.cli/v1" and doc["kind"] == "Plugins"
    assert doc["data"]["distributions"]["extra-commands"]["version"] == "2.0"
    assert any("broken_plugin_mod" in f["reason"] for f in doc["data"]["failures"])
    assert doc["data"]["clashes"][0]["name"] == "local"


def test_plugin_commands_join_and_a_broken_one_is_skipped(cli: Cli) -> None:
    env = {"PYTHONPATH": str(_plugin_dir(cli.root))}
    proc = cli("--help", env=env)
    assert "    hello" in proc.stdout and "    run" in proc.stdout
    assert "command 'boom' from extra-commands could not be loaded" in proc.stderr
    assert cli("hello", "--name", "you", env=env).stdout == "hello you\nbye\n"
    assert "echo/0 ok" in cli("run", "--log", "utils.echo", "--msg", "ok", env=env).stdout
