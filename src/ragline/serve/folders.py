"""The server's own folders: the sync roots each tenant may sync, and the upload folder.

Sync roots are per tenant. ``--sync-root DIR`` gives each tenant the sub-folder named
after it (``DIR/acme`` for tenant ``acme``); ``--sync-root acme=DIR`` gives tenant
``acme`` the folder ``DIR``. A tenant's admin may sync a folder only under its own roots,
and an error never names another tenant's roots.

Uploads are saved under ``<upload dir>/<tenant hash>/<random>/NAME`` for the ingest job
that reads them and removed when it ends (done or failed): the parsed text lives in the
database, so nothing of an upload stays on disk (``purge`` erases the database side). A
refused upload leaves nothing; folders a stopped server left behind are swept at start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from fastapi import HTTPException, UploadFile

from ..core.errors import ConfigError

log = logging.getLogger("ragline.serve")
_TENANT_DIR = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}")
_SAFE_NAME = re.compile(r"[^\w.\- ()]+")
MAX_NAME_BYTES = 255
"""Longest upload file name (UTF-8 bytes): what Linux file systems hold."""
JOB_MARKER = ".job"
STALE_S = 600.0


class SyncRoots:
    """Which server folders each tenant's admin may sync."""

    def __init__(self, specs: Iterable[str | Path] = ()) -> None:
        self.shared: list[Path] = []  # DIR: DIR/<tenant> for each tenant
        self.own: dict[str, list[Path]] = {}  # TENANT=DIR
        for spec in specs:
            tenant, folder = parse_root(spec)
            if tenant is None:
                self.shared.append(folder)
            else:
                self.own.setdefault(tenant, []).append(folder)

    def __bool__(self) -> bool:
        return bool(self.shared or self.own)

    def roots(self, tenant: str) -> list[Path]:
        """The folders ``tenant`` may sync (and their sub-folders): its own roots, and
        ``DIR/<tenant>`` of each shared root where that folder exists."""
        out = list(self.own.get(tenant, ()))
        if _TENANT_DIR.fullmatch(tenant) and tenant not in (".", ".."):
            out += [d / tenant for d in self.shared if (d / tenant).is_dir()]
        return [_resolved(p) for p in out]

    def check(self, tenant: str, path: str) -> Path:
        """The folder ``path`` names if ``tenant`` may sync it (HTTP 400/403 otherwise)."""
        if not self:
            raise HTTPException(
                403,
                "folder sync is off on this server; start it with --sync-root DIR (each tenant "
                "syncs DIR/<tenant>) or --sync-root TENANT=DIR",
            )
        try:  # ~unknown-user, names too long for the file system: a bad path, not a crash
            folder = Path(path).expanduser().resolve()
        except (RuntimeError, OSError, ValueError) as exc:
            raise HTTPException(400, f"{path} is not a usable folder path: {exc}") from exc
        roots = self.roots(tenant)
        if not roots:
            raise HTTPException(
                403,
                f"no server folder is configured for tenant {tenant!r}; ask the operator to "
                f"add one (--sync-root DIR for DIR/{tenant}, or --sync-root {tenant}=DIR)",
            )
        if not any(folder == r or r in folder.parents for r in roots):
            raise HTTPException(
                403,
                f"{path} is outside the sync roots of tenant {tenant!r}; it may sync: "
                + ", ".join(str(r) for r in roots),
            )
        try:
            is_dir = folder.is_dir()
        except OSError:
            is_dir = False
        if not is_dir:
            raise HTTPException(400, f"{path} is not a folder on the server")
        return folder


def parse_root(spec: str | Path) -> tuple[str | None, Path]:
    """``DIR`` → (None, DIR); ``TENANT=DIR`` → (TENANT, DIR). A path that starts with
    ``/``, ``.`` or ``~`` is always a plain DIR."""
    text = str(spec)
    tenant: str | None = None
    if "=" in text and not text.startswith(("/", ".", "~")):
        tenant, _, text = text.partition("=")
        tenant = tenant.strip()
        if not tenant or "/" in tenant:
            raise ConfigError(f"--sync-root {spec}: use DIR or TENANT=DIR")
    folder = Path(text).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"--sync-root {spec}: {folder} is not a folder on this server")
    return tenant, folder.resolve()


def _resolved(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):
        return p


class Uploads:
    """The upload folder: one sub-folder per upload, removed when its job ends."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def save(
        self, tenant: str, files: Sequence[UploadFile], *, max_files: int
    ) -> tuple[Path, list[tuple[str, Path]]]:
        """Save ``files``; 422 (and nothing left on disk) for too many files, a name too
        long for the file system or the same name twice."""
        if len(files) > max_files:
            raise HTTPException(
                422,
                f"{len(files)} files in one upload, more than the {max_files} allowed "
                "(setting max_upload_files); upload them in several requests",
            )
        names = [_safe_name(f.filename, i) for i, f in enumerate(files)]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise HTTPException(
                422, f"the upload names {', '.join(twice)} more than once; send each file once"
            )
        tenant_dir = hashlib.sha256(tenant.encode()).hexdigest()[:16]
        folder = self.folder / tenant_dir / secrets.token_hex(8)
        folder.mkdir(parents=True)
        try:
            saved = []
            for name, f in zip(names, files):
                path = folder / name
                with path.open("wb") as out:
                    shutil.copyfileobj(f.file, out, 1 << 20)
                saved.append((name, path))
        except BaseException:
            self.remove(folder)
            raise
        return folder, saved

    def claim(self, folder: Path, job: dict[str, Any], tenant: str) -> None:
        """Record which job reads ``folder`` (the start-up sweep keeps it while it runs;
        a job that already ended has removed the folder)."""
        try:
            (folder / JOB_MARKER).write_text(json.dumps({"job": job["id"], "tenant": tenant}))
        except OSError:
            pass

    def remove(self, folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        try:
            folder.parent.rmdir()  # the tenant's folder, once empty
        except OSError:
            pass

    def sweep(self, status: Callable[[int, str], str | None], *, stale_s: float = STALE_S) -> int:
        """Remove upload folders no unfinished job reads: those of finished or unknown
        jobs, and unclaimed ones older than ``stale_s`` (a save cut short)."""
        removed = 0
        now = time.time()
        for folder in sorted(self.folder.glob("*/*")):
            if not folder.is_dir():
                continue
            marker = folder / JOB_MARKER
            try:
                if marker.exists():
                    claim = json.loads(marker.read_text())
                    if status(int(claim["job"]), str(claim["tenant"])) in ("queued", "running"):
                        continue
                elif now - folder.stat().st_mtime < stale_s:
                    continue
            except (OSError, ValueError, KeyError):
                pass
            self.remove(folder)
            removed += 1
        if removed:
            log.info("removed %d upload folder(s) left by a stopped server", removed)
        return removed


def _safe_name(filename: str | None, i: int) -> str:
    name = _SAFE_NAME.sub("_", Path(filename or "").name).strip()
    if not name.strip("."):  # "", "." and ".." name no file (".." is the folder above)
        name = f"file-{i}"
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise HTTPException(
            422,
            f"the file name {name[:40]}… is {size} bytes long, more than the "
            f"{MAX_NAME_BYTES} a file name may have; rename the file",
        )
    return name
