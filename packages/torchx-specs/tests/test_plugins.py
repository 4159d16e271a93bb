"""Tests of the plugin layer: hookspecs, the registry, discovery and its on-disk cache.

Discovery is tested against real installed distributions: each fixture project
under ``fixtures/plugins/`` is installed into a temporary directory as a
``<name>-<version>.dist-info`` with a real ``entry_points.txt``, and the check runs
in a subprocess with that directory on ``PYTHONPATH`` (so ``importlib.metadata``
sees it as installed, and each check starts from a fresh process). Registry
logic that needs no installed distribution is tested in-process with
``build_registry([...], entry_points=False)``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.specs import Resource, SpecError
from torchx.specs import plugins as plugins_mod
from torchx.specs.hookspecs import hookimpl
from torchx.specs.plugins import (
    Entry,
    InvalidPluginReference,
    PluginError,
    PluginLoadError,
    UnknownPluginEntry,
    build_registry,
    get_registry,
    load_ref,
    parse_ref,
    register_builtin,
    reset_registry,
)

FIXTURES = Path(__file__).parent / "fixtures" / "plugins"


# --- installing fixture distributions ------------------------------------------------


def write_dist(
    site: Path, name: str, version: str, entry_points: str, files: dict[str, str]
) -> None:
    """Install a distribution into ``site``: its files plus a real ``*.dist-info``."""
    for rel, text in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    dist_info = site / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    (dist_info / "entry_points.txt").write_text(entry_points)
    record = [*files, *(f"{dist_info.name}/{f}" for f in ("METADATA", "entry_points.txt"))]
    (dist_info / "RECORD").write_text("".join(f"{r},,\n" for r in record))


def install(fixture: str, site: Path) -> Path:
    """Install the fixture project ``fixtures/plugins/<fixture>`` into ``site``."""
    project = FIXTURES / fixture
    meta = (project / "METADATA").read_text()
    name = re.search(r"^Name: (.+)$", meta, re.M)
    version = re.search(r"^Version: (.+)$", meta, re.M)
    assert name and version
    src = project / "src"
    files = {
        str(p.relative_to(src)): p.read_text()
        for p in sorted(src.rglob("*.py"))
        if "__pycache__" not in p.parts
    }
    write_dist(
        site,
        name.group(1).strip(),
        version.group(1).strip(),
        (project / "entry_points.txt").read_text(),
        files,
    )
    return site


# --- running a check in a fresh process ----------------------------------------------

PROBE = r"""
import sys, time
t0 = time.perf_counter()
from torchx.specs import plugins
registry = plugins.get_registry()
elapsed = time.perf_counter() - t0
metadata_imported = "importlib.metadata" in sys.modules
fixture_modules = sorted(m for m in sys.modules if m.startswith("fixture_"))
import json
out = {
    "elapsed_ms": elapsed * 1000,
    "metadata_imported": metadata_imported,
    "modules_after_discovery": fixture_modules,
    "entries": {
        kind: {
            name: [e.ref, e.distribution, e.version, e.group, e.entry_point]
            for name, e in registry.entries(kind).items()
        }
        for kind in plugins.KINDS
    },
    "failures": [[f.distribution, f.entry_point, f.group, f.reason] for f in registry.failures],
    "clashes": [
        [c.kind, c.name, [c.winner.distribution, c.winner.group],
         [[e.distribution, e.group] for e in c.losers]]
        for c in registry.clashes
    ],
}
def error(fn, *args):
    try:
        fn(*args)
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None
exec(sys.argv[1], {"registry": registry, "plugins": plugins, "out": out, "error": error})
print(json.dumps(out))
"""


def probe(
    tmp_path: Path,
    sites: Sequence[Path],
    code: str = "",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run PROBE (then ``code``) in a new interpreter with ``sites`` on PYTHONPATH."""
    full_env = {k: v for k, v in os.environ.items() if k != plugins_mod.NO_CACHE_ENV}
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(s) for s in sites] + ([os.environ["PYTHONPATH"]] if "PYTHONPATH" in os.environ else [])
    )
    full_env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, textwrap.dedent(code)],
        env=full_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def site(tmp_path: Path, *fixtures: str, name: str = "site") -> Path:
    path = tmp_path / name
    path.mkdir()
    for fixture in fixtures:
        install(fixture, path)
    return path


def failures_of(out: dict[str, Any], distribution: str) -> list[list[str]]:
    return [f for f in out["failures"] if f[0] == distribution]


# --- discovery of installed distributions --------------------------------------------


def test_good_plugin_contributes_all_four_kinds_lazily(tmp_path: Path) -> None:
    out = probe(
        tmp_path,
        [site(tmp_path, "good")],
        """
        import argparse
        out["sched"] = registry.scheduler_factory("good_sched")("sess", x=1)
        out["big_cpu"] = registry.named_resource_factory("good.big")().cpu
        out["inline_cpu"] = registry.named_resources["good.inline"].load()().cpu
        cmd = registry.cli_command("good-cmd")()
        parser = argparse.ArgumentParser()
        cmd.add_arguments(parser)
        out["cmd"] = [cmd.help, cmd.run(parser.parse_args(["--n", "3"]))]
        out["hello"] = registry.component("good.hello")()
        out["grp_hello"] = registry.component("goodgrp.hello")("you")
        out["grp_deep"] = registry.component("goodgrp.sub.deep")()
        out["grp_ref"] = registry.find_component("goodgrp.sub.deep").ref
        out["listed"] = sorted(registry.list_components())
        out["unknown_member"] = error(registry.component, "goodgrp.helo")
        out["private"] = error(registry.component, "goodgrp._private")
        dist = registry.distributions["torchx-fixture-good"]
        out["dist"] = [dist.version, list(dist.entry_points), len(dist.entries), list(dist.failures)]
        from torchx.specs import named_resources
        out["via_named_resources"] = named_resources["good.big"].memMB
        """,
    )
    entries = out["entries"]
    assert entries["scheduler"]["good_sched"] == [
        "fixture_good.scheduler:create_scheduler",
        "torchx-fixture-good",
        "0.1",
        "torchx",
        "good",
    ]
    assert entries["named_resource"]["good.big"][0] == "fixture_good.resources:big"
    assert entries["named_resource"]["good.inline"][0] is None  # a function, not a reference
    assert entries["component"]["good.hello"][0] == "fixture_good.components:hello"
    assert entries["component"]["goodgrp"][0] == "fixture_good.components"
    assert entries["cli_command"]["good-cmd"][0] == "fixture_good.cli:GoodCommand"
    # torchx-specs' own plugin is discovered the same way
    generic = entries["named_resource"]["gpu.small"]
    assert (generic[0], generic[1], generic[3]) == (
        "torchx.specs.named_resources_generic:gpu_small",
        "torchx-specs",
        "torchx",
    )
    assert out["failures"] == []
    assert out["clashes"] == []
    # discovery imported the plugin module only, none of what it references
    assert out["modules_after_discovery"] == ["fixture_good", "fixture_good.plugin"]
    assert out["sched"] == {"scheduler": "good_sched", "session_name": "sess", "x": 1}
    assert out["big_cpu"] == 64
    assert out["inline_cpu"] == 3
    assert out["cmd"] == ["a fixture subcommand", 3]
    assert out["hello"] == "hello world"
    assert out["grp_hello"] == "hello you"
    assert out["grp_deep"] == "deep"
    assert out["grp_ref"] == "fixture_good.components.sub:deep"
    assert out["listed"] == ["good.hello", "goodgrp.hello", "goodgrp.sub.deep"]
    assert out["unknown_member"][0] == "UnknownPluginEntry"
    assert out["unknown_member"][1].startswith(
        "unknown component 'goodgrp.helo' (did you mean 'goodgrp.hello'?); installed: good.hello"
    )
    assert out["private"][0] == "UnknownPluginEntry"
    assert out["dist"] == ["0.1", ["torchx: good = fixture_good.plugin"], 6, []]
    assert out["via_named_resources"] == 1024


def test_broken_plugin_is_reported_and_the_others_keep_working(tmp_path: Path) -> None:
    out = probe(
        tmp_path,
        [site(tmp_path, "good", "broken")],
        """
        out["sched"] = registry.scheduler_factory("good_sched")("s")["scheduler"]
        out["unknown"] = error(registry.scheduler_factory, "good_schd")
        out["dist_failures"] = [str(f) for f in registry.distributions["torchx-fixture-broken"].failures]
        out["failed_plugins"] = list(registry.failed_plugins)
        """,
    )
    (failure,) = out["failures"]
    assert failure[:3] == ["torchx-fixture-broken", "broken", "torchx"]
    assert failure[3] == (
        "plugin module failed to load: cannot import 'fixture_broken.plugin' for "
        "'fixture_broken.plugin': RuntimeError: boom: the fixture SDK is not installed"
    )
    assert out["dist_failures"] == [
        "torchx-fixture-broken 0.2 (entry point 'broken' in group 'torchx'): " + failure[3]
    ]
    assert out["failed_plugins"] == ["torchx-fixture-broken"]
    assert out["sched"] == "good_sched"
    assert out["unknown"] == [
        "UnknownPluginEntry",
        "unknown scheduler 'good_schd' (did you mean 'good_sched'?); installed: good_sched; "
        "plugins that failed to load: torchx-fixture-broken",
    ]


def test_legacy_group_entries_are_discovered_without_importing_anything(tmp_path: Path) -> None:
    out = probe(
        tmp_path,
        [site(tmp_path, "legacy")],
        """
        out["sched"] = registry.scheduler_factory("legacy_sched")("s")
        from torchx.specs import named_resources
        out["res"] = named_resources["legacy.res"].memMB
        out["trainer"] = registry.component("legacy.trainer")()
        out["evaluator"] = registry.component("legacy.more.evaluator")()
        out["flat"] = registry.component("flat_component")()
        out["listed"] = sorted(registry.list_components())
        """,
    )
    entries = out["entries"]
    assert entries["scheduler"]["legacy_sched"] == [
        "fixture_legacy.sched:create_scheduler",
        "torchx-fixture-legacy",
        "1.0",
        "torchx.schedulers",
        "legacy_sched",
    ]
    assert entries["named_resource"]["legacy.res"][0] == "fixture_legacy.res:legacy_res"
    assert entries["named_resource"]["legacy.res"][3] == "torchx.named_resources"
    assert entries["component"]["legacy"][0] == "fixture_legacy.comps"
    # "_" groups add no prefix and are keyed by distribution so that they never clash
    assert entries["component"]["_0@torchx-fixture-legacy"][0] == "fixture_legacy.flat"
    assert out["modules_after_discovery"] == []
    assert out["failures"] == []
    assert out["sched"] == "legacy:s"
    assert out["res"] == 2048
    assert out["trainer"] == "trainer"
    assert out["evaluator"] == "evaluator"
    assert out["flat"] == "flat"
    assert out["listed"] == ["flat_component", "legacy.more.evaluator", "legacy.trainer"]


def test_clash_resolution_is_deterministic_whatever_the_install_order(tmp_path: Path) -> None:
    alpha = site(tmp_path, "alpha", name="a")
    beta = site(tmp_path, "beta", name="b")
    code = 'out["dup"] = registry.scheduler_factory("dup")("s")'
    forward = probe(tmp_path, [alpha, beta], code)
    backward = probe(tmp_path, [beta, alpha], code)
    for out in (forward, backward):
        schedulers = out["entries"]["scheduler"]
        # both in the torchx group: alphabetical distribution name wins
        assert schedulers["dup"][1] == "torchx-fixture-alpha"
        assert out["dup"] == "alpha"
        # torchx group beats a legacy group, whatever the names
        assert schedulers["dup2"][1:4:2] == ["torchx-fixture-alpha", "torchx"]
        assert out["entries"]["named_resource"]["dup.res"][1:4:2] == [
            "torchx-fixture-beta",
            "torchx",
        ]
        assert out["failures"] == []
    assert forward["clashes"] == backward["clashes"]
    assert forward["clashes"] == [
        [
            "named_resource",
            "dup.res",
            ["torchx-fixture-beta", "torchx"],
            [["torchx-fixture-alpha", "torchx.named_resources"]],
        ],
        [
            "scheduler",
            "dup",
            ["torchx-fixture-alpha", "torchx"],
            [["torchx-fixture-beta", "torchx"]],
        ],
        [
            "scheduler",
            "dup2",
            ["torchx-fixture-alpha", "torchx"],
            [["torchx-fixture-beta", "torchx.schedulers"]],
        ],
    ]


def test_one_distribution_in_both_torchx_and_legacy_groups_is_not_a_clash(tmp_path: Path) -> None:
    path = tmp_path / "site"
    write_dist(
        path,
        "torchx-both",
        "2.0",
        "[torchx]\nboth = both_plugin\n\n[torchx.schedulers]\nboth = both_sched:create\n",
        {
            "both_plugin.py": (
                "from torchx.specs.hookspecs import hookimpl\n\n\n@hookimpl\n"
                "def torchx_schedulers():\n    return {'both': 'both_sched:create'}\n"
            )
        },
    )
    out = probe(tmp_path, [path])
    assert out["clashes"] == []
    assert out["entries"]["scheduler"]["both"][1:4] == ["torchx-both", "2.0", "torchx"]


def test_misbehaving_hooks_are_failures_and_contribute_nothing(tmp_path: Path) -> None:
    out = probe(tmp_path, [site(tmp_path, "garbage", "good")])
    reasons = sorted(f"{f[1]}|{f[2]}|{f[3]}" for f in failures_of(out, "torchx-fixture-garbage"))
    assert reasons == [
        "garbage|torchx|torchx_cli_commands() returned a bad name 'bad name': "
        "expected a non-empty string without whitespace",
        "garbage|torchx|torchx_components() raised ValueError: hook exploded",
        "garbage|torchx|torchx_named_resources() returned a bad value for 'garbage.res': "
        "got int 42; expected a 'module:attr' reference or a function",
        "garbage|torchx|torchx_schedulers() returned list, expected a mapping of name to reference",
        "garbage|torchx|unknown hook 'torchx_scheduler' (did you mean 'torchx_schedulers'?)",
        "missing|torchx|plugin module failed to load: cannot import 'fixture_garbage.does_not_exist' "
        "for 'fixture_garbage.does_not_exist': ModuleNotFoundError: "
        "No module named 'fixture_garbage.does_not_exist'",
        "not_a_ref|torchx.schedulers|reference 'fixture_garbage.plugin' names a module; "
        "expected 'package.module:attribute'",
        "unmarked|torchx|torchx_schedulers is not marked with @hookimpl "
        "(from torchx.specs.hookspecs) and is ignored",
    ]
    assert len(out["failures"]) == len(reasons)  # the good plugin has none
    contributed = {d for kind in out["entries"].values() for _, d, *_ in kind.values()}
    assert "torchx-fixture-garbage" not in contributed
    assert "good_sched" in out["entries"]["scheduler"]


# --- the on-disk cache of entry points -----------------------------------------------


def cache_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "torchx").glob("*"))


def test_cache_is_used_and_invalidated_when_distributions_change(tmp_path: Path) -> None:
    path = site(tmp_path, "good")
    first = probe(tmp_path, [path])
    assert first["metadata_imported"]  # nothing cached yet: scanned
    (cache,) = cache_files(tmp_path)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700

    second = probe(tmp_path, [path])
    assert not second["metadata_imported"]  # served from the cache
    assert second["entries"] == first["entries"]

    install("legacy", path)  # a new distribution appears
    third = probe(tmp_path, [path])
    assert third["metadata_imported"]
    assert "legacy_sched" in third["entries"]["scheduler"]
    fourth = probe(tmp_path, [path])
    assert not fourth["metadata_imported"]
    assert "legacy_sched" in fourth["entries"]["scheduler"]

    # entry_points.txt edited in place (same directory name)
    ep_file = path / "torchx_fixture_legacy-1.0.dist-info" / "entry_points.txt"
    ep_file.write_text(ep_file.read_text().replace("legacy_sched =", "renamed_sched ="))
    old = ep_file.stat().st_mtime_ns
    os.utime(ep_file, ns=(old + 10**9, old + 10**9))
    fifth = probe(tmp_path, [path])
    assert "renamed_sched" in fifth["entries"]["scheduler"]
    assert "legacy_sched" not in fifth["entries"]["scheduler"]

    shutil.rmtree(path / "torchx_fixture_legacy-1.0.dist-info")  # uninstalled
    sixth = probe(tmp_path, [path])
    assert "renamed_sched" not in sixth["entries"]["scheduler"]
    assert len(cache_files(tmp_path)) == 1  # rewritten in place, no temp files left


def test_corrupt_or_unwritable_cache_is_ignored(tmp_path: Path) -> None:
    path = site(tmp_path, "good")
    probe(tmp_path, [path])
    (cache,) = cache_files(tmp_path)
    cache.write_bytes(b"\xff\xfe not a cache \x00")
    out = probe(tmp_path, [path])
    assert out["metadata_imported"]
    assert "good_sched" in out["entries"]["scheduler"]
    assert not probe(tmp_path, [path])["metadata_imported"]  # rewritten, valid again

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    out = probe(tmp_path, [path], env={"XDG_CACHE_HOME": str(not_a_dir)})
    assert "good_sched" in out["entries"]["scheduler"]


def test_cache_can_be_disabled(tmp_path: Path) -> None:
    path = site(tmp_path, "good")
    out = probe(tmp_path, [path], env={plugins_mod.NO_CACHE_ENV: "1"})
    assert out["metadata_imported"]
    assert "good_sched" in out["entries"]["scheduler"]
    assert cache_files(tmp_path) == []


def test_ten_plugins_are_discovered_and_a_cached_first_read_skips_the_scan(
    tmp_path: Path,
) -> None:
    path = tmp_path / "site"
    for i in range(10):
        plugin = textwrap.dedent(
            f"""
            from torchx.specs.hookspecs import hookimpl


            @hookimpl
            def torchx_schedulers():
                return {{"sched{i}": "bench{i}.scheduler:create_scheduler"}}


            @hookimpl
            def torchx_named_resources():
                return {{f"bench{i}.{{n}}": f"bench{i}.resources:{{n}}" for n in ("s", "m", "l")}}


            @hookimpl
            def torchx_cli_commands():
                return {{"cmd{i}": "bench{i}.cli:Command"}}
            """
        )
        write_dist(
            path,
            f"torchx-bench{i}",
            "1.0",
            f"[torchx]\nbench{i} = bench{i}.plugin\n",
            {f"bench{i}/__init__.py": "", f"bench{i}/plugin.py": plugin},
        )
    probe(tmp_path, [path])
    out = probe(tmp_path, [path])
    assert not out["metadata_imported"]
    assert sorted(out["entries"]["scheduler"]) == [f"sched{i}" for i in range(10)]
    assert len(out["entries"]["named_resource"]) == 30 + 51  # + torchx-specs' generic and AWS sizes
    assert out["failures"] == []
    print(f"first registry read, 10 plugins, cached: {out['elapsed_ms']:.1f} ms")


def test_import_torchx_specs_does_not_import_pluggy_or_metadata() -> None:
    code = (
        "import sys, torchx.specs\n"
        "heavy = [m for m in ('pluggy', 'importlib.metadata', 'torchx.specs.plugins') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


# --- in-process: references ----------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [
        ("pkg.mod:attr", ("pkg.mod", "attr")),
        ("pkg.mod:Cls.method", ("pkg.mod", "Cls.method")),
        ("pkg", ("pkg", None)),
        (" pkg.mod : attr ", ("pkg.mod", "attr")),
        ("pkg.mod:attr [extra1, extra2]", ("pkg.mod", "attr")),
    ],
)
def test_parse_ref_accepts(ref: str, parsed: tuple[str, str | None]) -> None:
    assert parse_ref(ref) == parsed


@pytest.mark.parametrize(
    "ref", ["", ":attr", "pkg:", "pkg.:a", "1pkg:a", "pkg:a:b", "pkg/mod:a", "pkg mod"]
)
def test_parse_ref_rejects(ref: str) -> None:
    with pytest.raises(InvalidPluginReference, match=re.escape(f"invalid reference {ref!r}")):
        parse_ref(ref)


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
dotted = st.lists(identifiers, min_size=1, max_size=4).map(".".join)


@given(module=dotted, attr=st.none() | dotted)
def test_parse_ref_round_trips(module: str, attr: str | None) -> None:
    ref = f"{module}:{attr}" if attr else module
    assert parse_ref(ref) == (module, attr)


@given(st.text(max_size=30))
def test_parse_ref_raises_only_invalid_plugin_reference(text: str) -> None:
    try:
        module, attr = parse_ref(text)
    except InvalidPluginReference as e:
        assert isinstance(e, SpecError)
        assert "\n" not in str(e).replace(repr(text), "")
    else:
        assert all(part.isidentifier() for part in module.split("."))
        assert attr is None or all(part.isidentifier() for part in attr.split("."))


def test_load_ref_imports_and_reports_failures() -> None:
    assert load_ref("torchx.specs.api:Resource") is Resource
    assert load_ref("torchx.specs.api") is sys.modules["torchx.specs.api"]
    with pytest.raises(
        PluginLoadError,
        match=re.escape("cannot import 'no_such_module_xyz' for 'no_such_module_xyz:f'"),
    ):
        load_ref("no_such_module_xyz:f")
    with pytest.raises(
        PluginLoadError,
        match=re.escape(
            "cannot load 'torchx.specs.api:Nope': 'torchx.specs.api' has no attribute 'Nope'"
        ),
    ):
        load_ref("torchx.specs.api:Nope")


# --- in-process: the registry --------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolated_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "inproc-cache"))
    reset_registry()
    yield
    reset_registry()


class SchedulerPlugin:
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    @hookimpl
    def torchx_schedulers(self) -> dict[str, str]:
        return self.names


def test_unknown_name_error_suggests_and_is_a_key_error() -> None:
    registry = build_registry(
        [SchedulerPlugin({"local": "x.y:f", "kubernetes": "x.k:f"})], entry_points=False
    )
    with pytest.raises(UnknownPluginEntry) as info:
        registry.scheduler_factory("locl")
    assert str(info.value) == (
        "unknown scheduler 'locl' (did you mean 'local'?); installed: kubernetes, local"
    )
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, SpecError)
    with pytest.raises(UnknownPluginEntry, match=r"unknown CLI command 'x'; installed: none$"):
        registry.cli_command("x")
    with pytest.raises(
        PluginError, match=re.escape("unknown plugin kind 'schedulers' (did you mean 'scheduler'?)")
    ):
        registry.get("schedulers", "local")  # type: ignore[arg-type]


def test_loading_a_missing_reference_names_the_entry_and_its_source() -> None:
    registry = build_registry(
        [SchedulerPlugin({"local": "no_such_mod_abc:create"})], entry_points=False
    )
    with pytest.raises(PluginLoadError) as info:
        registry.scheduler_factory("local")
    assert str(info.value).startswith(
        "cannot load scheduler 'local' from <in-process> SchedulerPlugin: cannot import 'no_such_mod_abc'"
    )


def test_in_process_plugins_clash_by_name_order() -> None:
    registry = build_registry(
        [SchedulerPlugin({"s": "b.mod:f"}), SchedulerPlugin({"s": "a.mod:f"})],
        entry_points=False,
    )
    # both are labelled "SchedulerPlugin": the first registered one wins, deterministically
    assert registry.schedulers["s"].ref == "b.mod:f"
    (clash,) = registry.clashes
    assert (clash.kind, clash.name, [e.ref for e in clash.losers]) == (
        "scheduler",
        "s",
        ["a.mod:f"],
    )
    assert str(clash) == (
        "scheduler 's' is provided by <in-process> SchedulerPlugin (<in-process>) and "
        "<in-process> SchedulerPlugin (<in-process>); using <in-process> SchedulerPlugin"
    )


def test_register_builtin_wins_over_installed_and_reset_forgets_it() -> None:
    assert get_registry().named_resources["gpu.small"].distribution == "torchx-specs"
    module = types.ModuleType("my_overrides")

    @hookimpl
    def torchx_named_resources() -> dict[str, Any]:
        return {"gpu.small": lambda: Resource(cpu=1, gpu=1, memMB=1)}

    module.torchx_named_resources = torchx_named_resources  # type: ignore[attr-defined]
    register_builtin(module)
    registry = get_registry()
    entry = registry.named_resources["gpu.small"]
    assert (entry.distribution, entry.group, entry.entry_point) == (
        None,
        "<in-process>",
        "my_overrides",
    )
    assert entry.load()().memMB == 1
    assert [(c.name, c.winner.group, c.losers[0].distribution) for c in registry.clashes] == [
        ("gpu.small", "<in-process>", "torchx-specs")
    ]
    assert get_registry() is registry  # cached
    reset_registry()
    assert get_registry().named_resources["gpu.small"].distribution == "torchx-specs"


def test_invalid_plugins_are_failures_not_errors() -> None:
    class Wrapper:
        @hookimpl(wrapper=True)
        def torchx_schedulers(self) -> Any:
            return (yield)

    class BadSignature:
        @hookimpl
        def torchx_components(self, unexpected: int) -> dict[str, str]:
            return {}

    class BadResource:
        @hookimpl
        def torchx_named_resources(self) -> dict[str, str]:
            return {"r": "just_a_module"}

    registry = build_registry(
        [Wrapper(), BadSignature(), BadResource(), SchedulerPlugin({"ok": "m:f"})],
        entry_points=False,
    )
    reasons = {f.entry_point: f.reason for f in registry.failures}
    assert reasons["Wrapper"] == "torchx_schedulers: hook wrappers are not supported"
    assert reasons["BadSignature"].startswith("cannot register plugin: PluginValidationError:")
    assert reasons["BadResource"] == (
        "torchx_named_resources() returned a bad value for 'r': reference 'just_a_module' "
        "names a module; expected 'package.module:attribute'"
    )
    assert list(registry.schedulers) == ["ok"]
    assert registry.named_resources == {}


def test_entry_describes_itself() -> None:
    entry = Entry("gpu.x", "named_resource", "pkg.res:x", "torchx-foo", "1.2", "torchx", "foo")
    assert str(entry) == "named resource 'gpu.x' = pkg.res:x (torchx-foo 1.2, torchx)"
    assert entry.ref == "pkg.res:x"
    assert not entry.is_group
    group = Entry(
        "_0@torchx-foo", "component", "pkg.comps", "torchx-foo", "1.2", "torchx.components", "_0"
    )
    assert group.is_group
    assert group.prefix == ""


class ComponentPlugin:
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    @hookimpl
    def torchx_components(self) -> dict[str, str]:
        return self.names


def test_component_groups_resolve_members_and_report_broken_modules() -> None:
    registry = build_registry(
        [
            ComponentPlugin(
                {
                    "specs": "torchx.specs.handles",  # a real module used as a group
                    "broken": "no_such_pkg_zzz",
                    "_flat": "no_such_pkg_yyy",
                    "_real": "torchx.specs.mounts",
                }
            )
        ],
        entry_points=False,
    )
    assert sorted(registry.components) == [
        "_flat@ComponentPlugin",
        "_real@ComponentPlugin",
        "broken",
        "specs",
    ]
    entry = registry.find_component("specs.parse_app_handle")
    assert (entry.name, entry.ref) == (
        "specs.parse_app_handle",
        "torchx.specs.handles:parse_app_handle",
    )
    assert registry.failures == ()
    # a prefix-less group that cannot be imported is skipped (and reported) ...
    assert registry.component("parse_mounts") is load_ref("torchx.specs.mounts:parse_mounts")
    assert [f.entry_point for f in registry.failures] == ["ComponentPlugin"]
    # ... while naming a broken group explicitly says what is wrong with it
    with pytest.raises(PluginLoadError, match="cannot load component group 'broken'"):
        registry.find_component("broken.anything")
    listed = registry.list_components()
    assert "specs.parse_app_handle" in listed
    assert not any(name.startswith("broken") for name in listed)
    reasons = sorted(f.reason for f in registry.failures)
    assert reasons == [
        "component module 'no_such_pkg_yyy' failed to import: "
        "ModuleNotFoundError: No module named 'no_such_pkg_yyy'",
        "component module 'no_such_pkg_zzz' failed to import: "
        "ModuleNotFoundError: No module named 'no_such_pkg_zzz'",
    ]


def test_using_the_registry_while_it_is_being_built_is_a_reported_failure() -> None:
    class Recursive:
        @hookimpl
        def torchx_schedulers(self) -> dict[str, str]:
            get_registry()
            return {"never": "m:f"}

    register_builtin(Recursive())
    registry = get_registry()
    assert "never" not in registry.schedulers
    (failure,) = [f for f in registry.failures if f.entry_point == "Recursive"]
    assert failure.reason.startswith(
        "torchx_schedulers() raised PluginError: the plugin registry was used while plugins "
        "are being loaded"
    )


def test_the_hook_table_is_the_one_source_of_kinds_and_labels() -> None:
    import inspect

    from torchx.specs import hookspecs, plugins

    specs = [
        name
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if name.startswith("torchx_")
    ]
    assert sorted(hookspecs.HOOKS) == sorted(specs), "every hookspec has a row in HOOKS"
    assert tuple(hookspecs.HOOKS) == hookspecs.HOOK_NAMES
    assert tuple(hook.kind for hook in hookspecs.HOOKS.values()) == plugins.KINDS
    assert dict(plugins.LABELS) == {h.kind: h.label for h in hookspecs.HOOKS.values()}
    assert plugins.IN_PROCESS == hookspecs.IN_PROCESS


def test_register_builtin_of_an_installed_plugins_own_module_is_no_failure() -> None:
    # a plugin's tests register its module in-process while the plugin is installed too
    import torchx.specs.builtin_plugin as installed

    register_builtin(installed)
    try:
        registry = get_registry()
        assert registry.failures == ()
        entry = registry.named_resources["gpu.small"]
        assert (entry.group, entry.entry_point) == ("<in-process>", "torchx.specs.builtin_plugin")
        assert registry.clashes == ()  # one module, registered once
    finally:
        reset_registry()
