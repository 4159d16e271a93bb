"""The one writer of private files: whole or not at all, readable by the owner only.

:func:`write_private_atomic` writes to a temporary file in the same directory, flushes
it to disk, then renames it over the target. A reader (another process, a later
command, a process that crashed mid-write) therefore sees the old content or the new,
never half of it, and a file holding a secret (a token in a config, a job record with
environment variables) is never readable by others, not even for a moment:

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "record.json")
>>> write_private_atomic(path, '{"apiVersion": "v1"}')
>>> open(path).read(), oct(os.stat(path).st_mode & 0o777)
('{"apiVersion": "v1"}', '0o600')

Every part of the project that writes a file someone reads later uses it (the local
scheduler's records, ``torchx configure``); plugins should too. Only the standard
library's ``os`` is imported.
"""

from __future__ import annotations

import os

__all__ = ["write_private_atomic"]


def write_private_atomic(
    path: str | os.PathLike[str], data: str | bytes, mode: int = 0o600, *, fsync: bool = True
) -> None:
    """Replaces ``path`` with ``data`` atomically; the file gets permission bits ``mode``.

    ``str`` data is written as UTF-8. The temporary file is created with ``mode`` from
    the start (``O_EXCL``, so it is never someone else's), and removed if anything
    fails. With ``fsync`` (the default) the data is on disk before the rename, so even a
    power loss leaves the old or the new file; records rewritten many times a second
    that a crash may lose anyway can pass ``fsync=False``. The directory must exist.
    """
    target = os.fspath(path)
    payload = data.encode() if isinstance(data, str) else data
    tmp = f"{target}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        try:
            if os.fstat(fd).st_mode & 0o777 != mode:  # the umask may have taken bits away
                os.fchmod(fd, mode)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
