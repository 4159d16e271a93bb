"""``import torchx.specs`` loads attrs and nothing heavier."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ["cattrs", "pluggy", "importlib.metadata", "yaml", "json", "difflib", "typing_extensions"]


def test_import_loads_nothing_heavy() -> None:
    code = f"import sys, torchx.specs\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"heavy modules loaded by import torchx.specs: {out.stdout}"


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
