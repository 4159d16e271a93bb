"""ComponentTestCase as upstream's docs use it, and the metrics/serve built-ins it runs.

The components run for real on the local scheduler; TorchServe's management API is
played by a small HTTP server here that downloads the archive it is pointed at, as
TorchServe does when a model is registered.
"""

from __future__ import annotations

import http.server
import importlib.util
import threading
import types
import unittest
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.components import metrics, serve, utils
from torchx.components.component_test_base import ComponentTestCase
from torchx.schedulers.contract.api import Stream
from torchx.specs import AppState


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def _run(case: type[unittest.TestCase], name: str) -> unittest.TestResult:
    result = unittest.TestResult()
    case(name).run(result)
    return result


def _module(tmp_path: Path, source: str) -> types.ModuleType:
    path = tmp_path / "my_components.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("my_components", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_validate_and_run_a_component_as_upstreams_docs_do() -> None:
    statuses: list[Any] = []

    class MyComponentTest(ComponentTestCase):
        def test_echo(self) -> None:
            self.validate(utils, "echo")
            statuses.append(self.run_component(utils.echo, {"msg": "hi"}, scheduler="local_cwd"))
            statuses.append(self.run_component(utils.sh, ["sh", "-c", "exit 3"]))

    result = _run(MyComponentTest, "test_echo")
    assert result.errors == [] and result.failures == [] and result.testsRun == 1
    assert [s.state for s in statuses] == [AppState.SUCCEEDED, AppState.FAILED]


def test_validate_fails_the_test_naming_each_problem(tmp_path: Path) -> None:
    module = _module(
        tmp_path,
        "def bad(n: object) -> dict:\n    return {}\n",
    )

    class BadComponentTest(ComponentTestCase):
        def test_bad(self) -> None:
            self.validate(module, "bad")

    result = _run(BadComponentTest, "test_bad")
    assert len(result.failures) == 1
    message = result.failures[0][1]
    assert "my_components.py:bad is not a valid component" in message
    assert "argument `n` of `bad` has type `object`" in message
    assert "`bad` returns `dict`" in message


def test_a_component_without_docstring_validates(tmp_path: Path) -> None:
    module = _module(
        tmp_path,
        "from torchx.specs import AppDef, Role\n"
        "def bare(msg: str = 'x') -> AppDef:\n"
        "    return AppDef('bare', [Role('r', image='.', entrypoint='echo', args=[msg])])\n",
    )

    class BareTest(ComponentTestCase):
        def test_bare(self) -> None:
            self.validate(module, "bare")

    assert _run(BareTest, "test_bare").wasSuccessful()


def test_tensorboard_without_the_package_fails_naming_it(tmp_path: Path) -> None:
    from torchx.runner import get_runner

    assert importlib.util.find_spec("tensorboard") is None  # not a dependency of torchx-runner
    with get_runner("compat") as runner:
        handle = runner.run(metrics.tensorboard(logdir=str(tmp_path)), "local")
        status = runner.wait(handle, wait_interval=0.1)
        assert status is not None and status.state == AppState.FAILED
        lines = "\n".join(runner.log_lines(handle, "tensorboard", 0, streams=Stream.COMBINED))
    assert "the tensorboard package is not installed" in lines
    assert "pip install tensorboard" in lines


class _FakeTorchServe(http.server.BaseHTTPRequestHandler):
    """TorchServe's ``POST /models?url=...``: downloads the archive, answers with its size."""

    downloaded: list[bytes] = []
    queries: list[dict[str, list[str]]] = []

    def do_POST(self) -> None:
        parsed = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(parsed.query)
        type(self).queries.append(query)
        url = query["url"][0].replace(
            urllib.parse.urlparse(query["url"][0]).hostname or "", "127.0.0.1", 1
        )
        with urllib.request.urlopen(url) as resp:
            body = resp.read()
        type(self).downloaded.append(body)
        answer = f'{{"status": "Model registered, {len(body)} bytes"}}'.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def torchserve_api() -> Iterator[str]:
    _FakeTorchServe.downloaded = []
    _FakeTorchServe.queries = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeTorchServe)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def test_torchserve_registers_the_archive(tmp_path: Path, torchserve_api: str) -> None:
    from torchx.runner import get_runner

    archive = tmp_path / "resnet.mar"
    archive.write_bytes(b"model bytes \x00\x01")
    app = serve.torchserve(
        model_path=str(archive),
        management_api=torchserve_api,
        params={"initial_workers": "2"},
        port=_free_port(),
    )
    with get_runner("compat") as runner:
        handle = runner.run(app, "local")
        status = runner.wait(handle, wait_interval=0.1)
        out = "\n".join(runner.log_lines(handle, app.roles[0].name, 0, streams=Stream.COMBINED))
    assert status is not None and status.state == AppState.SUCCEEDED, out
    assert _FakeTorchServe.downloaded == [b"model bytes \x00\x01"]
    query = _FakeTorchServe.queries[0]
    assert query["initial_workers"] == ["2"] and query["url"][0].endswith("/resnet.mar")
    assert "Model registered, 14 bytes" in out


def test_torchserve_dryrun_and_a_url_without_fsspec(tmp_path: Path, torchserve_api: str) -> None:
    from torchx.components._torchserve_app import main

    archive = tmp_path / "m.mar"
    archive.write_bytes(b"x")
    assert (
        main(
            [
                "--model_path",
                str(archive),
                "--management_api",
                torchserve_api,
                "--port",
                "0",
                "--dryrun",
            ]
        )
        == 0
    )
    assert _FakeTorchServe.queries == []  # nothing sent
    assert importlib.util.find_spec("fsspec") is None  # not a dependency of torchx-runner
    with pytest.raises(SystemExit, match=r"needs the fsspec package .*pip install fsspec"):
        main(["--model_path", "s3://bucket/m.mar", "--management_api", torchserve_api])


def test_the_apps_are_python_modules_of_torchx_runner() -> None:
    for app in (metrics.tensorboard(logdir="/l"), serve.torchserve("/m.mar", "http://t:8081")):
        module = app.roles[0].args[1]
        assert importlib.util.find_spec(module) is not None, module


def test_torchserve_has_upstreams_app_and_role_names() -> None:
    # handles (torchx://.../torchx-torchserve-...) and `torchx log HANDLE/worker/0` as upstream's
    app = serve.torchserve("/m.mar", "http://t:8081")
    assert (app.name, [r.name for r in app.roles]) == ("torchx-torchserve", ["worker"])


def test_scheduler_params_go_to_the_scheduler_factory_and_cfg_to_the_run(tmp_path: Path) -> None:
    found: list[Any] = []

    class MyComponentTest(ComponentTestCase):
        def test_echo(self) -> None:
            # upstream's: get_runner(**scheduler_params); the local scheduler's state_dir
            status = self.run_component(
                utils.echo,
                {"msg": "hi"},
                scheduler_params={"state_dir": str(tmp_path / "state")},
                cfg={"log_dir": str(tmp_path / "logs")},
            )
            found.append(status)

    result = _run(MyComponentTest, "test_echo")
    assert result.errors == [] and result.failures == [], result.errors
    assert found[0].state == AppState.SUCCEEDED
    assert (tmp_path / "state" / "apps").is_dir()  # the factory's state_dir
    assert any((tmp_path / "logs").iterdir())  # the run option log_dir


def test_a_component_past_its_timeout_is_cancelled_and_fails_the_test(tmp_path: Path) -> None:
    statuses: list[Any] = []

    class SlowComponentTest(ComponentTestCase):
        def test_slow(self) -> None:
            params = {"state_dir": str(tmp_path)}
            try:
                self.run_component(utils.sh, ["sleep", "60"], params, timeout=0.5)
            finally:
                from torchx.runner import get_runner

                with get_runner("torchx-test", state_dir=str(tmp_path)) as runner:
                    for app in runner.list("local"):  # the cancel takes effect
                        status = runner.wait(app.app_handle, wait_interval=0.1, timeout=30)
                        statuses.append(status.state if status else None)

    result = _run(SlowComponentTest, "test_slow")
    assert len(result.errors) == 1 and "AppWaitTimeout" in result.errors[0][1]
    assert statuses == [AppState.CANCELLED]
