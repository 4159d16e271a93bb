"""torchx-slurm is found like any plugin: the ``torchx`` entry point, cheap to import."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

from torchx_slurm.scheduler import SlurmScheduler

from torchx.specs.plugins import get_registry


def test_the_entry_point_names_the_plugin_module() -> None:
    [ep] = [ep for ep in entry_points(group="torchx") if ep.name == "slurm"]
    assert ep.value == "torchx_slurm.plugin"


def test_the_registry_creates_the_slurm_scheduler() -> None:
    factory = get_registry().scheduler_factory("slurm")
    sched = factory("sess")
    assert isinstance(sched, SlurmScheduler)
    assert sched.backend == "slurm" and sched.session_name == "sess"


def test_the_plugin_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, torchx_slurm.plugin as p; "
        "print(p.torchx_schedulers()['slurm']); "
        "print(sorted(m for m in sys.modules if m.startswith(('torchx_slurm.', 'attrs', 'subprocess'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "torchx_slurm.scheduler:create_scheduler"
    assert out[1] == "['torchx_slurm._version', 'torchx_slurm.plugin']"


def test_following_an_app_never_imports_the_script_generator(fake_slurm: object) -> None:
    """status, log and cancel import what they use: not the sbatch script builder."""
    code = (
        "import sys; from torchx_slurm.scheduler import create_scheduler; "
        "s = create_scheduler('t'); print(s.describe('5')); "
        "print(sorted(m for m in sys.modules if m in ('torchx_slurm.script', "
        "'torchx.specs.templating', 'shlex')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["None", "[]"]
