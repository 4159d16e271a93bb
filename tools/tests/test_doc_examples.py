"""Every Python example in a README or doc runs, or says plainly why it cannot here.

The examples are the ```python (and ```pycon) blocks of the pages the documentation
site is made of: the READMEs and docs/ (:func:`conftest.doc_sources`). The commands
(```sh blocks) are tools/tests/test_doc_commands.py's. Each Python block is exactly one
of:

* **run here** (the default): a fresh ``python`` process runs it in an empty temp
  directory, with its own ``HOME`` and ``TORCHX_HOME`` and the packages ``nox -s repo``
  installs (torchx-specs, torchx-runner, the plugins); it must exit 0 within a minute.
  A ```pycon block (``>>>`` prompts) is run by doctest and must print what it shows.
  All of them start at once: each has a directory of its own;
* **run by a test that needs more** (a scripted Slurm, an argument, a second process):
  listed in :data:`RUN_BY`, keyed by its first line, with that test, which must exist
  and read the doc;
* **a file of the repository, shown**: its first line is ``# <path>`` naming a file of
  the repository, and the block is that file, byte for byte (the file's own tests run
  it);
* **a placeholder**: its first line is ``# placeholder: <reason>``, with a reason from
  :data:`PLACEHOLDER_REASONS` (a backend this machine cannot run, or a piece of a plugin
  for a made-up backend). A placeholder is compiled, not run; the reader sees the mark
  on the page.

A block that is none of these is run, and fails here if it cannot: make it runnable,
list the test that runs it, or mark it.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, doc_sources, function_source

#: What a placeholder may say it needs (the first line: ``# placeholder: <reason>``).
PLACEHOLDER_REASONS = (
    "needs a Slurm cluster",
    "needs a Docker engine",
    "needs a Kubernetes API server",
    "needs an LSF cluster",
    "needs AWS",
    "needs torch",
    "part of a plugin for a made-up backend",
    "an outline of a module's API",
)
PLACEHOLDER = re.compile(r"# placeholder: (?P<reason>[^.:(]+?)\s*(?:[.:(].*)?$")

#: (doc, the start of a block's first line) -> the test that runs it ("path::function").
RUN_BY: dict[tuple[str, str], str] = {
    # the upstream section's script, on the real local scheduler
    (
        "README.md",
        "import dataclasses",
    ): "tools/tests/test_readme_upstream.py::test_the_sections_examples_run",
    # launch.py prints a handle that follow.py takes as its argument
    (
        "packages/torchx-runner/README.md",
        "# launch.py",
    ): "packages/torchx-runner/tests/test_readme.py::test_launch_then_follow_from_another_process",
    (
        "packages/torchx-runner/README.md",
        "# follow.py",
    ): "packages/torchx-runner/tests/test_readme.py::test_launch_then_follow_from_another_process",
    (
        "packages/torchx-runner/README.md",
        "from torchx.runner import get_runner",
    ): "packages/torchx-runner/tests/test_readme.py::test_component_example",
    # against the plugins' scripted Slurm and LSF commands
    (
        "plugins/torchx-slurm/README.md",
        "from torchx.runner import get_runner",
    ): "plugins/torchx-slurm/tests/test_readme.py::test_the_python_example_submits_and_waits",
    (
        "plugins/torchx-lsf/README.md",
        "from torchx.runner import get_runner",
    ): "plugins/torchx-lsf/tests/test_readme.py::test_the_python_example_submits_and_waits",
    # the hooks' signatures, checked against the hookspecs
    **{
        (
            "docs/plugins.md",
            f"def {hook}(",
        ): "tools/tests/test_plugin_docs.py::test_every_hook_is_documented_with_its_exact_signature"
        for hook in (
            "torchx_schedulers",
            "torchx_named_resources",
            "torchx_components",
            "torchx_cli_commands",
            "torchx_quick_handlers",
        )
    },
    # with the example vendor plugin imported
    (
        "docs/plugins.md",
        "from torchx.specs.plugins import get_registry, register_builtin",
    ): "tools/tests/test_plugin_docs.py::test_the_in_process_testing_snippet_runs",
}

#: Folders (of the repository) a doc's examples import from, besides what is installed.
IMPORT_PATH = {"bench/README.md": ["bench"]}

TIMEOUT = 60.0


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # where the block's first line is in the doc (1-based)
    language: str
    code: str

    @property
    def first(self) -> str:
        return self.code.split("\n", 1)[0].strip()

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


_FENCE = re.compile(r"^```(?P<lang>python|py|pycon)[ \t]*\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)


def python_blocks(doc: str, text: str) -> list[Block]:
    return [
        Block(doc, text.count("\n", 0, m.start("code")) + 1, m.group("lang"), m.group("code"))
        for m in _FENCE.finditer(text)
    ]


def _all_blocks() -> list[Block]:
    found = []
    for doc in doc_sources():
        found += python_blocks(doc, (REPO / doc).read_text(encoding="utf-8"))
    return found


BLOCKS = _all_blocks()


def kind(block: Block) -> str:
    """``placeholder``, ``run-by``, ``shown`` or ``run`` (what this test does with it)."""
    if block.first.startswith("# placeholder"):
        return "placeholder"
    if _run_by(block) is not None:
        return "run-by"
    if _shown_path(block) is not None:
        return "shown"
    return "run"


def _run_by(block: Block) -> str | None:
    matches = [
        t for (d, start), t in RUN_BY.items() if d == block.doc and block.first.startswith(start)
    ]
    return max(matches, key=len) if matches else None


def _shown_path(block: Block) -> Path | None:
    match = re.fullmatch(r"# ([\w./-]+\.\w+)", block.first)
    if match is None:
        return None
    path = REPO / match.group(1)
    return path if path.is_file() else None


def _env(home: Path, doc: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "TORCHX_HOME": str(home / "torchx")}
    env.pop("TORCHXCONFIG", None)
    extra = [str(REPO / p) for p in IMPORT_PATH.get(doc, [])]
    env["PYTHONPATH"] = os.pathsep.join([*extra, *filter(None, [env.get("PYTHONPATH")])])
    return env


def start(block: Block, workdir: Path) -> subprocess.Popen[str]:
    """Starts ``block`` in a fresh interpreter in ``workdir`` (its HOME too)."""
    if block.language == "pycon":
        # doctest in a fresh process: what the block shows is what it must print
        argv = [sys.executable, "-c", _PYCON_RUNNER, block.code, block.where]
    else:
        argv = [sys.executable, "-c", block.code]
    return subprocess.Popen(
        argv,
        cwd=workdir,
        env=_env(workdir, block.doc),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


_PYCON_RUNNER = """
import doctest, sys
test = doctest.DocTestParser().get_doctest(sys.argv[1], {}, sys.argv[2], sys.argv[2], 0)
runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
runner.run(test)
sys.exit(1 if runner.failures or not test.examples else 0)
"""


def finish(proc: subprocess.Popen[str], block: Block) -> None:
    """Waits for ``proc``; fails with what it printed unless it exited 0 in time."""
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{block.where}: the example did not end within {TIMEOUT:.0f} s")
    if proc.returncode != 0:
        tail = "\n".join((err or out).strip().splitlines()[-15:])
        pytest.fail(
            f"{block.where}: the example exited {proc.returncode}: make it runnable, list "
            f"the test that runs it in RUN_BY, or mark it `# placeholder: <reason>` "
            f"({'; '.join(PLACEHOLDER_REASONS)})\n{tail}"
        )


@pytest.fixture(scope="module")
def started() -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Every block run here, all started at once (each in a directory of its own)."""
    with tempfile.TemporaryDirectory(prefix="doc-examples-") as tmp:
        procs = {}
        for i, block in enumerate(b for b in BLOCKS if kind(b) == "run"):
            workdir = Path(tmp) / str(i)
            workdir.mkdir()
            procs[block.where] = start(block, workdir)
        try:
            yield procs
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                proc.communicate()


def test_the_docs_show_python_examples() -> None:
    assert len(BLOCKS) >= 20
    kinds = {kind(b) for b in BLOCKS}
    assert kinds >= {"run", "run-by", "shown", "placeholder"}, kinds


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_every_block_compiles(block: Block) -> None:
    if block.language == "pycon":
        parsed = doctest.DocTestParser().get_examples(block.code)
        assert parsed, f"{block.where}: a pycon block without one `>>> ` example"
        for example in parsed:
            compile(example.source, block.where, "single")
    else:
        compile(block.code, block.where, "exec")


RUN_HERE = [b for b in BLOCKS if kind(b) == "run"]


@pytest.mark.parametrize("block", RUN_HERE, ids=[b.where for b in RUN_HERE])
def test_each_example_runs(block: Block, started: dict[str, subprocess.Popen[str]]) -> None:
    finish(started[block.where], block)


PLACEHOLDERS = [b for b in BLOCKS if kind(b) == "placeholder"]


@pytest.mark.parametrize("block", PLACEHOLDERS, ids=[b.where for b in PLACEHOLDERS])
def test_each_placeholder_says_why_with_a_known_reason(block: Block) -> None:
    match = PLACEHOLDER.fullmatch(block.first)
    assert match is not None and match.group("reason") in PLACEHOLDER_REASONS, (
        f"{block.where}: `{block.first}`: a placeholder's first line is "
        f"`# placeholder: <reason>`, the reason one of: {'; '.join(PLACEHOLDER_REASONS)}"
    )


SHOWN = [b for b in BLOCKS if kind(b) == "shown"]


@pytest.mark.parametrize("block", SHOWN, ids=[b.where for b in SHOWN])
def test_each_shown_file_is_the_file(block: Block) -> None:
    path = _shown_path(block)
    assert path is not None
    shown = block.code.split("\n", 1)[1]
    assert shown == path.read_text(encoding="utf-8"), (
        f"{block.where} shows {path.relative_to(REPO)} but differs from it: copy the file again"
    )


RUN_ELSEWHERE = [b for b in BLOCKS if kind(b) == "run-by"]


@pytest.mark.parametrize("block", RUN_ELSEWHERE, ids=[b.where for b in RUN_ELSEWHERE])
def test_each_block_run_elsewhere_is_read_from_the_doc_by_its_test(block: Block) -> None:
    test = _run_by(block)
    assert test is not None
    file_text, _ = function_source(test)
    assert block.doc in file_text or Path(block.doc).name in file_text, (
        f"{block.where}: {test} does not read {block.doc}, so the block can change unseen"
    )


def test_every_run_by_entry_is_used() -> None:
    used = {
        (d, start)
        for b in BLOCKS
        for (d, start) in RUN_BY
        if d == b.doc and b.first.startswith(start)
    }
    assert set(RUN_BY) == used, f"stale RUN_BY entries: {sorted(set(RUN_BY) - used)}"


# --- the checks catch what they are for -------------------------------------------------


def _one(text: str) -> Block:
    [block] = python_blocks("docs/example.md", text)
    return block


def test_a_broken_example_fails_with_where_and_what_to_do(tmp_path: Path) -> None:
    block = _one("```python\nfrom torchx.specs import NoSuchName\n```\n")
    assert kind(block) == "run"
    with pytest.raises(pytest.fail.Exception) as e:
        finish(start(block, tmp_path), block)
    message = str(e.value)
    assert "docs/example.md:2: the example exited 1" in message
    assert "NoSuchName" in message and "# placeholder: <reason>" in message


def test_a_pycon_block_must_print_what_it_shows(tmp_path: Path) -> None:
    good = _one("```pycon\n>>> 1 + 1\n2\n```\n")
    finish(start(good, tmp_path), good)
    bad = _one("```pycon\n>>> 1 + 1\n3\n```\n")
    with pytest.raises(pytest.fail.Exception, match="exited 1"):
        finish(start(bad, tmp_path), bad)


def test_an_example_runs_in_a_home_of_its_own(tmp_path: Path) -> None:
    block = _one(
        "```python\nimport os, pathlib\n"
        "assert pathlib.Path.cwd() == pathlib.Path(os.environ['HOME'])\n"
        "assert os.environ['TORCHX_HOME'].startswith(os.environ['HOME'])\n```\n"
    )
    finish(start(block, tmp_path), block)


def test_an_unknown_placeholder_reason_is_refused() -> None:
    block = _one("```python\n# placeholder: too lazy to run it\nx = 1\n```\n")
    assert kind(block) == "placeholder"
    with pytest.raises(AssertionError, match="the reason one of"):
        test_each_placeholder_says_why_with_a_known_reason(block)
    known = _one("```python\n# placeholder: needs a Slurm cluster (sbatch)\nx = 1\n```\n")
    test_each_placeholder_says_why_with_a_known_reason(known)


def test_a_shown_file_that_drifted_fails() -> None:
    block = _one("```python\n# noxfile.py\nprint('not the noxfile')\n```\n")
    assert kind(block) == "shown"
    with pytest.raises(AssertionError, match="copy the file again"):
        test_each_shown_file_is_the_file(block)
