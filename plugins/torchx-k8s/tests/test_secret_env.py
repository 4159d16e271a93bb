"""``describe``'s env: what ``torchx status`` masks, including ``secret_env``'s values.

``secret_env`` puts variables from Secrets into the pods (``secretKeyRef``): torchx never
holds their values, so an app that printed one to stderr had it shown in clear in its
failure message. A FAILED app's ``describe`` now reports the values of the Secrets its
pods read (one GET per Secret), under names that say they are secret whatever the
variable's name; every flavour that takes ``secret_env`` does.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import pytest
from fakeapi import FakeApi, api_error, pod
from torchx_k8s import mcad, scheduler
from torchx_k8s.backend import K8sBackend
from torchx_k8s.scheduler import KubernetesScheduler

from torchx.runner import Runner
from torchx.schedulers.contract.errors import TransientSchedulerError
from torchx.schedulers.helpers.retry import Backoff
from torchx.specs import AppDef, AppState, Resource, Role

NS = "team-a"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"
TOKEN = "hf_tok3n-value"
URL = "postgres://u:pw-9f2@db"
PASSWORD = "p4ssw0rd-db"
#: three variables, two Secrets; DB_URL's name does not look secret
SECRET_ENV = {"HF_TOKEN": "hf-creds/token", "DB_URL": "hf-creds/url", "PASS": "db/password"}


def _failed(api: FakeApi, status: dict[str, Any]) -> None:
    [path] = [k for k in api.objects if "/secrets/" not in k]
    api.objects[path]["status"] = status


#: flavour -> (factory, run options, the status its controller writes for a failed app)
FLAVOURS: dict[str, tuple[Callable[..., KubernetesScheduler], dict[str, Any], dict[str, Any]]] = {
    "volcano": (scheduler.create_scheduler, {}, {"state": {"phase": "Failed"}}),
    "jobset": (
        scheduler.create_scheduler,
        {"flavour": "jobset"},
        {"terminalState": "Failed", "conditions": [{"type": "Failed", "status": "True"}]},
    ),
    "appwrapper-v1beta1": (
        mcad.create_scheduler,
        {"appwrapper_version": "v1beta1"},
        {"state": "Failed"},
    ),
    "appwrapper-v1beta2": (
        mcad.create_scheduler,
        {"appwrapper_version": "v1beta2"},
        {"phase": "Failed"},
    ),
}


@pytest.fixture
def api() -> FakeApi:
    fake = FakeApi()
    fake.add_secret(NS, "hf-creds", {"token": TOKEN, "url": URL, "unused": "not-referenced"})
    fake.add_secret(NS, "db", {"password": PASSWORD})
    return fake


def app(**env: str) -> AppDef:
    role = Role(
        "r0", "img:1", entrypoint="echo", args=["hi"], num_replicas=2,
        resource=Resource(1, 0, 512), env=env,
    )  # fmt: skip
    return AppDef("trainer", [role])


def submit(api: FakeApi, flavour: str, a: AppDef | None = None) -> tuple[KubernetesScheduler, str]:
    factory, cfg, _ = FLAVOURS[flavour]
    sched = factory("s", backend=K8sBackend(api))
    cfg = {**cfg, "namespace": NS, "validate_spec": False, "secret_env": SECRET_ENV}
    app_id = sched.schedule(sched.submit_dryrun(a or app(), cfg))
    return sched, app_id


def secret_gets(api: FakeApi) -> list[str]:
    return [p for m, p, _, _ in api.calls if m == "GET" and p.startswith(SECRETS)]


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_a_failed_apps_env_holds_its_secret_env_values_marked_secret(
    api: FakeApi, flavour: str
) -> None:
    sched, app_id = submit(api, flavour, app(LEVEL="debug $$(HOME)"))
    _failed(api, FLAVOURS[flavour][2])
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.FAILED
    secret = {k: v for k, v in d.env.items() if re.search("secret", k, re.IGNORECASE)}
    # each under a name a masker that goes by names treats as secret (DB_URL's too)
    assert secret == {
        "secret:hf-creds/token": TOKEN,
        "secret:hf-creds/url": URL,
        "secret:db/password": PASSWORD,
    }, d.env
    assert "not-referenced" not in d.env.values()  # a key no variable reads is not read out
    # one GET per Secret, however many variables read it
    assert sorted(secret_gets(api)) == [f"{SECRETS}/db", f"{SECRETS}/hf-creds"]
    # the pods' plain values as the container sees them (the spec escapes '$')
    assert d.env["LEVEL"] == "debug $$(HOME)"


@pytest.mark.parametrize("flavour", ["volcano", "jobset"])
def test_no_secret_is_read_while_the_app_has_not_failed(api: FakeApi, flavour: str) -> None:
    sched, app_id = submit(api, flavour)
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.PENDING
    assert not secret_gets(api)
    assert not [k for k in d.env if k.startswith("secret:")]


def test_an_app_without_secrets_reads_none(api: FakeApi) -> None:
    sched = scheduler.create_scheduler("s", backend=K8sBackend(api))
    app_id = sched.schedule(sched.submit_dryrun(app(), {"namespace": NS, "validate_spec": False}))
    _failed(api, FLAVOURS["volcano"][2])
    d = sched.describe(app_id)
    assert d is not None and d.state == AppState.FAILED
    assert not secret_gets(api)


@pytest.mark.parametrize(("status", "why"), [(403, "forbidden"), (404, "not found")])
def test_a_secret_that_cannot_be_read_is_left_out_with_a_debug_line(
    api: FakeApi, caplog: pytest.LogCaptureFixture, status: int, why: str
) -> None:
    sched, app_id = submit(api, "volcano")
    api.refuse[f"{SECRETS}/hf-creds"] = [
        api_error(status, f'secrets "hf-creds" is {why}: User "bob" cannot get resource')
    ]
    _failed(api, FLAVOURS["volcano"][2])
    with caplog.at_level(logging.DEBUG, logger="torchx_k8s"):
        d = sched.describe(app_id)
    assert d is not None and d.state == AppState.FAILED  # describe works as before
    assert not [k for k in d.env if k.startswith("secret:hf-creds/")]
    assert d.env["secret:db/password"] == PASSWORD  # the Secret it can read is reported
    [line] = [r for r in caplog.records if "hf-creds" in r.getMessage()]
    assert line.levelno == logging.DEBUG and str(status) in line.getMessage()
    assert not [r for r in caplog.records if r.levelno > logging.DEBUG]


def test_an_outage_reading_a_secret_is_retried_not_taken_for_no_secret(api: FakeApi) -> None:
    sched, app_id = submit(api, "volcano")
    _failed(api, FLAVOURS["volcano"][2])
    api.refuse[f"{SECRETS}/hf-creds"] = [api_error(503, "the server is restarting")]
    with pytest.raises(Exception) as e:
        sched.describe(app_id)
    assert isinstance(sched.classify_error(e.value), TransientSchedulerError)
    # through the Runner: retried, and then the values are there
    api.refuse[f"{SECRETS}/hf-creds"] = [api_error(503, "the server is restarting")]
    runner = Runner(
        "s",
        {"kubernetes": lambda session, **kw: sched},
        backoff=Backoff(initial=0.01, max_delay=0.01, jitter=0.01, deadline=5),
    )
    found = runner.status_and_envs(f"kubernetes://s/{app_id}")
    assert found is not None
    values = {k: v for env in found[1] for k, v in env.items()}
    assert values["secret:hf-creds/token"] == TOKEN


def test_status_and_envs_give_the_value_the_failed_replica_printed(api: FakeApi) -> None:
    """The failed replica printed its token to stderr: the status quotes it, and the envs
    ``torchx status`` masks with hold it under a secret-looking name."""
    sched, app_id = submit(api, "volcano")
    name = app_id.split(":")[1]
    failed = pod(name, 0, 0, "Failed", exit_code=1)
    api.pods = [failed, pod(name, 0, 1, "Succeeded", exit_code=0)]
    api.logs[failed["metadata"]["name"]] = f"login with {TOKEN} refused\n".encode()
    _failed(api, FLAVOURS["volcano"][2])
    runner = Runner("s", {"kubernetes": lambda session, **kw: sched})
    found = runner.status_and_envs(f"kubernetes://s/{app_id}")
    assert found is not None
    status, envs = found
    assert status.state == AppState.FAILED
    assert TOKEN in status.roles[0].replicas[0].structured_error_msg  # what was printed
    masked_by_name = [
        v for env in envs for k, v in env.items() if re.search("SECRET", k, re.IGNORECASE)
    ]
    assert TOKEN in masked_by_name and URL in masked_by_name
