"""torchx-lsf is found like any plugin: the ``torchx`` entry point, cheap to import."""

from __future__ import annotations

from torchx_lsf.scheduler import LsfScheduler

from torchx.schedulers.testing.registration import entry_point, modules_after
from torchx.specs.plugins import get_registry


def test_the_entry_point_names_the_plugin_module() -> None:
    assert entry_point("lsf") == "torchx_lsf.plugin"


def test_the_registry_creates_the_lsf_scheduler() -> None:
    sched = get_registry().scheduler_factory("lsf")("sess")
    assert isinstance(sched, LsfScheduler)
    assert sched.backend == "lsf" and sched.session_name == "sess"


def test_the_plugin_module_imports_nothing_heavy() -> None:
    loaded = modules_after(
        "import torchx_lsf.plugin as p\n"
        "assert p.torchx_schedulers()['lsf'] == 'torchx_lsf.scheduler:create_scheduler'"
    )
    assert [m for m in loaded if m.startswith("torchx_lsf")] == [
        "torchx_lsf",
        "torchx_lsf._version",
        "torchx_lsf.plugin",
    ]
    assert not [m for m in loaded if m.startswith(("attrs", "subprocess"))]


def test_following_an_app_never_imports_the_request_builder(fake_lsf: object) -> None:
    """status, log and cancel import what they use: not the bsub command builder."""
    loaded = modules_after(
        "from torchx_lsf.scheduler import create_scheduler\n"
        "assert create_scheduler('t').describe('app-x') is None"
    )
    assert "torchx_lsf.scheduler" in loaded
    assert not {"torchx_lsf.request", "torchx.specs.templating", "shlex"} & set(loaded)
