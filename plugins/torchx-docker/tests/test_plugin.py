"""torchx-docker is found like any plugin, and importing it never imports the docker SDK."""

from __future__ import annotations

import pytest
from torchx_docker.scheduler import DockerScheduler

from torchx.schedulers.testing.registration import PluginRegistration, modules_after


class TestRegistration(PluginRegistration):
    name = "docker"
    plugin_module = "torchx_docker.plugin"
    # local_docker: upstream TorchX's name for the same scheduler
    schedulers = {
        "docker": "torchx_docker.scheduler:create_scheduler",
        "local_docker": "torchx_docker.scheduler:create_scheduler",
    }
    scheduler_classes = {"docker": DockerScheduler, "local_docker": DockerScheduler}
    heavy = ("docker",)


def test_a_dry_run_never_imports_the_docker_sdk() -> None:
    code = """
import sys
from torchx.specs import AppDef, Role
from torchx_docker.scheduler import create_scheduler
info = create_scheduler("s").submit_dryrun(AppDef("a", [Role("r", "img", entrypoint="echo", num_replicas=2)]), {})
assert info.request.network
"""
    loaded = modules_after(code)
    assert "torchx_docker.scheduler" in loaded
    assert not [m for m in loaded if m == "docker" or m.startswith(("docker.", "requests"))]


def test_a_one_replica_start_imports_no_hashing_and_no_thread_pool() -> None:
    """``torchx run -s docker`` of one replica pays for neither (both are lazy, see there).

    OpenSSL's hashlib is for workspace images only, concurrent.futures (with logging and
    queue) for several containers at once: importing either up front costs the CLI's
    start-up milliseconds the engine's own start is measured against.
    """
    code = """
import sys
from torchx.specs import AppDef, Role
from torchx_docker.scheduler import create_scheduler
info = create_scheduler("s").submit_dryrun(AppDef("a", [Role("r", "img", entrypoint="echo")]), {})
assert info.request.containers
"""
    loaded = modules_after(code)
    assert "torchx_docker.scheduler" in loaded
    assert not [m for m in loaded if m in ("hashlib", "_hashlib", "logging")]
    assert not [m for m in loaded if m.startswith("concurrent")]


def test_a_dry_run_loads_nothing_only_following_an_app_needs() -> None:
    """What only following an app needs (``status``, ``restart``, ``datetime``, the log window) is
    imported when used: the submit path of ``torchx run -s docker`` does not pay for it.
    Nor does it load ``urllib.parse`` (``ipaddress`` with it): the engine's URLs are
    quoted by ``torchx_docker.wire``."""
    code = """
import sys
from torchx.specs import AppDef, Role
from torchx_docker.scheduler import create_scheduler
info = create_scheduler("s").submit_dryrun(AppDef("a", [Role("r", "img", entrypoint="echo")]), {})
assert info.request.containers
"""
    loaded = modules_after(code)
    assert "torchx_docker.scheduler" in loaded
    for module in (
        "torchx_docker.status",
        "torchx_docker.restart",
        "torchx.schedulers.helpers.window",
        "datetime",
        "urllib.parse",
        "ipaddress",
    ):
        assert module not in loaded, module


def test_the_status_code_is_imported_while_the_engine_starts_the_containers() -> None:
    """``schedule`` imports ``status`` (with ``restart``) in a thread before its start calls (the engine's
    longest wait), so ``torchx run --wait``'s first describe finds it loaded; once
    loaded, no thread is started again."""
    # the test waits on the very thread _preload_following started (it returns it); every
    # thread is also recorded as it starts, so the second call is seen to start none even
    # if one would have ended at once
    code = """
import sys, threading
started = []
_start = threading.Thread.start
def start(self):
    started.append(self)
    _start(self)
threading.Thread.start = start
from torchx_docker import scheduler
assert "torchx_docker.status" not in sys.modules
preload = scheduler._preload_following()
assert preload is not None and preload.name == "torchx-docker: preload"
assert [t for t in started if t.name == "torchx-docker: preload"] == [preload]
preload.join(60)
assert not preload.is_alive() and "torchx_docker.status" in sys.modules
started.clear()
assert scheduler._preload_following() is None
assert not [t for t in started if t.name == "torchx-docker: preload"]
"""
    assert "torchx_docker.status" in modules_after(code)


@pytest.mark.parametrize("scheduler", ["docker"])
def test_the_components_default_image_is_refused_at_dry_run(scheduler: str) -> None:
    """The built-ins' image ``"."`` (the launch directory) is no container image: one line."""
    from torchx.runner import InvalidAppError, get_runner

    with get_runner() as runner, pytest.raises(InvalidAppError) as caught:
        runner.dryrun_component("utils.echo", ["--msg", "hi"], scheduler)
    assert str(caught.value).endswith(
        f"but scheduler '{scheduler}' runs container images: pass one with --image "
        "(e.g. --image python:3.12)"
    )
