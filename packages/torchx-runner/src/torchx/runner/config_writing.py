"""Writing a ``.torchxconfig`` template: what ``torchx configure`` writes.

:func:`dump` writes one ``[scheduler]`` section per scheduler with every run option
commented: a required one as ``key = #FIXME:...`` (reading the file back fails until
it is given a value), an optional one commented out with its default, so that a user
uncomments only what they change. :func:`write_config` puts it in a file atomically.
Reading config files is :mod:`torchx.runner.config`'s job; both names are importable
from there too (``torchx.runner.config.dump`` is upstream's), and this module is
loaded only when one of them is used.

>>> import io
>>> from torchx.specs import runopts
>>> opts = runopts()
>>> opts.add("partition", type_=str, required=True, help="the Slurm partition")
>>> opts.add("time", type_=str, default="1:00:00", help="wall time limit")
>>> out = io.StringIO()
>>> dump(out, ["slurm"], run_opts={"slurm": opts})
>>> print(out.getvalue().split("\\n\\n", 1)[1], end="")
[slurm]
# partition (str, required): the Slurm partition
partition = #FIXME:(str) the Slurm partition
# time (str, default 1:00:00): wall time limit
#time = 1:00:00
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING

from torchx.runner._config_shared import CONFIG_FILE, FIXME, ConfigError, default_run_opts
from torchx.specs.errors import did_you_mean

if TYPE_CHECKING:
    from pathlib import Path

    from torchx.specs.options import CfgVal, runopts

__all__ = ["dump", "write_config"]

_HEADER = (
    "# .torchxconfig: defaults for `torchx run`, one [section] per scheduler.\n"
    "# Lines starting with '#' are defaults left as they are: uncomment one to change it.\n"
    "# Required options read '#FIXME' until you give them a value.\n"
    "# Other sections: [cli:run] (scheduler = ..., workspace = ...) and\n"
    "# [component:<name>] (default arguments of a component, e.g. [component:dist.ddp] j = 2x8).\n"
)


def _render(value: CfgVal) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    return "" if value is None else str(value)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def dump(
    f: IO[str],
    schedulers: Iterable[str] | None = None,
    required_only: bool = False,
    *,
    run_opts: Mapping[str, runopts] | None = None,
) -> None:
    """Writes a commented ``.torchxconfig`` template with each scheduler's run options.

    ``schedulers`` defaults to every installed one. Required options get a ``#FIXME``
    placeholder (reading the file back fails until it is replaced); optional ones are
    written commented out with their default. ``required_only`` leaves optional ones
    out. ``run_opts`` gives the options per scheduler instead of asking the scheduler.
    """
    from torchx.specs.options import type_name

    if schedulers is None:
        if run_opts is not None:
            schedulers = list(run_opts)
        else:
            from torchx.specs.plugins import get_registry

            schedulers = list(get_registry().schedulers)
    f.write(_HEADER)
    for scheduler in schedulers:
        opts = run_opts.get(scheduler) if run_opts is not None else default_run_opts(scheduler)
        if opts is None:
            from torchx.specs.plugins import get_registry

            raise ConfigError(
                f"cannot write a section for scheduler '{scheduler}': it is not installed"
                f"{did_you_mean(scheduler, get_registry().schedulers)}"
            )
        f.write(f"\n[{scheduler}]\n")
        for name, opt in opts:
            kind = type_name(opt.opt_type)
            help_text = _one_line(opt.help)
            if opt.is_required:
                f.write(f"# {name} ({kind}, required): {help_text}\n")
                f.write(f"{name} = {FIXME}:({kind}) {help_text}\n")
            elif not required_only:
                default = _render(opt.default)
                shown = f"default {default}" if opt.default is not None else "no default"
                f.write(f"# {name} ({kind}, {shown}): {help_text}\n")
                f.write(f"#{name} = {default}\n")


def write_config(
    path: str | os.PathLike[str] = CONFIG_FILE,
    schedulers: Iterable[str] | None = None,
    required_only: bool = False,
    *,
    overwrite: bool = False,
    run_opts: Mapping[str, runopts] | None = None,
) -> Path:
    """Writes :func:`dump`'s template to ``path`` atomically; returns the path written.

    The file appears whole or not at all (written beside it, then renamed). An existing
    file is kept unless ``overwrite`` is set.
    """
    import io
    from pathlib import Path

    target = Path(path)
    if target.exists() and not overwrite:
        raise ConfigError(
            f"{target} already exists: pass overwrite=True (torchx configure --force) to replace it"
        )
    buf = io.StringIO()
    dump(buf, schedulers, required_only, run_opts=run_opts)
    from torchx.schedulers.helpers.files import write_private_atomic

    write_private_atomic(target, buf.getvalue(), 0o644)  # a config is not secret by itself
    return target
