"""``import torchx.specs`` loads attrs and nothing heavier."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ["cattrs", "pluggy", "importlib.metadata", "yaml", "json", "difflib", "typing_extensions"]


def test_import_loads_nothing_heavy() -> None:
    code = f"import sys, torchx.specs\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"heavy modules loaded by import torchx.specs: {out.stdout}"


def test_the_quick_core_imports_nothing_but_itself() -> None:
    # the handle and the status record: what torchx status shares with its quick path
    code = (
        "import sys; before = set(sys.modules)\n"
        "import torchx.specs.handles, torchx.specs.status\n"
        "print(','.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.strip().split(","))
    assert not loaded & {"typing", "re", "attr", "attrs", "enum", *HEAVY}
    assert {m for m in loaded if m.startswith("torchx")} <= {
        "torchx",
        "torchx.specs",
        "torchx.specs._version",
        "torchx.specs.handles",
        "torchx.specs.status",
    }


def test_namespace_package_has_no_init() -> None:
    import torchx

    assert getattr(torchx, "__file__", None) is None, "torchx must stay a PEP 420 namespace"


def test_every_public_name_resolves_to_the_object_not_a_module() -> None:
    code = (
        "import types, torchx.specs as s\n"
        "import torchx.specs.options, torchx.specs.resources, torchx.specs.templating\n"
        "bad = [n for n in s.__all__ if isinstance(getattr(s, n), types.ModuleType)]\n"
        "missing = [n for n in s.__all__ if n not in dir(s)]\n"
        "print(bad, missing)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] []"


def test_unknown_attribute_is_an_attribute_error() -> None:
    import torchx.specs

    try:
        torchx.specs.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as e:
        assert "NoSuchThing" in str(e)
    else:
        raise AssertionError("expected AttributeError")


def test_upstream_api_module_names_still_resolve() -> None:
    from torchx.specs.api import macros, parse_app_handle, runopts  # type: ignore[attr-defined]

    assert (
        callable(parse_app_handle)
        and runopts.__name__ == "runopts"
        and macros.app_id == "${app_id}"
    )
