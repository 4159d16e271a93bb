"""torchx-lsf is found like any plugin: the ``torchx`` entry point, cheap to import."""

from __future__ import annotations

import pytest
from torchx_lsf.scheduler import LsfScheduler

from torchx.schedulers.testing.registration import PluginRegistration, modules_after
from torchx.specs.plugins import get_registry


class TestRegistration(PluginRegistration):
    name = "lsf"
    plugin_module = "torchx_lsf.plugin"
    schedulers = {"lsf": "torchx_lsf.scheduler:create_scheduler"}
    scheduler_classes = {"lsf": LsfScheduler}
    heavy = ("attrs", "subprocess")


def test_the_registry_creates_the_lsf_scheduler_of_its_backend() -> None:
    assert get_registry().scheduler_factory("lsf")("sess").backend == "lsf"


def test_following_an_app_never_imports_the_request_builder(fake_lsf: object) -> None:
    """status, log and cancel import what they use: not the bsub command builder."""
    loaded = modules_after(
        "from torchx_lsf.scheduler import create_scheduler\n"
        "assert create_scheduler('t').describe('app-x') is None"
    )
    assert "torchx_lsf.scheduler" in loaded
    assert not {"torchx_lsf.request", "torchx.specs.templating", "shlex"} & set(loaded)


@pytest.mark.parametrize("scheduler", ["lsf"])
def test_the_components_default_image_is_refused_at_dry_run(scheduler: str) -> None:
    """The built-ins' image ``"."`` (the launch directory) is no container image: one line."""
    from torchx.runner import InvalidAppError, get_runner

    with get_runner() as runner, pytest.raises(InvalidAppError) as caught:
        runner.dryrun_component("utils.echo", ["--msg", "hi"], scheduler)
    assert str(caught.value).endswith(
        f"but scheduler '{scheduler}' runs container images: pass one with --image "
        "(e.g. --image python:3.12)"
    )
