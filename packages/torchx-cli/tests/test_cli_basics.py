"""The torchx entry point itself: help, version, plugins, and how it reports errors."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from helpers import torchx

COMMANDS = [
    "builtins",
    "cancel",
    "completion",
    "configure",
    "delete",
    "describe",
    "list",
    "log",
    "plugins",
    "run",
    "runopts",
    "status",
]


def test_help_lists_every_command() -> None:
    out = torchx("--help", check_rc=0).stdout
    for name in COMMANDS:
        assert f"    {name}" in out
    assert "examples:" in out


def test_each_command_has_help() -> None:
    for name in COMMANDS:
        out = torchx(name, "--help", check_rc=0).stdout
        assert f"usage: torchx {name}" in out


def test_version() -> None:
    from torchx.cli._version import __version__

    assert torchx("--version", check_rc=0).stdout.strip() == f"torchx {__version__}"


def test_help_does_not_import_sdks_or_cattrs() -> None:
    code = (
        "import sys; from torchx.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED=' + ','.join(m for m in ('kubernetes','boto3','docker','cattrs','torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "LOADED="


def test_unknown_command_is_a_usage_error() -> None:
    proc = torchx("bogus", check_rc=2)
    assert "unknown command 'bogus'" in proc.stderr and "Traceback" not in proc.stderr
    assert "did you mean 'status'" in torchx("statsu", check_rc=2).stderr


def test_plugins_lists_distributions() -> None:
    out = torchx("plugins", check_rc=0).stdout
    assert "torchx-specs" in out and "torchx-runner" in out and "torchx-cli" in out
    assert "local" in out and "gpu.small" in out


def test_plugins_json_has_format_version() -> None:
    import json

    doc = json.loads(torchx("plugins", "--json", check_rc=0).stdout)
    assert doc["formatVersion"] == "torchx.cli/v1" and doc["kind"] == "Plugins"
    assert "torchx-runner" in doc["data"]["distributions"]


def test_bash_completion_completes_commands_and_options(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "torchx.bash"
    script.write_text(torchx("completion", "bash", check_rc=0).stdout)
    probe = (
        f"source {script}\n"
        'COMP_WORDS=(torchx sta); COMP_CWORD=1; _torchx; echo "1:${COMPREPLY[*]}"\n'
        'COMP_WORDS=(torchx run --dr); COMP_CWORD=2; _torchx; echo "2:${COMPREPLY[*]}"\n'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "1:status" in out and "2:--dryrun" in out


def test_bash_completion_offers_the_schedulers_run_option_keys_after_cfg(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "torchx.bash"
    script.write_text(torchx("completion", "bash", check_rc=0).stdout)
    probe = (
        f"source {script}\n"
        'COMP_WORDS=(torchx run -cfg log_); COMP_CWORD=3; _torchx; echo "1:${COMPREPLY[*]}"\n'
        "COMP_WORDS=(torchx run -s local -cfg log_dir=x,prep); COMP_CWORD=5; _torchx; "
        'echo "2:${COMPREPLY[*]}"\n'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "1:log_dir=\n" in out  # a key, not a component name
    assert "2:log_dir=x,prepend_cwd=\n" in out  # after a K=V, the next key


def test_zsh_completion_wraps_the_bash_function() -> None:
    out = torchx("completion", "zsh", check_rc=0).stdout
    assert out.startswith("#compdef torchx") and "bashcompinit" in out and "_torchx()" in out


def test_help_is_cached_and_the_cache_follows_installs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import stat

    from test_info import _plugin_dir

    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = torchx("--help", env=env, check_rc=0).stdout
    cached = list((tmp_path / "cache" / "torchx").glob("cli-help-*.txt"))
    assert len(cached) == 1 and stat.S_IMODE(os.stat(cached[0]).st_mode) == 0o600
    assert torchx("--help", env=env, check_rc=0).stdout == first
    # a newly installed plugin's command shows up at once (and its broken one is noted)
    plugged = torchx("--help", env={**env, "PYTHONPATH": str(_plugin_dir(tmp_path))}, check_rc=0)
    assert "    hello" in plugged.stdout and "    hello" not in first
    assert "command 'boom'" in plugged.stderr
    again = torchx("--help", env={**env, "PYTHONPATH": str(tmp_path / "plugins")}, check_rc=0)
    assert again.stdout == plugged.stdout and "command 'boom'" in again.stderr


def test_cached_help_imports_nothing_heavy(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import sys\nfrom torchx.cli.main import main\nmain(['--help'])\n"
        "print('LOADED=' + ','.join(m for m in ('argparse', 'attrs', 'pluggy', 'torchx.runner',"
        " 'torchx.specs.plugins') if m in sys.modules), file=sys.stderr)"
    )
    env = {**__import__("os").environ, "XDG_CACHE_HOME": str(tmp_path)}
    for _ in range(2):  # the first call writes the cache
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
    assert "commands:" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "LOADED="


def test_bare_torchx_prints_help_and_exits_2() -> None:
    proc = torchx(check_rc=2)
    assert proc.stdout.startswith("usage: torchx") and "commands:" in proc.stdout


def test_run_parsing_and_a_component_import_no_shutil_nor_shlex(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``torchx run``'s parsers size their help without shutil (bz2, lzma), and
    ``utils.echo``'s module quotes with shlex only in the component that needs it: both
    would add milliseconds to every start (issue 19). A scheduler may still import them."""
    code = (
        "import sys\n"
        "from torchx.cli._parser import build_parser, load_commands\n"
        "p = build_parser(load_commands(False, only=['run']), other_names=['run'])\n"
        "args, _ = p.parse_known_args(['run', '--dryrun', 'utils.echo', '--msg', 'hi'])\n"
        "from torchx.components.args import materialize_appdef\n"
        "from torchx.components.finder import get_component\n"
        "app = materialize_appdef(get_component('utils.echo').fn, ['--msg', 'hi'])\n"
        "assert app.roles[0].args == ['hi'], app.roles[0].args\n"
        "print('LOADED=' + ','.join(m for m in ('shutil', 'lzma', 'bz2', 'shlex') if m in sys.modules))"
    )
    # the first run fills the plugin cache (a scan reads zipfile, hence shutil); the second
    # is a start as the command makes it
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("TORCHX_NO_PLUGIN_CACHE", None)
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
    assert out.stdout.strip().splitlines()[-1] == "LOADED="


def test_the_parser_uses_the_shared_help_formatter() -> None:
    """The width without shutil is torchx-specs' HelpFormatter (tested there)."""
    from torchx.cli._parser import build_parser
    from torchx.specs.help_formatter import HelpFormatter

    parser = build_parser({}, other_names=["run"])
    assert parser.formatter_class is HelpFormatter
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sub.choices["run"].formatter_class is HelpFormatter
