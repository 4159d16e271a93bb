"""ComponentTestCase: test your own components the way ``torchx run`` will use them.

A component is plain Python, so it can be unit tested like any function; this
:class:`unittest.TestCase` adds the two checks worth having in every project that
writes components (upstream TorchX's documented way):

* :meth:`ComponentTestCase.validate` lints the component's source as the runner
  sees it (:func:`torchx.specs.file_linter.validate`: supported parameter types,
  ``-> AppDef``) and loads it the way ``torchx run path/to/file.py:fn`` does;
* :meth:`ComponentTestCase.run_component` runs it on a scheduler (the local one by
  default) and returns the final status.

Works under ``python -m unittest`` and pytest alike (pytest is not required:
``pip install torchx-runner[testing]`` adds it for a project that tests with it)::

    from torchx.components.component_test_base import ComponentTestCase
    from my_project import components

    class MyComponentTest(ComponentTestCase):
        def test_trainer(self) -> None:
            self.validate(components, "trainer")
            status = self.run_component(components.trainer, {"epochs": 1})
            self.assertEqual(status.state, AppState.SUCCEEDED)
"""

from __future__ import annotations

import inspect
import unittest
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from torchx.specs import AppDef, AppStatus, CfgVal

__all__ = ["ComponentTestCase"]


class ComponentTestCase(unittest.TestCase):
    """A :class:`unittest.TestCase` with helpers to validate and run components."""

    def validate(self, module: ModuleType, function_name: str) -> None:
        """Fails the test if ``module.function_name`` is not a component ``torchx run`` accepts.

        Lints the function's source (without running it), then loads it as
        ``torchx run`` does from ``path/to/module.py:function_name``. Each finding
        is one line of the failure message.
        """
        from torchx.components.finder import get_component
        from torchx.specs.file_linter import validate

        path = inspect.getfile(module)
        messages = validate(path, function_name)
        if messages:
            self.fail(
                f"{path}:{function_name} is not a valid component:\n"
                + "\n".join(f"  line {m.line}: {m.description}" for m in messages)
            )
        component = get_component(f"{path}:{function_name}")
        self.assertTrue(callable(component.fn), f"{path}:{function_name} did not load")

    def run_component(
        self,
        component: Callable[..., AppDef],
        args: Mapping[str, Any] | Sequence[str] | None = None,
        scheduler_params: Mapping[str, Any] | None = None,
        scheduler: str = "local",
        interval: float = 0.1,
        timeout: float = 1200.0,
        cfg: Mapping[str, CfgVal] | None = None,
    ) -> AppStatus | None:
        """Runs ``component`` on ``scheduler`` and waits for the app to end.

        Args:
            component: the component function.
            args: its arguments, as keyword arguments (a mapping) or as the command
                line ``torchx run`` would get (a list of strings, parsed by the
                component's signature).
            scheduler_params: keyword arguments of the schedulers' factories
                (``get_runner(**scheduler_params)``, as upstream's), such as the local
                scheduler's ``state_dir``.
            scheduler: the scheduler's name (default ``"local"``; upstream's
                ``"local_cwd"`` is the same scheduler).
            interval: seconds between status polls.
            timeout: seconds to wait for the app to end: past them it is cancelled and
                :class:`~torchx.runner.api.AppWaitTimeout` (a ``TimeoutError``) raised,
                so a hung component fails its test instead of hanging it. (Upstream
                0.7.0 defaults to 1 s and polls until the app ends however long, the
                1 s being only the least time it polls.) A SIGTERM or
                SIGINT while waiting (a test run stopped) cancels it too, raising
                :class:`~torchx.schedulers.local.classic.SignalException`.
            cfg: the scheduler's run options (``-cfg``).

        Returns:
            The app's final status (None if the scheduler no longer knows it).
        """
        from torchx.runner import get_runner
        from torchx.runner.api import AppWaitTimeout
        from torchx.schedulers.local.classic import SignalException, termination_raises
        from torchx.specs.builders import materialize_appdef

        if args is None:
            app = component()
        elif isinstance(args, Mapping):
            app = component(**args)
        else:
            app = materialize_appdef(component, list(args))
        with get_runner("torchx-test", **dict(scheduler_params or {})) as runner:
            handle = runner.run(app, scheduler, dict(cfg or {}))
            try:
                with termination_raises():  # a test run killed (SIGTERM) cancels the app
                    return runner.wait(handle, wait_interval=interval, timeout=timeout)
            except (AppWaitTimeout, SignalException):
                runner.cancel(handle)  # not left running after the test
                raise
