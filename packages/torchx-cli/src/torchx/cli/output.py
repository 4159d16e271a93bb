"""Printing for the CLI: secret masking and versioned JSON.

Env values whose names look secret (TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL) are
masked wherever the CLI prints an AppDef, unless the user asks for ``--show-secrets``.
Everything printed as JSON carries a ``formatVersion`` so scripts can rely on it.
"""

from __future__ import annotations

import copy
import re
import sys
from typing import Any

#: Version of the JSON documents the CLI prints.
JSON_FORMAT_VERSION = "torchx.cli/v1"
MASK = "****"
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """True for env names that look like they hold a secret (``API_KEY``, ``HF_TOKEN``, ...)."""
    return bool(_SECRET.search(name))


def mask_env(env: dict[str, str]) -> dict[str, str]:
    """A copy of ``env`` with the values of secret-looking names replaced by ``****``."""
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def masked_app(app: Any) -> Any:
    """A deep copy of an AppDef whose roles' secret-looking env values are masked."""
    out = copy.deepcopy(app)
    for role in out.roles:
        role.env = mask_env(role.env)
    return out


def mask_text(text: str, app: Any) -> str:
    """``text`` with every secret env value of ``app``'s roles replaced by ``****``."""
    for role in app.roles:
        for name, value in role.env.items():
            if is_secret_name(name) and value and len(value) >= 3:
                text = text.replace(value, MASK)
    return text


def print_json(kind: str, payload: Any) -> None:
    import json

    doc = {"formatVersion": JSON_FORMAT_VERSION, "kind": kind, "data": payload}
    json.dump(doc, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")
