"""The ``docker`` scheduler's run options, and the checks made before the engine is asked.

The names are upstream TorchX's (``copy_env``, ``env``, ``privileged``, ``network``,
``image_repo``), so an existing ``.torchxconfig`` ``[docker]`` section works
unchanged; ``shm_size`` and ``stop_grace`` are ours. The engine itself is not a run
option: it is the one ``DOCKER_HOST`` names (else the local socket), because
``status``, ``log`` and ``list`` from a later shell must reach the same engine
without being told again.

>>> opts = docker_runopts()
>>> cfg = opts.resolve({"copy_env": ["HOME", "LANG*"], "shm_size": "2g"})
>>> read(cfg).copy_env, read(cfg).shm_bytes
(['HOME', 'LANG*'], 2147483648)
>>> read(opts.resolve({"shm_size": "lots"}))
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'shm_size'='lots' is not a size: use a number of bytes with an optional unit b, k, m or g (e.g. 2g)
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.options import CfgVal, runopts

#: Seconds between SIGTERM and SIGKILL when an app is cancelled, unless ``stop_grace`` says.
DEFAULT_STOP_GRACE = 10

# patterns compiled when first used (re's cache): most runs set neither option
_SIZE = r"(?i)(\d+)\s*([bkmg]?)"
_UNIT = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
# an environment variable's name as docker passes it on (no '=', nothing empty)
_ENV_NAME = r"[^=\x00]+"


def docker_runopts() -> runopts:
    """The run options of the ``docker`` scheduler (see ``torchx runopts docker``)."""
    opts = runopts()
    opts.add(
        "copy_env",
        type_=list[str],
        default=None,
        help="host environment variables to copy into every container, by name or glob "
        "(e.g. 'HF_*,WANDB_API_KEY')",
    )
    opts.add(
        "env",
        type_=dict[str, str],
        default=None,
        help="environment variables to set in every container (KEY:VALUE,...); the role's "
        "own env wins over these",
    )
    opts.add(
        "privileged",
        type_=bool,
        default=False,
        help="run every container privileged (all devices, all capabilities); the engine "
        "may refuse",
    )
    opts.add(
        "network",
        type_=str,
        default=None,
        help="the network every container joins (an existing one, or 'host'); default: a "
        "network of the app's own when it has more than one replica, removed with the app",
    )
    opts.add(
        "image_repo",
        type_=str,
        default=None,
        help="the image repository a workspace image is pushed to (e.g. "
        "127.0.0.1:5000/team/trainer); default: the image stays on the engine",
    )
    opts.add(
        "shm_size",
        type_=str,
        default=None,
        help="size of /dev/shm in each container (e.g. 2g); default: half the replica's "
        "memory, or 1g when it has no memory limit (PyTorch data loaders pass batches there)",
    )
    opts.add(
        "stop_grace",
        type_=int,
        default=DEFAULT_STOP_GRACE,
        help="seconds a cancelled replica has between SIGTERM and SIGKILL",
    )
    return opts


class DockerOpts(NamedTuple):
    """The run options, checked and typed (read them with :func:`read`).

    A named tuple rather than a frozen dataclass: every ``torchx run -s docker`` defines
    it, and a frozen dataclass costs some 0.5 ms to define (a named tuple a tenth).
    """

    copy_env: Sequence[str] = ()
    env: Mapping[str, str] = MappingProxyType({})
    privileged: bool = False
    network: str | None = None
    image_repo: str | None = None
    shm_bytes: int | None = None
    stop_grace: int = DEFAULT_STOP_GRACE

    def copied_env(self, host_env: Mapping[str, str]) -> dict[str, str]:
        """The host variables ``copy_env`` names (globs matched against ``host_env``)."""
        out: dict[str, str] = {}
        for name in sorted(host_env):
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.copy_env):
                out[name] = host_env[name]
        return out


def parse_size(option: str, value: str) -> int:
    """Bytes in a size such as ``2g``, ``512m`` or ``1048576``; one line naming ``option``."""
    match = re.fullmatch(_SIZE, value.strip())
    if match is None or int(match.group(1)) <= 0:
        raise InvalidRunConfigException(
            f"run option {option!r}={value!r} is not a size: use a number of bytes with an "
            "optional unit b, k, m or g (e.g. 2g)"
        )
    return int(match.group(1)) * _UNIT[match.group(2).lower()]


def read(cfg: Mapping[str, CfgVal]) -> DockerOpts:
    """The resolved run options ``cfg`` as :class:`DockerOpts`, each value checked."""
    copy_env = [str(p) for p in (cfg.get("copy_env") or [])]  # type: ignore[union-attr]
    for pattern in copy_env:
        if not pattern or "=" in pattern:
            raise InvalidRunConfigException(
                f"run option 'copy_env' has {pattern!r}: give variable names or globs "
                "(e.g. 'HF_*'), separated by commas"
            )
    env_value = cfg.get("env") or {}
    env = {str(k): str(v) for k, v in env_value.items()} if isinstance(env_value, dict) else {}
    for name in env:
        if not re.fullmatch(_ENV_NAME, name):
            raise InvalidRunConfigException(
                f"run option 'env' has the variable name {name!r}: a name may not be empty "
                "or hold '='"
            )
    network = cfg.get("network")
    if network is not None and not str(network).strip():
        raise InvalidRunConfigException(
            "run option 'network' is empty: name an existing network or 'host', or leave "
            "it out for a network of the app's own"
        )
    shm = cfg.get("shm_size")
    grace = cfg.get("stop_grace")
    grace = DEFAULT_STOP_GRACE if grace is None else int(grace)  # type: ignore[arg-type]
    if grace < 0:
        raise InvalidRunConfigException(
            f"run option 'stop_grace'={grace} is negative: give the seconds (0 or more) a "
            "cancelled replica has to stop"
        )
    repo = cfg.get("image_repo")
    return DockerOpts(
        copy_env=copy_env,
        env=env,
        privileged=bool(cfg.get("privileged")),
        network=None if network is None else str(network).strip(),
        image_repo=None if repo is None else str(repo),
        shm_bytes=None if shm is None else parse_size("shm_size", str(shm)),
        stop_grace=grace,
    )
