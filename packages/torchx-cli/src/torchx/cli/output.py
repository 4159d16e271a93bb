"""Printing for the CLI: secret masking and versioned JSON.

Env values whose names look secret (TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL) are
masked wherever the CLI prints an AppDef, unless the user asks for ``--show-secrets``.
The same goes for run options that carry such pairs (docker's ``env``, SageMaker's
``environment`` and ``hyperparameters``: ``-cfg`` or ``.torchxconfig``). Every secret
value the command has seen (:func:`remember_secrets`) is masked in whatever else torchx
prints of its own (status messages, error lines): :func:`mask` is that one path.
Everything printed as JSON carries a ``formatVersion`` so scripts can rely on it.
"""

from __future__ import annotations

import sys

# The secret-looking names and their masking are torchx-specs' one copy, which the
# schedulers use for the run options they keep beside an app; re-exported for the CLI.
from torchx.specs.secrets import MASK as MASK
from torchx.specs.secrets import SECRET_PATTERN as SECRET_PATTERN
from torchx.specs.secrets import is_secret_name as is_secret_name
from torchx.specs.secrets import mask_env as mask_env
from torchx.specs.secrets import masked_cfg as masked_cfg
from torchx.specs.secrets import masked_run_options as masked_run_options
from torchx.specs.secrets import secret_pairs as secret_pairs
from torchx.specs.status import NONE, STATES, format_duration, format_time
from torchx.specs.status import format_status as status_text

TYPE_CHECKING = False  # typing costs milliseconds: the quick path imports this module
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    #: A row of ``torchx list``: (handle, state, name, start time, end time); times in
    #: seconds since the epoch, None where unknown.
    AppRow = tuple[str, str, str, float | None, float | None]

#: Version of the JSON documents the CLI prints.
JSON_FORMAT_VERSION = "torchx.cli/v1"


def secrets_written(texts: Iterable[str]) -> list[dict[str, str]]:
    """The secret-looking pairs of run options as written, before they are parsed: a
    value that does not parse is quoted in the error line, which :func:`mask` then hides.

    Each text is ``KEY=VALUE`` items separated by ``,`` or ``;`` (``-cfg``; a line of
    ``.torchxconfig`` as ``key=value``). Read leniently, as no option's parser would: a
    secret-looking ``KEY``'s value, and a secret-looking ``NAME`` of a ``NAME:VALUE`` (or
    ``NAME=VALUE``) pair, however malformed the rest.

    >>> secrets_written(["env=DB_PASSWORD:s3cret,BAD", "api_token=abc123", "queue=gpu"])
    [{'DB_PASSWORD': 's3cret'}, {'api_token': 'abc123'}]
    """
    import re

    out = []
    for text in texts:
        for item in re.split(r"[,;]", text):
            key, eq, value = item.partition("=")
            if eq and is_secret_name(key):
                out.append({key.strip(): value.strip()})
            pair = re.match(r"([^:=]*)[:=](.*)", value if eq else item, re.DOTALL)
            if pair and is_secret_name(pair.group(1)):
                out.append({pair.group(1).strip(): pair.group(2).strip()})
    return out


def host_secrets() -> dict[str, str]:
    """The secret-looking variables of this process's environment (a run option such as
    docker's ``copy_env`` copies them into the request)."""
    import os

    return {k: v for k, v in os.environ.items() if is_secret_name(k)}


#: The secret values this command has seen (one mapping per source), and whether the
#: user asked to see them (``--show-secrets``); see :func:`mask`.
_seen: list[Mapping[str, str]] = []
_shown = [False]


def start_masking(show: bool) -> None:
    """Forgets what an earlier command in this process saw; ``show``: mask nothing."""
    _seen.clear()
    _shown[0] = show


def remember_secrets(envs: Iterable[Mapping[str, str]]) -> None:
    """Adds env-like mappings (a role's env, a run option's pairs) whose secret values
    :func:`mask` hides from then on."""
    _seen.extend(envs)


def mask(text: str) -> str:
    """``text`` with every secret value this command has seen replaced by ``****``
    (unchanged with ``--show-secrets``): what torchx prints of its own goes through it."""
    return text if _shown[0] or not _seen else mask_values(text, _seen)


class _MaskingFilter:
    """A ``logging`` filter: torchx's own log lines (a retry's warning quoting a backend's
    error, debug output) are masked as the rest of what the command prints."""

    def filter(self, record: Any) -> bool:
        if _seen and not _shown[0]:
            record.msg, record.args = mask(record.getMessage()), ()
        return True


_FILTER = _MaskingFilter()


def mask_log_lines() -> None:
    """Puts :func:`mask` on every line ``logging`` prints (its handlers, and the one it
    falls back to when none is configured); once per handler."""
    import logging

    for handler in [logging.lastResort, *logging.getLogger().handlers]:
        if handler is not None and _FILTER not in handler.filters:
            handler.addFilter(_FILTER)


def masked_app(app: Any) -> Any:
    """A deep copy of an AppDef whose roles' secret-looking env values are masked."""
    import copy

    out = copy.deepcopy(app)
    for role in out.roles:
        role.env = mask_env(role.env)
    return out


def mask_values(text: str, envs: Iterable[Mapping[str, str]]) -> str:
    """``text`` with every secret value of the ``envs`` (one per role) replaced by ``****``.

    Values shorter than three characters are left alone: masking every ``1`` in a log
    would hide more than it protects.

    >>> mask_values("login s3cr3t as bob", [{"DB_PASSWORD": "s3cr3t", "USER": "bob"}])
    'login **** as bob'
    """
    for env in envs:
        for name, value in env.items():
            if is_secret_name(name) and value and len(value) >= 3:
                text = text.replace(value, MASK)
    return text


#: The names of ``torchx.specs.AppState`` (``list --state`` checks against these without
#: importing the spec types: the quick path uses this module).
APP_STATES = STATES
#: The widest the APP HANDLE column of ``torchx list`` grows: a longer handle (an app
#: with a 300-character name) overflows its own row only, never widens the others.
HANDLE_COLUMN_MAX = 48
#: The longest NAME shown in full; a longer one is cut to this many characters, ending
#: in "..." (``--json`` keeps it whole; the handle is what commands take).
NAME_COLUMN_MAX = 40


def parse_states(text: str) -> frozenset[str]:
    """``running,pending`` (``list --state``) -> {"RUNNING", "PENDING"}; an unknown one is a CliError.

    >>> sorted(parse_states("running, Pending"))
    ['PENDING', 'RUNNING']
    >>> parse_states("runing")
    Traceback (most recent call last):
    ...
    torchx.cli.errors.CliError: unknown state 'runing' in --state (did you mean 'running'?); ...
    """
    from torchx.cli.errors import CliError

    states = set()
    for word in text.split(","):
        name = word.strip().upper()
        if name not in APP_STATES:
            from torchx.specs.errors import did_you_mean

            raise CliError(
                f"unknown state {word.strip()!r} in --state{did_you_mean(name.lower(), [s.lower() for s in APP_STATES])}; "
                f"choose from {', '.join(s.lower() for s in APP_STATES)} (several: running,pending)"
            )
        states.add(name)
    return frozenset(states)


def parse_limit(text: str) -> int:
    """``list --limit N``: a positive count, else a CliError.

    >>> parse_limit("20")
    20
    >>> parse_limit("0")
    Traceback (most recent call last):
    ...
    torchx.cli.errors.CliError: bad --limit '0': expected a positive number of apps, e.g. 20
    """
    from torchx.cli.errors import CliError

    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if limit <= 0:
        raise CliError(f"bad --limit {text!r}: expected a positive number of apps, e.g. 20")
    return limit


def select_apps(
    rows: Iterable[AppRow], states: frozenset[str] | None, limit: int | None
) -> list[AppRow]:
    """The rows in ``states`` (None: all), the newest ``limit`` of them."""
    chosen = [row for row in rows if states is None or row[1] in states]
    return chosen[:limit] if limit is not None else chosen


def app_list_json(
    rows: Iterable[AppRow], sweeps: Mapping[str, Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The ``data`` of an ``AppList`` JSON document (times in seconds since the epoch);
    ``sweep`` is the handle of the sweep an app is a trial of (``sweeps``: each trial's
    sweep record by the app's handle, :func:`torchx.sweeps.trial_sweeps`), else null."""
    sweeps = sweeps or {}
    return [
        {
            "handle": handle,
            "state": state,
            "name": name,
            "start_time": start,
            "end_time": end,
            "duration_s": _duration(start, end, state),
            "sweep": sweeps[handle]["handle"] if handle in sweeps else None,
        }
        for handle, state, name, start, end in rows
    ]


def _duration(start: float | None, end: float | None, state: str) -> float | None:
    """Seconds from start to end; for a RUNNING app, to now (its elapsed time); None
    when the start is unknown, or the app is not running and has no end."""
    if end is None and state == "RUNNING":
        import time

        end = time.time()
    return None if start is None or end is None else round(max(end - start, 0.0), 3)


def format_status(status: Any, roles: list[str] | None = None) -> str:
    """What ``torchx status`` and ``run --wait`` print of an ``AppStatus`` (after the handle):
    the one text of :mod:`torchx.specs.status`, with when the app started and ended.

    The quick path prints the same record through the same function.
    """
    return status_text(status.record(), roles)


def format_app_list(
    apps: Iterable[AppRow], sweeps: Mapping[str, Mapping[str, Any]] | None = None
) -> str:
    """What ``torchx list`` prints for its rows, newest first.

    One function for the full command and the quick path, so they cannot drift apart.
    The handle column is as wide as its widest handle up to :data:`HANDLE_COLUMN_MAX`;
    STARTED is local time to the second, DURATION from start to end, or to now while
    the app runs (``-`` when unknown).

    ``sweeps``: each trial's sweep record by the app's handle
    (:func:`torchx.sweeps.trial_sweeps`). The trials of a sweep are grouped: where the
    first of them would be, a line of the sweep (its handle, state, when it was started,
    its duration, its component and its trials' states), then its trials listed,
    indented by two spaces, in their order.
    """
    lines = _grouped(list(apps), sweeps or {})
    if not lines:
        return "no apps\n"
    width = min(max(len(row[0]) for row in lines), HANDLE_COLUMN_MAX)
    out = [f"{'APP HANDLE':<{width}}  {'STATE':<10}  {'STARTED':<19}  {'DURATION':<8}  NAME"]
    for handle, state, name, start, end in lines:
        started = format_time(start) if start is not None else "-"
        took = _duration(start, end, state)
        duration = format_duration(took) if took is not None else "-"
        out.append(f"{handle:<{width}}  {state:<10}  {started:<19}  {duration:<8}  {_cut(name)}")
    return "\n".join(out) + "\n"


def _grouped(rows: list[AppRow], sweeps: Mapping[str, Mapping[str, Any]]) -> list[AppRow]:
    """``rows`` with each sweep's trials after a line of the sweep, indented."""
    if not any(row[0] in sweeps for row in rows):
        return rows
    members: dict[str, list[AppRow]] = {}
    for row in rows:
        if row[0] in sweeps:
            members.setdefault(sweeps[row[0]]["handle"], []).append(row)
    out: list[AppRow] = []
    for row in rows:
        doc = sweeps.get(row[0])
        if doc is None:
            out.append(row)
            continue
        trials = members.pop(doc["handle"], None)
        if trials is None:  # its sweep's line and trials are out already
            continue
        states: dict[str, int] = {}
        for t in doc["trials"]:
            states[t["state"]] = states.get(t["state"], 0) + 1
        summary = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
        name = f"{doc['component']}: {len(doc['trials'])} trials ({summary})"
        out.append((doc["handle"], doc["state"], name, doc["created"], doc["ended"]))
        out.extend((f"  {t[0]}", *t[1:]) for t in trials)
    return out


def _cut(name: str) -> str:
    return name if len(name) <= NAME_COLUMN_MAX else name[: NAME_COLUMN_MAX - 3] + "..."


def format_app(app: Any) -> str:
    """An AppDef as a human reads it: one block per role, fields that are set only.

    ``describe`` and ``run --dryrun`` print this; ``--json`` gives every field instead.
    """
    import shlex

    lines = [f"AppDef: {app.name}"]
    if app.metadata:
        lines.append(f"  metadata: {_pairs(app.metadata)}")
    for role in app.roles:
        replicas = f"{role.num_replicas} replica{'s' if role.num_replicas != 1 else ''}"
        if role.min_replicas is not None and role.min_replicas != role.num_replicas:
            replicas += f" (min {role.min_replicas})"
        lines.append(f"  Role {role.name}: {replicas}")
        command = shlex.join([str(role.entrypoint), *map(str, role.args)])
        fields: list[tuple[str, str]] = [("image", str(role.image)), ("command", command)]
        if role.env:
            fields.append(("env", _pairs(role.env, sep="\n")))
        res = role.resource
        text = f"cpu={res.cpu} gpu={res.gpu} memMB={res.memMB}"
        for extra in ("capabilities", "devices", "tags"):
            if getattr(res, extra):
                text += f" {extra}={_pairs(getattr(res, extra))}"
        fields.append(("resource", text))
        fields.append(("retries", f"{role.max_retries} (policy {role.retry_policy.name})"))
        if role.port_map:
            fields.append(("ports", _pairs(role.port_map)))
        if role.mounts:
            fields.append(("mounts", "\n".join(_mount(m) for m in role.mounts)))
        if role.workspace is not None:
            fields.append(("workspace", str(role.workspace)))
        if role.metadata:
            fields.append(("metadata", _pairs(role.metadata)))
        if role.overrides:
            fields.append(("overrides", _pairs(role.overrides)))
        for label, value in fields:
            first, *rest = value.split("\n")
            lines.append(f"    {label + ':':<11}{first}")
            lines.extend(f"    {'':<11}{more}" for more in rest)
    return "\n".join(lines)


def format_run_options(options: Mapping[str, Any]) -> str:
    """The run options an app was submitted with (``torchx describe``), one a line, as
    the scheduler kept them (masked): lists and mappings as ``-cfg`` writes them.

    >>> print(format_run_options({"env": {"A": "1", "B_TOKEN": "****"}, "tags": ["x", "y"]}))
    Run options:
      env: A:1,B_TOKEN:****
      tags: x,y
    """
    lines = ["Run options:"]
    for name, value in options.items():
        if isinstance(value, dict):
            text = ",".join(f"{k}:{v}" for k, v in value.items())
        elif isinstance(value, list):
            text = ",".join(map(str, value))
        else:
            text = str(value)
        lines.append(f"  {name}: {text}")
    return "\n".join(lines)


def _pairs(mapping: Any, sep: str = ", ") -> str:
    return sep.join(f"{k}={v}" for k, v in mapping.items())


def _mount(mount: Any) -> str:
    import attrs

    kind = type(mount).__name__.replace("Mount", "").lower()
    return f"{kind}: {_pairs(attrs.asdict(mount))}"


def status_payload(handle: str, status: Any, roles: list[str] | None = None) -> dict[str, Any]:
    """The ``data`` of an ``AppStatus`` JSON document (``status --json``, ``run --wait --json``).

    ``roles``: only these roles' statuses (default: all).
    """
    from torchx.specs.serialize import unstructure

    data: Any = _plain(unstructure(status))
    if roles and isinstance(data, dict):
        data["roles"] = [r for r in data.get("roles", []) if r.get("role") in roles]
    # start_time/end_time are in the status (seconds since the epoch); the duration beside it
    return {
        "handle": handle,
        "status": data,
        "duration_s": _duration(status.start_time, status.end_time, status.state.name),
    }


def _plain(value: Any, key: str = "") -> Any:
    """A status as JSON has it: an empty field (the specs' ``<NONE>``) is ``null``, and a
    ``structured_error_msg`` is the object it holds, not JSON inside a string (text that
    is not a JSON object becomes ``{"message": text}``).

    >>> _plain({"msg": "<NONE>", "structured_error_msg": '{"message": {"message": "boom"}}'})
    {'msg': None, 'structured_error_msg': {'message': {'message': 'boom'}}}
    >>> _plain({"roles": [{"structured_error_msg": "disk full"}]})
    {'roles': [{'structured_error_msg': {'message': 'disk full'}}]}
    """
    if isinstance(value, dict):
        return {k: _plain(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value == NONE:
        return None
    if key == "structured_error_msg" and isinstance(value, str):
        import json

        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        return parsed if isinstance(parsed, dict) else {"message": value}
    return value


def print_json(kind: str, payload: Any, out: Any = None, compact: bool = False) -> None:
    """Prints ``payload`` as ``{"formatVersion": ..., "kind": kind, "data": payload}``,
    with the secrets this command has seen masked (:func:`mask`).

    ``compact``: on one line, for a command that prints one document after another
    (``run --json --wait``, ``log --json``): each line is one document a script reads
    on its own.
    """
    import json

    out = out or sys.stdout
    doc = {"formatVersion": JSON_FORMAT_VERSION, "kind": kind, "data": payload}
    text = json.dumps(
        doc, default=str, **({"separators": (",", ":")} if compact else {"indent": 2})
    )
    out.write(mask(text) + "\n")
