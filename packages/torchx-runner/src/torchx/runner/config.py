"""``.torchxconfig``: per-project (and per-user) defaults for run options and components.

A ``.torchxconfig`` is an INI file. Its sections, as in upstream TorchX:

* ``[<scheduler>]`` (e.g. ``[slurm]``): that scheduler's run options, ``key = value``,
  the value written as on the command line (``-cfg``): lists ``a,b``, dicts ``k:v,k2:v2``,
  booleans ``true``/``false``;
* ``[cli:run]``: defaults of ``torchx run`` itself (``scheduler``, ``workspace``,
  ``component``, ...);
* ``[component:<name>]`` (e.g. ``[component:dist.ddp]``): default arguments of a
  component (``j = 2x8``), used when the command line does not give them.

Which files are read, nearest first (the nearer file wins, key by key)::

    $TORCHXCONFIG                      if set: this file only
    ./.torchxconfig, ../.torchxconfig  the nearest one from the current directory upward
    ~/.torchxconfig                    the user's defaults

Explicit values (``cfg`` passed to the Runner, ``-cfg`` on the command line) win over
every file. A section naming a scheduler that is not installed is ignored (with a
debug log line), so one file can serve machines with different plugins; a bad key or
value in the section of an installed scheduler is a :class:`ConfigError` naming the
file, the section and the key::

    from torchx.runner import config

    cfg = config.get_scheduler_cfg("slurm", scheduler.run_opts())  # typed, validated
    config.apply("slurm", cfg)                     # fills in what cfg does not set yet
    config.get_component_defaults()                # {"dist.ddp": {"j": "2x8"}}
    config.write_config(".torchxconfig", ["slurm"])  # what `torchx configure` does

Writing a template (``dump``, ``write_config``: what ``torchx configure`` writes) is
:mod:`torchx.runner.config_writing`'s job; both names import from here as well.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any

from torchx.runner import _config_shared as _shared
from torchx.runner._config_shared import ConfigError
from torchx.specs.errors import did_you_mean

if TYPE_CHECKING:
    from pathlib import Path

    from torchx.runner.config_writing import dump, write_config
    from torchx.specs.options import CfgVal, runopts

#: upstream's ``dirs=``: directories whose ``.torchxconfig`` is read, the first winning
#: (one directory may be given as a plain path)
Dirs = Iterable[str | os.PathLike[str]] | str | os.PathLike[str] | None

__all__ = [
    "CONFIG_FILE",
    "ENV_TORCHXCONFIG",
    "ConfigError",
    "ConfigLayer",
    "apply",
    "dump",
    "find_configs",
    "get_cli_run_defaults",
    "get_component_defaults",
    "get_config",
    "get_configs",
    "get_scheduler_cfg",
    "load",
    "load_layers",
    "load_sections",
    "source_of",
    "write_config",
]

_LOGGER = "torchx.runner.config"


def _debugging() -> bool:
    """Whether debug notes are wanted. Until something imported :mod:`logging` (the CLI
    does for ``--log_level DEBUG``) nothing can have asked for them, so a plain run
    never pays for importing it (about 4 ms)."""
    logging = sys.modules.get("logging")
    return logging is not None and logging.getLogger(_LOGGER).isEnabledFor(logging.DEBUG)


def _debug(message: str, *args: object) -> None:
    if _debugging():
        sys.modules["logging"].getLogger(_LOGGER).debug(message, *args)


#: The file name looked for in the current directory, its parents and the home directory.
CONFIG_FILE = _shared.CONFIG_FILE
#: Environment variable naming the one config file to read (no lookup when set).
ENV_TORCHXCONFIG = "TORCHXCONFIG"

_CLI_RUN = "cli:run"
_COMPONENT = "component"


class ConfigLayer:
    """One parsed config file: ``sections[section][key] = value`` (raw strings, case kept)."""

    __slots__ = ("path", "sections")

    def __init__(self, path: Path, sections: dict[str, dict[str, str]]) -> None:
        self.path = path
        self.sections = sections

    def __repr__(self) -> str:
        return f"ConfigLayer({str(self.path)!r}, sections={sorted(self.sections)})"


# --- finding and reading files ---------------------------------------------------------


def find_configs(
    dirs: Dirs = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The paths of the config files to read, highest precedence first.

    ``$TORCHXCONFIG`` if set (it must exist); else, when ``dirs`` is given
    (upstream's argument), the ``.torchxconfig`` of each of those directories that
    has one, in their order; else the nearest ``.torchxconfig`` from ``cwd``
    (default: the current directory) upward, then ``~/.torchxconfig``. Only files
    that exist, each once.
    """
    explicit = os.environ.get(ENV_TORCHXCONFIG)
    if not explicit and dirs is None:
        # the usual lookup, with os.path: pathlib (and the urllib.parse it imports) is
        # loaded only once a file is found, so a command run where there is none (most
        # of them) never pays for it
        looked_in = os.path.abspath(cwd if cwd is not None else os.getcwd())
        found_any = False
        while not found_any:
            found_any = os.path.isfile(os.path.join(looked_in, CONFIG_FILE))
            parent = os.path.dirname(looked_in)
            if parent == looked_in:
                break
            looked_in = parent
        user_dir = os.path.expanduser("~")
        if user_dir != "~" and os.path.isfile(os.path.join(user_dir, CONFIG_FILE)):
            found_any = True
        if not found_any:
            return []
    from pathlib import Path

    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_absolute():
            path = Path(cwd or os.getcwd()) / path
        if not path.is_file():
            raise ConfigError(
                f"{ENV_TORCHXCONFIG}={explicit} names no file: create it, or unset "
                f"{ENV_TORCHXCONFIG} to use ./{CONFIG_FILE} and ~/{CONFIG_FILE}"
            )
        return [str(path)]
    found: list[Path] = []
    chosen = [dirs] if isinstance(dirs, str | os.PathLike) else list(dirs or ())
    if chosen:  # upstream: no dirs, or none, means the usual files
        for directory in chosen:
            candidate = Path(os.path.expanduser(directory)) / CONFIG_FILE
            if candidate.is_file() and not any(_same_file(candidate, p) for p in found):
                found.append(candidate)
        return [str(p) for p in found]
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_FILE
        if candidate.is_file():
            found.append(candidate)
            break
    home = os.path.expanduser("~")
    if home != "~":
        user = Path(home) / CONFIG_FILE
        if user.is_file() and not any(_same_file(user, p) for p in found):
            found.append(user)
    return [str(p) for p in found]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


# path -> (mtime_ns, size, layer): a process that asks often (the Runner) parses once
_CACHE: dict[str, tuple[int, int, ConfigLayer]] = {}


def read_config(path: str | os.PathLike[str]) -> ConfigLayer:
    """Parses one config file (cached while its modification time and size stay the same)."""
    from pathlib import Path

    p = Path(path)
    try:
        st = p.stat()
        cached = _CACHE.get(str(p))
        if cached is not None and cached[:2] == (st.st_mtime_ns, st.st_size):
            return cached[2]
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read config file: {e}") from None
    layer = ConfigLayer(p, _parse(text, str(p)))
    _CACHE[str(p)] = (st.st_mtime_ns, st.st_size, layer)
    return layer


def _parse(text: str, source: str) -> dict[str, dict[str, str]]:
    import configparser

    parser = configparser.ConfigParser(
        interpolation=None, strict=True, default_section="\0no-defaults\0"
    )
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    try:
        parser.read_string(text, source=source)
    except configparser.DuplicateSectionError as e:
        raise ConfigError(
            f"{source}: section [{e.section}] appears twice (line {e.lineno})"
        ) from None
    except configparser.DuplicateOptionError as e:
        raise ConfigError(
            f"{source}: [{e.section}] key '{e.option}' is set twice (line {e.lineno})"
        ) from None
    except configparser.MissingSectionHeaderError as e:
        raise ConfigError(
            f"{source}: line {e.lineno} is outside any section: start the file with a "
            "section such as [local] or [cli:run]"
        ) from None
    except configparser.ParsingError as e:
        lineno, line = e.errors[0] if e.errors else (0, "")
        raise ConfigError(f"{source}: line {lineno} is not 'key = value': {line.strip()}") from None
    except configparser.Error as e:
        raise ConfigError(f"{source}: {e.message.splitlines()[0]}") from None
    return {name: dict(parser.items(name)) for name in parser.sections()}


def load_layers(
    cwd: str | os.PathLike[str] | None = None, *, dirs: Dirs = None
) -> list[ConfigLayer]:
    """Every config file of :func:`find_configs`, parsed, nearest first."""
    return [read_config(p) for p in find_configs(dirs, cwd=cwd)]


# --- generic sections ------------------------------------------------------------------


def _merged(layers: Iterable[ConfigLayer], section: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for layer in layers:  # nearest first: keep what a nearer file set
        for key, value in layer.sections.get(section, {}).items():
            out.setdefault(key, value)
    return out


def source_of(section: str, key: str, cwd: str | os.PathLike[str] | None = None) -> str | None:
    """Where ``key`` of ``[section]`` is set: ``"/path/.torchxconfig: [section]"`` of the
    nearest file setting it (the one whose value is used), or None.

    For messages about a value that came from a file: they name the file and section.
    """
    for layer in load_layers(cwd):
        if key in layer.sections.get(section, {}):
            return f"{layer.path}: [{section}]"
    return None


def get_configs(
    prefix: str,
    name: str,
    dirs: Dirs = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> dict[str, str]:
    """The merged ``[prefix:name]`` section (nearer files win per key), raw strings.

    ``dirs``: directories to read ``.torchxconfig`` from, the first winning (upstream's
    argument; see :func:`find_configs`).
    """
    return _merged(load_layers(cwd, dirs=dirs), f"{prefix}:{name}")


def get_config(
    prefix: str,
    name: str,
    key: str,
    dirs: Dirs = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> str | None:
    """One value of the ``[prefix:name]`` section, or None."""
    return get_configs(prefix, name, dirs, cwd=cwd).get(key)


def load_sections(
    prefix: str,
    dirs: Dirs = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> dict[str, dict[str, str]]:
    """Every ``[prefix:<name>]`` section as ``{name: {key: value}}``, merged per key."""
    layers = load_layers(cwd, dirs=dirs)
    names: list[str] = []
    for layer in layers:
        for section in layer.sections:
            head, sep, name = section.partition(":")
            if sep and head == prefix and name and name not in names:
                names.append(name)
    return {name: _merged(layers, f"{prefix}:{name}") for name in names}


def get_component_defaults(
    cwd: str | os.PathLike[str] | None = None,
) -> dict[str, dict[str, str]]:
    """Default component arguments: ``{"dist.ddp": {"j": "2x8"}}`` from ``[component:...]``."""
    return load_sections(_COMPONENT, cwd=cwd)


def get_cli_run_defaults(cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Defaults of ``torchx run`` from ``[cli:run]`` (``scheduler``, ``workspace``, ...)."""
    return _merged(load_layers(cwd), _CLI_RUN)


# --- scheduler run options -------------------------------------------------------------

_noted: set[tuple[str, str]] = set()


def _note_uninstalled(layers: Iterable[ConfigLayer], installed: Iterable[str]) -> None:
    known = set(installed)
    for layer in layers:
        for section in layer.sections:
            if ":" in section or section in known or (str(layer.path), section) in _noted:
                continue
            _noted.add((str(layer.path), section))
            _debug(
                "%s: ignoring section [%s]: no scheduler of that name is installed",
                layer.path,
                section,
            )


def _cast_section(
    layer: ConfigLayer, scheduler: str, opts: runopts
) -> dict[str, tuple[str, CfgVal]]:
    """``{canonical_key: (key as written, value)}`` for one file's scheduler section."""
    from torchx.specs.errors import InvalidRunConfigException

    out: dict[str, tuple[str, CfgVal]] = {}
    where = f"{layer.path}: [{scheduler}]"
    for key, raw in layer.sections.get(scheduler, {}).items():
        name = opts.canonical_name(key)
        opt = opts.get(key)
        if name is None or opt is None:
            valid = ", ".join(n for n, _ in opts) or "none"
            raise ConfigError(
                f"{where} unknown key '{key}'{did_you_mean(key, [n for n, _ in opts])}; "
                f"valid keys: {valid}"
            )
        value = raw.strip()
        if value.startswith(_shared.FIXME):
            raise ConfigError(
                f"{where} key '{key}' is still the placeholder {value!r}: give it a value"
            )
        try:
            cast = opt.cast_to_type(value)
        except InvalidRunConfigException as e:
            raise ConfigError(f"{where} key '{key}': {e}") from None
        if name in out:
            raise ConfigError(
                f"{where} key '{key}' sets '{name}' again (already set as '{out[name][0]}')"
            )
        out[name] = (key, cast)
    return out


def get_scheduler_cfg(
    scheduler: str,
    run_opts: runopts,
    cwd: str | os.PathLike[str] | None = None,
    *,
    installed: Iterable[str] | None = None,
    aliases: Iterable[str] | None = None,
    dirs: Dirs = None,
) -> dict[str, CfgVal]:
    """The ``[scheduler]`` run options of every config file, typed and merged.

    Values are cast to the option's type; nearer files win per key (keys compared by
    their canonical name, so ``clusterId`` in one file and ``cluster_id`` in another are
    the same option). A key ``run_opts`` does not know, a value that does not cast, or a
    ``#FIXME`` placeholder left by :func:`dump` is a :class:`ConfigError` naming file,
    section and key. ``installed`` (default: the plugin registry's schedulers) only
    decides which other sections get a debug note for being ignored.

    The sections of the scheduler's other names apply too (``aliases``, default: the
    names the plugin registry gives the same factory), below its own section in each
    file: ``[local_cwd]``, upstream TorchX's default, configures ``local`` as well.
    ``dirs`` as in :func:`find_configs`.
    """
    layers = load_layers(cwd, dirs=dirs)
    if not layers:
        return {}
    sections = [scheduler]
    for alias in scheduler_aliases(scheduler) if aliases is None else aliases:
        if alias not in sections:
            sections.append(alias)
    if _debugging():
        if installed is None:
            from torchx.specs.plugins import get_registry

            installed = get_registry().schedulers
        _note_uninstalled(layers, [*installed, scheduler])
    cfg: dict[str, CfgVal] = {}
    for layer in layers:
        for section in sections:
            for name, (_, value) in _cast_section(layer, section, run_opts).items():
                cfg.setdefault(name, value)
    return cfg


def scheduler_aliases(scheduler: str) -> list[str]:
    """The other names the plugin registry gives ``scheduler``'s factory, sorted.

    >>> scheduler_aliases("local")
    ['local_cwd']
    """
    from torchx.specs.plugins import get_registry

    table = get_registry().schedulers
    entry = table.get(scheduler)
    if entry is None:
        return []
    return sorted(n for n, e in table.items() if n != scheduler and e.value == entry.value)


def apply(
    scheduler: str,
    cfg: dict[str, CfgVal],
    dirs: Dirs = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
    run_opts: runopts | None = None,
) -> None:
    """Fills ``cfg`` in place with the config files' values for keys it does not set.

    Keys already in ``cfg`` (under any spelling of the option) win: explicit values
    beat config files. ``dirs`` (upstream's argument) names the directories whose
    ``.torchxconfig`` is read, the first winning; without it the usual files are
    (see :func:`find_configs`). ``run_opts`` defaults to the installed scheduler's; a scheduler
    that is not installed gets nothing (its section is ignored, with a debug note).
    """
    opts = run_opts if run_opts is not None else _shared.default_run_opts(scheduler)
    if opts is None:
        _debug("config: scheduler %r is not installed; its section is ignored", scheduler)
        return
    given = {opts.canonical_name(k) or k for k, v in cfg.items() if v is not None}
    for name, value in get_scheduler_cfg(scheduler, opts, cwd, dirs=dirs).items():
        if name not in given:
            cfg[name] = value


def load(
    scheduler: str,
    f: IO[str],
    cfg: dict[str, CfgVal],
    *,
    run_opts: runopts | None = None,
) -> None:
    """Like :func:`apply` for one open file ``f`` (upstream's ``config.load``)."""
    opts = run_opts if run_opts is not None else _shared.default_run_opts(scheduler)
    if opts is None:
        return
    from pathlib import Path

    source = str(getattr(f, "name", "<config>"))
    layer = ConfigLayer(Path(source), _parse(f.read(), source))
    given = {opts.canonical_name(k) or k for k, v in cfg.items() if v is not None}
    for name, (_, value) in _cast_section(layer, scheduler, opts).items():
        if name not in given:
            cfg[name] = value


def __getattr__(name: str) -> Any:
    # dump and write_config live in torchx.runner.config_writing, imported only when one
    # is used (torchx configure): reading a config never loads the writer
    if name in ("dump", "write_config"):
        from torchx.runner import config_writing

        return getattr(config_writing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
