"""Each plugin README's hand-written "Run options" table names exactly the scheduler's options.

The site's run-option tables are generated from ``run_opts()``; the README tables (what a
reader on PyPI sees, with each option's meaning in that backend's words) are written by
hand and sit on the same site page. This test keeps them from drifting: an option added,
renamed or removed in code fails here until the README table says the same.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# README, scheduler whose options its "## Run options" table lists
TABLES = [
    ("plugins/torchx-docker/README.md", "docker"),
    ("plugins/torchx-k8s/README.md", "kubernetes"),
    ("plugins/torchx-lsf/README.md", "lsf"),
    ("plugins/torchx-slurm/README.md", "slurm"),
]

_ROW = re.compile(r"^\| `([A-Za-z0-9_.-]+)`")


def table_options(readme: Path) -> list[str]:
    """Option names in the first column of the table under ``## Run options``."""
    names: list[str] = []
    inside = False
    for line in readme.read_text(encoding="utf-8").splitlines():
        if line.strip() == "## Run options":
            inside = True
        elif inside and line.startswith("## "):
            break
        elif inside and (m := _ROW.match(line)):
            names.append(m.group(1))
    return names


def test_table_reader_finds_rows_only_in_the_section(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "| `before` | x |\n## Run options\n\n| option | x |\n| --- | --- |\n"
        "| `a_b` | 1 |\n| `mail-type` | 2 |\n\n## Next\n| `after` | y |\n"
    )
    assert table_options(readme) == ["a_b", "mail-type"]


@pytest.mark.parametrize(("readme", "scheduler"), TABLES)
def test_readme_run_options_table_matches_run_opts(readme: str, scheduler: str) -> None:
    from torchx.schedulers import get_scheduler_factories

    factory = get_scheduler_factories()[scheduler]
    in_code = sorted(name for name, _ in factory(session_name="readme").run_opts())
    in_readme = table_options(REPO / readme)
    assert len(in_readme) == len(set(in_readme)), f"{readme}: an option listed twice"
    assert sorted(in_readme) == in_code, (
        f"{readme}'s Run options table lists {sorted(set(in_readme) - set(in_code))} that "
        f"{scheduler} does not have and misses {sorted(set(in_code) - set(in_readme))}"
    )
