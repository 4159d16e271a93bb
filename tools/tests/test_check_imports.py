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
        "from torchx.specs import AppDef\nimport torchx.schedulers.contract.api\n",
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
    assert check_imports.private_part("torchx.cli._quick.run") == "_quick"
    assert check_imports.private_part("torchx.specs.__version__") is None
    assert check_imports.private_part("_top.public") is None  # the top package is not judged


# --- private attributes of a sibling ------------------------------------------------------

_DRYRUN_INFO = """
    class AppDryRunInfo:
        def __init__(self, request):
            self.request = request
            self._fmt = str
            self._scheduler = None

        @property
        def scheduler(self):
            return self._scheduler
    """


def _attr_problem(path: str, line: int, verb: str, name: str, owner: str, dist: str) -> str:
    return (
        f"{path}:{line}: {verb} .{name}, private to {owner} (defined there, not in {dist}); "
        "use the public API, or make what is needed public there"
    )


def test_a_siblings_private_attribute_is_rejected(fake_repo: Path) -> None:
    write(_src(fake_repo, "packages", "torchx-specs", "torchx.specs") / "api.py", _DRYRUN_INFO)
    write(
        _src(fake_repo, "packages", "torchx-runner", "torchx.runner") / "api.py",
        """
        class Runner:
            def __init__(self):
                self._apps = {}  # its own private attribute: fine

            def _scheduler(self, name):  # a method that shares the field's name
                return name

            def dryrun(self, info, name):
                info._scheduler = name  # writes torchx-specs' field
                _fmt = repr  # a local variable defines no attribute
                print(info._fmt(info.request), self._apps, self._scheduler(name))
                return info.scheduler
        """,
    )
    path = "packages/torchx-runner/src/torchx/runner/api.py"
    assert check_imports.check(fake_repo) == [
        _attr_problem(path, 9, "writes", "_scheduler", "torchx-specs", "torchx-runner"),
        _attr_problem(path, 11, "uses", "_fmt", "torchx-specs", "torchx-runner"),
    ]


def test_only_siblings_it_depends_on_and_no_public_underscore_names_are_judged(
    fake_repo: Path,
) -> None:
    write(
        _src(fake_repo, "packages", "torchx-runner", "torchx.runner") / "api.py",
        """
        import collections
        import enum
        import os

        class Color(enum.Enum):
            RED = 1

        def _exit(): ...  # names the standard library's public ones use: never judged
        def _replace(): ...
        _only_the_runner_has_this = 1

        Point = collections.namedtuple("Point", "x y")
        print(Point(1, 2)._replace(x=3), Color.RED._value_, os._exit)
        """,
    )
    write(
        _src(fake_repo, "packages", "torchx-specs", "torchx.specs") / "api.py",
        """
        def describe(obj):
            # torchx-specs does not depend on torchx-runner: obj is none of its objects
            return obj._only_the_runner_has_this
        """,
    )
    write(
        _src(fake_repo, "packages", "torchx-cli", "torchx.cli") / "main.py",
        """
        def main(obj):
            return obj._no_distribution_defines_this, obj.__dict__, obj.__mangled
        """,
    )
    assert check_imports.check(fake_repo) == []


def test_a_plugin_and_the_examples_are_checked_too(fake_repo: Path) -> None:
    write(_src(fake_repo, "packages", "torchx-specs", "torchx.specs") / "api.py", _DRYRUN_INFO)
    write(
        _src(fake_repo, "plugins", "torchx-aws", "torchx_aws") / "batch.py",
        """
        def schedule(info):
            return info._scheduler  # no _scheduler of its own: a read is caught too
        """,
    )
    make_dist(
        fake_repo,
        "acme-torchx",
        ["acme_torchx"],
        ["torchx-runner>=0.1,<0.2"],
        group="examples",
    )
    write(
        fake_repo / "examples" / "acme-torchx" / "tests" / "test_acme.py",
        """
        from torchx.cli import main  # not declared by the example distribution

        def test_it(info):
            info._scheduler = "acme"
        """,
    )
    write(
        fake_repo / "examples" / "ddp" / "train.py",
        """
        import torchx.cli  # a user's script may use any distribution
        from torchx.specs._version import __version__

        def main(info):
            return info._fmt, torchx.cli
        """,
    )
    problems = check_imports.check(fake_repo)
    assert problems == [
        _attr_problem(
            "plugins/torchx-aws/src/torchx_aws/batch.py",
            2,
            "uses",
            "_scheduler",
            "torchx-specs",
            "torchx-aws",
        ),
        "examples/acme-torchx/tests/test_acme.py:1: imports torchx.cli (owned by "
        "torchx-cli), which acme-torchx does not declare as a dependency; add "
        '"torchx-cli" to its pyproject dependencies or drop the import',
        _attr_problem(
            "examples/acme-torchx/tests/test_acme.py",
            4,
            "writes",
            "_scheduler",
            "torchx-specs",
            "acme-torchx",
        ),
        "examples/ddp/train.py:2: imports torchx.specs._version, private to torchx-specs "
        "('_version' starts with '_'); use torchx-specs's public API, or make what is "
        "needed public there",
        _attr_problem(
            "examples/ddp/train.py", 5, "uses", "_fmt", "torchx-specs", "examples/ddp/train.py"
        ),
    ]
    assert check_imports.main(["--root", str(fake_repo)]) == 1
