"""torchx-slurm is found like any plugin: the ``torchx`` entry point, cheap to import."""

from __future__ import annotations

from torchx_slurm.scheduler import SlurmScheduler

from torchx.schedulers.testing.registration import PluginRegistration, modules_after
from torchx.specs.plugins import get_registry


class TestRegistration(PluginRegistration):
    name = "slurm"
    plugin_module = "torchx_slurm.plugin"
    schedulers = {"slurm": "torchx_slurm.scheduler:create_scheduler"}
    scheduler_classes = {"slurm": SlurmScheduler}
    heavy = ("attrs", "subprocess")


def test_the_registry_creates_the_slurm_scheduler_of_its_backend() -> None:
    assert get_registry().scheduler_factory("slurm")("sess").backend == "slurm"


def test_following_an_app_never_imports_the_script_generator(fake_slurm: object) -> None:
    """status, log and cancel import what they use: not the sbatch script builder."""
    loaded = modules_after(
        "from torchx_slurm.scheduler import create_scheduler\n"
        "assert create_scheduler('t').describe('5') is None"
    )
    assert "torchx_slurm.scheduler" in loaded
    assert not {"torchx_slurm.request", "torchx.specs.templating", "shlex"} & set(loaded)
