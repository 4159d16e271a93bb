"""tools/check_imports.py: undeclared sibling imports and plugin SDK imports are caught."""

from __future__ import annotations

from pathlib import Path

import check_imports
from conftest import REPO, make_dist, write


def _src(root: Path, group: str, dist: str, package: str) -> Path:
    return root / group / dist / "src" / package.replace(".", "/")


def test_real_repository_passes() -> None:
    assert check_imports.check(REPO) == []


def test_fake_repository_passes_as_built(fake_repo: Path) -> None:
    assert check_imports.check(fake_repo) == []


def test_undeclared_sibling_import_inside_a_function_fails(fake_repo: Path) -> None:
    write(
        _src(fake_repo, "packages", "torchx-specs", "torchx.specs") / "api.py",
        """
        from __future__ import annotations

        import attrs


        def lazy():
            from torchx.runner.api import Runner  # specs must never import the runner

            return Runner
        """,
    )
    problems = check_imports.check(fake_repo)
    assert problems == [
        "packages/torchx-specs/src/torchx/specs/api.py:7: imports torchx.runner.api (owned by "
        "torchx-runner), which torchx-specs does not declare as a dependency; add "
        '"torchx-runner" to its pyproject dependencies or drop the import'
    ]
    assert check_imports.main(["--root", str(fake_repo)]) == 1


def test_from_namespace_import_and_import_module_are_seen(fake_repo: Path) -> None:
    runner = _src(fake_repo, "packages", "torchx-runner", "torchx.runner")
    write(
        runner / "mod.py",
        """
        import importlib

        from torchx import cli
        from torchx import specs  # declared: fine
        from . import _version  # relative: fine

        importlib.import_module("torchx_slurm.scheduler")
        importlib.import_module("torchx_k8s.scheduler")
        """,
    )
    problems = check_imports.check(fake_repo)
    assert len(problems) == 2, problems
    assert problems[0].startswith(
        "packages/torchx-runner/src/torchx/runner/mod.py:3: imports torchx.cli "
    )
    assert problems[1].startswith(
        "packages/torchx-runner/src/torchx/runner/mod.py:8: imports torchx_k8s.scheduler (owned by torchx-k8s)"
    )  # torchx_slurm is not in this tree: nobody owns it, so it is not a sibling


def test_transitive_and_extra_siblings_are_allowed(fake_repo: Path) -> None:
    write(
        _src(fake_repo, "packages", "torchx-cli", "torchx.cli") / "main.py",
        "from torchx.specs import AppDef\nimport torchx.schedulers.api\n",
    )
    write(
        _src(fake_repo, "plugins", "torchx-k8s", "torchx_k8s") / "build.py",
        "def image():\n    from torchx_docker.image import build\n    import kubernetes\n",
    )
    assert check_imports.check(fake_repo) == []


def test_plugin_importing_an_undeclared_plugin_fails(fake_repo: Path) -> None:
    write(_src(fake_repo, "plugins", "torchx-aws", "torchx_aws") / "x.py", "import torchx_docker\n")
    (problem,) = check_imports.check(fake_repo)
    assert "torchx_aws/x.py:1: imports torchx_docker (owned by torchx-docker)" in problem


def test_sdk_imports_only_in_their_plugin(fake_repo: Path) -> None:
    write(
        _src(fake_repo, "packages", "torchx-runner", "torchx.schedulers") / "cloud.py",
        "import boto3\n\ndef f():\n    from kubernetes import client\n",
    )
    write(
        _src(fake_repo, "plugins", "torchx-k8s", "torchx_k8s") / "img.py", "import docker.errors\n"
    )
    write(
        _src(fake_repo, "plugins", "torchx-aws", "torchx_aws") / "batch.py",
        "import boto3, botocore\n",
    )
    problems = check_imports.check(fake_repo)
    assert problems == [
        "packages/torchx-runner/src/torchx/schedulers/cloud.py:1: imports boto3, which only "
        "torchx-aws may import (the SDK of that plugin); use torchx-aws's public API instead",
        "packages/torchx-runner/src/torchx/schedulers/cloud.py:4: imports kubernetes, which only "
        "torchx-k8s may import (the SDK of that plugin); use torchx-k8s's public API instead",
        "plugins/torchx-k8s/src/torchx_k8s/img.py:1: imports docker, which only "
        "torchx-docker may import (the SDK of that plugin); use torchx-docker's public API instead",
    ]


def test_tests_folder_is_checked_too(fake_repo: Path) -> None:
    write(fake_repo / "packages" / "torchx-specs" / "tests" / "test_x.py", "import torchx.cli\n")
    (problem,) = check_imports.check(fake_repo)
    assert problem.startswith("packages/torchx-specs/tests/test_x.py:1: imports torchx.cli ")


def test_a_package_shipped_by_two_distributions_is_reported(fake_repo: Path) -> None:
    make_dist(fake_repo, "torchx-extra", ["torchx.specs"])
    (problem,) = check_imports.check(fake_repo)
    assert problem == (
        "torchx.specs is shipped by both torchx-extra and torchx-specs; "
        "every package belongs to exactly one distribution"
    )


def test_ownership_is_derived_from_src(fake_repo: Path) -> None:
    from _layout import distributions, owners

    assert owners(distributions(fake_repo)) == {
        "torchx.specs": "torchx-specs",
        "torchx.components": "torchx-runner",
        "torchx.runner": "torchx-runner",
        "torchx.schedulers": "torchx-runner",
        "torchx.workspace": "torchx-runner",
        "torchx.cli": "torchx-cli",
        "torchx_aws": "torchx-aws",
        "torchx_docker": "torchx-docker",
        "torchx_k8s": "torchx-k8s",
    }


def test_a_siblings_private_module_or_name_is_rejected(fake_repo: Path) -> None:
    runner = _src(fake_repo, "packages", "torchx-runner", "torchx.runner")
    write(
        runner / "uses_private.py",
        """
        from torchx.specs import __version__  # a dunder is public: fine
        from torchx.runner import _version  # its own private module: fine


        def lazy():
            from torchx.specs._version import __version__ as v  # private module of torchx-specs
            from torchx.specs.api import _hidden  # private name of torchx-specs

            return v, _hidden
        """,
    )
    problems = check_imports.check(fake_repo)
    assert problems == [
        "packages/torchx-runner/src/torchx/runner/uses_private.py:6: imports "
        "torchx.specs._version, private to torchx-specs ('_version' starts with '_'); use "
        "torchx-specs's public API, or make what is needed public there",
        "packages/torchx-runner/src/torchx/runner/uses_private.py:7: imports "
        "torchx.specs.api._hidden, private to torchx-specs ('_hidden' starts with '_'); use "
        "torchx-specs's public API, or make what is needed public there",
    ]
    assert check_imports.main(["--root", str(fake_repo)]) == 1


def test_private_part() -> None:
    assert check_imports.private_part("torchx.schedulers._local.state") == "_local"
    assert check_imports.private_part("torchx.specs.__version__") is None
    assert check_imports.private_part("_top.public") is None  # the top package is not judged
