"""The kit's test apps: steps a replica runs, and the builder that makes them roles.

A conformance check describes what each replica does as a list of :data:`Step` s (print
a line, sleep, exit with a code, fail on one replica of several, ...). An
:class:`AppBuilder` turns the steps into a :class:`~torchx.specs.Role` the backend under
test can run: by default a POSIX ``sh -c`` program (:data:`SH_PROGRAM`) reading the
steps from its arguments, so any backend with a shell runs the kit unchanged::

    builder = AppBuilder(image="alpine:3.20")
    role = builder.role("main", [Out("hi"), Exit(0)], num_replicas=2)
    app = builder.app("kit", role)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from torchx.specs import AppDef, Resource, Role, macros

__all__ = [
    "SH_PROGRAM",
    "AppBuilder",
    "Env",
    "Err",
    "Exit",
    "ExitOnTerm",
    "Fail",
    "Out",
    "Rank0Host",
    "Sleep",
    "Step",
    "Tick",
]


@dataclass(frozen=True)
class Out:
    """Print ``text`` and a newline to stdout (macros in it are substituted by the scheduler)."""

    text: str


@dataclass(frozen=True)
class Err:
    """Print ``text`` and a newline to stderr."""

    text: str


@dataclass(frozen=True)
class Sleep:
    """Sleep ``seconds`` (a replica that stays RUNNING meanwhile)."""

    seconds: float


@dataclass(frozen=True)
class Rank0Host:
    """Print ``rank0=<the rank-0 host>`` to stdout, read from the ``${rank0_env}`` variable.

    ``rank0=?<name>`` when the macro was not substituted to a variable name.
    """


@dataclass(frozen=True)
class Exit:
    """Exit with ``code`` (a replica that ends without one exits 0)."""

    code: int


@dataclass(frozen=True)
class Env:
    """Print ``name=<its value>``; exit with 9 if the value is not ``value``.

    Macros in ``value`` are substituted like those of the role's ``env``, so a replica
    whose environment lacks the role's ``env`` (or has it unsubstituted) fails, which
    is seen without logs.
    """

    name: str
    value: str


@dataclass(frozen=True)
class Fail:
    """Replica ``replica`` of the role sleeps ``after`` seconds, then exits with ``code``.

    Every other replica goes on with the next step: one replica of several fails, the
    others succeed first (``after`` lets them exit before it).
    """

    replica: int
    code: int
    after: float = 0.0


@dataclass(frozen=True)
class Tick:
    """Print ``tick <i>`` every ``interval`` seconds, forever (``i`` counts from 0).

    Output that keeps growing while the replica runs: once the app is cancelled, it
    must stop.
    """

    interval: float


@dataclass(frozen=True)
class ExitOnTerm:
    """From here on, SIGTERM makes the replica exit with ``code``; it waits until then.

    A program that ends cleanly when asked to stop (``ExitOnTerm(0)``): cancelling it
    must still read CANCELLED, not SUCCEEDED.
    """

    code: int


#: One step of a kit app's program (:class:`AppBuilder` turns steps into arguments).
Step = Out | Err | Sleep | Rank0Host | Exit | Env | Fail | Tick | ExitOnTerm

#: The program the default :class:`AppBuilder` runs with ``sh -c``: it reads its steps
#: from its arguments as pairs (``o TEXT``, ``e TEXT``, ``s SECONDS``, ``h VARNAME``,
#: ``x CODE``, ``v NAME=VALUE``, ``f ME:REPLICA:AFTER:CODE``, ``t INTERVAL``, ``r CODE``:
#: exit CODE on SIGTERM, waiting in short sleeps the signal interrupts). POSIX sh
#: only; it holds no ``$$`` and no ``$name`` of a macro, so the scheduler's macro
#: substitution leaves it alone.
SH_PROGRAM = """\
while [ "$#" -gt 1 ]; do
  case "$1" in
    o) printf '%s\\n' "$2" ;;
    e) printf '%s\\n' "$2" >&2 ;;
    s) sleep "$2" ;;
    h) case "$2" in
         [A-Za-z_]*) eval "kit_v=\\${$2-}"; printf 'rank0=%s\\n' "$kit_v" ;;
         *) printf 'rank0=?%s\\n' "$2" ;;
       esac ;;
    x) exit "$2" ;;
    v) kit_n=${2%%=*}; kit_w=${2#*=}; eval "kit_v=\\${$kit_n-}"
       printf '%s=%s\\n' "$kit_n" "$kit_v"
       if [ "$kit_v" != "$kit_w" ]; then
         printf 'env %s is [%s], expected [%s]\\n' "$kit_n" "$kit_v" "$kit_w" >&2; exit 9
       fi ;;
    f) kit_f=$2; kit_me=${kit_f%%:*}; kit_f=${kit_f#*:}; kit_r=${kit_f%%:*}; kit_f=${kit_f#*:}
       if [ "$kit_me" = "$kit_r" ]; then sleep "${kit_f%%:*}"; exit "${kit_f#*:}"; fi ;;
    t) kit_i=0
       while :; do printf 'tick %s\\n' "$kit_i"; kit_i=$((kit_i + 1)); sleep "$2"; done ;;
    r) trap "exit $2" TERM
       while :; do sleep 1 & wait $!; done ;;
  esac
  shift 2
done
"""


class AppBuilder:
    """Makes a role that runs a list of :data:`Step` s on the backend under test.

    The default runs ``SH_PROGRAM`` with ``<shell> -c`` in ``image`` (for the local
    scheduler and Slurm a directory: the replica's working directory; for a container
    backend an image that has ``sh``, e.g. ``AppBuilder(image="alpine:3.20")``).
    Override :meth:`role` to run the steps some other way (a Python entrypoint, a
    wrapper the backend needs); keep macros in the printed text substituted.

    Args:
        image: the role's image
        shell: the POSIX shell's path or name in that image
        resource: each role's resource (the backend may require one)
        env: extra environment of every role
    """

    def __init__(
        self,
        image: str = "/",
        shell: str = "sh",
        resource: Resource | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.image = image
        self.shell = shell
        self.resource = resource if resource is not None else Resource(cpu=1, gpu=0, memMB=256)
        self.env = dict(env or {})

    @staticmethod
    def step_args(steps: Sequence[Step]) -> list[str]:
        """The arguments of ``SH_PROGRAM`` for ``steps``."""
        args: list[str] = []
        for step in steps:
            if isinstance(step, Out):
                args += ["o", step.text]
            elif isinstance(step, Err):
                args += ["e", step.text]
            elif isinstance(step, Sleep):
                args += ["s", f"{step.seconds:g}"]
            elif isinstance(step, Rank0Host):
                args += ["h", macros.rank0_env]
            elif isinstance(step, Exit):
                args += ["x", str(step.code)]
            elif isinstance(step, Env):
                args += ["v", f"{step.name}={step.value}"]
            elif isinstance(step, ExitOnTerm):
                args += ["r", str(step.code)]
            elif isinstance(step, Fail):
                args += ["f", f"{macros.replica_id}:{step.replica}:{step.after:g}:{step.code}"]
            else:
                args += ["t", f"{step.interval:g}"]
        return args

    def role(
        self, name: str, steps: Sequence[Step], num_replicas: int = 1, max_retries: int = 0
    ) -> Role:
        """A role of ``num_replicas`` replicas, each running ``steps``."""
        return Role(
            name,
            image=self.image,
            entrypoint=self.shell,
            args=["-c", SH_PROGRAM, "kit", *self.step_args(steps)],
            num_replicas=num_replicas,
            max_retries=max_retries,
            resource=copy.deepcopy(self.resource),
            env=dict(self.env),
        )

    def app(self, name: str, *roles: Role) -> AppDef:
        """An AppDef of ``roles``."""
        return AppDef(name, list(roles))
