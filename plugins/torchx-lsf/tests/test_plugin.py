"""torchx-lsf is found like any plugin: the ``torchx`` entry point, cheap to import."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

from torchx_lsf.scheduler import LsfScheduler

from torchx.specs.plugins import get_registry


def test_the_entry_point_names_the_plugin_module() -> None:
    [ep] = [ep for ep in entry_points(group="torchx") if ep.name == "lsf"]
    assert ep.value == "torchx_lsf.plugin"


def test_the_registry_creates_the_lsf_scheduler() -> None:
    sched = get_registry().scheduler_factory("lsf")("sess")
    assert isinstance(sched, LsfScheduler)
    assert sched.backend == "lsf" and sched.session_name == "sess"


def test_the_plugin_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, torchx_lsf.plugin as p; "
        "print(p.torchx_schedulers()['lsf']); "
        "print(sorted(m for m in sys.modules if m.startswith(('torchx_lsf.', 'attrs', 'subprocess'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "torchx_lsf.scheduler:create_scheduler"
    assert out[1] == "['torchx_lsf._version', 'torchx_lsf.plugin']"


def test_following_an_app_never_imports_the_request_builder(fake_lsf: object) -> None:
    """status, log and cancel import what they use: not the bsub command builder."""
    code = (
        "import sys; from torchx_lsf.scheduler import create_scheduler; "
        "s = create_scheduler('t'); print(s.describe('app-x')); "
        "print(sorted(m for m in sys.modules if m in ('torchx_lsf.request', "
        "'torchx.specs.templating', 'shlex')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["None", "[]"]
