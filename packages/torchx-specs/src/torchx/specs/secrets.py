"""Secret-looking names and their masking: the one copy the CLI, the runner and the ui use.

A value is taken to be secret by its name: an env variable, a run option, or the
``NAME`` of a ``NAME=value`` (or ``NAME:value``) pair inside a run option, whose name
contains TOKEN, SECRET, PASSWORD, PASSWD, KEY or CREDENTIAL (any case). A scheduler
reports a value it knows to be secret under a name starting with ``secret:``, which
matches too. The ``torchx`` command masks such values wherever it prints them; the
schedulers mask the run options they keep beside an app (labels, annotations and job
parameters are readable by others) with :func:`masked_run_options` before they write
them (:func:`torchx.specs.appdef_json.encode`).

This module imports nothing at import time (the CLI's quick path loads it); ``re`` is
imported on the first name it tests.

>>> masked_run_options({"env": {"HF_TOKEN": "hf_1", "LR": "1"}, "api_key": "abc", "n": 2})
{'api_key': '****', 'env': {'HF_TOKEN': '****', 'LR': '1'}, 'n': 2}
"""

from __future__ import annotations

from collections.abc import Mapping  # loaded by Python's own startup: free

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    #: A run option as kept beside an app: a plain JSON value.
    RunOptionValue = str | int | float | bool | list[str] | dict[str, str]

__all__ = [
    "MASK",
    "SECRET_PATTERN",
    "is_secret_name",
    "mask_env",
    "masked_cfg",
    "masked_run_options",
    "secret_pairs",
]

#: What a masked value reads as.
MASK = "****"
#: What a secret-looking name contains (any case); compiled on first use.
SECRET_PATTERN = r"TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL"
_secret: Any = None
_pair: Any = None


def is_secret_name(name: str) -> bool:
    """True for names that look like they hold a secret (``API_KEY``, ``HF_TOKEN``, ...).

    >>> is_secret_name("HF_TOKEN"), is_secret_name("secret:db-creds/url"), is_secret_name("DB_URL")
    (True, True, False)
    """
    global _secret
    if _secret is None:
        import re

        _secret = re.compile(SECRET_PATTERN, re.IGNORECASE)
    return bool(_secret.search(name))


def mask_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` with the values of secret-looking names replaced by ``****``.

    >>> mask_env({"HF_TOKEN": "hf_abc123", "LR": "0.1", "API_KEY": ""})
    {'HF_TOKEN': '****', 'LR': '0.1', 'API_KEY': ''}
    """
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def secret_pairs(cfg: Mapping[str, Any]) -> list[dict[str, str]]:
    """The run options of ``cfg`` that are ``NAME:VALUE`` pairs holding a secret-looking name.

    >>> secret_pairs({"env": {"DB_PASSWORD": "s3cr3t", "LR": "1"}, "tags": {"team": "ml"}})
    [{'DB_PASSWORD': 's3cr3t', 'LR': '1'}]
    """
    out = []
    for value in cfg.values():
        if isinstance(value, dict) and any(is_secret_name(str(k)) for k in value):
            out.append({str(k): str(v) for k, v in value.items()})
    return out


def masked_cfg(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``cfg`` whose ``NAME:VALUE`` run options have their secret values masked
    (what ``torchx run --dryrun`` prints; names and order kept).

    >>> masked_cfg({"env": {"API_KEY": "abc123", "LR": "1"}, "shm_size": "2g"})
    {'env': {'API_KEY': '****', 'LR': '1'}, 'shm_size': '2g'}
    """
    return {
        k: mask_env({str(n): str(x) for n, x in v.items()}) if isinstance(v, dict) else v
        for k, v in cfg.items()
    }


def _masked_item(item: str) -> str:
    """``item`` with the value of every secret-looking ``NAME=value``/``NAME:value`` pair
    masked, wherever the pair starts (``--comment=API_TOKEN=x`` too): everything after a
    secret-looking name and its ``=`` or ``:`` is ``****``."""
    global _pair
    if _pair is None:
        import re

        _pair = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)\s*[=:]")
    found = _pair.search(item)
    if found is None:
        return item
    head, rest = item[: found.end()], item[found.end() :]
    if is_secret_name(found.group(1)):
        return head + (MASK if rest else "")
    return head + _masked_item(rest)


def _masked_text(text: str) -> str:
    """A text option's ``,``/``;``-separated items, each masked by :func:`_masked_item`."""
    if "=" not in text and ":" not in text:
        return text
    import re

    parts = re.split(r"([,;])", text)
    return "".join(p if p in (",", ";") else _masked_item(p) for p in parts)


def masked_run_options(cfg: Mapping[str, Any]) -> dict[str, RunOptionValue]:
    """``cfg`` as plain JSON values, keys sorted, with every secret-looking value masked:
    what a scheduler keeps beside an app, where others may read it.

    An option whose own name looks secret is ``****`` whole (when set); inside the
    others, the value of every secret-looking ``NAME=value`` (or ``NAME:value``) pair is
    ``****``: a mapping's entries, a list's items, the ``,``/``;``-separated items of a
    text. Options left unset (None) are left out; a value of another type is kept as its
    text.

    >>> masked_run_options({"copy_env": ["HF_*", "DB_PASSWORD=x"], "mounts": "a=1,MY_KEY=v"})
    {'copy_env': ['HF_*', 'DB_PASSWORD=****'], 'mounts': 'a=1,MY_KEY=****'}
    >>> masked_run_options({"sbatch_args": ["--comment=API_TOKEN=x", "--qos=high"]})
    {'sbatch_args': ['--comment=API_TOKEN=****', '--qos=high']}
    >>> masked_run_options({"secret_env": {"A": "creds:key"}, "queue": None, "debug": True})
    {'debug': True, 'secret_env': '****'}
    """
    out: dict[str, RunOptionValue] = {}
    for name in sorted(cfg, key=str):
        value = cfg[name]
        key = str(name)
        if value is None:
            continue
        if is_secret_name(key) and value not in ("", [], {}):
            out[key] = MASK
        elif isinstance(value, bool | int | float):
            out[key] = value
        elif isinstance(value, Mapping):
            out[key] = mask_env({str(n): str(value[n]) for n in sorted(value, key=str)})
        elif isinstance(value, list | tuple | set | frozenset):
            items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
            out[key] = [_masked_item(str(item)) for item in items]
        else:
            out[key] = _masked_text(str(value))
    return out
