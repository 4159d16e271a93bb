"""Submitting an app: the Runner's half that turns an AppDef (or a component) into a handle.

``run`` = ``dryrun`` + ``schedule``: the app is checked, the run options resolved
(``.torchxconfig`` under the explicit ``cfg``) and checked strictly against the
scheduler's, the scheduler prepares its native request (``Scheduler.prepare``, with no
side effect for a dry run), and ``schedule`` builds a workspace if one is needed and
submits, returning the handle ``{scheduler}://{session}/{app_id}``. ``materialize``
makes a component's AppDef from its arguments. Submitting is never retried (it is not
idempotent).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchx.runner.base import (
    ENV_TORCHX_PARENT_RUN_ID,
    InvalidAppError,
    RunnerBase,
    as_dict,
    as_workspace,
    check_app,
    check_image,
    named_as_called,
    runner_logger,
)
from torchx.specs.errors import (
    InvalidRunConfigException,
    SpecError,
)
from torchx.specs.handles import AppHandle, make_app_handle

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, AppDryRunInfo
    from torchx.specs.options import CfgVal
    from torchx.specs.workspace import Workspace


class Submitting(RunnerBase):
    """The submitting calls of :class:`~torchx.runner.Runner` (see the module docs)."""

    def run(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppHandle:
        """Validates, builds the workspace (if the scheduler supports one) and submits.

        Returns the app handle. ``app`` itself is not changed.
        """
        info = self._dryrun(app, scheduler, cfg, workspace, parent_run_id, build=True)
        return self.schedule(info)

    def run_component(
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppHandle:
        """Materializes ``component`` with ``component_args`` and runs it (see :meth:`run`).

        ``component`` is a built-in name (``dist.ddp``), ``path/file.py:fn`` or a
        plugin's component. ``component_args`` is its command line (``["-j", "2x8"]``),
        completed by the component defaults; or a dict of keyword arguments passed to
        the component function as they are.
        """
        app = self.materialize(component, component_args)
        return self.run(app, scheduler, cfg, workspace, parent_run_id)

    def dryrun_component(
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppDryRunInfo[Any]:
        """Materializes ``component`` and dry-runs it (see :meth:`dryrun`)."""
        app = self.materialize(component, component_args)
        return self.dryrun(app, scheduler, cfg, workspace, parent_run_id)

    def dryrun(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppDryRunInfo[Any]:
        """The request that :meth:`schedule` would submit, with no side effect.

        Checks the app, then ``cfg`` strictly against the scheduler's run options
        (unknown key, naming the nearest valid one; wrong type; missing required
        option: :class:`~torchx.specs.InvalidRunConfigException`). The caller's
        ``app`` is never modified, a workspace is only recorded (built by
        :meth:`schedule`), and nothing is written anywhere.
        """
        return self._dryrun(app, scheduler, cfg, workspace, parent_run_id, build=False)

    def _dryrun(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None,
        workspace: Workspace | str | None,
        parent_run_id: str | None,
        *,
        build: bool,
    ) -> AppDryRunInfo[Any]:
        check_app(app)
        sched = self._scheduler(scheduler)
        check_image(app, scheduler, sched.runs_container_images)
        merged = self._merge_cfg(scheduler, sched.run_opts_once(), as_dict(cfg))
        if parent_run_id:
            app = copy.deepcopy(app)  # the caller's AppDef is never changed
            for role in app.roles:
                role.env[ENV_TORCHX_PARENT_RUN_ID] = parent_run_id
        try:
            info = sched.prepare(app, merged, workspace=as_workspace(workspace), dryrun=not build)
        except InvalidRunConfigException as e:
            raise InvalidRunConfigException(named_as_called(scheduler, sched.backend, e)) from None
        info.scheduler = scheduler  # the name the caller used (an alias stays an alias)
        return info

    def materialize(self, component: str, component_args: list[str] | dict[str, Any]) -> AppDef:
        """The AppDef ``component`` returns for ``component_args``, without running it.

        What :meth:`run_component` and :meth:`dryrun_component` run: ``component_args``
        is the component's command line, completed by the component defaults, or a dict
        of keyword arguments. For a caller that changes the AppDef before
        :meth:`dryrun` (``torchx run --dryrun`` masks its secrets), so that the request
        is made once.
        """
        from torchx.components.args import materialize_appdef
        from torchx.components.finder import get_component
        from torchx.specs.api import AppDef

        component_def = get_component(component)
        if isinstance(component_args, dict):
            app = component_def.fn(**component_args)
        else:
            from torchx.components.errors import ComponentArgError, ComponentDefaultError

            defaults = self._defaults_for(component, component_def.name)
            try:
                app = materialize_appdef(
                    component_def.fn, list(component_args), defaults or None, prog=component
                )
            except ComponentDefaultError as e:
                where = self._default_source(e.key, component, component_def.name)
                if where is None:
                    raise
                # the file is what to fix, not the command line: no usage line with it
                raise ComponentArgError(f"{where}: {e}") from e
        if not isinstance(app, AppDef):
            raise InvalidAppError(
                f"component '{component}' returned {type(app).__name__}, expected an AppDef"
            )
        return app

    def _default_source(self, key: str, *names: str) -> str | None:
        """The file and section a component default came from (None: given in code)."""
        if not self._use_config or any(key in self._component_defaults.get(n, {}) for n in names):
            return None
        from torchx.runner import config

        for name in names:
            where = config.source_of(f"component:{name}", key)
            if where is not None:
                return where
        return None

    def _defaults_for(self, *names: str) -> dict[str, str]:
        defaults: dict[str, str] = {}
        if self._use_config:
            from torchx.runner import config

            from_files = config.get_component_defaults()
            for name in names:
                defaults.update(from_files.get(name, {}))
        for name in names:
            defaults.update(self._component_defaults.get(name, {}))
        return defaults

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> AppHandle:
        """Submits the request of a :meth:`dryrun` and returns the app handle.

        The request is submitted as the dry run made it (same app id, same request; the
        app is not prepared again). A workspace the dry run left to build is built first
        (``Scheduler.build_workspaces_of``, with the dry run's resolved run options); the
        request is made again only if the build put it elsewhere than the dry run
        planned. If the scheduler fails, it has removed what it created (the Scheduler
        contract); the error propagates. Never retried: a submit is not idempotent.
        """
        # each raises SpecError ("dry-run the app first") on an info no dry run made
        backend, _app = dryrun_info.scheduler, dryrun_info.app
        sched = self._scheduler(backend)
        if dryrun_info.needs_workspace_build:
            # a copy is built: the caller's dryrun info stays as it was
            dryrun_info = sched.build_workspaces_of(dryrun_info)
            dryrun_info.scheduler = backend
        app_id = sched.schedule(dryrun_info)
        try:
            handle = make_app_handle(backend, self._name, app_id)
        except SpecError as e:
            # the scheduler answered with an id no handle can carry: do not leave the
            # app running where nobody can find it
            from torchx.schedulers.contract.errors import SchedulerError

            try:
                sched.delete(app_id)
            except Exception:
                runner_logger().warning(
                    "could not remove app %r of %r", app_id, backend, exc_info=True
                )
            raise SchedulerError(
                f"scheduler '{backend}' returned app id {app_id!r}, which no handle can "
                f"carry; the app was removed: {e}"
            ) from e
        self._apps[handle] = dryrun_info.app
        return handle
