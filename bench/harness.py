"""The benchmark harness: a registry of named cases, timing helpers and reporting.

A *case* is a plain function registered with :func:`case`. It receives a
:class:`Context` (which interpreters to measure, how many repetitions) and returns a
:class:`Measurement`; the harness turns it into a result row with a verdict against the
case's target::

    from harness import Context, Measurement, case, process_times

    @case("specs.import", target="<= 0.5x upstream", upstream=True)
    def import_specs(ctx: Context) -> Measurement:
        '''python -c "import torchx.specs", whole process, ours vs upstream.'''
        times = process_times(ctx, {"ours": [...], "upstream": [...]})
        return Measurement.from_times(times["ours"], upstream=times["upstream"])

Cases never import the code they measure into the harness process: they run it in a
fresh interpreter of the right virtual environment (:func:`run_snippet`,
:func:`process_times`). That keeps one measurement from warming up the next, and lets
the harness compare our distributions with upstream TorchX, which lives in another venv.

Targets are short strings, so the README and the code say the same thing:

* ``"< 20 ms"``, ``"<= 15 ms"``, ``"== 0 modules"``: the case's value against a bound;
* ``"<= 0.5x upstream"``: the ratio of our value to upstream's value.

A case with no target is informational (a baseline): its verdict is ``info``. A case
raises :class:`Skip` when what it measures does not exist yet (``skipped: not
implemented``) or when upstream is unavailable; any other exception is an ``error``.

A case may be *run* several times (``run.py --runs N``, or several results files given
to ``run.py --report``): one run is one call of the case function (:func:`run_case`),
and the case's verdict is :func:`combine_runs` of all its recorded runs: the median of
the runs' values (of their ratios for an ``x upstream`` target) against the target,
stated with the runs' min-max spread. No single run, first or last, decides a verdict.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FORMAT_VERSION = 2


class Skip(Exception):
    """Raised by a case when it cannot measure anything yet; the reason is reported."""


# --------------------------------------------------------------------------- targets

_TARGET_RE = re.compile(
    r"^\s*(?P<op><=|>=|==|<|>)\s*(?P<bound>[0-9]*\.?[0-9]+)\s*(?P<unit>x\s+upstream|\S+)?\s*$"
)
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
}


@dataclass(frozen=True)
class Target:
    """A parsed target such as ``< 20 ms`` or ``<= 0.5x upstream``."""

    text: str
    op: str
    bound: float
    unit: str

    @property
    def relative(self) -> bool:
        """True when the bound applies to the ratio ours/upstream."""
        return self.unit == "x upstream"

    def met(self, value: float, ratio: float | None) -> bool:
        if self.relative:
            if ratio is None:
                raise Skip("upstream value missing")
            return _OPS[self.op](ratio, self.bound)
        return _OPS[self.op](value, self.bound)


def parse_target(text: str) -> Target:
    match = _TARGET_RE.match(text)
    if not match:
        raise ValueError(
            f"bad benchmark target {text!r}: expected e.g. '< 20 ms' or '<= 0.5x upstream'"
        )
    unit = re.sub(r"\s+", " ", match["unit"] or "")
    return Target(text=text.strip(), op=match["op"], bound=float(match["bound"]), unit=unit)


# ---------------------------------------------------------------------- measurements


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """min, median, mean, max and count of ``samples``."""
    return {
        "min": min(samples),
        "median": statistics.median(samples),
        "mean": statistics.fmean(samples),
        "max": max(samples),
        "n": len(samples),
    }


@dataclass
class Measurement:
    """What a case returns: its value (compared with the target) and supporting data.

    ``value`` and ``upstream`` are in ``unit``. ``stats``/``upstream_stats`` hold the
    sample summary (min, median, ...) when the value came from repeated timings;
    ``details`` is any JSON-safe extra the case wants on record.
    """

    value: float
    unit: str = "ms"
    upstream: float | None = None
    stats: dict[str, float] | None = None
    upstream_stats: dict[str, float] | None = None
    statistic: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_times(
        cls,
        samples: Sequence[float],
        upstream: Sequence[float] | None = None,
        statistic: str = "median",
        **details: Any,
    ) -> Measurement:
        """Build from millisecond samples; the value is the chosen statistic."""
        stats = summarize(samples)
        up = summarize(upstream) if upstream else None
        return cls(
            value=stats[statistic],
            upstream=up[statistic] if up else None,
            stats=stats,
            upstream_stats=up,
            statistic=statistic,
            details=dict(details),
        )


# ---------------------------------------------------------------------- the registry


@dataclass
class Context:
    """What every case may use: interpreters, repetition counts and a shared memo."""

    python: str
    upstream_python: str | None = None
    repeat: int = 40
    inner: int = 20
    workdir: Path = field(default_factory=lambda: Path.cwd())
    memo: dict[str, Any] = field(default_factory=dict)

    def require_upstream(self) -> str:
        if not self.upstream_python:
            raise Skip("upstream TorchX venv not given (--upstream-python)")
        return self.upstream_python

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """Compute once per run; lets two cases share one expensive measurement."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]


CaseFunc = Callable[[Context], Measurement]


@dataclass
class Case:
    name: str
    func: CaseFunc
    target: Target | None
    upstream: bool
    description: str


REGISTRY: dict[str, Case] = {}


def case(
    name: str, *, target: str | None = None, upstream: bool = False
) -> Callable[[CaseFunc], CaseFunc]:
    """Register a benchmark case under ``name`` (dotted, area first: ``specs.import``).

    ``target`` is checked against the returned value (see the module docstring);
    ``upstream=True`` marks a side-by-side case (it reports upstream's value and the ratio).
    The first line of the function's docstring is the case's description.
    """
    parsed = parse_target(target) if target else None

    def register(func: CaseFunc) -> CaseFunc:
        if name in REGISTRY:
            raise ValueError(f"benchmark case {name!r} registered twice")
        doc = (func.__doc__ or "").strip().splitlines()
        REGISTRY[name] = Case(name, func, parsed, upstream, doc[0] if doc else "")
        return func

    return register


def run_case(c: Case, ctx: Context) -> dict[str, Any]:
    """Run one case and return its result row (JSON-safe)."""
    row: dict[str, Any] = {
        "name": c.name,
        "description": c.description,
        "target": c.target.text if c.target else None,
        "side_by_side": c.upstream,
    }
    row["started"] = now_utc()
    row["loadavg"] = _loadavg()
    started = time.perf_counter()
    try:
        m = c.func(ctx)
        ratio = m.value / m.upstream if m.upstream else None
        row.update(
            value=m.value,
            unit=m.unit,
            statistic=m.statistic or None,
            upstream=m.upstream,
            ratio=ratio,
            stats=m.stats,
            upstream_stats=m.upstream_stats,
            details=m.details,
        )
        if m.stats and m.upstream_stats:
            # The ratio of the minimums: the least noisy comparison on a busy machine.
            row["ratio_min"] = m.stats["min"] / m.upstream_stats["min"]
        if c.target is None:
            row["verdict"] = "info"
        else:
            row["verdict"] = "met" if c.target.met(m.value, ratio) else "missed"
    except Skip as skip:
        row.update(verdict="skipped", reason=str(skip))
    except Exception as exc:
        row.update(verdict="error", reason=f"{type(exc).__name__}: {exc}")
    row["elapsed_s"] = round(time.perf_counter() - started, 3)
    return row


#: What one run keeps in the results file (the case's name and target are the case's).
_RUN_KEYS = (
    "value",
    "unit",
    "statistic",
    "upstream",
    "ratio",
    "ratio_min",
    "stats",
    "upstream_stats",
    "details",
    "verdict",
    "reason",
    "elapsed_s",
    "started",
    "loadavg",
)


def combine_runs(c: Case | dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The case's result row from all its recorded runs: one verdict for them all.

    The judged quantity of each run is its ratio to upstream for an ``x upstream``
    target, its value otherwise. The verdict is the **median** of the runs' judged
    quantities against the target, and ``spread`` is their [min, max]: a case whose
    runs straddle the target says so, whichever run came last. A run that errored makes
    the case ``error`` (a crash is never outvoted); skipped runs are left out, and a case
    with no measured run is ``skipped``. ``c`` is the registered case or, for rows read
    back from a results file, a row holding name, description, target and side_by_side.
    """
    if isinstance(c, Case):
        head = {
            "name": c.name,
            "description": c.description,
            "target": c.target.text if c.target else None,
            "side_by_side": c.upstream,
        }
    else:
        head = {k: c.get(k) for k in ("name", "description", "target", "side_by_side")}
    target = parse_target(head["target"]) if head["target"] else None
    kept = [{k: r[k] for k in _RUN_KEYS if k in r} for r in runs]
    row: dict[str, Any] = {**head, "runs": kept, "n_runs": 0}
    errors = [(i, r) for i, r in enumerate(kept, 1) if r.get("verdict") == "error"]
    measured = [r for r in kept if r.get("value") is not None and r.get("verdict") != "error"]
    if measured:
        first = measured[0]
        row.update(unit=first.get("unit"), statistic=first.get("statistic"))
        row["value"] = statistics.median(r["value"] for r in measured)
        ups = [r["upstream"] for r in measured if r.get("upstream") is not None]
        row["upstream"] = statistics.median(ups) if ups else None
        ratios = [r["ratio"] for r in measured if r.get("ratio") is not None]
        row["ratio"] = statistics.median(ratios) if ratios else None
        row["n_runs"] = len(measured)
        if len(measured) == 1:  # one run: its own sample summary is all there is
            for key in ("stats", "upstream_stats", "ratio_min"):
                if first.get(key) is not None:
                    row[key] = first[key]
        judged = ratios if target is not None and target.relative else None
        if judged is None:
            judged = [r["value"] for r in measured]
        row["judged"] = "ratio" if target is not None and target.relative else "value"
        row["spread"] = [min(judged), max(judged)] if judged else None
    if errors:
        i, first_error = errors[0]
        row["verdict"] = "error"
        row["reason"] = f"run {i} of {len(kept)}: {first_error.get('reason')}"
    elif not measured:
        row["verdict"] = "skipped"
        row["reason"] = next((r["reason"] for r in kept if r.get("reason")), "no run")
    elif target is None:
        row["verdict"] = "info"
    else:
        try:
            met = target.met(row["value"], row["ratio"])
            row["verdict"] = "met" if met else "missed"
            # how many runs on their own would have said otherwise: a split record shows
            row["runs_against"] = sum(
                1 for r in measured if target.met(r["value"], r.get("ratio")) != met
            )
        except Skip as skip:
            row.update(verdict="skipped", reason=str(skip))
    return row


def merge_results(files: list[dict[str, Any]]) -> dict[str, Any]:
    """Several results files as one: every case's runs from all of them, re-judged.

    A case's rows from each file are pooled (format 1 files hold one run per case), so a
    re-run adds to the record instead of replacing it. The machine is the first file's;
    ``sessions`` lists each file's date and load averages.
    """
    merged_runs: dict[str, list[dict[str, Any]]] = {}
    heads: dict[str, dict[str, Any]] = {}
    sessions: list[dict[str, Any]] = []
    for results in files:
        version = results.get("format_version")
        if version not in (1, FORMAT_VERSION):
            raise ValueError(f"results file format {version!r}: this harness reads 1 and 2")
        if version == 1:
            sessions.append(
                {
                    "date": results["date"],
                    "loadavg_start": results["machine"].get("loadavg_start"),
                    "loadavg_end": results["machine"].get("loadavg_end"),
                    "settings": results.get("settings"),
                }
            )
        else:
            sessions.extend(results["sessions"])
        for row in results["cases"]:
            heads.setdefault(row["name"], row)
            if version == FORMAT_VERSION:
                runs = row.get("runs") or []
            else:  # one run, started with the session under its load
                start = {
                    "started": results["date"],
                    "loadavg": results["machine"].get("loadavg_start"),
                }
                runs = [{**start, **row}]
            merged_runs.setdefault(row["name"], []).extend(runs)
    return {
        "format_version": FORMAT_VERSION,
        "date": files[0]["date"],
        "machine": files[0]["machine"],
        "sessions": sessions,
        "cases": [combine_runs(heads[name], runs) for name, runs in merged_runs.items()],
    }


# ------------------------------------------------------------- running interpreters


def child_env(**extra: str) -> dict[str, str]:
    """The environment for measured processes: ours without any ``PYTHON*`` variable.

    Those change what a child imports (PYTHONPATH, PYTHONHOME, PYTHONSTARTUP) or how fast
    it runs (PYTHONDEVMODE, PYTHONTRACEMALLOC, and PYTHONDONTWRITEBYTECODE, which would
    make every run compile every module from source, something no installed package
    does). ``extra`` is added back on top.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(extra)
    return env


def precompile(python: str) -> None:
    """Write the bytecode caches of ``python``'s site-packages, as ``pip install`` does.

    uv does not compile at install time; without this, the first measured run of each
    module would compile it from source.
    """
    code = (
        "import compileall, sysconfig\n"
        "compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=2, workers=0)"
    )
    subprocess.run([python, "-c", code], env=child_env(), capture_output=True, check=False)


def process_times(
    ctx: Context,
    commands: dict[str, list[str]],
    repeat: int | None = None,
    warmup: int = 3,
    env: dict[str, str] | None = None,
) -> dict[str, list[float]]:
    """Wall time (ms) of whole processes, ``repeat`` runs each, interleaved.

    Interleaving (a, b, a, b, ...) spreads machine noise evenly over the commands being
    compared. The warm-up runs (not recorded) write bytecode caches and fill the OS page
    cache, so what is measured is a user's second and later invocations.
    """
    repeat = repeat or ctx.repeat
    env = env if env is not None else child_env()
    for argv in commands.values():
        for _ in range(warmup):
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(argv)} failed: {_tail(proc.stderr)}")
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, argv in commands.items():
            t0 = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            samples[label].append((time.perf_counter() - t0) * 1000.0)
    return samples


def run_snippet(
    python: str, code: str, env: dict[str, str] | None = None, timeout: float = 600
) -> Any:
    """Run ``code`` in a fresh ``python`` and return the JSON its last stdout line holds.

    A snippet that prints ``{"skip": "reason"}`` makes the calling case skip.
    """
    proc = subprocess.run(
        [python, "-c", code],
        env=env if env is not None else child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"snippet failed in {python}: {_tail(proc.stderr)}")
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"snippet printed nothing in {python}: {_tail(proc.stderr)}")
    result = json.loads(lines[-1])
    if isinstance(result, dict) and "skip" in result:
        raise Skip(str(result["skip"]))
    return result


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:]) or "(no output)"


# ---------------------------------------------------------------------- the machine


def machine_info(ctx: Context) -> dict[str, Any]:
    """CPU model, cores, RAM, OS and the interpreters measured, for the results file."""
    info: dict[str, Any] = {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gib": _ram_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "harness_python": platform.python_version(),
        "loadavg_start": _loadavg(),
    }
    info["python"], info["torchx_specs_version"] = _interp_info(ctx.python, "torchx-specs")
    if ctx.upstream_python:
        info["upstream_python"], info["upstream_torchx_version"] = _interp_info(
            ctx.upstream_python, "torchx"
        )
    return info


def _interp_info(python: str, dist: str) -> tuple[str | None, str | None]:
    code = (
        "import json, platform, importlib.metadata as m\n"
        f"try:\n    v = m.version({dist!r})\nexcept m.PackageNotFoundError:\n    v = None\n"
        "print(json.dumps([platform.python_version(), v]))"
    )
    try:
        version, dist_version = run_snippet(python, code)
    except Exception:
        return None, None
    return version, dist_version


def _loadavg() -> list[float] | None:
    """1, 5 and 15 minute load averages: a busy machine explains noisy timings."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


loadavg = _loadavg


def now_utc() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


# ---------------------------------------------------------------------- reporting


def _num(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    text = f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}" if value else "0"
    return f"{text} {unit}".strip()


def _with_min(value: float | None, stats: dict[str, float] | None, unit: str, stat: str) -> str:
    if value is None:
        return "-"
    if not stats:
        return _num(value, unit)
    if stat == "min":
        return f"{_num(value, unit)} (best of {stats['n']:.0f})"
    return f"{_num(value, unit)} (min {_num(stats['min'])})"


def _measured_runs(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        r
        for r in row.get("runs") or []
        if r.get("value") is not None and r.get("verdict") != "error"
    ]


def _range(values: list[float], fmt: Callable[[float], str]) -> str:
    return f" [{fmt(min(values))}, {fmt(max(values))}]" if values else ""


def _row_cells(row: dict[str, Any]) -> list[str]:
    """The table's cells of a case row (from :func:`combine_runs`).

    With one run, a value shows that run's fastest sample ``(min ...)``; with several,
    the value is the median over the runs and ``[lo, hi]`` their range.
    """
    unit = row.get("unit") or ""
    stat = row.get("statistic") or ""
    runs = _measured_runs(row)
    several = len(runs) > 1
    if several:
        value_s = _num(row.get("value"), unit) + _range([r["value"] for r in runs], _num)
    else:
        value_s = _with_min(row.get("value"), row.get("stats"), unit, stat)
    upstream = ""
    if row.get("side_by_side") and row.get("upstream") is not None:
        if several:
            ups = [r["upstream"] for r in runs if r.get("upstream") is not None]
            upstream = _num(row["upstream"], unit) + _range(ups, _num)
        else:
            upstream = _with_min(row["upstream"], row.get("upstream_stats"), unit, stat)
    ratio = ""
    if row.get("ratio") is not None:
        ratio = f"{row['ratio']:.2f}x"
        if several:
            ratios = [r["ratio"] for r in runs if r.get("ratio") is not None]
            ratio += _range(ratios, lambda x: f"{x:.2f}x")
        elif row.get("ratio_min") is not None and stat != "min":
            ratio += f" (min {row['ratio_min']:.2f}x)"
    verdict = row["verdict"]
    if row.get("reason"):
        verdict = f"{verdict}: {row['reason']}"
    elif row.get("runs_against"):
        other = "met" if verdict == "missed" else "missed"
        verdict = f"{verdict} ({row['runs_against']} of {len(runs)} runs {other})"
    n = str(len(runs)) if runs else "-"
    return [row["name"], value_s, upstream, ratio, row.get("target") or "", n, verdict]


HEADERS = ["case", "value", "upstream 0.7.0", "ratio", "target", "runs", "verdict"]

LEGEND = (
    "Verdict: the median over the case's runs (of the ratio for an `x upstream` target) "
    "against the target; value, upstream and ratio are medians over the runs, "
    "[min, max] their spread. With one run, (min ...) is that run's fastest sample."
)


def single_run_cases(rows: list[dict[str, Any]]) -> list[str]:
    """Cases with a target judged on one run only: their verdict is not yet a verdict."""
    return [
        r["name"]
        for r in rows
        if r.get("target") and r["verdict"] in ("met", "missed") and r.get("n_runs", 1) < 2
    ]


def format_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table for the terminal."""
    cells = [HEADERS, *(_row_cells(r) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADERS) - 1)]
    lines = []
    for i, line in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1])
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 7)
    return "\n".join(lines)


def _loads(results: dict[str, Any]) -> str:
    """The 1-minute load averages the runs started under, as ``lo to hi``."""
    loads = [
        r["loadavg"][0]
        for row in results["cases"]
        for r in row.get("runs") or []
        if r.get("loadavg")
    ]
    if not loads:
        start = results["machine"].get("loadavg_start")
        return f"load average (1/5/15 min) at start {start}"
    return f"1-minute load average at the runs' starts {min(loads):g} to {max(loads):g}"


def format_markdown(results: dict[str, Any]) -> str:
    """The README table: one Markdown row per case, plus lines naming machine and runs."""
    m = results["machine"]
    sessions = results.get("sessions") or [{"date": results["date"]}]
    dates = sorted({s["date"][:10] for s in sessions})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    out = [
        f"Measured {when} ({len(sessions)} session{'s' if len(sessions) > 1 else ''}) on "
        f"{m['cpu_model']}, {m['cores']} cores, "
        f"{m['ram_gib']} GiB RAM, Python {m.get('python')}"
        + (
            f", upstream torchx {m['upstream_torchx_version']}"
            if m.get("upstream_torchx_version")
            else ""
        )
        + f"; {_loads(results)}.",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join(" --- " for _ in HEADERS) + "|",
    ]
    for row in results["cases"]:
        cells = [c.replace("|", "\\|") for c in _row_cells(row)]
        cells[0] = f"`{cells[0]}`"
        out.append("| " + " | ".join(cells) + " |")
    out += ["", LEGEND]
    return "\n".join(out)


def write_json(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")


def load_cases() -> None:
    """Import every module of the ``cases`` package, which registers its cases."""
    import importlib
    import pkgutil

    import cases

    for mod in pkgutil.iter_modules(cases.__path__):
        importlib.import_module(f"cases.{mod.name}")


def default_python() -> str:
    return sys.executable
