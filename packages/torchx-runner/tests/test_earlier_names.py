"""The flat layout's module names still import, as the very modules of their new homes.

``torchx.schedulers`` was one folder of modules (``api``, ``errors``, ``ids``,
``local_scheduler``, ...); they now live in ``contract/``, ``helpers/`` and ``local/``.
A plugin written against the earlier names must keep working unchanged: its imports,
its ``mock.patch`` targets and its type checks (the stubs; mypy itself runs in
tools/install_matrix against the installed wheels).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib import resources
from unittest import mock

import pytest

#: Every earlier name and its home now, written out: the list a plugin may rely on.
EARLIER = {
    "api": "contract.api",
    "errors": "contract.errors",
    "capabilities": "contract.capabilities",
    "states": "contract.states",
    "appstore": "helpers.appstore",
    "clients": "helpers.clients",
    "commands": "helpers.commands",
    "files": "helpers.files",
    "follow": "helpers.follow",
    "ids": "helpers.ids",
    "labels": "helpers.labels",
    "merge": "helpers.merge",
    "paged": "helpers.paged",
    "polling": "helpers.polling",
    "privatedir": "helpers.privatedir",
    "quick": "helpers.quick",
    "replica_errors": "helpers.replica_errors",
    "retry": "helpers.retry",
    "scriptroles": "helpers.scriptroles",
    "window": "helpers.window",
    "local_scheduler": "local.scheduler",
    "local_view": "local.view",
    "local_warmup": "local.warmup",
}


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_finder_knows_exactly_these_names() -> None:
    from torchx.schedulers._moved import MOVED

    assert MOVED == EARLIER


@pytest.mark.parametrize("old", sorted(EARLIER))
def test_an_earlier_name_is_the_new_home_itself(old: str) -> None:
    module = importlib.import_module(f"torchx.schedulers.{old}")
    home = importlib.import_module(f"torchx.schedulers.{EARLIER[old]}")
    assert module is home
    assert module.__name__ == f"torchx.schedulers.{EARLIER[old]}"
    assert sys.modules[f"torchx.schedulers.{old}"] is home
    assert getattr(importlib.import_module("torchx.schedulers"), old) is home


def test_from_imports_of_the_earlier_names_give_the_same_objects() -> None:
    from torchx.schedulers.api import Scheduler, SchedulerError, Stream
    from torchx.schedulers.contract import api, errors
    from torchx.schedulers.errors import SchedulerError as FromErrors
    from torchx.schedulers.ids import make_app_id
    from torchx.schedulers.local import scheduler
    from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler

    assert (Scheduler, Stream) == (api.Scheduler, api.Stream)
    assert SchedulerError is FromErrors is errors.SchedulerError
    assert make_app_id.__module__ == "torchx.schedulers.helpers.ids"
    assert (LocalScheduler, create_scheduler) == (
        scheduler.LocalScheduler,
        scheduler.create_scheduler,
    )


def test_patching_through_an_earlier_name_patches_the_code_that_runs() -> None:
    from torchx.schedulers.helpers import ids

    with mock.patch("torchx.schedulers.ids.make_app_id", return_value="patched"):
        assert ids.make_app_id("echo") == "patched"
    assert ids.make_app_id("echo") != "patched"


def test_an_unknown_name_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError, match=r"torchx\.schedulers\.streams"):
        importlib.import_module("torchx.schedulers.streams")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("torchx.schedulers.contract.ids")  # only the flat names


@pytest.mark.parametrize("old", sorted(EARLIER))
def test_type_checkers_see_each_earlier_name_as_its_new_home(old: str) -> None:
    stub = resources.files("torchx.schedulers").joinpath(f"{old}.pyi")
    assert stub.is_file(), f"{old}.pyi is not installed"
    assert f"\nfrom torchx.schedulers.{EARLIER[old]} import *" in stub.read_text()


def test_the_new_names_never_load_the_finder() -> None:
    printed = _fresh(
        "import sys\n"
        "import torchx.schedulers.contract.api, torchx.schedulers.local.view\n"
        "print('torchx.schedulers._moved' in sys.modules)\n"
        "import torchx.schedulers.api\n"
        "print('torchx.schedulers._moved' in sys.modules)\n"
    )
    assert printed.splitlines() == ["False", "True"]
