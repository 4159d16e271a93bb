"""Built-in utility components: ``utils.echo``, ``utils.sh``, ``utils.python`` and friends.

Ready-to-use components that run well-known programs: glue steps between the
meaningful stages of a workflow, quick checks that a scheduler works, and
examples to copy when writing your own::

    $ torchx run utils.echo --msg "hello from the cluster"
    $ torchx run utils.sh --num_replicas 2 -- hostname -f
    $ torchx run utils.python --script my_app.py -- --name world
    $ torchx run utils.python -c "import torch; print(torch.__version__)"
    $ torchx run utils.copy --src data.csv --dst /tmp/data.csv

>>> app = python("--name", "world", m="my_pkg.app")
>>> role = app.roles[0]
>>> role.entrypoint, role.args
('python', ['-m', 'my_pkg.app', '--name', 'world'])

As with ``dist.ddp``, ``image`` defaults to ``.`` (the launch directory, where the
local scheduler runs the job); pass a container image for container schedulers.
"""

from __future__ import annotations

import os
from typing import Final

from torchx.components import DEFAULT_IMAGE
from torchx.components._common import check_script, parse_mount_opts
from torchx.components.errors import ComponentArgError
from torchx.specs.api import AppDef, Resource, Role
from torchx.specs.resources import resource

__all__ = ["binary", "booth", "copy", "echo", "python", "sh", "touch"]

# `python -c` programs: they run with only the standard library (fsspec when a
# path is a URL) and must hold no "$", which macro substitution would rewrite.
_COPY_PROGRAM: Final = """\
import shutil, sys
src, dst = sys.argv[1], sys.argv[2]
if "://" in src or "://" in dst:
    try:
        import fsspec
    except ImportError:
        sys.exit("utils.copy: copying URLs needs fsspec (pip install fsspec); got " + src + " -> " + dst)
    with fsspec.open(src, "rb") as r, fsspec.open(dst, "wb") as w:
        shutil.copyfileobj(r, w)
else:
    shutil.copyfile(src, dst)
print("copied " + src + " to " + dst)
"""

_BOOTH_PROGRAM: Final = """\
import json, os, sys
x1, x2, trial, base = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
value = (x1 + 2 * x2 - 7) ** 2 + (2 * x1 + x2 - 5) ** 2
print("booth(" + repr(x1) + ", " + repr(x2) + ") = " + repr(value))
data = json.dumps({"booth_eval": value}, indent=2).encode("utf-8")
if "://" in base:
    import fsspec
    with fsspec.open(base.rstrip("/") + "/" + trial, "wb") as f:
        f.write(data)
else:
    os.makedirs(base, exist_ok=True)
    with open(os.path.join(base, trial), "wb") as f:
        f.write(data)
"""


def _small() -> Resource:
    return Resource(cpu=1, gpu=0, memMB=1024)


def echo(msg: str = "hello world", image: str = DEFAULT_IMAGE, num_replicas: int = 1) -> AppDef:
    """Echoes a message to stdout (runs ``echo``).

    Args:
        msg: message to echo
        image: image to use
        num_replicas: number of replicas to run

    Returns:
        An AppDef with one role, ``echo``.
    """
    role = Role(
        name="echo",
        image=image,
        entrypoint="echo",
        args=[msg],
        num_replicas=num_replicas,
        resource=_small(),
    )
    return AppDef(name="echo", roles=[role])


def touch(file: str, image: str = DEFAULT_IMAGE) -> AppDef:
    """Touches a file (runs ``touch``).

    Args:
        file: file to create
        image: the image to use

    Returns:
        An AppDef with one role, ``touch``.
    """
    role = Role(name="touch", image=image, entrypoint="touch", args=[file], resource=_small())
    return AppDef(name="touch", roles=[role])


def sh(
    *args: str,
    image: str = DEFAULT_IMAGE,
    num_replicas: int = 1,
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
    env: dict[str, str] | None = None,
    max_retries: int = 0,
    mounts: list[str] | None = None,
) -> AppDef:
    """Runs the given command with ``sh -c``.

    Each argument is quoted, so the command runs exactly as given: environment
    variables are not expanded and shell operators are plain words.

    Args:
        args: the command and its arguments
        image: image to use
        num_replicas: number of replicas to run
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        h: a registered named resource (takes precedence over cpu, gpu and memMB)
        env: environment variables for the job (e.g. ENV1=v1,ENV2=v2)
        max_retries: the number of scheduler retries allowed
        mounts: mounts for the job's containers (e.g. type=bind,src=/host,dst=/job[,readonly])

    Returns:
        An AppDef with one role, ``sh``.
    """
    if not args:
        raise ComponentArgError("a command to run is needed (e.g. -- echo hello)")
    import shlex  # its regex compiles at import: only this component quotes

    job_env = dict(env) if env else {}
    job_env.setdefault("LOGLEVEL", os.environ.get("LOGLEVEL", "WARNING"))
    role = Role(
        name="sh",
        image=image,
        entrypoint="sh",
        args=["-c", " ".join(shlex.quote(a) for a in args)],
        env=job_env,
        num_replicas=num_replicas,
        max_retries=max_retries,
        resource=resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
        mounts=parse_mount_opts(mounts),
    )
    return AppDef(name="sh", roles=[role])


def python(
    *args: str,
    m: str | None = None,
    c: str | None = None,
    script: str | None = None,
    image: str = DEFAULT_IMAGE,
    name: str = "torchx_utils_python",
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
    num_replicas: int = 1,
    mounts: list[str] | None = None,
) -> AppDef:
    """Runs ``python`` with a module, a command or a script, on the given image and host.

    Exactly one of ``-m``, ``-c`` and ``--script`` is needed. Put ``--`` between
    the component's options and the program's own (e.g.
    ``torchx run utils.python -m foo.main -- --arg value``).

    Args:
        args: arguments passed to the program in sys.argv[1:]
        m: run a library module as a script
        c: program passed as a string (schedulers may limit its length)
        script: the .py script to run, relative to the image (a directory image is checked for it)
        image: image to run on
        name: name of the job
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        h: a registered named resource (takes precedence over cpu, gpu and memMB)
        num_replicas: number of copies to run (each on its own container)
        mounts: mounts for the job's containers (e.g. type=bind,src=/host,dst=/job[,readonly])

    Returns:
        An AppDef with one role, ``python``.
    """
    given = [
        opt for opt, value in (("-m", m), ("-c", c), ("--script", script)) if value is not None
    ]
    if len(given) != 1:
        detail = f"got {' and '.join(given)}" if given else "got none"
        raise ComponentArgError(f"exactly one of -m, -c and --script must be given ({detail})")
    if script is not None:
        check_script(script, image, "--script")
        cmd = [script]
    elif m is not None:
        cmd = ["-m", m]
    else:
        cmd = ["-c", c or ""]
    role = Role(
        name="python",
        image=image,
        entrypoint="python",
        args=[*cmd, *args],
        env={"HYDRA_MAIN_MODULE": m} if m else {},
        num_replicas=num_replicas,
        resource=resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
        mounts=parse_mount_opts(mounts),
    )
    return AppDef(name=name, roles=[role])


def binary(
    *args: str,
    entrypoint: str,
    name: str = "torchx_utils_binary",
    num_replicas: int = 1,
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
) -> AppDef:
    """Runs a binary (a program on the host's PATH, or a path) with the given arguments.

    The role's image is the launch directory (``.``), where the local scheduler runs it.

    Args:
        args: arguments passed to the program in sys.argv[1:]
        entrypoint: the program to run
        name: name of the job
        num_replicas: number of copies to run (each on its own container)
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        h: a registered named resource (takes precedence over cpu, gpu and memMB)

    Returns:
        An AppDef with one role, ``binary``.
    """
    if not entrypoint:
        raise ComponentArgError("--entrypoint must name the program to run (e.g. /bin/date)")
    role = Role(
        name="binary",
        image=DEFAULT_IMAGE,
        entrypoint=entrypoint,
        args=list(args),
        num_replicas=num_replicas,
        resource=resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
    )
    return AppDef(name=name, roles=[role])


def copy(src: str, dst: str, image: str = DEFAULT_IMAGE, mounts: list[str] | None = None) -> AppDef:
    """Copies a file from ``src`` to ``dst``; URLs (``s3://...``) are copied with fsspec.

    Local paths need only Python; a URL needs ``fsspec`` (and its backend) in the
    image. Directories and recursive copies are not supported.

    Args:
        src: the file to copy: a local path or an fsspec URL
        dst: where to copy it: a local path or an fsspec URL
        image: the image that runs the copy (it needs python)
        mounts: mounts for the job's containers (e.g. type=bind,src=/host,dst=/job[,readonly])

    Returns:
        An AppDef with one role, ``torchx-utils-copy``.
    """
    role = Role(
        name="torchx-utils-copy",
        image=image,
        entrypoint="python",
        args=["-c", _COPY_PROGRAM, src, dst],
        resource=_small(),
        mounts=parse_mount_opts(mounts),
    )
    return AppDef(name="torchx-utils-copy", roles=[role])


def booth(
    x1: float,
    x2: float,
    trial_idx: int = 0,
    tracker_base: str = "/tmp/torchx-util-booth",
    image: str = DEFAULT_IMAGE,
) -> AppDef:
    """Evaluates the Booth function ``f(x1, x2) = (x1 + 2*x2 - 7)^2 + (2*x1 + x2 - 5)^2``.

    A test function for hyperparameter optimization: the job prints the value and
    writes ``{"booth_eval": value}`` as JSON to ``{tracker_base}/{trial_idx}``.

    Args:
        x1: x1
        x2: x2
        trial_idx: the trial's index (ignore if not running hyperparameter optimization)
        tracker_base: directory or fsspec URL (e.g. s3://foo/bar) of the results
        image: the image that runs the evaluation (it needs python)

    Returns:
        An AppDef with one role, ``torchx-utils-booth``.
    """
    role = Role(
        name="torchx-utils-booth",
        image=image,
        entrypoint="python",
        args=["-c", _BOOTH_PROGRAM, repr(float(x1)), repr(float(x2)), str(trial_idx), tracker_base],
        resource=_small(),
    )
    return AppDef(name="torchx-utils-booth", roles=[role])
