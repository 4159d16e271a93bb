"""Running checks: submit, describe, exit codes, retries, env and macros reach replicas.

Each check submits a small app (:mod:`~torchx.schedulers.testing.apps`) and reads back
what ``describe`` says of it: every replica with its own state and exit code, the
submitted AppDef, retries counted, distinct ids for concurrent submits.
"""

from __future__ import annotations

import concurrent.futures
import copy
import uuid

import pytest

from torchx.schedulers.contract._pipeline import typed_opts
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.testing.apps import (
    Env,
    Err,
    Exit,
    Fail,
    Out,
    Rank0Host,
    Step,
)
from torchx.schedulers.testing.checks.base import (
    Checks,
    one_line,
    role_fields,
)
from torchx.schedulers.testing.kit import Kit
from torchx.specs import NONE, AppState, macros


class RunningChecks(Checks):
    """The running checks: submit and describe apps that succeed or fail."""

    def test_submit_returns_an_id(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("hi")]))
        assert isinstance(app_id, str) and app_id.strip()
        assert kit.describe(app_id).app_id == app_id
        assert kit.scheduler.exists(app_id)

    def test_describe_gives_every_replica(self, kit: Kit) -> None:
        n = self.replicas
        app_id = kit.run(kit.builder.role("main", [Out("hi")], n))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.SUCCEEDED, desc
        (role,) = desc.roles_statuses
        assert role.role == "main"
        assert sorted(r.id for r in role.replicas) == list(range(n)), role
        for rep in role.replicas:
            assert rep.state == AppState.SUCCEEDED, rep
            assert rep.role == "main"
            expected = None if kit.lacks(Capability.EXIT_CODES) else 0
            assert rep.exit_code == expected, rep

    def test_the_role_env_reaches_every_replica(self, kit: Kit) -> None:
        n = self.replicas
        role = kit.builder.role(
            "main",
            [Env("KIT_ENV", "kit value"), Env("KIT_ENV_REPLICA", f"r-{macros.replica_id}")],
            n,
        )
        role.env.update({"KIT_ENV": "kit value", "KIT_ENV_REPLICA": f"r-{macros.replica_id}"})
        app_id = kit.submit(kit.builder.app("kitenv", role))
        desc = kit.wait_terminal(app_id)
        # a replica exits 9 when a variable of the role's env is missing or wrong
        assert desc.state == AppState.SUCCEEDED, f"the role's env did not reach a replica: {desc}"
        if kit.lacks(Capability.LOGS):
            return
        for k in range(n):
            lines = kit.logs(app_id, "main", k, streams=self._stdout(kit))
            assert lines == ["KIT_ENV=kit value\n", f"KIT_ENV_REPLICA=r-{k}\n"], lines

    def test_describe_gives_back_the_appdef(self, kit: Kit) -> None:
        apps = []
        for name, role_name, n in [("kitfirst", "alpha", 1), ("kitsecond", "beta", self.replicas)]:
            role = kit.builder.role(role_name, [Out(name)], n)
            role.env["KIT_APP"] = name
            app = kit.builder.app(name, role)
            app.metadata["kit"] = name
            apps.append((kit.submit(app), app))
        for app_id, app in apps:
            desc = kit.describe(app_id)
            if kit.lacks(Capability.DESCRIBE_APPDEF):
                assert desc.roles == [], desc
                assert desc.name.startswith(app.name), (
                    f"describe({app_id!r}).name is {desc.name!r}: neither app {app.name!r}'s "
                    "name nor a job name made from it"
                )
                continue
            assert desc.name == app.name, f"describe({app_id!r}) names the app {desc.name!r}"
            got = [role_fields(r) for r in desc.roles]
            assert got == [role_fields(r) for r in app.roles], (
                f"describe({app_id!r}) gives roles {got}, not those of app {app.name!r}"
            )
            assert desc.metadata.get("kit") == app.name, desc.metadata

    def test_describe_gives_back_the_run_options(self, kit: Kit) -> None:
        # the kit's own options come back as given; a secret-looking variable of the
        # scheduler's env option (where it has one) comes back masked, its value nowhere
        import json

        from torchx.specs.appdef_json import RUN_OPTIONS_KEY
        from torchx.specs.secrets import MASK, masked_run_options

        secret = f"kit-secret-{uuid.uuid4().hex[:8]}"
        cfg = dict(kit.cfg)
        env_option = kit.env_option()
        if env_option is not None:
            cfg[env_option] = {"KIT_API_TOKEN": secret, "KIT_PLAIN": "plain"}
        app_id = kit.submit(kit.builder.app("kitopts", kit.builder.role("main", [Out("hi")])), cfg)
        desc = kit.describe(app_id)
        if kit.lacks(Capability.DESCRIBE_RUN_OPTIONS) or kit.lacks(Capability.DESCRIBE_APPDEF):
            assert desc.run_options == {}, desc.run_options
            return
        got = desc.run_options
        assert list(got) == sorted(got), f"describe({app_id!r}).run_options is not sorted: {got}"
        # as submitted: resolved (``dryrun_info.cfg``), or in the opts_class's normal form
        # (what ``_submit_dryrun`` is given), each masked
        opts = kit.scheduler.run_opts_once()
        resolved = opts.resolve(cfg)
        typed = typed_opts(kit.scheduler, resolved)
        names = [n for n in map(opts.canonical_name, cfg) if n and resolved.get(n) is not None]
        as_resolved = masked_run_options({n: resolved[n] for n in names})
        as_typed = masked_run_options({n: typed[n] for n in names})
        for name in names:
            assert got.get(name) in (as_resolved[name], as_typed[name]), (
                f"describe({app_id!r}) gives the run option {name}={got.get(name)!r}, not "
                f"the {as_resolved[name]!r} submitted"
            )
        if env_option is not None:
            assert got[env_option] == {"KIT_API_TOKEN": MASK, "KIT_PLAIN": "plain"}, got
        shown = json.dumps([got, desc.metadata, [r.env for r in desc.roles]])
        assert secret not in shown, f"describe({app_id!r}) shows a secret run option's value"
        assert RUN_OPTIONS_KEY not in desc.metadata, desc.metadata

    def test_an_app_that_exits_0_succeeds(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("hi"), Exit(0)]))
        assert kit.wait_terminal(app_id).state == AppState.SUCCEEDED

    def test_a_failing_replica_fails_the_app(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("bad", [Err("failing"), Exit(3)]))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.FAILED, desc
        (role,) = desc.roles_statuses
        (rep,) = role.replicas
        assert rep.state == AppState.FAILED, rep
        assert rep.exit_code == (None if kit.lacks(Capability.EXIT_CODES) else 3), rep
        assert desc.msg and desc.msg != NONE, f"no message says why app {app_id} failed"

    def test_one_failing_replica_of_several_fails_the_app(self, kit: Kit) -> None:
        # the last replica fails once the others have exited 0: each keeps its own exit
        n = self.replicas
        steps: list[Step] = [Out(f"replica {macros.replica_id}"), Fail(n - 1, 7, after=2)]
        app_id = kit.run(kit.builder.role("main", steps, n))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.FAILED, f"one replica of {n} failed, yet: {desc}"
        assert desc.msg and desc.msg != NONE, f"no message says why app {app_id} failed"
        self._check_exits(kit, desc, {k: 0 for k in range(n - 1)} | {n - 1: 7})

    def test_one_failing_replica_of_several_with_retries(self, kit: Kit) -> None:
        n = self.replicas
        steps: list[Step] = [Out(f"replica {macros.replica_id}"), Fail(n - 1, 7, after=1)]
        app_id = kit.run(kit.builder.role("main", steps, n, max_retries=1))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.FAILED, f"a replica failed on every attempt, yet: {desc}"
        if kit.lacks(Capability.RETRIES):
            assert desc.num_restarts <= 0, desc
        else:
            assert desc.num_restarts == 1, desc
        if kit.lacks(Capability.LAST_ATTEMPT_STATUS) and not kit.lacks(Capability.RETRIES):
            (role,) = desc.roles_statuses
            assert sorted(rep.id for rep in role.replicas) == list(range(n)), role
            for rep in role.replicas:
                assert rep.state == desc.state and rep.exit_code is None, (desc.state, rep)
            return
        self._check_exits(kit, desc, {n - 1: 7})

    def test_two_roles_of_n_replicas_with_macros(self, kit: Kit) -> None:
        n = self.replicas
        roles = [
            kit.builder.role(name, [Out(f"{name} replica={macros.replica_id}"), Rank0Host()], n)
            for name in ("alpha", "beta")
        ]
        if kit.lacks(Capability.MULTI_ROLE):
            # refused before anything is made; each role then runs as an app of its own
            with pytest.raises(ValueError) as e:
                kit.dryrun(kit.builder.app("kit", *roles))
            one_line(e.value)
            app_ids = {role.name: kit.run(role) for role in roles}
        else:
            app_id = kit.run(*roles)
            app_ids = {role.name: app_id for role in roles}
        for app_id in set(app_ids.values()):
            desc = kit.wait_terminal(app_id)
            assert desc.state == AppState.SUCCEEDED, desc
            for r in desc.roles_statuses:
                assert app_ids[r.role] == app_id, (app_ids, desc)
                assert sorted(rep.id for rep in r.replicas) == list(range(n)), r
            assert {r.role for r in desc.roles_statuses} == {
                name for name, app in app_ids.items() if app == app_id
            }, desc
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_ids["alpha"], "alpha", 0)
            return
        for name, app_id in app_ids.items():
            hosts = set()
            for k in range(n):
                lines = kit.logs(app_id, name, k)
                assert lines[0] == f"{name} replica={k}\n", lines
                assert lines[1].startswith("rank0="), lines
                hosts.add(lines[1])
            (host,) = hosts  # every replica of a role sees the same rank-0 host
            if kit.lacks(Capability.RANK0_ENV):
                assert host == f"rank0=?{macros.rank0_env}\n"
            else:
                value = host.removeprefix("rank0=").strip()
                assert value and "$" not in value and not value.startswith("?"), host

    def test_concurrent_submits_get_distinct_ids(self, kit: Kit) -> None:
        app = kit.builder.app("kitsame", kit.builder.role("main", [Out("hi")]))
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(kit.submit, copy.deepcopy(app)) for _ in range(4)]
            ids = [f.result(timeout=self.timeout) for f in futures]
        assert len(set(ids)) == 4, ids
        for app_id in ids:
            assert kit.describe(app_id).app_id == app_id
