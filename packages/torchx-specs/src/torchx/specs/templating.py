"""Macros: placeholders in ``Role.args``, ``Role.env`` and ``Role.metadata`` filled in at launch.

Schedulers call :meth:`macros.Values.apply` on each role with the values they know
(the app id they assigned, the replica's index, ...). Macros in other Role fields
are not substituted. Placeholders are :class:`string.Template`'s (``${app_id}``,
``$app_id``); unknown ones are left alone. ``$$`` is upstream's escape where it
stands before a macro or ``{``, and a plain ``$$`` everywhere else:

* ``$${app_id}`` and ``$$app_id`` are the macro's text, not its value (``${app_id}``,
  ``$app_id``);
* ``$$${rank0_env}`` is a ``$`` before the macro's value (``$MASTER_ADDR``: the
  variable for a shell to expand);
* ``$${PORT:-29500}`` is ``${PORT:-29500}`` (a shell expansion written where ``${``
  would start a macro, as upstream's ``dist.ddp`` writes it);
* any other ``$$`` reaches the program as typed: ``pa$$word``, ``echo $$``,
  ``$$HOME``. (Upstream, as :class:`string.Template`, makes every ``$$`` one ``$``.)

:meth:`macros.Values.substitute` is the one substitution every scheduler uses, also
for one string at a time (the local and Slurm schedulers call it for each argument of
each replica). It is made for that: a string without ``$`` comes back as it is, and
the parse of a string with macros is kept, so the 1,000 replicas of a role parse each
argument once and only fill in their values.

>>> from torchx.specs import Role, macros
>>> role = Role(name="trainer", image="img", args=["--app_id", macros.app_id],
...             env={"RANK0": "$$" + macros.rank0_env})
>>> values = macros.Values(img_root="/img", app_id="app-1", replica_id="0", rank0_env="MASTER_ADDR")
>>> applied = values.apply(role)
>>> applied.args, applied.env
(['--app_id', 'app-1'], {'RANK0': '$MASTER_ADDR'})
>>> role.args
['--app_id', '${app_id}']
>>> [values.substitute(a) for a in ["$${app_id}", "pa$$word", "$${PORT:-29500}"]]
['${app_id}', 'pa$$word', '${PORT:-29500}']
"""

from __future__ import annotations

import copy
import functools
import re
from string import Template
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from torchx.specs.api import Role


class macros:
    """Template variables substituted at runtime in Role.args, Role.env and Role.metadata.

    1. ``img_root``: root directory of the pulled image
    2. ``app_id``: application id as assigned by the scheduler
    3. ``replica_id``: per-role replica index (0, 1, ...); a replacement replica keeps it
    4. ``rank0_env``: the *name* of the environment variable holding the rank-0 host
       (for a shell to expand it, write ``"$$" + macros.rank0_env``, which becomes
       ``$MASTER_ADDR`` or the like); not available on every scheduler
    5. ``base_img_root``: deprecated, do not use

    ``$$`` before a macro (``$${app_id}``) or ``{`` is one ``$``; any other ``$$``
    reaches the program as typed (``pa$$word``): see :mod:`torchx.specs.templating`.
    """

    #: Root directory of the pulled image.
    img_root = "${img_root}"
    #: Deprecated, do not use.
    base_img_root = "${base_img_root}"
    #: Application id as assigned by the scheduler.
    app_id = "${app_id}"
    #: Per-role replica index (0, 1, ...); a replacement replica keeps it.
    replica_id = "${replica_id}"
    #: The *name* of the environment variable holding the rank-0 host.
    rank0_env = "${rank0_env}"

    @attrs.define
    class Values:
        """The values a scheduler substitutes for each macro."""

        img_root: str
        app_id: str
        replica_id: str
        rank0_env: str
        base_img_root: str = "DEPRECATED"

        def apply(self, role: Role) -> Role:
            """Returns a deep copy of ``role`` with macros substituted in args, env and metadata."""
            out = copy.deepcopy(role)
            out.args = [self.substitute(a) for a in out.args]
            out.env = {k: self.substitute(v) for k, v in out.env.items()}
            out.metadata = {k: self._sub_any(v) for k, v in out.metadata.items()}
            return out

        def _sub_any(self, value: Any) -> Any:
            if isinstance(value, str):
                return self.substitute(value)
            if isinstance(value, list):
                return [self._sub_any(v) for v in value]
            if isinstance(value, dict):
                return {k: self._sub_any(v) for k, v in value.items()}
            return value

        def substitute(self, arg: str) -> str:
            """Substitutes macro placeholders in ``arg``; unknown ones are left as they are.

            ``string.Template(arg).safe_substitute(**self.to_dict())``, faster, except
            that a ``$$`` that escapes no macro stays ``$$`` (see the module).
            """
            if "$" not in arg:
                return arg
            values = self.to_dict()
            # the one argument of the common case keeps the kept parse's lookup quickest
            pieces = _parse(arg) if type(self) is macros.Values else _parse(arg, frozenset(values))
            out: list[str] = []
            for piece in pieces:
                if isinstance(piece, str):
                    out.append(piece)
                else:
                    name, text = piece
                    out.append(str(values[name]) if name in values else text)
            return "".join(out)

        def to_dict(self) -> dict[str, Any]:
            """Returns the macro values as a plain dict."""
            if type(self) is not macros.Values:  # a subclass may add fields
                return attrs.asdict(self)
            return {
                "img_root": self.img_root,
                "app_id": self.app_id,
                "replica_id": self.replica_id,
                "rank0_env": self.rank0_env,
                "base_img_root": self.base_img_root,
            }


#: The macros of :class:`macros.Values` (a subclass with more fields has its own).
_NAMES = frozenset(attrs.fields_dict(macros.Values))

# A string with macros as pieces: literal text, or (macro name, the text it replaces).
_Piece = str | tuple[str, str]


@functools.lru_cache(maxsize=4096)
def _parse(text: str, names: frozenset[str] = _NAMES) -> tuple[_Piece, ...]:
    """``text`` cut where :class:`string.Template`'s own pattern matches, the way it cuts it;
    ``names``: the macros (a ``$$`` before one of them is an escape, see the module).

    Kept per string (the same arguments recur in every replica): substituting is then
    filling in values, without a regular expression or a callback per match.
    """
    pieces: list[_Piece] = []
    pos = 0
    for match in Template.pattern.finditer(text):
        start = match.start()
        if start > pos:
            pieces.append(text[pos:start])
        name = match.group("named") or match.group("braced")
        if name is not None:
            pieces.append((name, match.group()))
        elif match.group("escaped") is not None:
            escapes = _escapes(text, match.end(), names)
            pieces.append(Template.delimiter if escapes else match.group())
        else:  # an ill-formed "$": kept as it is
            pieces.append(match.group())
        pos = match.end()
    if pos < len(text):
        pieces.append(text[pos:])
    return tuple(pieces)


def _escapes(text: str, end: int, names: frozenset[str]) -> bool:
    """Whether the ``$$`` that ends at ``end`` is an escape: it stands before ``{``, a
    macro's name (``$$app_id``), or a macro (``$$${rank0_env}``, ``$$$app_id``)."""
    rest = text[end:]
    if rest.startswith("{"):
        return True
    if rest.startswith(Template.delimiter):
        rest = rest[1:]
        if rest.startswith("{"):
            rest = rest[1:]
            closed = re.match(rf"(?a:{Template.idpattern})}}", rest, re.IGNORECASE)
            return closed is not None and closed.group()[:-1] in names
    word = re.match(rf"(?a:{Template.idpattern})", rest, re.IGNORECASE)
    return word is not None and word.group() in names
