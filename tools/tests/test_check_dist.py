"""tools/check_dist.py: a real build of torchx-specs passes; doctored artifacts fail, one line each."""

from __future__ import annotations

import importlib.util
import io
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import check_dist
import pytest
from _layout import distributions
from conftest import REPO, copy_tree, make_dist

SPECS = "torchx-specs"


def build(folder: Path, out: Path) -> Path:
    """sdist, then the wheel from it, as ``nox -s build`` does."""
    if shutil.which("uv"):
        cmd = ["uv", "build", "-q", "--out-dir", str(out), str(folder)]
    else:
        cmd = [sys.executable, "-m", "build", "--outdir", str(out), str(folder)]
    subprocess.run(cmd, check=True)
    return out


@pytest.fixture(scope="session")
def specs_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(REPO / "packages" / SPECS, tmp_path_factory.mktemp("dist") / SPECS)


@pytest.fixture
def artifacts(specs_build: Path, tmp_path: Path) -> Path:
    """A private copy of the torchx-specs sdist and wheel, to doctor."""
    out = tmp_path / SPECS
    out.mkdir()
    for path in specs_build.iterdir():
        if path.name.endswith((".whl", ".tar.gz")):
            shutil.copy(path, out)
    return out


def _wheel(folder: Path) -> Path:
    (wheel,) = folder.glob("*.whl")
    return wheel


def _sdist(folder: Path) -> Path:
    (sdist,) = folder.glob("*.tar.gz")
    return sdist


def rewrite_wheel(
    folder: Path, add: dict[str, str] | None = None, drop: set[str] = frozenset()
) -> None:
    wheel = _wheel(folder)
    with zipfile.ZipFile(wheel) as zf:
        members = [(info, zf.read(info)) for info in zf.infolist() if info.filename not in drop]
    with zipfile.ZipFile(wheel, "w") as zf:
        for info, data in members:
            zf.writestr(info, data)
        for name, text in (add or {}).items():
            zf.writestr(name, text)


def rewrite_sdist(folder: Path, add: dict[str, str]) -> None:
    sdist = _sdist(folder)
    with tarfile.open(sdist) as tf:
        members = [(m, tf.extractfile(m).read() if m.isfile() else None) for m in tf.getmembers()]
    top = members[0][0].name.split("/")[0]
    with tarfile.open(sdist, "w:gz") as tf:
        for member, data in members:
            tf.addfile(member, io.BytesIO(data) if data is not None else None)
        for name, text in add.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))


def test_real_build_passes(specs_build: Path) -> None:
    twine = importlib.util.find_spec("twine") is not None
    assert check_dist.check(SPECS, specs_build, REPO, twine=twine) == []
    assert check_dist.main([SPECS, str(specs_build)]) == 0


def test_wheel_with_namespace_init_fails(
    artifacts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite_wheel(artifacts, add={"torchx/__init__.py": ""})
    wheel = _wheel(artifacts).name
    assert check_dist.check(SPECS, artifacts, REPO) == [
        f"torchx-specs: {wheel}: ships torchx/__init__.py, but torchx is a PEP 420 namespace "
        "shared by every distribution: delete src/torchx/__init__.py"
    ]
    assert check_dist.main([SPECS, str(artifacts)]) == 1
    assert capsys.readouterr().out.count("\n") == 1  # one line per problem


def test_sdist_with_namespace_init_fails(artifacts: Path) -> None:
    rewrite_sdist(artifacts, add={"src/torchx/__init__.py": ""})
    (problem,) = check_dist.check(SPECS, artifacts, REPO)
    assert problem.startswith(
        f"torchx-specs: {_sdist(artifacts).name}: ships src/torchx/__init__.py,"
    )


def test_wheel_without_py_typed_fails(artifacts: Path) -> None:
    rewrite_wheel(artifacts, drop={"torchx/specs/py.typed"})
    (problem,) = check_dist.check(SPECS, artifacts, REPO)
    assert problem.endswith(
        "torchx/specs/py.typed is missing: add an empty src/torchx/specs/py.typed"
    )


def test_tests_and_stray_packages_in_wheel_fail(artifacts: Path) -> None:
    rewrite_wheel(
        artifacts,
        add={
            "tests/test_api.py": "",
            "torchx/runner/api.py": "",
            "torchx/specs/tests/test_x.py": "",
            "conftest.py": "",
        },
    )
    problems = check_dist.check(SPECS, artifacts, REPO)
    shipped = [p.split(": ships ")[1].split(",")[0] for p in problems]
    assert shipped == ["conftest.py", "tests/", "torchx/runner/", "torchx/specs/tests/"], problems


def test_version_must_match_version_file(specs_build: Path, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    copy_tree(REPO / "packages" / SPECS, root / "packages" / SPECS)
    version_file = root / "packages" / SPECS / "src" / "torchx" / "specs" / "_version.py"
    version_file.write_text('__version__ = "0.1.1"\n')
    problems = check_dist.check(SPECS, specs_build, root)
    assert any("Version is 0.1.0 but _version.py says 0.1.1" in p for p in problems), problems
    assert any("file name does not start with 'torchx_specs-0.1.1" in p for p in problems), problems


def test_missing_license_metadata_fails(artifacts: Path) -> None:
    wheel = _wheel(artifacts)
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        text = zf.read(meta).decode()
    text = "".join(line for line in text.splitlines(True) if not line.startswith("License"))
    rewrite_wheel(artifacts, drop={meta}, add={meta: text})
    problems = check_dist.check(SPECS, artifacts, REPO)
    assert any("no License-Expression" in p for p in problems), problems
    assert any("no License-File" in p for p in problems), problems


def _metadata_problems(root: Path, requires: list[str]) -> list[str]:
    from _layout import distributions

    dists = distributions(root)
    text = (
        "Metadata-Version: 2.4\nName: torchx-runner\nVersion: 0.1.0\nSummary: s\n"
        "License-Expression: BSD-3-Clause\nLicense-File: LICENSE\n"
        "Description-Content-Type: text/markdown\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
        + "\n# runner\n"
    )

    class FakeArtifact:
        names = ["x/LICENSE"]

    return check_dist.check_metadata(dists["torchx-runner"], FakeArtifact(), text, dists, "x/")  # type: ignore[arg-type]


def test_sibling_dependencies_need_a_compatible_range(fake_repo: Path) -> None:
    assert _metadata_problems(fake_repo, ["torchx-specs>=0.1,<0.2", "attrs"]) == []
    assert _metadata_problems(fake_repo, ["torchx-specs~=0.1.0"]) == []
    (pinned,) = _metadata_problems(fake_repo, ["torchx-specs==0.1.0"])
    assert "compatible range such as torchx-specs>=0.1,<0.2" in pinned
    (open_ended,) = _metadata_problems(fake_repo, ["torchx-specs>=0.1"])
    assert "needs a lower and an upper bound" in open_ended
    (excluded,) = _metadata_problems(fake_repo, ["torchx-specs>=0.2,<0.3"])
    assert "excludes torchx-specs 0.1.0, the version in this repository" in excluded


def test_unknown_distribution_and_missing_artifacts(tmp_path: Path) -> None:
    (unknown,) = check_dist.check("torchx-spec", tmp_path, REPO)
    assert unknown.startswith("torchx-spec: unknown distribution; expected one of ")
    assert check_dist.check(SPECS, tmp_path, REPO) == [
        f"torchx-specs: expected one wheel in {tmp_path}, found none",
        f"torchx-specs: expected one sdist in {tmp_path}, found none",
    ]


def test_plugin_layout_is_checked_by_its_own_packages(tmp_path: Path) -> None:
    """A regular top-level package (torchx_slurm) needs py.typed and may ship nothing else."""
    root = tmp_path / "repo"
    make_dist(root, "torchx-slurm", ["torchx_slurm"], group="plugins")
    folder = root / "plugins" / "torchx-slurm"
    (folder / "README.md").write_text("# torchx-slurm\n")
    (folder / "LICENSE").write_text("BSD\n")
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(
        '[build-system]\nrequires = ["hatchling>=1.21"]\nbuild-backend = "hatchling.build"\n\n'
        + pyproject.read_text().replace(
            'dynamic = ["version"]',
            'dynamic = ["version"]\ndescription = "d"\nreadme = "README.md"\nlicense = "BSD-3-Clause"',
        )
    )
    out = build(folder, tmp_path / "out")
    assert check_dist.check("torchx-slurm", out, root) == []
    rewrite_wheel(out, drop={"torchx_slurm/py.typed"}, add={"torchx/__init__.py": ""})
    problems = check_dist.check("torchx-slurm", out, root)
    assert [p.split(": ", 2)[2] for p in problems] == [
        "ships torchx/, which is not a package this distribution owns (torchx_slurm); "
        "exclude it from the wheel",
        "torchx_slurm/py.typed is missing: add an empty src/torchx_slurm/py.typed",
    ]


def test_twine_rejects_a_description_that_does_not_render(artifacts: Path) -> None:
    wheel = _wheel(artifacts)
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        headers = zf.read(meta).decode().split("\n\n", 1)[0]
    headers = headers.replace("text/markdown", "text/x-rst")
    rewrite_wheel(artifacts, drop={meta}, add={meta: headers + "\n\nTitle\n=====\n\n.. nope::\n"})
    (problem,) = check_dist.check(SPECS, artifacts, REPO, twine=True)
    assert problem.startswith(f"torchx-specs: {wheel.name}: twine check: ERROR `long_description`")
    assert "nope" in problem and "\n" not in problem


def test_a_testing_folder_ships_only_where_the_source_has_that_package(artifacts: Path) -> None:
    """The kit (``torchx.schedulers.testing``) is public; a ``testing/`` elsewhere is a stray."""
    rewrite_wheel(artifacts, add={"torchx/specs/testing/x.py": ""})
    problems = check_dist.check(SPECS, artifacts, REPO)
    assert [p.split(": ships ")[1].split(",")[0] for p in problems] == ["torchx/specs/testing/"]
    runner = distributions(REPO)["torchx-runner"]
    assert check_dist._is_public_testing(runner, ("torchx", "schedulers", "testing"))
    assert not check_dist._is_public_testing(runner, ("torchx", "runner", "testing"))
