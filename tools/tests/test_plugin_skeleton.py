"""Every scheduler plugin has the one skeleton (docs/plugins.md, "One skeleton").

A newcomer who has read one plugin knows them all: the same module does the same job in
each scheduler package (a folder holding a ``scheduler.py``) of every plugin under
``plugins/`` and of the template, ``examples/vendor-plugin``:

* ``plugin.py`` (the hooks, in the distribution's top package), ``scheduler.py`` (the
  contract), ``options.py``, ``request.py``, ``status.py`` and ``backend.py`` are there;
* every backend call goes through ``backend.py``: only it (and modules nothing but it
  imports, its private helpers) imports the backend's client: ``subprocess``, the
  shared command runner ``torchx.schedulers.helpers.commands`` (or its earlier name
  ``torchx.schedulers.commands``), or an SDK;
* the scheduler takes its backend by one keyword, ``backend`` (tests inject a fake
  through it): its class's ``__init__`` has a ``backend`` parameter and
  ``create_scheduler`` passes ``backend=``;
* no module is over :data:`MAX_LINES` lines, no class over :data:`MAX_CLASS_LINES`.

:data:`NOT_YET` lists, per plugin, the rules it does not meet yet, each with who is
converting it. It only shrinks: a rule a plugin meets is refused there (take it out).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from check_imports import imported_modules
from conftest import REPO

#: The modules of every scheduler package.
SKELETON = ("scheduler.py", "options.py", "request.py", "status.py", "backend.py")
#: Modules only ``backend.py`` (and its private helpers) may import: a backend's clients.
CLIENTS = (
    "subprocess",
    "torchx.schedulers.helpers.commands",
    "torchx.schedulers.commands",  # the same module, by its earlier name
    "docker",
    "kubernetes",
    "boto3",
    "botocore",
)
#: The keyword a scheduler takes its backend by (tests inject a fake through it).
KEYWORD = "backend"
MAX_LINES = 600
MAX_CLASS_LINES = 300

#: A plugin's own client modules besides :data:`CLIENTS`, and the modules that may
#: import clients besides ``backend.py``, each with why.
OWN_CLIENTS: Mapping[str, tuple[str, ...]] = {
    # Acme Batch's "SDK" is a module of the example (a real plugin imports its vendor's)
    "acme-torchx": ("acme_torchx.batch",),
}
CLIENT_IMPORTERS: Mapping[str, Mapping[str, str]] = {
    "acme-torchx": {"batch.py": "it is the SDK the example stands in for"},
    "torchx-docker": {
        "images.py": "the workspace image builder: its own public API (torchx-k8s builds with it)"
    },
    "torchx-slurm": {
        "quick.py": "the quick handler runs squeue without the Runner (the status helper's)"
    },
    "torchx-lsf": {
        "quick.py": "the quick handler runs bjobs without the Runner (the status helper's)"
    },
}

#: Rules a plugin does not meet yet (rule name -> who converts it). Only shrinks.
NOT_YET: Mapping[str, Mapping[str, str]] = {}
RULES = ("modules", "clients", "keyword", "size")


def plugins() -> dict[str, Path]:
    """Distribution name -> its top package folder, for every plugin and the template."""
    found = {}
    for folder in [*sorted((REPO / "plugins").iterdir()), REPO / "examples" / "vendor-plugin"]:
        src = folder / "src"
        if not src.is_dir():
            continue
        tops = [p for p in src.iterdir() if (p / "__init__.py").is_file()]
        assert len(tops) == 1, f"{src}: one top package expected, found {tops}"
        name = tomllib.loads((folder / "pyproject.toml").read_text())["project"]["name"]
        found[name] = tops[0]
    return found


def scheduler_packages(top: Path) -> list[Path]:
    """The folders of ``top`` holding a ``scheduler.py`` (one per scheduler family)."""
    return sorted(p.parent for p in top.rglob("scheduler.py"))


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _run_time(tree: ast.Module) -> ast.Module:
    """``tree`` without its ``if TYPE_CHECKING:`` blocks (imports for annotations only)."""

    class Strip(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.AST | None:
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
            return None if name == "TYPE_CHECKING" else self.generic_visit(node)

    stripped = Strip().visit(tree)
    assert isinstance(stripped, ast.Module)
    return stripped


def problems(name: str, top: Path, rule: str) -> list[str]:
    """What ``rule`` finds wrong in plugin ``name`` (empty: it meets the rule)."""
    found = []
    packages = scheduler_packages(top)
    if rule == "modules":
        if not (top / "plugin.py").is_file():
            found.append(f"{top.name}/plugin.py is missing")
        if not packages:
            found.append(f"{top.name} has no scheduler.py")
        for pkg in packages:
            found.extend(
                f"{pkg.relative_to(top.parent)}/{m} is missing"
                for m in SKELETON
                if not (pkg / m).is_file()
            )
    elif rule == "clients":
        found.extend(_client_problems(name, top))
    elif rule == "keyword":
        for pkg in packages:
            found.extend(_keyword_problems(pkg / "scheduler.py"))
    elif rule == "size":
        for path in sorted(top.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            shown = path.relative_to(top.parent)
            if text.count("\n") > MAX_LINES:
                found.append(f"{shown}: {text.count(chr(10))} lines (at most {MAX_LINES})")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                    size = node.end_lineno - node.lineno + 1
                    if size > MAX_CLASS_LINES:
                        found.append(
                            f"{shown}: class {node.name} has {size} lines "
                            f"(at most {MAX_CLASS_LINES})"
                        )
    return found


def _client_problems(name: str, top: Path) -> Iterator[str]:
    clients = (*CLIENTS, *OWN_CLIENTS.get(name, ()))
    allowed = CLIENT_IMPORTERS.get(name, {})
    files = sorted(top.rglob("*.py"))
    # module name -> the modules of the plugin importing it
    importers: dict[str, set[Path]] = {}
    imports: dict[Path, list[tuple[int, str]]] = {}
    for path in files:
        imports[path] = list(imported_modules(_run_time(_parse(path))))
        for _, module in imports[path]:
            importers.setdefault(module, set()).add(path)

    def module_of(path: Path) -> str:
        rel = path.relative_to(top.parent).with_suffix("")
        return ".".join(rel.parts)

    # backend.py's private helpers: modules imported only by backend.py or by its helpers
    helpers = {p for p in files if p.name == "backend.py"}
    grown = True
    while grown:
        grown = False
        for path in files:
            users = importers.get(module_of(path), set())
            if path not in helpers and users and users <= helpers:
                helpers.add(path)
                grown = True

    for path in files:
        if path in helpers or path.name in allowed:
            continue
        for line, module in imports[path]:
            if any(module == c or module.startswith(c + ".") for c in clients):
                yield (
                    f"{path.relative_to(top.parent)}:{line} imports {module}: call the "
                    "backend through backend.py"
                )


def _keyword_problems(scheduler: Path) -> Iterator[str]:
    tree = _parse(scheduler)
    shown = scheduler.relative_to(scheduler.parents[2])
    factory = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "create_scheduler"),
        None,
    )
    if factory is None:
        yield f"{shown}: no create_scheduler"
        return
    passes = any(
        isinstance(n, ast.Call) and any(k.arg == KEYWORD for k in n.keywords)
        for n in ast.walk(factory)
    )
    if not passes:
        yield f"{shown}: create_scheduler does not pass {KEYWORD}= to the scheduler"
    takes = any(
        isinstance(n, ast.FunctionDef)
        and n.name == "__init__"
        and KEYWORD in [a.arg for a in (*n.args.args, *n.args.kwonlyargs)]
        for cls in tree.body
        if isinstance(cls, ast.ClassDef)
        for n in cls.body
    )
    if not takes:
        yield f"{shown}: no scheduler class whose __init__ takes {KEYWORD}"


CASES = [(name, rule) for name in plugins() for rule in RULES]


def test_every_plugin_is_checked() -> None:
    assert {"acme-torchx", "torchx-slurm", "torchx-docker", "torchx-k8s"} <= set(plugins())
    assert set(NOT_YET) <= set(plugins()), "NOT_YET names a plugin that is not there"
    for rules in NOT_YET.values():
        assert set(rules) <= set(RULES)


@pytest.mark.parametrize(("name", "rule"), CASES, ids=[f"{n}-{r}" for n, r in CASES])
def test_the_plugin_has_the_skeleton(name: str, rule: str) -> None:
    found = problems(name, plugins()[name], rule)
    if rule in NOT_YET.get(name, {}):
        assert found, (
            f"{name} meets the {rule!r} rule now: take it out of NOT_YET in "
            "tools/tests/test_plugin_skeleton.py"
        )
    else:
        assert found == [], f"{name} does not have the plugin skeleton (docs/plugins.md)"


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """Each rule fails on a plugin without the skeleton (so a pass means something)."""
    top = tmp_path / "src" / "bad_plugin"
    top.mkdir(parents=True)
    (top / "__init__.py").write_text("")
    (top / "scheduler.py").write_text(
        "import subprocess\n"
        "class S:\n    def __init__(self, client=None): ...\n"
        + "    x = 1\n" * MAX_CLASS_LINES
        + "def create_scheduler(name, **kw):\n    return S(client=kw.get('client'))\n"
    )
    assert problems("bad", top, "modules") == [
        "bad_plugin/plugin.py is missing",
        *[f"bad_plugin/{m} is missing" for m in SKELETON[1:]],
    ]
    assert problems("bad", top, "clients") == [
        "bad_plugin/scheduler.py:1 imports subprocess: call the backend through backend.py"
    ]
    assert len(problems("bad", top, "keyword")) == 2
    assert problems("bad", top, "size") == [
        f"bad_plugin/scheduler.py: {MAX_CLASS_LINES + 3} lines (at most {MAX_LINES})"
        if MAX_CLASS_LINES + 3 > MAX_LINES
        else f"bad_plugin/scheduler.py: class S has {MAX_CLASS_LINES + 2} lines "
        f"(at most {MAX_CLASS_LINES})"
    ]
