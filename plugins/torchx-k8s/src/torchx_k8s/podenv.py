"""The environment an app's pods run with, as ``describe`` reports it for masking.

``torchx status`` masks the secret values it knows of wherever they show, notably in a
failed app's message, which quotes the end of the failed replica's stderr
(``DescribeAppResponse.env``, ``Runner.status_and_envs``). The AppDef's env is one
source; the pods carry more: values a macro made (``${app_id}``), a pod overlay's
variables, and the ``secret_env`` run option's variables, which are only references
to Secrets (``secretKeyRef``: the spec never holds their values, so torchx cannot know
them from the spec). :func:`pod_env` reads the containers' env of every pod template in
the app's object (and of the pods listed): plain values as the container sees them,
and the Secrets referenced (``secretKeyRef``, and ``envFrom`` of a whole Secret).
:func:`secret_values` reads those Secrets' values, each Secret once.

A value read from a Secret is secret by definition, whatever its variable's name
(``DB_URL`` reads as harmless to a masker that goes by names), so it is reported under
a name that says so: ``secret:SECRET/KEY`` (:func:`secret_name`); every masker that
knows ``SECRET`` in a name masks it (a variable of that very name, were there one,
would be masked all the same).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PodEnv", "decode_secret", "pod_env", "reported_env", "secret_name", "secret_values"]

#: ``$$`` as Kubernetes reads it in an env value: one ``$``.
_ESCAPED = re.compile(r"\$\$")


def secret_name(secret: str, key: str) -> str:
    """The name a Secret's value is reported under in ``DescribeAppResponse.env``.

    >>> secret_name("hf-creds", "token")
    'secret:hf-creds/token'
    """
    return f"secret:{secret}/{key}"


@dataclass
class PodEnv:
    """The env of an app's containers."""

    #: plain values, by variable name, as the container sees them
    values: dict[str, str] = field(default_factory=dict)
    #: (Secret, key) of every ``secretKeyRef``
    refs: set[tuple[str, str]] = field(default_factory=set)
    #: Secrets whose every key is a variable (``envFrom``'s ``secretRef``)
    whole: set[str] = field(default_factory=set)

    def secrets(self) -> list[str]:
        """The Secrets to read, each once, in a stable order."""
        return sorted({s for s, _ in self.refs} | self.whole)


def pod_env(*objects: Any) -> PodEnv:
    """The env of every container (and init container) of every pod spec in ``objects``.

    A pod spec is any mapping with a ``containers`` list, wherever it sits (a Volcano
    task's template, a JobSet's Job template, an AppWrapper's wrapped Pod, a pod), so
    every flavour's object is read the same way. A value is unescaped as Kubernetes
    reads it (``$$`` is ``$``: the plugin escapes every ``$`` Kubernetes would expand).

    >>> env = pod_env({"spec": {"tasks": [{"template": {"spec": {"containers": [{"env": [
    ...     {"name": "A", "value": "x$$(Y)"},
    ...     {"name": "T", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "tok"}}},
    ...     {"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    ...     "envFrom": [{"secretRef": {"name": "all"}}, {"configMapRef": {"name": "c"}}]}]}}}]}})
    >>> env.values, sorted(env.refs), env.secrets()
    ({'A': 'x$(Y)'}, [('creds', 'tok')], ['all', 'creds'])
    """
    out = PodEnv()
    for spec in _pod_specs(objects):
        for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            if not isinstance(container, Mapping):
                continue
            for var in container.get("env") or []:
                name = var.get("name")
                if not isinstance(name, str):
                    continue
                if isinstance(var.get("value"), str):
                    out.values[name] = _ESCAPED.sub("$", var["value"])
                ref = (var.get("valueFrom") or {}).get("secretKeyRef") or {}
                if ref.get("name") and ref.get("key"):
                    out.refs.add((str(ref["name"]), str(ref["key"])))
            for source in container.get("envFrom") or []:
                secret = (source.get("secretRef") or {}).get("name")
                if secret:
                    out.whole.add(str(secret))
    return out


def _pod_specs(node: Any) -> Iterable[Mapping[str, Any]]:
    """Every mapping under ``node`` holding a ``containers`` list (a pod spec)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if isinstance(item.get("containers"), list):
                yield item
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def decode_secret(secret: Mapping[str, Any]) -> dict[str, str]:
    """A Secret's ``data`` (base64, as the API gives it) as text, key by key.

    >>> decode_secret({"data": {"token": "aGZfc2VjcmV0"}})
    {'token': 'hf_secret'}
    """
    out: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value)).decode("utf-8", "replace")
        except ValueError:
            continue  # not base64: no value the container could have
    return out


def secret_values(env: PodEnv, read: Callable[[str], Mapping[str, str] | None]) -> dict[str, str]:
    """The values of the Secrets ``env`` references, under :func:`secret_name` names.

    ``read(secret)`` gives a Secret's decoded data, or None when it cannot be read (no
    ``get`` on secrets, or gone): its values are then unknown, and left out. Each
    Secret is read once, however many variables name it.
    """
    out: dict[str, str] = {}
    for secret in env.secrets():
        data = read(secret)
        if data is None:
            continue
        for key, value in data.items():
            if secret in env.whole or (secret, key) in env.refs:
                out[secret_name(secret, key)] = value
    return out


def reported_env(
    failed: bool, read: Callable[[str], Mapping[str, str] | None], *objects: Any
) -> dict[str, str]:
    """The env ``describe`` reports: the pods' plain values (:func:`pod_env` of
    ``objects``), and for a ``failed`` app the values of the Secrets they read
    (:func:`secret_values` through ``read``). Secrets are read only then: a FAILED app's
    message is the one that quotes what the app printed (the end of its stderr); reading
    them for every status of a running app (``run --wait`` polls) would cost calls for
    nothing."""
    env = pod_env(*objects)
    out = dict(env.values)
    if failed and env.secrets():
        out.update(secret_values(env, read))
    return out
