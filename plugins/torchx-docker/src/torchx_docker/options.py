"""The ``docker`` scheduler's run options, and the checks made before the engine is asked.

The names are upstream TorchX's (``copy_env``, ``env``, ``privileged``, ``network``,
``image_repo``), so an existing ``.torchxconfig`` ``[docker]`` section works
unchanged; ``shm_size`` and ``stop_grace`` are ours. The engine itself is not a run
option: it is the one ``DOCKER_HOST`` names (else the local socket), because
``status``, ``log`` and ``list`` from a later shell must reach the same engine
without being told again.

Every option is declared once, as a field of :class:`DockerOpts` (its type, default,
help and check): ``run_opts()``, ``.torchxconfig``, the docs and a submit
(``DockerOpts.of(cfg)``) read it.

>>> opts = DockerOpts.as_runopts()
>>> typed = DockerOpts.from_cfg(opts.resolve({"copy_env": ["HOME", "LANG*"], "shm_size": "2g"}))
>>> typed.copy_env, typed.shm_bytes
(['HOME', 'LANG*'], 2147483648)
>>> DockerOpts.from_cfg(opts.resolve({"shm_size": "lots"}))
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'shm_size'='lots' is not a size: use a number of bytes with an optional unit b, k, m or g (e.g. 2g)
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.structured_opts import StructuredOpts, opt

#: Seconds between SIGTERM and SIGKILL when an app is cancelled, unless ``stop_grace`` says.
DEFAULT_STOP_GRACE = 10

# patterns compiled when first used (re's cache): most runs set neither option
_SIZE = r"(?i)(\d+)\s*([bkmg]?)"
_UNIT = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
# an environment variable's name as docker passes it on (no '=', nothing empty)
_ENV_NAME = r"[^=\x00]+"
#: the help of ``image_repo`` (the option of the image workspace, :mod:`torchx_docker.images`)
IMAGE_REPO_HELP = (
    "registry repository that workspace images are pushed to, e.g. 127.0.0.1:15000/team "
    "(tagged <image_repo>:<content hash>); unset: the image stays on the engine that built it"
)


def parse_size(option: str, value: str) -> int:
    """Bytes in a size such as ``2g``, ``512m`` or ``1048576``; one line naming ``option``."""
    match = re.fullmatch(_SIZE, value.strip())
    if match is None or int(match.group(1)) <= 0:
        raise InvalidRunConfigException(
            f"run option {option!r}={value!r} is not a size: use a number of bytes with an "
            "optional unit b, k, m or g (e.g. 2g)"
        )
    return int(match.group(1)) * _UNIT[match.group(2).lower()]


# -- the checks: each given the value (never None), returning it in its normal form -------


def _copy_env(value: list[str]) -> list[str]:
    patterns = [str(p) for p in value]
    for pattern in patterns:
        if not pattern or "=" in pattern:
            raise InvalidRunConfigException(
                f"run option 'copy_env' has {pattern!r}: give variable names or globs "
                "(e.g. 'HF_*'), separated by commas"
            )
    return patterns


def _env(value: dict[str, str]) -> dict[str, str]:
    env = {str(k): str(v) for k, v in value.items()}
    for name in env:
        if not re.fullmatch(_ENV_NAME, name):
            raise InvalidRunConfigException(
                f"run option 'env' has the variable name {name!r}: a name may not be empty "
                "or hold '='"
            )
    return env


def _network(value: str) -> str:
    if not str(value).strip():
        raise InvalidRunConfigException(
            "run option 'network' is empty: name an existing network or 'host', or leave "
            "it out for a network of the app's own"
        )
    return str(value).strip()


def _shm_size(value: str) -> str:
    parse_size("shm_size", str(value))
    return str(value)


def _stop_grace(value: int) -> int:
    if int(value) < 0:
        raise InvalidRunConfigException(
            f"run option 'stop_grace'={int(value)} is negative: give the seconds (0 or more) a "
            "cancelled replica has to stop"
        )
    return int(value)


@dataclass(frozen=True, kw_only=True)
class DockerOpts(StructuredOpts):
    """The run options of the ``docker`` scheduler (``torchx runopts docker``), each checked."""

    copy_env: list[str] | None = opt(
        help="host environment variables to copy into every container, by name or glob "
        "(e.g. 'HF_*,WANDB_API_KEY')",
        check=_copy_env,
    )
    env: dict[str, str] | None = opt(
        help="environment variables to set in every container (KEY:VALUE,...); the role's "
        "own env wins over these",
        check=_env,
    )
    privileged: bool = opt(
        False,
        help="run every container privileged (all devices, all capabilities); the engine "
        "may refuse",
    )
    network: str | None = opt(
        help="the network every container joins (an existing one, or 'host'); default: a "
        "network of the app's own when it has more than one replica, removed with the app",
        check=_network,
    )
    image_repo: str | None = opt(help=IMAGE_REPO_HELP)
    shm_size: str | None = opt(
        help="size of /dev/shm in each container (e.g. 2g); default: half the replica's "
        "memory, or 1g when it has no memory limit (PyTorch data loaders pass batches there)",
        check=_shm_size,
    )
    stop_grace: int = opt(
        DEFAULT_STOP_GRACE,
        help="seconds a cancelled replica has between SIGTERM and SIGKILL",
        check=_stop_grace,
    )

    @property
    def shm_bytes(self) -> int | None:
        """``shm_size`` in bytes (None: not given)."""
        return None if self.shm_size is None else parse_size("shm_size", self.shm_size)

    def copied_env(self, host_env: Mapping[str, str]) -> dict[str, str]:
        """The host variables ``copy_env`` names (globs matched against ``host_env``)."""
        patterns = self.copy_env or ()
        out: dict[str, str] = {}
        for name in sorted(host_env):
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                out[name] = host_env[name]
        return out
