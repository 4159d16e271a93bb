"""The submit pipeline behind ``Scheduler.prepare``: the contract's steps run in order.

:class:`~torchx.schedulers.contract.api.Scheduler` says what a scheduler must do and
which call does what; this module is how the one submit pipeline runs those calls in
order, so that the contract's class stays its list of duties. The steps (see
``Scheduler.prepare``): resolve the run options once (into the scheduler's
``opts_class`` where it has one), copy the app, ``_pre_build_validate``, build or plan
the workspace, ``_validate``, and make the request with ``_submit_dryrun`` (or a
subclass's own ``submit_dryrun``, as upstream wrappers override it) and each role's
``pre_proc``; every request made here gives each role ``TORCHX_JOB_ID``, the app's
handle (:func:`with_job_id`).

Only the Scheduler's methods call these functions (``prepare``, ``build_workspaces_of``
and ``submit_dryrun``); a plugin never does (hence the ``_``). The module is imported
when the first app is prepared, not when a scheduler is created.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from torchx.specs import (
    AppDryRunInfo,
    CfgVal,
    InvalidRunConfigException,
    SpecError,
    Workspace,
    macros,
)
from torchx.specs.handles import ENV_TORCHX_JOB_ID, make_app_handle
from torchx.workspace.api import WorkspaceMixin

if TYPE_CHECKING:
    from torchx.schedulers.contract.api import Scheduler
    from torchx.specs import AppDef


def prepare(
    sched: Scheduler[Any],
    app: AppDef,
    cfg: Mapping[str, CfgVal] | None,
    *,
    workspace: str | Workspace | None,
    dryrun: bool,
    own_dryrun: bool,
) -> AppDryRunInfo[Any]:
    """Steps 1 to 6 of ``Scheduler.prepare`` (see its docstring) for ``sched``.

    ``own_dryrun`` says whether ``sched``'s class overrides ``submit_dryrun`` (the
    Scheduler tells: this module does not import its class, which imports this module).
    """
    try:
        resolved = sched.run_opts_once().resolve(cfg or {}, strict=True)
    except InvalidRunConfigException as e:
        raise InvalidRunConfigException(f"scheduler '{sched.backend}': {e}") from None
    typed = typed_opts(sched, resolved)
    work = copy.deepcopy(app)
    builds = isinstance(sched, WorkspaceMixin)
    if workspace is not None and workspace != "":
        if builds:
            ws = Workspace.from_str(workspace) if isinstance(workspace, str) else workspace
            work.roles[0].workspace = ws
        else:
            import logging  # costs milliseconds: only on this path

            logging.getLogger("torchx.schedulers.contract.api").info(
                "scheduler %r does not build workspaces; ignoring %s", sched.backend, workspace
            )
    has_ws = builds and any(role.workspace is not None for role in work.roles)
    sched._pre_build_validate(work, sched.backend, typed)
    if has_ws and dryrun:
        assert isinstance(sched, WorkspaceMixin)
        sched.plan_workspaces(work.roles, typed)
    info = build_and_request(
        sched, work, resolved, build=has_ws and not dryrun, own_dryrun=own_dryrun, typed=typed
    )
    info.needs_workspace_build = has_ws and dryrun
    return info


def build_workspaces_of(
    sched: Scheduler[Any], dryrun_info: AppDryRunInfo[Any], *, own_dryrun: bool
) -> AppDryRunInfo[Any]:
    """``Scheduler.build_workspaces_of`` (see its docstring) for ``sched`` (``own_dryrun``:
    as for :func:`prepare`)."""
    if not dryrun_info.needs_workspace_build:
        return dryrun_info
    assert isinstance(sched, WorkspaceMixin)
    cfg = dict(dryrun_info.cfg)
    work = copy.deepcopy(dryrun_info.app)
    sched.build_workspaces(work.roles, cfg)
    if work.roles == dryrun_info.app.roles:  # built where the dry run said it would be
        built = copy.copy(dryrun_info)
        built.app = work
        built.needs_workspace_build = False
        return built
    return build_and_request(sched, work, cfg, build=False, own_dryrun=own_dryrun)


def build_and_request(
    sched: Scheduler[Any],
    work: AppDef,
    resolved: dict[str, CfgVal],
    *,
    build: bool,
    own_dryrun: bool,
    typed: Mapping[str, CfgVal] | None = None,
) -> AppDryRunInfo[Any]:
    """Steps 4 to 6 of ``Scheduler.prepare`` on ``work``, the scheduler's copy of the app."""
    if typed is None:
        typed = typed_opts(sched, resolved)
    if build:
        assert isinstance(sched, WorkspaceMixin)
        sched.build_workspaces(work.roles, typed)
    sched._validate(work, sched.backend, typed)
    if own_dryrun:
        return overridden_dryrun(sched, work, resolved)
    return dryrun_of_copy(sched, work, resolved, typed)


def overridden_dryrun(
    sched: Scheduler[Any], work: AppDef, resolved: dict[str, CfgVal]
) -> AppDryRunInfo[Any]:
    """Step 6 through a subclass's own ``submit_dryrun`` (upstream users' wrappers).

    Upstream's Runner called the public ``submit_dryrun``, so a subclass that
    overrides it (to add to the request, say) is honoured here too. The base
    method is skipped when not overridden: it would copy the app once more.
    """
    info = sched.submit_dryrun(work, resolved)
    # a wrapper that built its own info may have left these unset (reading one raises)
    for name, value in (("app", work), ("cfg", resolved), ("scheduler", sched.backend)):
        try:
            getattr(info, name)
        except SpecError:
            setattr(info, name, value)
    return info


def dryrun_of_copy(
    sched: Scheduler[Any],
    app: AppDef,
    resolved: dict[str, CfgVal],
    typed: Mapping[str, CfgVal] | None = None,
) -> AppDryRunInfo[Any]:
    """``_submit_dryrun`` + ``pre_proc`` on ``app``, a copy the scheduler may change.

    ``_submit_dryrun`` gets ``typed`` (the ``opts_class`` instance of ``resolved``,
    made here when not given); ``info.cfg`` is ``resolved``, the plain dict.
    """
    info = sched._submit_dryrun(
        with_job_id(sched, app), typed if typed is not None else typed_opts(sched, resolved)
    )
    for role in app.roles:
        info = role.pre_proc(sched.backend, info)
    info.app = app
    info.cfg = resolved
    info.scheduler = sched.backend
    return info


def with_job_id(sched: Scheduler[Any], app: AppDef) -> AppDef:
    """``app`` whose every role's env has ``TORCHX_JOB_ID``: the app's handle.

    Its value is ``{scheduler}://{session}/${app_id}``: each scheduler substitutes the
    ``app_id`` macro in the env as it does in the args, so every replica of every
    scheduler learns the handle it is followed by, set here once rather than by each
    plugin. It replaces a value the role's env gave (as upstream's Runner did). The roles
    are new ones; ``app`` itself (what ``info.app`` is, the AppDef as submitted) is left
    without it, and :func:`torchx.specs.appdef_json.encode` leaves it out of the AppDef a
    scheduler keeps, so ``describe`` gives back the roles as they were submitted.
    """
    handle = make_app_handle(sched.backend, sched.session_name, macros.app_id)
    sent = copy.copy(app)
    sent.roles = [
        attrs.evolve(role, env={**role.env, ENV_TORCHX_JOB_ID: handle}) for role in app.roles
    ]
    return sent


def typed_opts(sched: Scheduler[Any], resolved: Mapping[str, CfgVal]) -> Mapping[str, CfgVal]:
    """``resolved`` as ``sched``'s ``opts_class`` instance, every check run (itself without one)."""
    if sched.opts_class is None:
        return resolved
    return sched.opts_class.of(resolved)
