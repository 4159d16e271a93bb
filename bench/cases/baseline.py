"""Baselines: what any Python process costs here, so other timings can be read against it.

They have no target (verdict ``info``). ``python.startup`` is the floor under every
whole-process case; ``python.import_attrs`` is the floor under ``import torchx.specs``,
whose only import-time dependency is attrs.
"""

from __future__ import annotations

from harness import Context, Measurement, case, process_times


@case("python.startup")
def python_startup(ctx: Context) -> Measurement:
    """python -c pass in our venv (interpreter start-up floor), whole process."""
    times = process_times(ctx, {"ours": [ctx.python, "-c", "pass"]})
    return Measurement.from_times(times["ours"])


@case("python.import_attrs")
def python_import_attrs(ctx: Context) -> Measurement:
    """python -c "import attrs" in our venv (floor for import torchx.specs), whole process."""
    times = process_times(ctx, {"ours": [ctx.python, "-c", "import attrs"]})
    return Measurement.from_times(times["ours"])
