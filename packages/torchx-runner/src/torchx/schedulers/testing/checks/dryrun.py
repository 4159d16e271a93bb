"""Dry-run checks: a dry run builds a printable request and changes nothing.

Neither ``Runner.dryrun`` (``torchx run --dryrun``) nor ``Scheduler.prepare(...,
dryrun=True)`` may create an app, write into the backend's directories or change the
caller's AppDef; both reject an unknown or mistyped run option in one line naming it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import pytest

from torchx.schedulers.testing.apps import (
    Out,
)
from torchx.schedulers.testing.checks.base import (
    Checks,
    one_line,
    snapshot,
    wrong_value,
)
from torchx.schedulers.testing.kit import Kit
from torchx.specs import InvalidRunConfigException, macros


class DryrunChecks(Checks):
    """The dry-run checks (``test_dryrun_*``)."""

    def test_dryrun_creates_nothing(self, kit: Kit, watched_paths: Sequence[Path]) -> None:
        app = kit.builder.app("kitdry", kit.builder.role("main", [Out("hi")], self.replicas))
        apps_before = self._app_ids(kit)
        files_before = snapshot(watched_paths)
        for dryrun in (kit.dryrun, kit.prepare):
            info = dryrun(app)
            assert info.request is not None
            assert info.app is not None and info.app.name == "kitdry"
            assert snapshot(watched_paths) == files_before, f"{dryrun.__name__} wrote files"
            assert self._app_ids(kit) == apps_before, f"{dryrun.__name__} created an app"

    def test_dryrun_request_is_printable(self, kit: Kit) -> None:
        app = kit.builder.app("kitprint", kit.builder.role("main", [Out("hi")]))
        info = kit.dryrun(app)
        text = str(info)
        assert text.strip(), "str() of the dryrun info is empty"
        assert "kitprint" in text, f"the printed request does not name the app:\n{text}"
        assert repr(info)

    def test_dryrun_leaves_the_appdef_unchanged(self, kit: Kit) -> None:
        role = kit.builder.role("main", [Out(f"{macros.app_id} {macros.replica_id}")], 2)
        role.env["KIT_VAR"] = f"id-{macros.replica_id}"
        role.metadata["kit"] = macros.app_id
        app = kit.builder.app("kitsame", role)
        app.metadata["owner"] = "kit"
        before = copy.deepcopy(app)
        kit.dryrun(app)
        assert app == before, "Runner.dryrun changed the caller's AppDef"
        kit.prepare(app)
        assert app == before, "Scheduler.prepare changed the caller's AppDef"
        kit.scheduler.submit_dryrun(app, kit.scheduler.run_opts().resolve(kit.cfg))
        assert app == before, "Scheduler.submit_dryrun changed the caller's AppDef"

    def test_dryrun_rejects_an_unknown_run_option(self, kit: Kit) -> None:
        app = kit.builder.app("kitopt", kit.builder.role("main", [Out("hi")]))
        for dryrun in (kit.dryrun, kit.prepare):
            with pytest.raises(InvalidRunConfigException) as e:
                dryrun(app, {**kit.cfg, "kit_no_such_option": "x"})
            one_line(e.value, "kit_no_such_option")

    def test_dryrun_rejects_a_mistyped_run_option(self, kit: Kit) -> None:
        app = kit.builder.app("kitopt", kit.builder.role("main", [Out("hi")]))
        opts = list(kit.scheduler.run_opts())
        if not opts:  # nothing to mistype: any option is then an unknown one
            with pytest.raises(InvalidRunConfigException):
                kit.dryrun(app, {"kit_no_such_option": 1})
            return
        for name, opt in opts:
            for dryrun in (kit.dryrun, kit.prepare):
                with pytest.raises(InvalidRunConfigException) as e:
                    dryrun(app, {**kit.cfg, name: wrong_value(opt.opt_type)})
                one_line(e.value, name)
