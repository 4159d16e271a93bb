"""The generated pages of the documentation site, as Markdown (MyST) text.

Nothing on these pages is written by hand: each is rebuilt from the installed code on
every ``nox -s docs``, so a changed docstring, option or subcommand shows on the site
with no edit under ``docs/``:

* :func:`api_pages`: one page per public module of every distribution (autodoc reads
  the docstrings; attrs classes get their fields listed by ``torchx_docs``);
* :func:`cli_page`: every ``torchx`` subcommand and option, walked from the argparse
  parser the ``torchx`` command itself builds from the installed commands;
* :func:`runopts_table`: a scheduler's run options, from its ``run_opts()``;
* :func:`capability_table`: what each installed scheduler lacks
  (``tools/capability_table.py``, the generator of the table in ``docs/plugins.md``);
* :func:`components_page`: the built-in components, from their signatures and docstrings;
* :func:`scheduler_pages` and :func:`changelog_pages`: one page per scheduler (its
  plugin's README, included, plus its run options) and per distribution's CHANGELOG.

Each function returns ``{relative path: text}``; :func:`write_all` writes them under
``docs/reference/`` (git-ignored). Runs in the docs session's environment, where every
distribution is installed; uses only their public API.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"
GENERATED = DOCS / "reference"
DIST_GROUPS = ("packages", "plugins")

#: The local scheduler's page: the torchx-runner README's section about it.
LOCAL_README = "packages/torchx-runner/README.md"
LOCAL_SECTION = ("## The local scheduler", "## Writing a scheduler plugin")


def distributions(root: Path = ROOT) -> dict[str, Path]:
    """Every distribution folder (``packages/*``, ``plugins/*``) by its project name."""
    found: dict[str, Path] = {}
    for group in DIST_GROUPS:
        for pyproject in sorted((root / group).glob("*/pyproject.toml")):
            name = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
            found[name] = pyproject.parent
    return found


#: Packages whose modules are not all API although none is ``_``-named, each with the
#: modules that are: the local scheduler's folder is one scheduler's own code, of which
#: only the scheduler, its run options, its view, its warm start and upstream's classic names
#: (LogIterator, PopenRequest, SignalException) are public (see its
#: docstring).
API_OF_PACKAGE: dict[str, tuple[str, ...]] = {
    "torchx.schedulers.local": ("scheduler", "options", "view", "warmup", "classic"),
}


def public_modules(src: Path) -> list[str]:
    """Module names under a ``src/`` folder with no ``_``-prefixed part, sorted.

    ``torchx`` itself is a namespace (no ``__init__.py``), never a page of its own; of a
    package in :data:`API_OF_PACKAGE`, only the modules it names.
    """
    names = []
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if not parts or any(p.startswith("_") for p in parts):
            continue
        if parts == ["torchx"]:
            continue
        package, _, leaf = ".".join(parts).rpartition(".")
        if leaf not in API_OF_PACKAGE.get(package, (leaf,)):
            continue
        names.append(".".join(parts))
    return names


def _title(text: str) -> str:
    return f"# {text}\n"


def api_pages(dists: Mapping[str, Path]) -> dict[str, str]:
    """``api/<module>.md`` for every public module, and ``api/index.md`` listing them."""
    pages: dict[str, str] = {}
    index = [
        _title("API reference"),
        "Every public module of every distribution, generated from its docstrings "
        "(a module, or a part of its path, whose name starts with `_` is private and "
        "not shown). A class or function that a package exports (`from torchx.specs import "
        "AppDef`) is documented on the package's page. Attrs classes list their fields with "
        "types, defaults and descriptions.\n",
    ]
    every = [m for folder in dists.values() for m in public_modules(folder / "src")]
    homes = package_homes(every)
    for dist, folder in dists.items():
        modules = public_modules(folder / "src")
        index.append(f"\n## {dist}\n")
        toctree = ["```{toctree}", ":maxdepth: 1", ""]
        for module in modules:
            pages[f"api/{module}.md"] = "\n".join(
                [
                    _title(f"`{module}`"),
                    f"Distribution: `{dist}`.\n",
                    *automodule(module, homes),
                ]
            )
            toctree.append(module)
        toctree.append("```\n")
        index.extend(toctree)
    pages["api/index.md"] = "\n".join(index)
    return pages


#: Members of a module documented although their names start with ``_``: the hooks a
#: scheduler plugin implements (the Scheduler contract).
PRIVATE_MEMBERS: dict[str, list[str]] = {
    "torchx.schedulers.contract.api": [
        "_submit_dryrun",
        "_run_opts",
        "_validate",
        "_pre_build_validate",
        "_cancel_existing",
        "_delete_existing",
    ],
}


def _is_private(module: str) -> bool:
    """No API page: a ``_``-named part, or a module its package keeps out of its API."""
    package, _, leaf = module.rpartition(".")
    return any(part.startswith("_") for part in module.split(".")) or leaf not in (
        API_OF_PACKAGE.get(package, (leaf,))
    )


def _assigned_in(module: Any, name: str) -> bool:
    """Whether ``module``'s own source assigns ``name`` at its top level."""
    path = getattr(module, "__file__", None)
    if not path:
        return False
    source = Path(path).read_text(encoding="utf-8")
    return re.search(rf"^{re.escape(name)}\s*(:[^=]*)?=", source, re.M) is not None


def _defining_module(obj: Any, name: str) -> str | None:
    """The loaded project module whose own source assigns ``name`` to ``obj``, if any."""
    for modname, mod in sorted(sys.modules.items()):
        if not modname.startswith(("torchx.", "torchx_")):
            continue
        if vars(mod).get(name, None) is obj and _assigned_in(mod, name):
            return modname
    return None


def package_homes(modules: Iterable[str]) -> dict[tuple[str, str], str]:
    """``{(defining module, name): package}`` for the classes and functions a package
    exports from one of its own public submodules.

    Such a name is documented on the package's page, where users import it from
    (``torchx.specs.AppDef``, as upstream TorchX documents it), and not again on its
    module's page (``torchx.specs.api``), which points at it; references to either
    name resolve (autodoc records the defining one as the canonical name). Data stays
    on its module's page: its doc comment is there.
    """
    import importlib

    homes: dict[tuple[str, str], str] = {}
    for package in sorted(modules, key=lambda m: (m.count("."), m)):
        mod = importlib.import_module(package)
        if not hasattr(mod, "__path__"):
            continue
        listed = set(dir(mod))  # autodoc finds a module's members through dir()
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            owner = getattr(obj, "__module__", None)
            if (
                name not in listed
                or not (isinstance(obj, type) or inspect.isfunction(obj))
                or not isinstance(owner, str)
                or getattr(obj, "__qualname__", None) != name
                or not owner.startswith(package + ".")
                or _is_private(owner)
            ):
                continue
            homes.setdefault((owner, name), package)
    return homes


def split_all(
    module: str, homes: Mapping[tuple[str, str], str] | None = None
) -> tuple[list[str], list[str]] | None:
    """``module.__all__`` as (names documented on its page, names re-exported from another
    public module); None without ``__all__``.

    A name is documented where it is defined, unless it is defined in a private module:
    then the public module exporting it is its home (``torchx.specs.plugins`` exports
    ``Failure`` from ``torchx.specs._plugin_reports``); and a class
    or function its package exports is documented there (:func:`package_homes`).
    """
    import importlib

    homes = homes or {}
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        return None
    here, elsewhere = [], []
    for name in names:
        obj = getattr(mod, name, None)
        if isinstance(obj, type(importlib)) or name.startswith("__"):
            continue
        owner = getattr(obj, "__module__", None) if callable(obj) else None
        home = homes.get((owner, name)) if owner else None
        if home is not None:
            (here if home == module else elsewhere).append(name)
        elif owner is None:
            defined = _defining_module(obj, name)
            (here if defined in (None, module) or _is_private(defined) else elsewhere).append(name)
        elif owner == module or _is_private(owner):
            here.append(name)
        else:
            elsewhere.append(name)
    return here, elsewhere


def automodule(module: str, homes: Mapping[tuple[str, str], str] | None = None) -> list[str]:
    """The autodoc directive of ``module``'s page, and the lists of the names documented
    on another page: those it re-exports, and those its package documents."""
    homes = homes or {}
    moved = sorted(name for (owner, name), _ in homes.items() if owner == module)
    lines = ["```{eval-rst}", f".. automodule:: {module}"]
    split = split_all(module, homes)
    if split is None:
        lines.append("   :members:")
        if moved:
            lines.append(f"   :exclude-members: {', '.join(moved)}")
        elsewhere: list[str] = []
    else:
        here, elsewhere = split
        here = [n for n in here if n not in moved]
        lines.append(f"   :members: {', '.join(here)}" if here else "   :members:")
        if not here:
            lines.append("   :ignore-module-all:")
            if moved:
                lines.append(f"   :exclude-members: {', '.join(moved)}")
    if module in PRIVATE_MEMBERS:
        lines.append(f"   :private-members: {', '.join(PRIVATE_MEMBERS[module])}")
    lines += ["   :show-inheritance:", "```", ""]
    if moved:
        package = homes[(module, moved[0])]
        lines += [
            f"## Documented in `{package}`\n",
            f"Defined here, and documented where users import them from, `{package}`:\n",
            *(f"- {{py:obj}}`{package}.{name}`" for name in moved),
            "",
        ]
    if elsewhere:
        lines += [
            "## Also importable from here\n",
            f"`from {module} import NAME` works for each of these names, documented where "
            "they are defined:\n",
            *(f"- {{py:obj}}`{module}.{name}`" for name in elsewhere),
            "",
        ]
    return lines


# -- the CLI ---------------------------------------------------------------------------------


def torchx_parser() -> argparse.ArgumentParser:
    """The parser ``torchx --help`` shows: every installed command, loaded."""
    from torchx.cli.main import build_parser
    from torchx.specs.plugins import get_registry

    registry = get_registry()
    commands: dict[str, Any] = {}
    for name in sorted(registry.cli_commands):
        cmd = registry.cli_command(name)
        commands[name] = cmd() if isinstance(cmd, type) else cmd
    return build_parser(commands)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| option | value | default | help |", "| --- | --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            names = ", ".join(_code(o) for o in action.option_strings)
        else:
            names = _code(action.metavar if isinstance(action.metavar, str) else action.dest)
        if action.nargs == 0:
            value = ""
        elif action.choices is not None and not isinstance(action.choices, Mapping):
            value = " \\| ".join(_code(str(c)) for c in action.choices)
        elif action.metavar is not None and action.option_strings:
            metavar = action.metavar
            value = _code(" ".join(metavar) if isinstance(metavar, tuple) else metavar)
        elif action.option_strings:
            value = _code(action.dest.upper())
        else:
            value = {"?": "optional", "*": "zero or more", "+": "one or more"}.get(
                str(action.nargs), ""
            )
            if action.nargs == argparse.REMAINDER:
                value = "the rest of the line"
        default = action.default
        shown = (
            ""
            if default is None
            or default is argparse.SUPPRESS
            or default is False
            or (action.nargs == 0 and default in (False, None))
            else _code(repr(default) if not isinstance(default, str) else default)
        )
        help_text = (action.help or "") % {"default": default, "prog": parser.prog}
        rows.append(f"| {names} | {value} | {shown} | {_cell(help_text)} |")
    return rows


def cli_page(parser: argparse.ArgumentParser | None = None) -> dict[str, str]:
    """``cli.md``: the ``torchx`` command, then one section per subcommand with its options."""
    parser = parser or torchx_parser()
    out = [
        _title("The `torchx` command"),
        "Generated from the argparse parser the `torchx` command builds from the installed "
        "commands (torchx-cli's, and any plugin's): every subcommand and every option, "
        "as `torchx COMMAND --help` shows them.\n",
        "```text",
        parser.format_usage().strip(),
        "```\n",
        parser.description or "",
        "",
        *_option_rows(parser),
        "",
        "```text",
        (parser.epilog or "").strip(),
        "```\n",
    ]
    for name, sub in sorted(_subparsers(parser).items()):
        out += [
            f"## `torchx {name}`\n",
            _cell(sub.description or ""),
            "",
            "```text",
            sub.format_usage().strip(),
            "```\n",
            *_option_rows(sub),
            "",
        ]
        if sub.epilog:
            out += ["```text", sub.epilog.strip(), "```\n"]
    return {"cli.md": "\n".join(out)}


# -- schedulers --------------------------------------------------------------------------------


def scheduler_factories() -> dict[str, Any]:
    """Installed schedulers by name: ``{name: factory}`` through the plugin registry."""
    from torchx.specs.plugins import get_registry

    registry = get_registry()
    return {name: registry.scheduler_factory(name) for name in sorted(registry.schedulers)}


def scheduler_distribution(name: str) -> str:
    """The distribution registering scheduler ``name``."""
    from torchx.specs.plugins import get_registry

    return get_registry().schedulers[name].distribution


def runopts_table(opts: Any) -> str:
    """A Markdown table of a ``runopts``: name, type, default or required, help, aliases."""
    from torchx.specs.options import get_type_name

    rows = ["| option | type | default | help |", "| --- | --- | --- | --- |"]
    for name, opt in opts:
        if opt.is_required:
            default = "(required)"
        elif opt.default is None:
            default = ""
        else:
            default = _code(repr(opt.default) if not isinstance(opt.default, str) else opt.default)
        aliases = f" (also {', '.join(_code(a) for a in opt.aliases)})" if opt.aliases else ""
        rows.append(
            f"| {_code(name)}{aliases} | {_code(get_type_name(opt.opt_type))} | {default} "
            f"| {_cell(opt.help)} |"
        )
    return "\n".join(rows)


def capability_table() -> str:
    """The table of ``tools/capability_table.py`` (installed schedulers and the vendor example)."""
    spec = importlib.util.spec_from_file_location(
        "_capability_table", ROOT / "tools" / "capability_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.generate())


def _include(path: str, *, start: str | None = None, end: str | None = None) -> list[str]:
    """A MyST include of a repository file (a path from the source folder: ``/../README.md``)."""
    lines = [f"```{{include}} /../{path}"]
    if start:
        lines.append(f":start-after: {json.dumps(start)}")
    if end:
        lines.append(f":end-before: {json.dumps(end)}")
    lines += ["```", ""]
    return lines


def scheduler_pages(
    factories: Mapping[str, Any], dists: Mapping[str, Path], owner: Any = None
) -> dict[str, str]:
    """``schedulers/<name>.md`` per installed scheduler, plus ``schedulers/index.md``.

    A plugin's scheduler page includes the plugin's README (its documentation's one
    source); the local scheduler's includes the torchx-runner README's section on it.
    Each ends with the run options table generated from ``run_opts()``.
    """
    owner = owner or scheduler_distribution
    pages: dict[str, str] = {}
    readme_shown: set[str] = set()
    index = [
        _title("Schedulers"),
        "One page per installed scheduler: its distribution's documentation and its run "
        "options (generated from the scheduler's `run_opts()`; set them with "
        "`torchx run -cfg key=value` or in `.torchxconfig`).\n",
        "What each scheduler's backend cannot do, from the schedulers' own declarations "
        "(see [Writing a plugin](../../plugins.md)):\n",
        capability_table(),
        "",
        "```{toctree}",
        ":maxdepth: 1",
        "",
    ]
    for name, factory in factories.items():
        dist = owner(name)
        scheduler = factory("docs")
        body = [_title(f"`{name}` scheduler"), f"Distribution: `{dist}`.\n"]
        folder = dists.get(dist)
        if dist == "torchx-runner":
            body += _include(LOCAL_README, start=LOCAL_SECTION[0], end=LOCAL_SECTION[1])
        elif folder is not None and dist not in readme_shown:
            rel = folder.relative_to(ROOT).as_posix()
            body += _include(f"{rel}/README.md", start=f"# {dist}")
            readme_shown.add(dist)
        elif folder is not None:
            first = next(n for n in factories if owner(n) == dist)
            body.append(
                f"Its distribution's documentation is on the [`{first}`]({first}.md) page.\n"
            )
        body += [
            f"## Run options of `{name}`\n",
            f"Generated from `{type(scheduler).__module__}.{type(scheduler).__qualname__}"
            ".run_opts()`.\n",
            runopts_table(scheduler.run_opts()),
            "",
        ]
        pages[f"schedulers/{name}.md"] = "\n".join(body)
        index.append(name)
    index += ["```", ""]
    pages["schedulers/index.md"] = "\n".join(index)
    return pages


# -- components ---------------------------------------------------------------------------------


def components_page(components: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``components.md``: every built-in component with its signature and docstring."""
    if components is None:
        from torchx.components.finder import list_components

        components = list_components()
    out = [
        _title("Component catalogue"),
        "The components that come with torchx-runner (what `torchx builtins` lists), "
        "generated from their signatures and docstrings. Run one with "
        "`torchx run NAME --ARG VALUE ...`; `torchx run NAME --help` prints its arguments.\n",
    ]
    groups: dict[str, list[str]] = {}
    for name, comp in components.items():
        if not str(comp.source).startswith("torchx-runner"):
            continue
        groups.setdefault(name.rsplit(".", 1)[0] if "." in name else name, []).append(name)
    for group, names in groups.items():
        out.append(f"## `{group}`\n")
        for name in names:
            comp = components[name]
            target = f"{comp.fn.__module__}.{comp.fn.__qualname__}"
            out += [
                f"### `{name}`\n",
                "```{eval-rst}",
                f".. autofunction:: {target}",
                "   :no-index:",
                "```",
                "",
            ]
    return {"components.md": "\n".join(out)}


# -- changelogs ----------------------------------------------------------------------------------


def package_pages(dists: Mapping[str, Path]) -> dict[str, str]:
    """``packages/<dist>.md`` including the README of each core distribution (``packages/*``).

    A plugin's README is on its scheduler's page instead (:func:`scheduler_pages`).
    """
    pages: dict[str, str] = {}
    index = [_title("Distributions"), "The core distributions, each from its README.\n"]
    index += ["```{toctree}", ":maxdepth: 1", ""]
    for dist, folder in dists.items():
        if folder.parent.name != "packages":
            continue
        rel = folder.relative_to(ROOT).as_posix()
        pages[f"packages/{dist}.md"] = "\n".join(
            [_title(dist), *_include(f"{rel}/README.md", start=f"# {dist}")]
        )
        index.append(dist)
    index += ["```", ""]
    pages["packages/index.md"] = "\n".join(index)
    return pages


def changelog_pages(dists: Mapping[str, Path]) -> dict[str, str]:
    """``changelogs/<dist>.md`` including each distribution's CHANGELOG.md, and an index."""
    pages: dict[str, str] = {}
    index = [_title("Changelogs"), "Each distribution is released on its own.\n"]
    index += ["```{toctree}", ":maxdepth: 1", ""]
    for dist, folder in dists.items():
        rel = folder.relative_to(ROOT).as_posix()
        pages[f"changelogs/{dist}.md"] = "\n".join(
            [_title(dist), *_include(f"{rel}/CHANGELOG.md", start=f"# Changelog of {dist}")]
        )
        index.append(dist)
    index += ["```", ""]
    pages["changelogs/index.md"] = "\n".join(index)
    return pages


# -- writing ---------------------------------------------------------------------------------------


def generate(root: Path = ROOT) -> dict[str, str]:
    dists = distributions(root)
    pages: dict[str, str] = {}
    pages.update(api_pages(dists))
    pages.update(cli_page())
    pages.update(scheduler_pages(scheduler_factories(), dists))
    pages.update(components_page())
    pages.update(package_pages(dists))
    pages.update(changelog_pages(dists))
    return pages


def write_all(pages: Mapping[str, str], out: Path = GENERATED) -> list[Path]:
    """Writes ``pages`` under ``out``, leaving unchanged files untouched (so Sphinx
    rebuilds only what changed) and removing pages no longer generated."""
    written = []
    wanted = {out / rel for rel in pages}
    if out.exists():
        for old in out.rglob("*.md"):
            if old not in wanted:
                old.unlink()
    for rel, text in pages.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=GENERATED)
    args = parser.parse_args(list(argv) if argv is not None else None)
    for path in write_all(generate(), args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
