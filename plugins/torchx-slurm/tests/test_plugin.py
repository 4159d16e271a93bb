"""torchx-slurm is found like any plugin: the ``torchx`` entry point, cheap to import."""

from __future__ import annotations

from torchx_slurm.scheduler import SlurmScheduler

from torchx.schedulers.testing.registration import entry_point, modules_after
from torchx.specs.plugins import get_registry


def test_the_entry_point_names_the_plugin_module() -> None:
    assert entry_point("slurm") == "torchx_slurm.plugin"


def test_the_registry_creates_the_slurm_scheduler() -> None:
    sched = get_registry().scheduler_factory("slurm")("sess")
    assert isinstance(sched, SlurmScheduler)
    assert sched.backend == "slurm" and sched.session_name == "sess"


def test_the_plugin_module_imports_nothing_heavy() -> None:
    loaded = modules_after(
        "import torchx_slurm.plugin as p\n"
        "assert p.torchx_schedulers()['slurm'] == 'torchx_slurm.scheduler:create_scheduler'"
    )
    assert [m for m in loaded if m.startswith("torchx_slurm")] == [
        "torchx_slurm",
        "torchx_slurm._version",
        "torchx_slurm.plugin",
    ]
    assert not [m for m in loaded if m.startswith(("attrs", "subprocess"))]


def test_following_an_app_never_imports_the_script_generator(fake_slurm: object) -> None:
    """status, log and cancel import what they use: not the sbatch script builder."""
    loaded = modules_after(
        "from torchx_slurm.scheduler import create_scheduler\n"
        "assert create_scheduler('t').describe('5') is None"
    )
    assert "torchx_slurm.scheduler" in loaded
    assert not {"torchx_slurm.request", "torchx.specs.templating", "shlex"} & set(loaded)
