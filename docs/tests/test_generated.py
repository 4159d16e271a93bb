"""The generated pages follow the code: built from what is installed, never from text.

The first tests call the generators on objects made here (a parser, run options, a
module), so a new option or docstring shows up with no edit under docs/. The last ones
read the site ``nox -s docs`` just built (build/site) against the installed code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(DOCS / "_ext"))

import sitegen  # noqa: E402
import torchx_docs  # noqa: E402

SITE = DOCS.parent / "build" / "site"


def test_a_new_cli_option_shows_on_the_cli_page() -> None:
    parser = argparse.ArgumentParser(prog="torchx")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", description="run a component")
    run.add_argument("--brand_new", metavar="N", help="an option added today")
    run.add_argument("-s", "--scheduler", choices=["local", "slurm"], default="local")
    text = sitegen.cli_page(parser)["cli.md"]
    assert "## `torchx run`" in text
    assert "| `--brand_new` | `N` |  | an option added today |" in text
    assert "`-s`, `--scheduler` | `local` \\| `slurm` | `local` |" in text


def test_a_new_run_option_shows_in_the_run_options_table() -> None:
    from torchx.specs.options import runopts

    opts = runopts()
    opts.add("queue", type_=str, help="the queue", required=True)
    opts.add("retries", type_=int, default=3, help="how often | at most")
    table = sitegen.runopts_table(opts)
    assert "| `queue` | `str` | (required) | the queue |" in table
    assert "| `retries` | `int` | `3` | how often \\| at most |" in table


def test_public_modules_skip_private_parts(tmp_path: Path) -> None:
    for rel in ("torchx/x/__init__.py", "torchx/x/a.py", "torchx/x/_b.py", "torchx/_c/d.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert sitegen.public_modules(tmp_path) == ["torchx.x", "torchx.x.a"]


def test_public_modules_of_the_local_scheduler_are_only_its_api(tmp_path: Path) -> None:
    for name in ("__init__", "scheduler", "view", "warmup", "supervisor", "state"):
        path = tmp_path / "torchx" / "schedulers" / "local" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    assert sitegen.public_modules(tmp_path) == [
        "torchx.schedulers.local",
        "torchx.schedulers.local.scheduler",
        "torchx.schedulers.local.view",
        "torchx.schedulers.local.warmup",
    ]


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ("[docs](docs/plugins.md)", "[docs](/plugins.md)"),
        ("[a section](docs/plugins.md#the-hooks)", "[a section](/plugins.md#the-hooks)"),
        ("[bench](bench)", "[bench](/benchmarks.md)"),
        ("[examples/ddp/train.py](examples/ddp/train.py)", "examples/ddp/train.py"),
        ("[the tools](tools)", "the tools (`tools/`)"),
        ("[gone](no/such/file.md)", "[gone](no/such/file.md)"),  # left broken: the build fails
        ("[web](https://example.org/x)", "[web](https://example.org/x)"),
    ],
)
def test_links_of_an_included_readme(link: str, expected: str) -> None:
    pages = {"README.md": "index", "docs/plugins.md": "plugins", "bench/README.md": "benchmarks"}
    root_readme = sitegen.ROOT / "README.md"
    assert torchx_docs.rewrite_links(link, root_readme, sitegen.DOCS, pages) == expected


def test_links_inside_code_blocks_are_left_alone() -> None:
    text = "```md\n[docs](docs/plugins.md)\n```\n"
    assert torchx_docs.rewrite_links(text, sitegen.ROOT / "README.md", sitegen.DOCS, {}) == text


def test_an_included_section_goes_under_the_page_title() -> None:
    text = "### Sub\n\n```sh\n# not a heading\n```\n#### Deeper\n"
    assert (
        torchx_docs.shift_headings(text, 2) == "## Sub\n\n```sh\n# not a heading\n```\n### Deeper\n"
    )


# -- the site just built ----------------------------------------------------------------------

needs_site = pytest.mark.skipif(
    not (SITE / "index.html").exists(), reason="run by nox -s docs, after the build"
)


@needs_site
def test_every_public_module_has_an_api_page() -> None:
    for dist, folder in sitegen.distributions().items():
        for module in sitegen.public_modules(folder / "src"):
            page = SITE / "reference" / "api" / f"{module}.html"
            assert page.exists(), f"{dist}: no API page for {module}"


@needs_site
def test_every_subcommand_and_option_is_on_the_cli_page() -> None:
    html = (SITE / "reference" / "cli.html").read_text(encoding="utf-8")
    parser = sitegen.torchx_parser()
    for name, sub in sitegen._subparsers(parser).items():
        assert f"torchx {name}" in html, name
        for action in sub._actions:
            for option in action.option_strings:
                assert option in html, f"torchx {name} {option}"


@needs_site
def test_every_run_option_of_every_scheduler_is_on_its_page() -> None:
    for name, factory in sitegen.scheduler_factories().items():
        html = (SITE / "reference" / "schedulers" / f"{name}.html").read_text(encoding="utf-8")
        for opt, _ in factory("docs").run_opts():
            assert f'<span class="pre">{opt}</span>' in html, f"{name}: {opt}"


@needs_site
def test_attrs_fields_are_in_the_api_reference() -> None:
    import attrs

    from torchx.specs.api import Role

    # Role is exported by torchx.specs: documented there (see the next test)
    html = (SITE / "reference" / "api" / "torchx.specs.html").read_text(encoding="utf-8")
    for field in attrs.fields(Role):
        assert f'id="torchx.specs.Role.{field.name}"' in html, field.name
    assert "name: str, image: str, min_replicas" in _text(html)  # the signature, from fields


@needs_site
def test_a_class_its_package_exports_is_documented_on_the_package_page() -> None:
    package = (SITE / "reference" / "api" / "torchx.specs.html").read_text(encoding="utf-8")
    module = (SITE / "reference" / "api" / "torchx.specs.api.html").read_text(encoding="utf-8")
    assert 'id="torchx.specs.AppDef"' in package
    assert 'id="torchx.specs.api.AppDef"' not in module  # once, not twice
    assert 'href="torchx.specs.html#torchx.specs.AppDef"' in module  # pointed at


def _text(html: str) -> str:
    import html as html_lib
    import re

    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


@needs_site
def test_every_builtin_component_is_in_the_catalogue() -> None:
    from torchx.components.finder import list_components

    html = (SITE / "reference" / "components.html").read_text(encoding="utf-8")
    builtins = [n for n, c in list_components().items() if c.source.startswith("torchx-runner")]
    assert "dist.ddp" in builtins
    for name in builtins:
        assert f'<span class="pre">{name}</span>' in html, name
