"""DirWorkspaceMixin and walk_workspace: a workspace copied into a job directory."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs import AppDef, AppDryRunInfo, CfgVal, InvalidRunConfigException, Role, Workspace
from torchx.workspace import walk_workspace
from torchx.workspace.dir_workspace import DirWorkspaceMixin, copy_workspace


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _walked(root: Path) -> list[str]:
    out = []
    for rel, dirnames, filenames in walk_workspace(str(root)):
        out += [f"{rel}/{n}".lstrip("/") + "/" for n in dirnames]
        out += [f"{rel}/{n}".lstrip("/") for n in filenames]
    return sorted(out)


def test_walk_without_ignore_file_lists_everything_sorted(tmp_path: Path) -> None:
    _tree(tmp_path, {"b.py": "", "a/x.py": "", "a/y/z.txt": ""})
    walked = list(walk_workspace(str(tmp_path)))
    assert walked == [("", ["a"], ["b.py"]), ("a", ["y"], ["x.py"]), ("a/y", [], ["z.txt"])]


def test_walk_honours_the_ignore_file(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            ".torchxignore": "# comment\n\n*.pyc\n__pycache__\n/build\ndata/raw\nout/\n"
            "*.log\n!keep.log\n",
            "train.py": "",
            "train.pyc": "",
            "pkg/__pycache__/m.cpython.pyc": "",
            "pkg/mod.py": "",
            "pkg/build/keep.py": "",  # '/build' is anchored: only the top-level one goes
            "build/artifact": "",
            "data/raw/big.bin": "",
            "data/clean.csv": "",
            "out": "",  # a file named like a dir-only pattern stays
            "sub/out/x": "",
            "a.log": "",
            "keep.log": "",
        },
    )
    assert _walked(tmp_path) == [
        ".torchxignore",
        "data/",
        "data/clean.csv",
        "keep.log",
        "out",
        "pkg/",
        "pkg/build/",
        "pkg/build/keep.py",
        "pkg/mod.py",
        "sub/",
        "train.py",
    ]


def test_nothing_inside_an_ignored_directory_comes_back(tmp_path: Path) -> None:
    _tree(tmp_path, {".torchxignore": "venv\n!venv/keep\n", "venv/keep": "", "main.py": ""})
    assert _walked(tmp_path) == [".torchxignore", "main.py"]


def test_walk_lists_symlinks_without_following_them(tmp_path: Path) -> None:
    _tree(tmp_path / "ws", {"real/f": "", "file": ""})
    (tmp_path / "ws" / "dirlink").symlink_to(tmp_path / "ws" / "real")
    (tmp_path / "ws" / "filelink").symlink_to("file")
    assert _walked(tmp_path / "ws") == ["dirlink/", "file", "filelink", "real/", "real/f"]


class DirScheduler(DirWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """A minimal scheduler with a directory workspace: schedule records the request."""

    def __init__(self) -> None:
        super().__init__("dirsched", "test")
        self.scheduled: list[AppDef] = []

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        return AppDryRunInfo({"cwd": app.roles[0].image}, str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        self.scheduled.append(dryrun_info.app)
        return "app"

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        return None

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        return []

    def _cancel_existing(self, app_id: str) -> None:
        pass


def _app() -> AppDef:
    from torchx.specs import resource

    return AppDef("a", [Role("r", image="orig", entrypoint="python", resource=resource())])


def test_job_dir_is_a_run_option() -> None:
    opts = DirScheduler().run_opts()
    assert opts.get("job_dir") is not None and opts.get("job_dir").default is None  # type: ignore[union-attr]


def test_submit_copies_the_workspace_into_the_job_dir(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _tree(ws, {".torchxignore": "*.ckpt\n", "train.py": "print(1)", "m.ckpt": "x", "lib/u.py": ""})
    os.chmod(ws / "train.py", 0o755)
    job_dir = tmp_path / "jobs" / "1"
    sched = DirScheduler()
    sched.submit(_app(), {"job_dir": str(job_dir)}, workspace=str(ws))
    assert sorted(p.relative_to(job_dir).as_posix() for p in job_dir.rglob("*")) == [
        ".torchxignore",
        "lib",
        "lib/u.py",
        "train.py",
    ]
    assert (job_dir / "train.py").read_text() == "print(1)"
    assert os.stat(job_dir / "train.py").st_mode & 0o777 == 0o755
    assert sched.scheduled[0].roles[0].image == str(job_dir)


def test_dryrun_creates_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _tree(ws, {"train.py": ""})
    job_dir = tmp_path / "job"
    info = DirScheduler().prepare(_app(), {"job_dir": str(job_dir)}, workspace=str(ws), dryrun=True)
    assert not job_dir.exists() and info.needs_workspace_build
    # the request already names where the copy will be (plan_workspaces)
    assert info.request == {"cwd": str(job_dir)}


def test_building_a_dryrun_keeps_its_request(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _tree(ws, {"train.py": ""})
    job_dir = tmp_path / "job"
    sched = DirScheduler()
    info = sched.prepare(_app(), {"job_dir": str(job_dir)}, workspace=str(ws), dryrun=True)
    built = sched.build_workspaces_of(info)
    assert (job_dir / "train.py").exists() and not built.needs_workspace_build
    assert built.request is info.request and built.app.roles[0].image == str(job_dir)
    assert info.needs_workspace_build  # the dry run's info is as it was


def test_a_dryrun_without_job_dir_plans_nothing(tmp_path: Path) -> None:
    sched = DirScheduler()
    info = sched.prepare(_app(), {}, workspace=str(tmp_path), dryrun=True)
    assert info.request == {"cwd": "orig"} and info.needs_workspace_build
    assert sched.build_workspaces_of(info).request is info.request


def test_without_job_dir_nothing_is_copied(tmp_path: Path) -> None:
    sched = DirScheduler()
    sched.submit(_app(), {}, workspace=str(tmp_path))
    assert sched.scheduled[0].roles[0].image == "orig"


def test_an_existing_job_dir_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "theirs").write_text("keep")
    with pytest.raises(InvalidRunConfigException) as e:
        DirScheduler().submit(_app(), {"job_dir": str(tmp_path / "job")}, workspace=str(tmp_path))
    assert "exists already" in str(e.value) and "\n" not in str(e.value)
    assert (tmp_path / "job" / "theirs").read_text() == "keep"


def test_a_failed_copy_removes_the_job_dir(tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    with pytest.raises(ValueError, match="does not exist"):
        DirScheduler().submit(
            _app(), {"job_dir": str(job_dir)}, workspace=str(tmp_path / "missing")
        )
    assert not job_dir.exists()


def test_a_job_dir_inside_the_workspace_is_not_copied_into_itself(tmp_path: Path) -> None:
    _tree(tmp_path, {"train.py": ""})
    job_dir = tmp_path / "runs" / "1"
    DirScheduler().submit(_app(), {"job_dir": str(job_dir)}, workspace=str(tmp_path))
    assert sorted(p.name for p in job_dir.iterdir()) == ["runs", "train.py"]
    assert list((job_dir / "runs").iterdir()) == []


def test_a_scheduler_leaves_out_its_own_files_from_the_copy(tmp_path: Path) -> None:
    _tree(tmp_path / "ws", {"train.py": "", "job.log": "", "old/state": "", "old/x.py": ""})
    seen: list[tuple[str, bool]] = []

    class Leaving(DirScheduler):
        def workspace_leaves_out(self, path: str, is_dir: bool) -> bool:
            seen.append((os.path.relpath(path, tmp_path / "ws"), is_dir))
            return path.endswith(".log") or os.path.exists(os.path.join(path, "state"))

    job_dir = tmp_path / "job"
    Leaving().submit(_app(), {"job_dir": str(job_dir)}, workspace=str(tmp_path / "ws"))
    assert sorted(p.name for p in job_dir.iterdir()) == ["train.py"]
    # asked with absolute paths, each once; nothing inside a left-out directory
    assert sorted(seen) == [("job.log", False), ("old", True), ("train.py", False)]


def test_copy_workspace_maps_projects_to_subdirectories(tmp_path: Path) -> None:
    _tree(tmp_path / "a", {"x.py": "a"})
    _tree(tmp_path / "b", {"y.py": "b", ".torchxignore": "y.py\n"})
    (tmp_path / "single.txt").write_text("s")
    dest = tmp_path / "dest"
    dest.mkdir()
    ws = Workspace(
        {str(tmp_path / "a"): "", str(tmp_path / "b"): "lib/b", str(tmp_path / "single.txt"): "f"}
    )
    copy_workspace(ws, str(dest))
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "f/single.txt",
        "lib/b/.torchxignore",
        "x.py",
    ]


_NAMES = st.text("abc.", min_size=1, max_size=3).filter(lambda n: n not in (".", ".."))
_PATTERNS = st.one_of(_NAMES, st.sampled_from(["*", "a*", "*c", "?", "[ab]*", "*.*"]))


@settings(max_examples=60, deadline=None)
@given(
    names=st.sets(_NAMES, min_size=1, max_size=6),
    rules=st.lists(st.tuples(st.booleans(), _PATTERNS), max_size=6),
)
def test_the_last_matching_ignore_line_decides(
    tmp_path_factory: pytest.TempPathFactory, names: set[str], rules: list[tuple[bool, str]]
) -> None:
    """Property: a file is left out iff the last ignore line matching its name is not '!'."""
    from fnmatch import fnmatchcase

    root = tmp_path_factory.mktemp("ws")
    for name in names:
        (root / name).write_text("")
    text = "".join(f"{'!' if negated else ''}{pattern}\n" for negated, pattern in rules)
    (root / ".torchxignore").write_text(text)
    expected = []
    for name in sorted({*names, ".torchxignore"}):
        ignored = False
        for negated, pattern in rules:
            if fnmatchcase(name, pattern):
                ignored = not negated
        if not ignored:
            expected.append(name)
    ((rel, dirnames, filenames),) = list(walk_workspace(str(root)))
    assert (rel, dirnames, filenames) == ("", [], expected)
