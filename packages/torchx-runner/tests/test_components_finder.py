"""torchx.components.finder: built-in, plugin, file and module components."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.components import dist, utils
from torchx.components.errors import ComponentLoadError, ComponentNotFoundError
from torchx.components.finder import ComponentDef, get_component, list_components
from torchx.specs.errors import SpecError
from torchx.specs.hookspecs import hookimpl
from torchx.specs.plugins import register_builtin, reset_registry

BUILTINS = {
    "dist.ddp": dist.ddp,
    "dist.spmd": dist.spmd,
    "utils.echo": utils.echo,
    "utils.touch": utils.touch,
    "utils.sh": utils.sh,
    "utils.python": utils.python,
    "utils.binary": utils.binary,
    "utils.copy": utils.copy,
    "utils.booth": utils.booth,
}

COMPONENT_FILE = '''
from torchx.specs import AppDef, Role


def greet(who: str = "world") -> AppDef:
    """Greets someone.

    A second paragraph.

    Args:
        who: who to greet
    """
    return AppDef(name="greet", roles=[Role(name="greet", image=".", args=[who])])


def helper() -> int:
    return 1
'''


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# -------------------------------------------------------------------- built-ins


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtins_resolve(name: str) -> None:
    cdef = get_component(name)
    assert isinstance(cdef, ComponentDef)
    assert cdef.fn is BUILTINS[name]
    assert cdef.name == name
    assert cdef.fn_name == name.split(".")[1]
    assert cdef.module == BUILTINS[name].__module__
    assert cdef.path is not None and cdef.path.endswith(name.split(".")[0] + ".py")
    assert cdef.source.startswith("torchx-runner ")
    assert cdef.description and "\n" not in cdef.description


def test_description_is_the_first_paragraph() -> None:
    assert get_component("utils.echo").description == "Echoes a message to stdout (runs ``echo``)."


def test_list_components_holds_the_builtins_and_only_components() -> None:
    found = list_components()
    assert set(BUILTINS) <= set(found)
    assert list(found) == sorted(found)
    assert "dist.parse_nnodes" not in found
    for name, fn in BUILTINS.items():
        assert found[name].fn is fn


def test_unknown_name_suggests_the_nearest() -> None:
    with pytest.raises(ComponentNotFoundError) as info:
        get_component("dist.dpp")
    message = str(info.value)
    assert message.startswith("unknown component 'dist.dpp' (did you mean 'dist.ddp'?)")
    assert "torchx builtins" in message
    assert isinstance(info.value, SpecError) and isinstance(info.value, ValueError)


def test_a_file_without_function_gets_a_hint() -> None:
    with pytest.raises(ComponentNotFoundError, match=r"name it too: train\.py:function"):
        get_component("train.py")


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_name(name: str) -> None:
    with pytest.raises(ComponentNotFoundError, match="a component name is needed"):
        get_component(name)


# ------------------------------------------------------------------------ files


def test_file_component_by_absolute_and_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "comps" / "mine.py", COMPONENT_FILE)
    cdef = get_component(f"{path}:greet")
    assert cdef.fn_name == "greet"
    assert cdef.source == "file"
    assert cdef.path == str(path)
    assert cdef.description == "Greets someone."
    assert cdef.fn().roles[0].args == ["world"]
    assert cdef.validate() == []

    monkeypatch.chdir(tmp_path)
    rel = get_component("comps/mine.py:greet")
    assert rel.name == "comps/mine.py:greet"
    assert rel.fn is cdef.fn  # loaded once while the file is unchanged
    assert get_component("./comps/mine.py:greet").fn is cdef.fn


def test_missing_file_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    with pytest.raises(ComponentNotFoundError) as info:
        get_component(f"{missing}:greet")
    assert str(info.value) == (
        f"component file '{missing}' does not exist ({missing}); expected path/to/file.py:function"
    )


def test_missing_function_lists_the_available_ones(tmp_path: Path) -> None:
    path = _write(tmp_path / "mine.py", COMPONENT_FILE)
    with pytest.raises(ComponentNotFoundError) as info:
        get_component(f"{path}:gret")
    assert str(info.value) == (
        f"function 'gret' not found in '{path}' (did you mean 'greet'?); "
        "functions defined there: greet, helper"
    )
    with pytest.raises(ComponentNotFoundError, match=r"a function name after ':' not found"):
        get_component(f"{path}:")


def test_broken_file_is_a_load_error_naming_it(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.py", "def f(:\n")
    with pytest.raises(
        ComponentLoadError, match=r"cannot load component file '.*bad\.py': SyntaxError"
    ):
        get_component(f"{bad}:f")
    boom = _write(tmp_path / "boom.py", "raise RuntimeError('no way')\n")
    with pytest.raises(ComponentLoadError, match=r"boom\.py': RuntimeError: no way"):
        get_component(f"{boom}:f")
    leaves = _write(tmp_path / "leaves.py", "import sys\nsys.exit(3)\n")
    with pytest.raises(ComponentLoadError, match=r"SystemExit: 3"):
        get_component(f"{leaves}:f")


def test_file_may_import_its_neighbours_without_changing_sys_path(tmp_path: Path) -> None:
    _write(tmp_path / "neighbour_for_torchx_test.py", "GREETING = 'hi from next door'\n")
    path = _write(
        tmp_path / "uses.py",
        """
        from neighbour_for_torchx_test import GREETING
        from torchx.specs import AppDef, Role

        def comp() -> AppDef:
            '''Uses a neighbour.'''
            return AppDef(name="n", roles=[Role(name="n", image=".", args=[GREETING])])
        """,
    )
    before = list(sys.path)
    try:
        assert get_component(f"{path}:comp").fn().roles[0].args == ["hi from next door"]
        assert sys.path == before
    finally:
        sys.modules.pop("neighbour_for_torchx_test", None)


def test_changed_file_is_reloaded(tmp_path: Path) -> None:
    path = _write(tmp_path / "changing.py", COMPONENT_FILE)
    first = get_component(f"{path}:greet").fn
    path.write_text(COMPONENT_FILE.replace('"world"', '"everyone"'))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    second = get_component(f"{path}:greet").fn
    assert second is not first
    assert second().roles[0].args == ["everyone"]


def test_file_module_supports_dataclasses(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "dc.py",
        """
        from __future__ import annotations
        import dataclasses
        from torchx.specs import AppDef

        @dataclasses.dataclass
        class Conf:
            x: int = 1

        def comp() -> AppDef:
            '''Uses a dataclass.'''
            return AppDef(name=str(Conf().x))
        """,
    )
    assert get_component(f"{path}:comp").fn().name == "1"


# ---------------------------------------------------------------------- modules


@pytest.fixture
def importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in list(sys.modules):
        if name.startswith("txcomp_fixture"):
            del sys.modules[name]


def test_module_component(importable: Path) -> None:
    _write(importable / "txcomp_fixture" / "__init__.py", "")
    _write(importable / "txcomp_fixture" / "comps.py", COMPONENT_FILE)
    cdef = get_component("txcomp_fixture.comps:greet")
    assert cdef.module == "txcomp_fixture.comps"
    assert cdef.source == "module"
    assert cdef.path is not None and cdef.path.endswith("comps.py")
    assert cdef.fn(who="you").roles[0].args == ["you"]


def test_module_errors(importable: Path) -> None:
    _write(importable / "txcomp_fixture" / "__init__.py", "")
    _write(importable / "txcomp_fixture" / "comps.py", COMPONENT_FILE)
    _write(importable / "txcomp_fixture" / "broken.py", "import not_a_module_anywhere_xyz\n")
    with pytest.raises(ComponentNotFoundError, match=r"no module 'txcomp_fixture.nope'"):
        get_component("txcomp_fixture.nope:greet")
    with pytest.raises(ComponentNotFoundError) as info:
        get_component("txcomp_fixture.comps:greeet")
    assert str(info.value) == (
        "function 'greeet' not found in module 'txcomp_fixture.comps' (did you mean 'greet'?); "
        "functions defined there: greet, helper"
    )
    with pytest.raises(ComponentLoadError, match=r"cannot import 'txcomp_fixture.broken'.*"):
        get_component("txcomp_fixture.broken:greet")


# ---------------------------------------------------------------------- plugins


@pytest.fixture
def plugin(importable: Path) -> Iterator[None]:
    _write(importable / "txcomp_fixture" / "__init__.py", "")
    _write(importable / "txcomp_fixture" / "comps.py", COMPONENT_FILE)
    _write(importable / "txcomp_fixture" / "group.py", COMPONENT_FILE)

    class Plugin:
        @hookimpl
        def torchx_components(self) -> dict[str, str]:
            return {"fx.hello": "txcomp_fixture.comps:greet", "fxg": "txcomp_fixture.group"}

    reset_registry()
    register_builtin(Plugin())
    yield
    reset_registry()


@pytest.mark.usefixtures("plugin")
def test_plugin_components_resolve_and_are_listed() -> None:
    single = get_component("fx.hello")
    assert single.fn_name == "greet"
    assert single.module == "txcomp_fixture.comps"
    assert single.source.startswith("<in-process>")
    grouped = get_component("fxg.greet")
    assert grouped.module == "txcomp_fixture.group"
    found = list_components()
    assert {"fx.hello", "fxg.greet", "dist.ddp"} <= set(found)
    assert "fxg.helper" not in found  # not annotated -> AppDef: not a component
    with pytest.raises(ComponentNotFoundError, match=r"did you mean 'fxg.greet'"):
        get_component("fxg.gret")


def test_loading_a_file_component_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as on a default Python
    path = _write(tmp_path / "comps" / "quiet.py", COMPONENT_FILE)
    cdef = get_component(f"{path}:greet")
    assert cdef.fn().roles[0].args == ["world"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["quiet.py"]  # no __pycache__
