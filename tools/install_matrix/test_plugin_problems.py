"""Row: the vendor plugin beside fixture plugins that are broken, old-style or clashing.

* fixture-broken's plugin module raises on import: ``torchx plugins`` reports it
  by name with the error, and every other command still works;
* fixture-legacy declares only upstream TorchX's entry-point groups
  (``torchx.schedulers``, ``torchx.named_resources``, ``torchx.components``):
  its scheduler, named resource and components are found and usable;
* fixture-clash registers the scheduler name ``acme`` that acme-torchx registers:
  ``torchx plugins`` shows the clash and the winner, the winner is what runs, and
  the outcome does not depend on the order the wheels were installed in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Env, MakeEnv, ok, stop_acme_tasks

FIXTURES = ("fixture-broken", "fixture-legacy", "fixture-clash")


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Iterator[Env]:
    env = make_env("problems", "torchx-cli", "acme-torchx", then=FIXTURES)
    yield env
    stop_acme_tasks(env)


def plugins_json(env: Env) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ok(env.torchx("plugins", "--json")))["data"]
    return data


# --- a plugin that raises on import -------------------------------------------------


def test_torchx_plugins_shows_the_broken_plugin_and_its_error(env: Env) -> None:
    text = ok(env.torchx("plugins"))
    failures = text.split("plugins that failed to load:", 1)[1]
    (line,) = [ln for ln in failures.splitlines() if "fixture-broken" in ln]
    assert "broken" in line  # the entry point
    assert "RuntimeError: cannot reach the license server at license.example.invalid" in line

    data = plugins_json(env)
    (failure,) = data["failures"]
    assert failure["distribution"] == "fixture-broken"
    assert "plugin module failed to load" in failure["reason"]
    assert "RuntimeError: cannot reach the license server" in failure["reason"]


def _commands(env: Env) -> list[str]:
    data = plugins_json(env)
    return sorted(
        name for dist in data["distributions"].values() for name in dist.get("cli_commands", [])
    )


def test_every_other_command_still_works(env: Env) -> None:
    commands = _commands(env)
    assert {"run", "status", "log", "plugins", "runopts", "acme-sizes"} <= set(commands)
    for name in commands:
        proc = env.torchx(name, "--help")
        assert proc.returncode == 0, f"torchx {name} --help: {proc.stderr}"
        assert proc.stderr == "", f"torchx {name} --help: {proc.stderr}"
    assert ok(env.torchx("acme-sizes", "--min-gpus", "8")).startswith("acme.gpu8: ")
    runopts = ok(env.torchx("runopts"))
    for scheduler in ("acme", "legacy_batch", "local"):
        assert f"\n{scheduler}:\n" in f"\n{runopts}"


def test_real_apps_still_run(env: Env) -> None:
    local = env.torchx("run", "--wait", "-s", "local", "utils.echo", "--msg", "still fine")
    handle = ok(local).strip()
    assert handle.startswith("local://") and "SUCCEEDED" in local.stderr
    assert ok(env.torchx("log", handle)) == "echo/0 still fine\n"
    acme = env.torchx("run", "--wait", "-s", "acme", "acme.hello", "--who", "you")
    assert ok(acme).startswith("acme://") and "SUCCEEDED" in acme.stderr


def test_an_unknown_name_is_one_line_with_a_suggestion(env: Env) -> None:
    proc = env.torchx("run", "--dryrun", "-s", "acmee", "utils.echo")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "unknown scheduler 'acmee' (did you mean 'acme'?)" in proc.stderr


# --- upstream TorchX's legacy entry-point groups -------------------------------------


def test_a_legacy_only_plugin_is_discovered(env: Env) -> None:
    legacy = plugins_json(env)["distributions"]["fixture-legacy"]
    assert legacy["schedulers"] == ["legacy_batch"]
    assert legacy["named_resources"] == ["legacy.tiny"]
    assert legacy["components"] == ["legacy"]


def test_its_scheduler_resource_and_component_are_usable(env: Env) -> None:
    assert "partition" in ok(env.torchx("runopts", "legacy_batch"))
    assert "legacy.greet" in ok(env.torchx("builtins"))
    out = ok(
        env.torchx(
            "run", "--dryrun", "--json", "-s", "legacy_batch", "-cfg", "partition=gpu",
            "legacy.greet", "--name", "old friend",
        )
    )  # fmt: skip
    data = json.loads(out)["data"]
    assert data["scheduler"] == "legacy_batch"
    assert (
        data["request"]
        == "legacy request: {'partition': 'gpu', 'argv': [['echo', 'hello old friend']]}"
    )
    (role,) = data["app"]["spec"]["roles"]
    assert (role["resource"]["cpu"], role["resource"]["memMB"]) == (1, 512)  # legacy.tiny


# --- two plugins giving the same scheduler name ---------------------------------------


def test_torchx_plugins_shows_the_clash_and_the_winner(env: Env) -> None:
    text = ok(env.torchx("plugins"))
    clashes = text.split("name clashes", 1)[1].split("plugins that failed to load:")[0]
    (line,) = [ln.strip() for ln in clashes.splitlines() if "scheduler 'acme'" in ln]
    assert line == (
        "scheduler 'acme' is provided by acme-torchx 0.1.0 (torchx) and "
        "fixture-clash 0.1.0 (torchx); using acme-torchx 0.1.0"
    )

    (clash,) = plugins_json(env)["clashes"]
    assert (clash["kind"], clash["name"]) == ("scheduler", "acme")
    assert clash["winner"] == "acme-torchx 0.1.0"
    assert clash["losers"] == ["fixture-clash 0.1.0"]


def test_the_winner_is_what_runs(env: Env) -> None:
    # fixture-clash's factory raises if it is ever called
    assert "the Acme Batch queue" in ok(env.torchx("runopts", "acme"))


def test_the_outcome_does_not_depend_on_install_order(env: Env, make_env: MakeEnv) -> None:
    reversed_env = make_env("problems-reversed", "torchx-cli", *FIXTURES, then=["acme-torchx"])
    assert plugins_json(reversed_env)["clashes"] == plugins_json(env)["clashes"]
