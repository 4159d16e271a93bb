"""docs/plugins.md stays true: every hook documented with its exact signature, the example runs.

The signature line of each hook in the doc must read exactly
``def <hook><signature>: ...`` where the signature is ``inspect.signature`` of the
hookspec function in torchx/specs/hookspecs.py, annotations shown as written.
The worked example's files are extracted from the doc and used as a real plugin.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from torchx.specs import hookspecs

DOC = REPO / "docs" / "plugins.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_HOOK_LINE = re.compile(r"^def (torchx_\w+)\(.*\).*: \.\.\.$", re.MULTILINE)


class _AsWritten:
    """An annotation string rendered without quotes by ``inspect.Signature.__str__``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _as_written(annotation: Any) -> Any:
    return _AsWritten(annotation) if isinstance(annotation, str) else annotation


def signature_line(fn: Callable[..., Any]) -> str:
    sig = inspect.signature(fn)
    params = [p.replace(annotation=_as_written(p.annotation)) for p in sig.parameters.values()]
    sig = sig.replace(parameters=params, return_annotation=_as_written(sig.return_annotation))
    return f"def {fn.__name__}{sig}: ..."


def hookspec_functions() -> dict[str, Callable[..., Any]]:
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return {
        name: obj
        for name, obj in vars(hookspecs).items()
        if inspect.isfunction(obj) and hasattr(obj, marker)
    }


def code_blocks(language: str) -> Iterator[str]:
    for match in _BLOCK.finditer(DOC.read_text(encoding="utf-8")):
        if match.group(1) == language:
            yield match.group(2)


def test_hook_names_are_the_hookspecs() -> None:
    assert sorted(hookspec_functions()) == sorted(hookspecs.HOOK_NAMES)


@pytest.mark.parametrize("hook", sorted(hookspecs.HOOK_NAMES))
def test_every_hook_is_documented_with_its_exact_signature(hook: str) -> None:
    expected = signature_line(hookspec_functions()[hook])
    documented = [
        line
        for block in code_blocks("python")
        for line in block.splitlines()
        if line.startswith(f"def {hook}(") and line.endswith(": ...")
    ]
    assert documented, f"docs/plugins.md has no python code line for hook {hook}: {expected}"
    assert documented == [expected], (
        f"docs/plugins.md documents {documented}, hookspecs.py says {expected}"
    )


def test_no_documented_hook_is_stale() -> None:
    documented = {m.group(1) for block in code_blocks("python") for m in _HOOK_LINE.finditer(block)}
    assert documented == set(hookspecs.HOOK_NAMES)


def test_signature_line_renders_parameters_as_written() -> None:
    def hook(a: int, *, b: str | None = None) -> Mapping[str, str]:  # strings: __future__
        raise NotImplementedError

    assert (
        signature_line(hook)
        == "def hook(a: int, *, b: str | None = None) -> Mapping[str, str]: ..."
    )


# --- the worked example ---------------------------------------------------------------------


def test_example_pyproject_declares_the_entry_point() -> None:
    (pyproject,) = [b for b in code_blocks("toml") if b.startswith("# pyproject.toml")]
    data = tomllib.loads(pyproject)
    assert data["project"]["entry-points"]["torchx"] == {"myplugin": "my_plugin.plugin"}
    assert '[project.entry-points.torchx]\nmyplugin = "my_plugin.plugin"' in DOC.read_text()


@pytest.fixture
def my_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The doc's my_plugin package written to a temporary folder and put on sys.path."""
    files = {}
    for block in code_blocks("python"):
        first = block.splitlines()[0]
        if first.startswith("# my_plugin/"):
            files[first.removeprefix("# ")] = block
    assert sorted(files) == [
        "my_plugin/cli.py",
        "my_plugin/components.py",
        "my_plugin/plugin.py",
        "my_plugin/resources.py",
        "my_plugin/scheduler.py",
    ]
    (tmp_path / "my_plugin").mkdir()
    (tmp_path / "my_plugin" / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    from torchx.specs.plugins import reset_registry

    reset_registry()
    try:
        yield importlib.import_module("my_plugin.plugin")
    finally:
        reset_registry()
        for name in [m for m in sys.modules if m == "my_plugin" or m.startswith("my_plugin.")]:
            del sys.modules[name]


def test_example_plugin_module_is_lazy_and_loads_cleanly(my_plugin: Any) -> None:
    from torchx.specs.plugins import build_registry

    imported = {m for m in sys.modules if m.startswith("my_plugin.")}
    assert imported == {"my_plugin.plugin"}  # references only: nothing else imported
    registry = build_registry([my_plugin], entry_points=False)
    assert registry.failures == ()
    assert registry.schedulers["my_cloud"].ref == "my_plugin.scheduler:create_scheduler"
    assert sorted(registry.named_resources) == ["my_cloud.cpu16", "my_cloud.gpu8"]
    assert registry.named_resource_factory("my_cloud.gpu8")().gpu == 8
    assert {m for m in sys.modules if m.startswith("my_plugin.")} == {
        "my_plugin.plugin",
        "my_plugin.resources",
    }


def test_example_component_and_cli_command(
    my_plugin: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from torchx.specs.plugins import get_registry, register_builtin

    register_builtin(my_plugin)
    registry = get_registry()
    app = registry.component("my_cloud.train")("train.py", nnodes=2)
    (role,) = app.roles
    assert (role.entrypoint, role.args, role.num_replicas) == ("python", ["train.py"], 2)
    assert role.resource.gpu == 8  # the plugin's own named resource, by name

    command = registry.cli_command("my-cloud-sizes")
    command = command() if isinstance(command, type) else command
    assert isinstance(command.help, str) and "\n" not in command.help
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    assert command.run(parser.parse_args(["--min-gpus", "1"])) == 0
    assert capsys.readouterr().out == "my_cloud.gpu8: 96 CPUs, 8 GPUs, 1048576 MB\n"


def test_example_scheduler_dryrun(my_plugin: Any) -> None:
    pytest.importorskip("torchx.schedulers.api", reason="torchx-runner is not installed")
    from torchx.specs import AppDef, Role, resource
    from torchx.specs.plugins import build_registry

    registry = build_registry([my_plugin], entry_points=False)
    scheduler = registry.scheduler_factory("my_cloud")("session")
    app = AppDef(
        "hello",
        [Role("trainer", "img:1", entrypoint="python", args=["t.py"], resource=resource(cpu=1))],
    )
    info = scheduler.submit_dryrun(app, {"queue": "gpu"})
    assert info.request == {
        "name": "hello",
        "queue": "gpu",
        "tasks": [
            {
                "role": "trainer",
                "image": "img:1",
                "command": ["python", "t.py"],
                "replicas": 1,
                "instance": "any",
            }
        ],
    }
    assert "my_cloud_sdk" not in sys.modules  # the SDK is needed to submit, not to dry-run
