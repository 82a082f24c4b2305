"""Reading a file from disk, and the boundary a folder walk reads inside.

Every file ragline reads is opened once, non-blocking (a FIFO cannot hang the reader),
then checked on the open descriptor, so nothing can be swapped between a check and the
open: it must be a regular file. Inside a :class:`Boundary` (the folder a sync reads) it
is opened with ``O_NOFOLLOW`` (a symbolic link as the last component is refused, never
followed) and its real path (what the kernel says the descriptor is, ``/proc/self/fd/N``)
must lie under the boundary's root, so a directory swapped for a link after the walk
cannot lead outside either. A file named explicitly (``ragline ingest FILE``) is opened
as named, links followed: that is the operator's choice.
A ``strict`` boundary (folders synced through the HTTP API) also refuses hard-linked
files and files on another mount than the folder's (a mount point inside the folder, bind
mounts included: Linux tells them by the descriptor's ``mnt_id``, which differs even where
a bind mount keeps the device number), since either can alias a file outside it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ParseError

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def mount_id(fd: int) -> int | None:
    """The mount an open descriptor lies on (Linux ``/proc/self/fdinfo``; None elsewhere)."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as f:
            for line in f:
                if line.startswith("mnt_id:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def mount_points() -> frozenset[str]:
    """Every mount point this process sees (``/proc/self/mountinfo``; empty elsewhere)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            rows = [line.split() for line in f]
    except OSError:
        return frozenset()
    # field 5 is the mount point, with space, tab, newline and backslash octal-escaped
    unescape = lambda p: re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), p)  # noqa: E731
    return frozenset(unescape(r[4]) for r in rows if len(r) > 4)


@dataclass(frozen=True)
class Boundary:
    """The folder a walk may read in: ``root`` (resolved) and, when ``strict``, the file
    system and mount it is on (``device``, ``mount``)."""

    root: str
    strict: bool = False
    device: int = -1
    mount: int | None = None

    @classmethod
    def of(cls, root: str | Path, *, strict: bool = False) -> Boundary:
        real = os.path.realpath(os.path.expanduser(str(root)))
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            return cls(real, strict, os.fstat(fd).st_dev, mount_id(fd))
        finally:
            os.close(fd)

    def mounts_inside(self) -> frozenset[str]:
        """Mount points strictly inside the root (a strict walk does not enter them)."""
        if not self.strict:
            return frozenset()
        return frozenset(m for m in mount_points() if m != self.root and self.contains(m))

    def contains(self, path: str | Path) -> bool:
        """Whether ``path`` (taken literally, not resolved) is under the root."""
        p = os.path.normpath(str(path))
        return p == self.root or p.startswith(self.root.rstrip("/") + "/")

    def refusal(self, st: os.stat_result, *, other_mount: bool = False) -> str | None:
        """Why a file with status ``st`` may not be read inside this boundary (None: it may)."""
        if not self.strict:
            return None
        if st.st_dev != self.device or other_mount:
            return (
                "is on another mount than the folder (a mount point inside it); a server "
                "sync does not cross mounts: make that folder a sync root of its own"
            )
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            return (
                f"has {st.st_nlink} hard links; a server sync does not read hard-linked "
                "files, since a link can alias a file outside the folder (copy it instead)"
            )
        return None


def _real_path(fd: int, fallback: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc (not Linux): the path as resolved now
        return os.path.realpath(fallback)


def open_file(path: str | Path, boundary: Boundary | None = None) -> int:
    """A read-only descriptor of the regular file ``path`` (the caller closes it).

    Raises :class:`ParseError` saying why it may not be read: a link, not a regular file,
    outside ``boundary``; FileNotFoundError / PermissionError / IsADirectoryError pass
    through for the caller to word."""
    name = str(path)
    try:
        fd = os.open(name, _FLAGS if boundary is None else _FLAGS | _NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP and boundary is not None:
            raise ParseError(
                name, "is a symbolic link; ragline does not follow links inside a folder"
            ) from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(name)
        if not stat.S_ISREG(st.st_mode):
            raise ParseError(
                name,
                "is not a regular file but a FIFO, socket or device, so it is not read "
                "(that could block or never end); pass a regular file",
            )
        if boundary is not None:
            real = _real_path(fd, name)
            if not boundary.contains(real):
                raise ParseError(
                    name, "resolves to a file outside the folder being read, so it is not read"
                )
            why = boundary.refusal(st)
            if why is None and boundary.strict and boundary.mount is not None:
                if mount_id(fd) != boundary.mount:
                    why = boundary.refusal(st, other_mount=True)
            if why:
                raise ParseError(name, why)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(path: str | Path, boundary: Boundary | None = None) -> bytes:
    """The bytes of ``path``, opened as :func:`open_file` says."""
    with open(open_file(path, boundary), "rb") as f:
        return f.read()
