"""App ids: generating unique ones from an app name, and checking ids given back by users.

A scheduler whose backend does not assign ids itself (the local scheduler, or one that
names the job directory, a Kubernetes object or a Slurm job name after the app) makes
one with :func:`make_app_id`, and checks an id read from a handle with
:func:`validate_app_id` before using it to build a path or a request:

>>> app_id = make_app_id("My Trainer!")
>>> app_id[:-10], len(app_id[-10:]), is_valid_app_id(app_id)
('my-trainer-', 10, True)
>>> is_valid_app_id("../etc"), is_valid_app_id("a/b"), is_valid_app_id(None)
(False, False, False)
>>> try:
...     validate_app_id("a/b")
... except ValueError as e:
...     print(str(e)[:42])
invalid app id 'a/b': expected 1 to 100 lo

The form (:data:`APP_ID_PATTERN`: lower-case letters, digits, ``_``, ``.``, ``-``,
starting with a letter or digit, never ``..``) is safe as a directory name, a job name
and the last part of a handle.
The random part comes from ``os.urandom`` (36 characters, 10 of them: about 52 bits),
so concurrent submits of the same name get distinct ids.

**Ids of several parts.** A cluster names a job within a scope: a Kubernetes object
within its namespace, an AWS Batch job within its queue. Its app id carries both, joined
by ``:`` (a handle's app id never contains ``/``), and :func:`split_app_id` gives them
back, checked, in the order ``form`` names them:

>>> join_app_id("team-a", "trainer-x1")
'team-a:trainer-x1'
>>> split_app_id("gpu-queue:6f1c2a9e-3b1d-4c1e-9d0a-1f2e3d4c5b6a", form="queue:job-id")
('gpu-queue', '6f1c2a9e-3b1d-4c1e-9d0a-1f2e3d4c5b6a')
>>> try:
...     split_app_id("trainer-x1", form="namespace:name")
... except ValueError as e:
...     print(e)
invalid app id 'trainer-x1': expected namespace:name, each part 1 to 253 letters, digits, '_', '.', '-' starting with a letter or digit, e.g. 'my-namespace:my-name'

**Names for backends with limits.** Kubernetes (and DNS) names an object with a DNS-1123
label: at most 63 lower-case letters, digits and ``-``, starting and ending with a letter
or digit. :func:`dns_label` makes one from an app id, a role and a replica: the plain
join when it already is one (readable), else the join cleaned and cut to fit, plus a
hash of the exact parts, so that names that differ only where they were cut or cleaned
stay distinct:

>>> dns_label("trainer-1a2b3c4d5e", "worker", 0)
'trainer-1a2b3c4d5e-worker-0'
>>> dns_label("My_Trainer", "worker", 0)
'my-trainer-worker-0-mr9z2ndc1j'
>>> len(dns_label("x" * 100, "worker", 0))
63

Only the standard library's ``os`` and ``re`` are imported (``re`` on first use;
``hashlib`` when :func:`dns_label` needs a hash), so a launcher pays nothing for
importing it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs milliseconds to import
if TYPE_CHECKING:
    from torchx.schedulers.contract.errors import InvalidAppIdError

__all__ = [
    "APP_ID_PART_PATTERN",
    "APP_ID_PATTERN",
    "DNS_LABEL_MAX",
    "dns_label",
    "is_dns_label",
    "is_valid_app_id",
    "join_app_id",
    "make_app_id",
    "split_app_id",
    "validate_app_id",
]

#: What an app id may look like. It names a directory, so no ``/`` and no ``..``.
APP_ID_PATTERN = r"[a-z0-9][a-z0-9_.-]{0,99}"

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_SUFFIX_LEN = 10


def is_valid_app_id(app_id: object) -> bool:
    """True if ``app_id`` is a string of the form :data:`APP_ID_PATTERN`, without ``..``."""
    import re

    return (
        isinstance(app_id, str)
        and re.fullmatch(APP_ID_PATTERN, app_id) is not None
        and ".." not in app_id
    )


def validate_app_id(
    app_id: str, *, what: str = "app id", error: type[InvalidAppIdError] | None = None
) -> str:
    """Returns ``app_id`` if valid, else raises a one-line
    :class:`~torchx.schedulers.contract.errors.InvalidAppIdError`.

    The message names the id (as ``what``: ``"local app id"``) and the allowed form, so
    the CLI can print it as it is. ``error`` is a subclass of InvalidAppIdError to raise
    instead (a scheduler's own name for it).
    """
    if not is_valid_app_id(app_id):
        from torchx.schedulers.contract.errors import InvalidAppIdError

        raise (error or InvalidAppIdError)(
            f"invalid {what} {app_id!r}: expected 1 to 100 lower-case letters, digits, '_', "
            "'.', '-' (no '/', no '..'), starting with a letter or digit, e.g. 'echo-1a2b3c4d5e'"
        )
    return app_id


def make_app_id(name: str) -> str:
    """``<name>-<10 random characters>``: the name lower-cased and cut to fit the id form.

    Characters outside the form become ``-``; a name with nothing usable left gives
    ``app-<random>``. The result always passes :func:`is_valid_app_id`.
    """
    import re

    stem = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-._")[:80]
    stem = re.sub(r"\.{2,}", ".", stem) or "app"
    return f"{stem}-{_random_suffix(_SUFFIX_LEN)}"


def _random_suffix(n: int) -> str:
    """``n`` uniformly random characters of ``_ALPHABET``, from ``os.urandom``.

    (``secrets`` would do the same, but importing it costs milliseconds of every launch.)
    """
    out: list[str] = []
    while len(out) < n:
        # 252 = 7 * 36: bytes from 252 up are dropped so that every character is as likely
        out += [_ALPHABET[b % 36] for b in os.urandom(2 * n) if b < 252]
    return "".join(out[:n])


# -- ids of several parts ---------------------------------------------------------------

#: One part of an app id of several parts (a namespace, a queue, a job's name or id):
#: letters (either case), digits, ``_``, ``.``, ``-``, starting with a letter or digit.
APP_ID_PART_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}"

_SEP = ":"


def _form_labels(form: str) -> list[str]:
    labels = form.split(_SEP)
    if len(labels) < 2 or not all(labels):
        raise ValueError(f"form {form!r} must name two or more parts, e.g. 'namespace:name'")
    return labels


def _part_rule(form: str, labels: list[str]) -> str:
    example = _SEP.join(f"my-{label}" for label in labels)
    return (
        f"expected {form}, each part 1 to 253 letters, digits, '_', '.', '-' starting "
        f"with a letter or digit, e.g. {example!r}"
    )


def join_app_id(*parts: str, form: str = "namespace:name") -> str:
    """The app id of ``parts`` (``"team-a", "trainer-x1"`` -> ``"team-a:trainer-x1"``).

    ``form`` names the parts, for the message and the count: ``"queue:job-id"``. A part
    that :func:`split_app_id` would not give back (empty, with ``:`` or ``/``, other
    characters than :data:`APP_ID_PART_PATTERN`'s) raises a one-line
    :class:`~torchx.schedulers.contract.errors.InvalidAppIdError` naming it.
    """
    import re

    labels = _form_labels(form)
    if len(parts) != len(labels):
        raise ValueError(f"{form} has {len(labels)} parts, got {len(parts)}: {parts!r}")
    for label, part in zip(labels, parts, strict=True):
        if not isinstance(part, str) or re.fullmatch(APP_ID_PART_PATTERN, part) is None:
            from torchx.schedulers.contract.errors import InvalidAppIdError

            raise InvalidAppIdError(
                f"invalid {label} {part!r} for an app id: {_part_rule(form, labels)}"
            )
    return _SEP.join(parts)


def split_app_id(
    app_id: str, *, form: str = "namespace:name", error: type[InvalidAppIdError] | None = None
) -> tuple[str, ...]:
    """The parts of an app id made by :func:`join_app_id` with the same ``form``.

    Raises a one-line :class:`~torchx.schedulers.contract.errors.InvalidAppIdError` (or
    ``error``, a scheduler's subclass of it) naming the id and the form expected, so
    that an id read from a handle is checked before it reaches a request.
    """
    import re

    labels = _form_labels(form)
    parts = tuple(app_id.split(_SEP)) if isinstance(app_id, str) else ()
    if len(parts) != len(labels) or not all(
        re.fullmatch(APP_ID_PART_PATTERN, part) for part in parts
    ):
        from torchx.schedulers.contract.errors import InvalidAppIdError

        raise (error or InvalidAppIdError)(f"invalid app id {app_id!r}: {_part_rule(form, labels)}")
    return parts


# -- names for backends with limits -------------------------------------------------------

#: The longest DNS-1123 label (a Kubernetes object's name, a hostname's part).
DNS_LABEL_MAX = 63
_DIGEST_LEN = 10
_DNS_LABEL = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"


def is_dns_label(name: object, max_length: int = DNS_LABEL_MAX) -> bool:
    """True if ``name`` is a DNS-1123 label of at most ``max_length`` characters.

    >>> is_dns_label("trainer-0"), is_dns_label("Trainer"), is_dns_label("-x")
    (True, False, False)
    """
    import re

    return (
        isinstance(name, str)
        and 0 < len(name) <= max_length
        and re.fullmatch(_DNS_LABEL, name) is not None
    )


def dns_label(
    *parts: str | int, max_length: int = DNS_LABEL_MAX, letter_first: bool = False
) -> str:
    """A valid DNS-1123 label naming ``parts`` (an app id, a role, a replica index).

    Deterministic (the same parts give the same label in every process and release).
    If the parts joined with ``-`` already form a label of at most ``max_length``
    characters, that is the name. Otherwise the join is lower-cased, every run of other
    characters becomes ``-``, it is cut to fit and a ``-`` and 10 characters of a
    SHA-256 of the exact parts are appended: parts that differ only in what was cut or
    cleaned get distinct labels (a collision needs about 2**25 such names).

    Distinct parts whose ``-`` joins are the same (``("a-b", "c")``, ``("a", "b-c")``)
    name the same label: give parts whose join is unique, as an app id with its role
    and replica is. ``letter_first``: the label starts with a letter (RFC 1035, as a
    Kubernetes Service's name must); a ``x`` is put first where needed.
    """
    if max_length < _DIGEST_LEN + 2:
        raise ValueError(f"max_length must be at least {_DIGEST_LEN + 2}, got {max_length}")
    text = "-".join(str(part) for part in parts)
    if is_dns_label(text, max_length) and not (letter_first and not text[0].isalpha()):
        return text
    import hashlib
    import re

    exact = "\x1f".join(f"{type(part).__name__}:{part}" for part in parts)
    number = int.from_bytes(hashlib.sha256(exact.encode("utf-8", "surrogatepass")).digest())
    digest = ""
    while len(digest) < _DIGEST_LEN:
        number, rest = divmod(number, 36)
        digest += _ALPHABET[rest]
    stem = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if letter_first and not stem[:1].isalpha():
        stem = "x" + stem if stem else "x"
    stem = stem[: max_length - _DIGEST_LEN - 1].rstrip("-")
    return f"{stem}-{digest}" if stem else digest
