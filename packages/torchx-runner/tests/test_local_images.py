"""The local scheduler's upstream surface: LocalScheduler(session_name, image_provider_class=...,
cache_size=..., extra_paths=...) and the image providers, used as upstream's docs show them."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.local.scheduler import (
    CWDImageProvider,
    ImageProvider,
    LocalDirectoryImageProvider,
    LocalScheduler,
    create_scheduler,
)
from torchx.specs import AppDef, AppState, Role, SpecError

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")


def _scheduler(state_dir: Path, **kwargs: object) -> Iterator[LocalScheduler]:
    sched = LocalScheduler("test", state_dir=str(state_dir), **kwargs)  # type: ignore[arg-type]
    yield sched
    for app in sched.list():
        sched.delete(app.app_id, force=True)


@pytest.fixture
def dir_sched(state_dir: Path) -> Iterator[LocalScheduler]:
    """As upstream's docs build it: ``image_provider_class=LocalDirectoryImageProvider``."""
    yield from _scheduler(state_dir, image_provider_class=LocalDirectoryImageProvider)


@pytest.fixture
def image(tmp_path: Path) -> Path:
    """An image directory holding an executable ``hello.sh`` (not on PATH)."""
    img = tmp_path / "img"
    img.mkdir()
    script = img / "hello.sh"
    script.write_text('#!/bin/sh\necho "hello $1 from $(pwd)"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return img


def _run_to_end(sched: LocalScheduler, app: AppDef) -> tuple[AppState, list[str]]:
    app_id = sched.submit(app, {})
    role = app.roles[0].name
    out = list(sched.log_iter(app_id, role, 0, should_tail=True, streams=Stream.STDOUT))
    desc = sched.describe(app_id)
    assert desc is not None
    return desc.state, out


def test_an_entrypoint_in_the_image_directory_runs(dir_sched: LocalScheduler, image: Path) -> None:
    app = AppDef("hi", [Role("r", image=str(image), entrypoint="hello.sh", args=["you"])])
    info = dir_sched.submit_dryrun(app, {})
    rep = info.request.roles[0].replicas[0]
    assert rep.entrypoint == str(image / "hello.sh")
    assert rep.cwd == str(image)
    state, out = _run_to_end(dir_sched, app)
    assert (state, out) == (AppState.SUCCEEDED, [f"hello you from {image}\n"])


def test_without_a_provider_the_same_entrypoint_is_looked_up_on_path(
    sched: LocalScheduler, image: Path
) -> None:
    """The default keeps running the entrypoint as given: ``hello.sh`` is not on PATH, so
    the app is refused when submitted (torchx.schedulers.local.programs)."""
    app = AppDef("hi", [Role("r", image=str(image), entrypoint="hello.sh")])
    assert sched.submit_dryrun(app, {}).request.roles[0].replicas[0].entrypoint == "hello.sh"
    with pytest.raises(SpecError, match=r"'hello\.sh' is not on the PATH its replicas get"):
        _run_to_end(sched, app)


def test_local_directory_provider_refuses_an_image_that_is_no_directory(
    dir_sched: LocalScheduler, tmp_path: Path
) -> None:
    app = AppDef("hi", [Role("r", image=str(tmp_path / "nope"), entrypoint="x")])
    with pytest.raises(SpecError, match="does not exist: LocalDirectoryImageProvider"):
        dir_sched.submit_dryrun(app, {})
    # upstream raises ValueError: code catching that still catches it
    with pytest.raises(ValueError):
        LocalDirectoryImageProvider({}).fetch(str(tmp_path / "nope"))


def test_cwd_provider_ignores_the_image(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for sched in _scheduler(state_dir, image_provider_class=CWDImageProvider):
        script = "pwd; echo ${img_root}"
        app = AppDef(
            "cwd", [Role("r", image="/no/such/image", entrypoint="sh", args=["-c", script])]
        )
        rep = sched.submit_dryrun(app, {}).request.roles[0].replicas[0]
        assert (rep.cwd, rep.entrypoint) == (str(tmp_path), "sh")
        assert rep.args[1] == f"pwd; echo {tmp_path}"
        state, out = _run_to_end(sched, app)
        assert (state, out) == (AppState.SUCCEEDED, [f"{tmp_path}\n", f"{tmp_path}\n"])


class _Fetched(ImageProvider):
    """A provider of one's own: "fetches" an image by making a directory for it."""

    def __init__(self, cfg: object) -> None:
        self.cfg = cfg

    def fetch(self, image: str) -> str:
        root = os.path.join(os.environ["FETCH_ROOT"], image.replace("/", "_"))
        os.makedirs(root, exist_ok=True)
        return root


def test_a_provider_of_ones_own_is_made_from_the_run_options(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FETCH_ROOT", str(tmp_path / "fetched"))
    made: list[object] = []

    def factory(cfg: object) -> ImageProvider:
        made.append(cfg)
        return _Fetched(cfg)

    for sched in _scheduler(state_dir, image_provider_class=factory):
        app = AppDef("own", [Role("r", image="repo/img:1", entrypoint="pwd")])
        state, out = _run_to_end(sched, app)
        root = tmp_path / "fetched" / "repo_img:1"
        assert (state, out) == (AppState.SUCCEEDED, [f"{root}\n"])
        # made from the run options as resolved (defaults filled in), once per dry run
        assert len(made) == 1 and made[0]["grace_period"] == 10.0  # type: ignore[index]


def test_extra_paths_come_first_on_path(state_dir: Path, image: Path) -> None:
    for sched in _scheduler(state_dir, extra_paths=[str(image)]):
        app = AppDef("ep", [Role("r", image="/", entrypoint="hello.sh", args=["path"])])
        state, out = _run_to_end(sched, app)
        assert (state, out) == (AppState.SUCCEEDED, ["hello path from /\n"])
        rep = sched.submit_dryrun(app, {}).request.roles[0].replicas[0]
        assert rep.env["PATH"].split(os.pathsep)[0] == str(image)


def test_cache_size_is_checked_and_kept(state_dir: Path) -> None:
    assert LocalScheduler("s", cache_size=5, state_dir=str(state_dir)).cache_size == 5
    for bad in (0, -1):
        with pytest.raises(ValueError, match="cache_size must be a whole number > 0"):
            LocalScheduler("s", cache_size=bad)


def test_the_factory_passes_upstreams_arguments_on(state_dir: Path) -> None:
    sched = create_scheduler(
        "s",
        image_provider_class=LocalDirectoryImageProvider,
        cache_size=7,
        extra_paths=["/opt/x"],
        state_dir=str(state_dir),
    )
    assert sched.image_provider_class is LocalDirectoryImageProvider
    assert (sched.cache_size, sched.extra_paths) == (7, ["/opt/x"])
