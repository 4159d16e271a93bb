""".torchxconfig: lookup and precedence, typed scheduler sections, errors, writing."""

from __future__ import annotations

import configparser
import io
import logging
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.runner import config
from torchx.runner.config import ConfigError
from torchx.specs import runopts


def opts() -> runopts:
    o = runopts()
    o.add("queue", type_=str, default="default", help="the queue")
    o.add("priority", type_=int, default=0, help="job priority")
    o.add("preemptible", type_=bool, default=False, help="may be preempted")
    o.add("tags", type_=list[str], default=["a"], help="job tags")
    o.add("labels", type_=dict[str, str], help="job labels")
    o.add("cluster_id", type_=int, required=True, help="the cluster\n  (multi-line help)")
    return o


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """home/ and home/proj/sub/ (the cwd); no TORCHXCONFIG."""
    home = tmp_path / "home"
    sub = home / "proj" / "sub"
    sub.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv(config.ENV_TORCHXCONFIG, raising=False)
    monkeypatch.chdir(sub)
    yield {"home": home, "proj": home / "proj", "sub": sub, "tmp": tmp_path}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- lookup --------------------------------------------------------------------------


def test_no_config_files(dirs: dict[str, Path]) -> None:
    assert config.find_configs() == []
    assert config.get_scheduler_cfg("fake", opts()) == {}
    assert config.get_component_defaults() == {}
    assert config.get_cli_run_defaults() == {}


def test_no_config_file_lookup_imports_no_pathlib(dirs: dict[str, Path]) -> None:
    """Most commands run where there is no config file: finding none loads no pathlib
    (nor the urllib.parse it imports), which ``torchx run`` would otherwise pay for."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from torchx.runner import config\n"
        "assert config.find_configs() == [] and config.get_cli_run_defaults() == {}\n"
        "print(sorted(m for m in ('pathlib', 'urllib.parse') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_symlinked_config_is_found_as_pathlib_names_it(dirs: dict[str, Path]) -> None:
    """The lookup without pathlib (no file) and with it (a file found) agree on the path."""
    target = write(dirs["tmp"] / "elsewhere.cfg", "[fake]\nqueue = linked\n")
    (dirs["proj"] / ".torchxconfig").symlink_to(target)
    assert config.find_configs() == [str(dirs["proj"] / ".torchxconfig")]
    assert config.get_scheduler_cfg("fake", opts()) == {"queue": "linked"}


def test_nearest_upward_then_home(dirs: dict[str, Path]) -> None:
    home = write(dirs["home"] / ".torchxconfig", "[fake]\nqueue = home\npriority = 1\n")
    proj = write(dirs["proj"] / ".torchxconfig", "[fake]\nqueue = proj\n")
    assert config.find_configs() == [str(proj), str(home)]
    assert config.get_scheduler_cfg("fake", opts()) == {"queue": "proj", "priority": 1}
    # only the nearest project file counts, not every parent
    sub = write(dirs["sub"] / ".torchxconfig", "[fake]\ntags = x,y\n")
    assert config.find_configs() == [str(sub), str(home)]
    assert config.get_scheduler_cfg("fake", opts()) == {
        "tags": ["x", "y"],
        "queue": "home",
        "priority": 1,
    }


def test_home_found_once_when_it_is_also_the_nearest(dirs: dict[str, Path]) -> None:
    home = write(dirs["home"] / ".torchxconfig", "[fake]\nqueue = home\n")
    assert config.find_configs() == [str(home)]
    assert config.find_configs(cwd=dirs["tmp"]) == [str(home)]  # outside home: home still read


def test_torchxconfig_env_is_the_only_file(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(dirs["home"] / ".torchxconfig", "[fake]\nqueue = home\npriority = 1\n")
    explicit = write(dirs["tmp"] / "my.ini", "[fake]\nqueue = env\n")
    monkeypatch.setenv(config.ENV_TORCHXCONFIG, str(explicit))
    assert config.find_configs() == [str(explicit)]
    assert config.get_scheduler_cfg("fake", opts()) == {"queue": "env"}
    monkeypatch.setenv(config.ENV_TORCHXCONFIG, "missing.ini")
    with pytest.raises(ConfigError, match=r"TORCHXCONFIG=missing\.ini names no file"):
        config.find_configs()


def test_upstream_dirs_are_read_in_order_the_first_winning(dirs: dict[str, Path]) -> None:
    # upstream's calls: config.apply(scheduler, cfg, dirs=[...]) and friends
    write(dirs["home"] / ".torchxconfig", "[fake]\nqueue = home\n")
    one = write(dirs["tmp"] / "one" / ".torchxconfig", "[fake]\nqueue = one\n[cli:run]\nx = 1\n")
    two = write(
        dirs["tmp"] / "two" / ".torchxconfig",
        "[fake]\nqueue = two\npriority = 2\n[cli:run]\nx = 2\ny = 2\n",
    )
    empty = dirs["tmp"] / "none"
    empty.mkdir()
    chosen = [str(empty), str(one.parent), str(two.parent)]
    assert config.find_configs(dirs=chosen) == [str(one), str(two)]
    assert config.find_configs(chosen[::-1]) == [str(two), str(one)]
    assert all(isinstance(p, str) for p in config.find_configs())
    cfg: dict[str, Any] = {}
    config.apply("fake", cfg, dirs=chosen, run_opts=opts())
    assert cfg == {"queue": "one", "priority": 2}  # neither home nor the project file
    assert config.get_configs("cli", "run", dirs=chosen) == {"x": "1", "y": "2"}
    assert config.get_config("cli", "run", "y", dirs=chosen) == "2"
    assert config.load_sections("cli", dirs=[str(two.parent)]) == {"run": {"x": "2", "y": "2"}}
    # no dirs (or an empty list), as upstream: the usual files
    assert config.find_configs(dirs=[]) == config.find_configs()


def test_apply_explicit_wins(dirs: dict[str, Path]) -> None:
    write(dirs["proj"] / ".torchxconfig", "[fake]\nqueue = proj\npriority = 4\ncluster_id = 9\n")
    cfg: dict[str, Any] = {"clusterId": 1, "queue": None}
    config.apply("fake", cfg, run_opts=opts())
    assert cfg == {"clusterId": 1, "queue": "proj", "priority": 4}


def test_reread_after_change(dirs: dict[str, Path]) -> None:
    path = write(dirs["sub"] / ".torchxconfig", "[fake]\nqueue = one\n")
    assert config.get_scheduler_cfg("fake", opts())["queue"] == "one"
    path.write_text("[fake]\nqueue = second\n")
    assert config.get_scheduler_cfg("fake", opts())["queue"] == "second"


# --- typed values and errors ---------------------------------------------------------


def test_values_are_cast(dirs: dict[str, Path]) -> None:
    write(
        dirs["sub"] / ".torchxconfig",
        "[fake]\nqueue = q\npriority = 3\npreemptible = yes\ntags = a;b\nlabels = t:ml,e:prod\nclusterId = 5\n",
    )
    assert config.get_scheduler_cfg("fake", opts()) == {
        "queue": "q",
        "priority": 3,
        "preemptible": True,
        "tags": ["a", "b"],
        "labels": {"t": "ml", "e": "prod"},
        "cluster_id": 5,
    }


def test_bad_key_names_file_section_key(dirs: dict[str, Path]) -> None:
    path = write(dirs["proj"] / ".torchxconfig", "[fake]\npriorty = 3\n")
    with pytest.raises(ConfigError) as e:
        config.get_scheduler_cfg("fake", opts())
    assert str(e.value).startswith(
        f"{path}: [fake] unknown key 'priorty' (did you mean 'priority'?)"
    )
    assert "valid keys: queue, priority" in str(e.value)


def test_bad_key_in_farther_file_is_still_an_error(dirs: dict[str, Path]) -> None:
    write(dirs["sub"] / ".torchxconfig", "[fake]\nqueue = q\n")
    home = write(dirs["home"] / ".torchxconfig", "[fake]\nnope = 1\n")
    with pytest.raises(ConfigError, match=f"{home}: \\[fake\\] unknown key 'nope'"):
        config.get_scheduler_cfg("fake", opts())


def test_bad_value_names_file_section_key(dirs: dict[str, Path]) -> None:
    path = write(dirs["sub"] / ".torchxconfig", "[fake]\npriority = high\n")
    with pytest.raises(ConfigError) as e:
        config.get_scheduler_cfg("fake", opts())
    assert str(e.value) == (
        f"{path}: [fake] key 'priority': run option 'priority' expects an int (e.g. 3), got 'high'"
    )


def test_same_option_twice_under_two_spellings(dirs: dict[str, Path]) -> None:
    write(dirs["sub"] / ".torchxconfig", "[fake]\ncluster_id = 1\nclusterId = 2\n")
    with pytest.raises(ConfigError, match="key 'clusterId' sets 'cluster_id' again"):
        config.get_scheduler_cfg("fake", opts())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("queue = x\n", "line 1 is outside any section"),
        ("[fake]\nqueue = 1\nqueue = 2\n", r"\[fake\] key 'queue' is set twice \(line 3\)"),
        ("[fake]\n[fake]\n", r"section \[fake\] appears twice"),
        ("[fake]\nnot a pair\n", "line 2 is not 'key = value'"),
    ],
)
def test_malformed_files(dirs: dict[str, Path], text: str, message: str) -> None:
    path = write(dirs["sub"] / ".torchxconfig", text)
    with pytest.raises(ConfigError, match=message) as e:
        config.get_scheduler_cfg("fake", opts())
    assert str(e.value).startswith(str(path))


def test_uninstalled_scheduler_section_is_ignored(
    dirs: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    path = write(
        dirs["sub"] / ".torchxconfig",
        "[fake]\nqueue = q\n[notinstalled]\nanything = goes\n[cli:run]\nscheduler = fake\n",
    )
    with caplog.at_level(logging.DEBUG, logger="torchx.runner.config"):
        cfg = config.get_scheduler_cfg("fake", opts(), installed=["fake"])
    assert cfg == {"queue": "q"}
    notes = [r.getMessage() for r in caplog.records]
    assert notes == [
        f"{path}: ignoring section [notinstalled]: no scheduler of that name is installed"
    ]


def test_sections_of_a_schedulers_other_names_apply_below_its_own(dirs: dict[str, Path]) -> None:
    write(dirs["home"] / ".torchxconfig", "[fake]\npriority = 1\n")
    write(
        dirs["sub"] / ".torchxconfig",
        "[fake_alias]\nqueue = from_alias\npriority = 7\npreemptible = yes\n[fake]\nqueue = own\n",
    )
    got = config.get_scheduler_cfg("fake", opts(), aliases=["fake_alias"])
    # own section first, then the alias's, in the nearer file; the farther file after
    assert got == {"queue": "own", "priority": 7, "preemptible": True}
    assert config.get_scheduler_cfg("fake", opts(), aliases=[]) == {"queue": "own", "priority": 1}
    write(dirs["sub"] / ".torchxconfig", "[fake_alias]\nqueeu = x\n")
    with pytest.raises(ConfigError, match=r"\[fake_alias\] unknown key 'queeu'"):
        config.get_scheduler_cfg("fake", opts(), aliases=["fake_alias"])


def test_local_and_local_cwd_are_one_scheduler_to_the_config(dirs: dict[str, Path]) -> None:
    assert config.scheduler_aliases("local") == ["local_cwd"]
    assert config.scheduler_aliases("local_cwd") == ["local"]
    assert config.scheduler_aliases("zz_not_installed") == []
    write(dirs["sub"] / ".torchxconfig", "[local_cwd]\ngrace_period = 3\n")
    cfg: dict[str, Any] = {}
    config.apply("local", cfg)
    assert cfg == {"grace_period": 3.0}


def test_apply_for_a_scheduler_that_is_not_installed(dirs: dict[str, Path]) -> None:
    write(dirs["sub"] / ".torchxconfig", "[zz_not_installed]\nx = 1\n")
    cfg: dict[str, Any] = {}
    config.apply("zz_not_installed", cfg)
    assert cfg == {}


# --- other sections ------------------------------------------------------------------


def test_component_and_cli_sections(dirs: dict[str, Path]) -> None:
    write(
        dirs["home"] / ".torchxconfig",
        "[cli:run]\nscheduler = slurm\nworkspace = ~/ws\n"
        "[component:dist.ddp]\nj = 1x1\nimage = home-img\n[component:utils.echo]\nmsg = hi\n",
    )
    write(
        dirs["sub"] / ".torchxconfig",
        "[cli:run]\nscheduler = local\n[component:dist.ddp]\nj = 2x8\n",
    )
    assert config.get_cli_run_defaults() == {"scheduler": "local", "workspace": "~/ws"}
    assert config.get_component_defaults() == {
        "dist.ddp": {"j": "2x8", "image": "home-img"},
        "utils.echo": {"msg": "hi"},
    }
    assert config.get_configs("component", "dist.ddp") == {"j": "2x8", "image": "home-img"}
    assert config.get_config("cli", "run", "scheduler") == "local"
    assert config.get_config("cli", "run", "nope") is None
    assert config.load_sections("cli") == {"run": {"scheduler": "local", "workspace": "~/ws"}}


def test_keys_keep_their_case(dirs: dict[str, Path]) -> None:
    write(dirs["sub"] / ".torchxconfig", "[component:c]\nMyArg = 1\n")
    assert config.get_component_defaults() == {"c": {"MyArg": "1"}}


def test_load_one_stream() -> None:
    f = io.StringIO("[fake]\nqueue = s\npriority = 2\n[other]\nx = 1\n")
    cfg: dict[str, Any] = {"priority": 9}
    config.load("fake", f, cfg, run_opts=opts())
    assert cfg == {"priority": 9, "queue": "s"}


# --- writing -------------------------------------------------------------------------


def test_dump_parses_back(dirs: dict[str, Path]) -> None:
    out = io.StringIO()
    config.dump(out, ["fake", "empty"], run_opts={"fake": opts(), "empty": runopts()})
    text = out.getvalue()
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    assert parser.sections() == ["fake", "empty"]
    assert dict(parser["fake"]) == {"cluster_id": "#FIXME:(int) the cluster (multi-line help)"}
    assert "#tags = a\n" in text and "# labels (dict[str, str], no default): job labels" in text

    path = write(dirs["sub"] / ".torchxconfig", text)
    with pytest.raises(ConfigError, match=r"\[fake\] key 'cluster_id' is still the placeholder"):
        config.get_scheduler_cfg("fake", opts())
    path.write_text(
        text.replace("#FIXME:(int) the cluster (multi-line help)", "12").replace("#tags", "tags")
    )
    assert config.get_scheduler_cfg("fake", opts()) == {"cluster_id": 12, "tags": ["a"]}


def test_dump_required_only() -> None:
    out = io.StringIO()
    config.dump(out, run_opts={"fake": opts()}, required_only=True)
    body = out.getvalue().split("[fake]\n", 1)[1]
    assert (
        body == "# cluster_id (int, required): the cluster (multi-line help)\n"
        "cluster_id = #FIXME:(int) the cluster (multi-line help)\n"
    )


def test_dump_unknown_scheduler() -> None:
    with pytest.raises(
        ConfigError, match="scheduler 'locl': it is not installed \\(did you mean 'local'\\?\\)"
    ):
        config.dump(io.StringIO(), ["locl"])


def test_dump_installed_schedulers_through_the_registry() -> None:
    from torchx.specs.hookspecs import hookimpl
    from torchx.specs.plugins import register_builtin, reset_registry

    class Plugin:
        @hookimpl
        def torchx_schedulers(self) -> Mapping[str, str]:
            return {"zzfake": f"{_FakeSched.__module__}:create_fake"}

    reset_registry()
    try:
        register_builtin(Plugin())
        import sys

        sys.modules[_FakeSched.__module__].create_fake = _FakeSched  # type: ignore[attr-defined]
        out = io.StringIO()
        config.dump(out, ["zzfake"])
        assert (
            "[zzfake]\n# queue (str, default default): the queue\n#queue = default\n"
            in out.getvalue()
        )
        cfg: dict[str, Any] = {}
        config.apply("zzfake", cfg, cwd=None)  # no file: nothing added
        assert cfg == {}
    finally:
        reset_registry()


class _FakeSched:
    def __init__(self, session_name: str, **kwargs: Any) -> None:
        self.session_name = session_name

    def run_opts(self) -> runopts:
        o = runopts()
        o.add("queue", type_=str, default="default", help="the queue")
        return o

    def close(self) -> None:
        pass


def test_write_config_atomic_and_no_overwrite(dirs: dict[str, Path]) -> None:
    target = dirs["sub"] / ".torchxconfig"
    written = config.write_config(target, ["fake"], run_opts={"fake": opts()})
    assert written == target
    assert "[fake]" in target.read_text()
    assert sorted(p.name for p in dirs["sub"].iterdir()) == [".torchxconfig"]  # no temp file left
    with pytest.raises(ConfigError, match="already exists: pass overwrite=True"):
        config.write_config(target, ["fake"], run_opts={"fake": opts()})
    config.write_config(target, ["other"], overwrite=True, run_opts={"other": runopts()})
    assert "[other]" in target.read_text() and "[fake]" not in target.read_text()


def test_write_config_failure_leaves_nothing(dirs: dict[str, Path]) -> None:
    class Broken(runopts):
        def __iter__(self) -> Any:
            raise RuntimeError("boom")

    target = dirs["sub"] / ".torchxconfig"
    with pytest.raises(RuntimeError):
        config.write_config(target, ["x"], run_opts={"x": Broken()})
    assert list(dirs["sub"].iterdir()) == []


_text = (
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
        min_size=1,
        max_size=20,
    )
    .map(str.strip)
    .filter(
        lambda s: s and not s.startswith("#") and "," not in s and ";" not in s and ":" not in s
    )
)


@given(
    queue=_text,
    priority=st.integers(-(10**9), 10**9),
    flag=st.booleans(),
    tags=st.lists(_text, min_size=1, max_size=4),
    labels=st.dictionaries(_text, _text, min_size=1, max_size=3),
)
def test_dumped_defaults_read_back(
    queue: str, priority: int, flag: bool, tags: list[str], labels: dict[str, str]
) -> None:
    o = runopts()
    o.add("queue", type_=str, default=queue, help="q")
    o.add("priority", type_=int, default=priority, help="p")
    o.add("flag", type_=bool, default=flag, help="f")
    o.add("tags", type_=list[str], default=tags, help="t")
    o.add("labels", type_=dict[str, str], default=labels, help="l")
    out = io.StringIO()
    config.dump(out, ["s"], run_opts={"s": o})
    body = out.getvalue().split("[s]\n", 1)[1]
    # uncomment the default lines (#NAME = VALUE), not the help lines above them, which
    # may hold " = " too: "# queue (str, default = 0): q" for a default of "= 0"
    uncommented = "[s]\n" + "\n".join(
        line[1:] if re.match(r"#[A-Za-z_]\w* = ", line) else line for line in body.splitlines()
    )
    layer = config.ConfigLayer(Path("x"), config._parse(uncommented, "x"))
    values = {k: v for k, (_, v) in config._cast_section(layer, "s", o).items()}
    assert values == {
        "queue": queue,
        "priority": priority,
        "flag": flag,
        "tags": tags,
        "labels": labels,
    }
