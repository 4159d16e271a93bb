"""docs/plugins.md stays true: every hook documented with its exact signature, the example runs.

The signature line of each hook in the doc must read exactly
``def <hook><signature>: ...`` where the signature is ``inspect.signature`` of the
hookspec function in torchx/specs/hookspecs.py, annotations shown as written.
The worked example is the vendor plugin in examples/vendor-plugin: every file the
doc shows must be that file, byte for byte, and the plugin is loaded in-process here
(nox -s install_matrix installs its wheel and uses it through ``torchx``; nox -s
tests-acme-torchx runs its tests/, the conformance kit the doc shows). The table of
what each installed scheduler lacks is the one tools/capability_table.py generates.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
import tomllib
from collections.abc import Callable, Iterator, Mapping
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


# --- the worked example: examples/vendor-plugin ---------------------------------------

VENDOR = REPO / "examples" / "vendor-plugin"
SHOWN_PREFIX = "# examples/vendor-plugin/"


def shown_files() -> dict[str, str]:
    """Path under examples/vendor-plugin -> the text the doc shows for it."""
    shown: dict[str, str] = {}
    for language in ("python", "toml"):
        for block in code_blocks(language):
            first, _, rest = block.partition("\n")
            if first.startswith(SHOWN_PREFIX):
                shown[first.removeprefix(SHOWN_PREFIX)] = rest
    return shown


def test_the_doc_shows_the_vendor_plugin_files() -> None:
    assert sorted(shown_files()) == [
        "pyproject.toml",
        "src/acme_torchx/backend.py",
        "src/acme_torchx/cli.py",
        "src/acme_torchx/components.py",
        "src/acme_torchx/options.py",
        "src/acme_torchx/plugin.py",
        "src/acme_torchx/request.py",
        "src/acme_torchx/resources.py",
        "src/acme_torchx/scheduler.py",
        "src/acme_torchx/status.py",
        "tests/test_conformance.py",
    ]


@pytest.mark.parametrize("path", sorted(shown_files()))
def test_each_shown_file_is_the_file_in_the_repository(path: str) -> None:
    actual = (VENDOR / path).read_text(encoding="utf-8")
    assert shown_files()[path] == actual, (
        f"docs/plugins.md shows a different examples/vendor-plugin/{path}: copy the file "
        "into the doc's code block (after its first line)"
    )


def test_the_vendor_pyproject_declares_the_entry_point() -> None:
    data = tomllib.loads((VENDOR / "pyproject.toml").read_text())
    assert data["project"]["entry-points"]["torchx"] == {"acme": "acme_torchx.plugin"}
    assert '[project.entry-points.torchx]\nacme = "acme_torchx.plugin"' in DOC.read_text()


def _take_acme_modules() -> dict[str, Any]:
    """Removes the acme_torchx modules from ``sys.modules``; those it removed."""
    names = [m for m in sys.modules if m == "acme_torchx" or m.startswith("acme_torchx.")]
    return {name: sys.modules.pop(name) for name in names}


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The vendor plugin module, imported afresh from its source folder; state under tmp.

    Afresh: an earlier test of the same process may have imported the installed plugin's
    modules (tools/tests/test_one_opts_class.py creates every installed scheduler), and
    what this module's tests see imported must be what importing the plugin did. They
    are put back afterwards.
    """
    earlier = _take_acme_modules()
    monkeypatch.syspath_prepend(str(VENDOR / "src"))
    from torchx.specs.plugins import reset_registry

    reset_registry()
    try:
        yield importlib.import_module("acme_torchx.plugin")
    finally:
        reset_registry()
        _take_acme_modules()
        sys.modules.update(earlier)


def test_the_plugin_module_is_lazy_and_loads_cleanly(acme: Any) -> None:
    from torchx.specs.plugins import build_registry

    assert {m for m in sys.modules if m.startswith("acme_torchx.")} == {"acme_torchx.plugin"}
    registry = build_registry([acme], entry_points=False)
    assert registry.failures == ()
    assert registry.schedulers["acme"].ref == "acme_torchx.scheduler:create_scheduler"
    assert sorted(registry.named_resources) == ["acme.gpu8", "acme.small"]
    assert registry.named_resource_factory("acme.gpu8")().gpu == 8
    assert {m for m in sys.modules if m.startswith("acme_torchx.")} == {
        "acme_torchx.plugin",
        "acme_torchx.resources",
    }


def test_the_component_and_the_cli_command(acme: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from torchx.specs.plugins import get_registry, register_builtin

    register_builtin(acme)
    registry = get_registry()
    app = registry.component("acme.hello")(who="docs", replicas=2)
    (role,) = app.roles
    assert (role.entrypoint, role.num_replicas) == ("echo", 2)
    assert role.args == ["hello docs from replica ${replica_id}"]
    assert role.resource.capabilities["acme/instance"] == "small"  # its own named resource

    command = registry.cli_command("acme-sizes")
    command = command() if isinstance(command, type) else command
    assert isinstance(command.help, str) and "\n" not in command.help
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    assert command.run(parser.parse_args(["--min-gpus", "1"])) == 0
    assert capsys.readouterr().out == "acme.gpu8: 96 CPUs, 8 GPUs, 1048576 MB\n"


def test_the_scheduler_dry_runs_without_its_backend(acme: Any) -> None:
    from torchx.specs import AppDef, Role, resource
    from torchx.specs.plugins import build_registry

    registry = build_registry([acme], entry_points=False)
    scheduler = registry.scheduler_factory("acme")("session")
    app = AppDef(
        "hi",
        [
            Role(
                "trainer",
                "img:1",
                entrypoint="python",
                args=["t.py", "--rank", "${replica_id}"],
                num_replicas=2,
                resource=resource(cpu=1),
            )
        ],
    )
    info = scheduler.submit_dryrun(app, {"queue": "gpu"})
    request = info.request
    assert request["id"].startswith("hi-") and request["queue"] == "gpu"
    assert [t["argv"] for t in request["tasks"]] == [
        ["python", "t.py", "--rank", "0"],
        ["python", "t.py", "--rank", "1"],
    ]
    assert request["tasks"][0]["instance"] == "any"
    assert "acme_torchx.batch" not in sys.modules  # the backend: to submit, not to dry-run
    assert '"queue": "gpu"' in str(info)


def test_the_in_process_testing_snippet_runs(acme: Any) -> None:
    (snippet,) = [b for b in code_blocks("python") if "register_builtin(acme_torchx.plugin)" in b]
    exec(compile(snippet, "docs/plugins.md", "exec"), {})


# --- the conformance kit's capabilities -------------------------------------------------


def test_the_capability_table_is_generated_from_the_declarations(acme: Any) -> None:
    import capability_table  # the acme fixture removes the vendor modules it imports

    doc = DOC.read_text(encoding="utf-8")
    assert capability_table.section(doc) == capability_table.generate(), (
        "docs/plugins.md's capability table differs from the schedulers' declarations: "
        "run `.nox/repo/bin/python tools/capability_table.py --write`"
    )


def test_the_capability_table_refuses_to_drop_a_plugin_that_is_not_installed(
    acme: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import capability_table

    plugins = tmp_path / "plugins"
    for name in ("torchx-nowhere", "torchx-slurm"):
        (plugins / name).mkdir(parents=True)
        (plugins / name / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    doc = tmp_path / "plugins.md"
    before = DOC.read_text(encoding="utf-8")
    doc.write_text(before, encoding="utf-8")
    monkeypatch.setattr(capability_table, "PLUGINS", plugins)
    monkeypatch.setattr(capability_table, "DOC", doc)

    assert capability_table.main(["--write"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "torchx-nowhere" in err and "torchx-slurm" not in err  # slurm is installed here
    assert doc.read_text(encoding="utf-8") == before  # nothing written
    assert capability_table.main([]) == 1  # printing would drop the rows too


def test_every_capability_is_explained() -> None:
    from torchx.schedulers.contract.capabilities import LACKING, Capability

    doc = DOC.read_text(encoding="utf-8")
    explained = set(re.findall(r"^\| `(\w+)` \| .* \| .* \|$", doc, re.MULTILINE))
    assert explained == {c.value for c in Capability}
    assert set(LACKING) == set(Capability)
