"""The built-in components' default image ``"."`` is refused by a container scheduler's dry run.

``"."`` names the launch directory (where the local scheduler runs the job); a
scheduler that declares ``runs_container_images`` would pass it on as an image name
no registry has. The Runner refuses it in one line naming ``--image``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.components import DEFAULT_IMAGE
from torchx.runner import InvalidAppError, Runner
from torchx.schedulers.contract.api import Scheduler
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.specs import AppDef, Role


class ContainerScheduler(LocalScheduler):
    """The local scheduler, declared to run container images (only the flag matters)."""

    runs_container_images = True


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Runner]:
    def containers(session_name: str, **_: Any) -> LocalScheduler:
        return ContainerScheduler(session_name, state_dir=str(tmp_path / "c"))

    def local(session_name: str, **_: Any) -> LocalScheduler:
        return LocalScheduler(session_name, state_dir=str(tmp_path / "l"))

    with Runner("s", {"containers": containers, "local": local}) as r:
        yield r


def app(image: str) -> AppDef:
    return AppDef("a", [Role("worker", image, entrypoint="echo", args=["hi"])])


def test_the_default_is_the_launch_directory_and_no_scheduler_runs_images_unless_it_says_so() -> (
    None
):
    assert DEFAULT_IMAGE == "."
    assert Scheduler.runs_container_images is False
    assert LocalScheduler.runs_container_images is False


def test_a_container_scheduler_refuses_the_default_image_in_one_line(runner: Runner) -> None:
    with pytest.raises(InvalidAppError) as caught:
        runner.dryrun(app("."), "containers")
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        "role 'worker' has image '.' (the launch directory, the built-in components' "
        "default), but scheduler 'containers' runs container images: pass one with "
        "--image (e.g. --image python:3.12)"
    )


def test_a_components_default_is_refused_before_anything_is_submitted(runner: Runner) -> None:
    with pytest.raises(InvalidAppError, match="pass one with --image"):
        runner.run_component("utils.echo", ["--msg", "hi"], "containers")
    assert runner.list("containers") == []


def test_a_given_image_passes_and_the_local_scheduler_keeps_the_default(
    runner: Runner, tmp_path: Path
) -> None:
    # the stand-in is the local scheduler underneath: the image it is given is a directory
    info = runner.dryrun(app(str(tmp_path)), "containers")
    assert info.app.roles[0].image == str(tmp_path)
    info = runner.dryrun_component("utils.echo", ["--msg", "hi"], "local")
    assert info.app.roles[0].image == "."
