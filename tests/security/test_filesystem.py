"""The file-system boundary: what a server may read when a tenant's admin syncs a folder.

A server sync reads regular files inside the folder (under the tenant's own sync root)
and nothing else: no symbolic link is followed (to a file or a folder, inside the root
or out of it), no hard-linked file is read, no other mount is entered (bind mounts
included), and every file is checked on the descriptor it is read from, so swapping a
file or a folder for a link between the walk and the read leads nowhere. Documents that
vanish, or become links, are deleted by the next sync. Findings 1 and 7 of issue 14.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragline.core.errors import ParseError
from ragline.ingest.sources import file_source, iter_files
from ragline.parse.files import Boundary, read_file
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.security.world import canary
from tests.serve.conftest import add_keys, own_schema, wait_job
from tests.serve.harness import Live, live_server

SECRET = canary("operator-secret")
PASSWORD_Q = "What is the database superuser password?"


@pytest.fixture(scope="module")
def fs(pg_url: str) -> Any:
    """A served index with a shared sync root (``DIR/<tenant>``), an extra root for tenant
    ``initech`` (``initech=DIR``) and an operator file outside every root."""
    base = Path(tempfile.mkdtemp(prefix="ragline-fs-"))
    root, own, outside = base / "roots", base / "initech-docs", base / "operator"
    for d in (root / "acme", root / "globex", own, outside):
        d.mkdir(parents=True)
    (outside / "db.md").write_text(
        f"# Database credentials\n\nThe database superuser password is {SECRET}.\n"
    )
    with own_schema(pg_url) as schema:
        idx = make_index(pg_url, schema, embedder=FakeEmbedder())
        with live_server(
            idx,
            upload_dir=base / "uploads",
            sync_roots=[root, f"initech={own}"],
            rate_limit=10**6,
        ) as live:
            add_keys(
                live,
                {
                    "acme": {"tenant": "acme", "admin": True},
                    "acme_reader": {"tenant": "acme"},
                    "globex": {"tenant": "globex", "admin": True},
                    "initech": {"tenant": "initech", "admin": True},
                    "hooli": {"tenant": "hooli", "admin": True},
                },
            )
            yield {"live": live, "root": root, "own": own, "outside": outside, "base": base}
        idx.close()
    shutil.rmtree(base, ignore_errors=True)


def _sync(c: httpx.Client, live: Live, who: str, folder: Path) -> dict[str, Any]:
    r = c.post("/v1/sync", json={"path": str(folder)}, headers=live.headers(who))
    assert r.status_code == 202, r.text
    job = wait_job(c, r.json()["job"]["id"], live.headers(who))
    assert job["status"] == "done", job
    return job["report"]


def _nothing_of(c: httpx.Client, live: Live, who: str, secret: str) -> None:
    """``secret`` reaches the key through no search mode and no answer."""
    for mode in ("bm25", "vector", "hybrid"):
        r = c.post("/v1/search", json={"query": secret, "mode": mode}, headers=live.headers(who))
        assert secret not in r.text.replace(f'"query":"{secret}"', "")
    for q in (PASSWORD_Q, f"What is {secret}?"):
        r = c.post("/v1/ask", json={"question": q}, headers=live.headers(who))
        a = r.json()
        assert secret not in a["answer"] and not any(
            secret in (x["text"] or "") for x in a["citations"]
        )


def test_symlinks_in_a_sync_root_are_never_followed(fs) -> None:
    live, root, outside = fs["live"], fs["root"], fs["outside"]
    folder = root / "acme" / "links"
    folder.mkdir()
    (folder / "handbook.md").write_text("# Handbook\n\nThe heron bell rings at nine.\n")
    (folder / "passwd.txt").symlink_to("/etc/passwd")
    (folder / "db.md").symlink_to(outside / "db.md")
    (folder / "ops").symlink_to(outside, target_is_directory=True)
    (folder / "theirs.md").symlink_to(root / "globex")  # into another tenant's root
    (folder / "relative.md").symlink_to("../../../operator/db.md")
    (folder / "dangling.md").symlink_to(folder / "nowhere.md")
    with httpx.Client(base_url=live.url, timeout=60) as c:
        report = _sync(c, live, "acme", folder)
        assert [Path(k).name for k in report["added"]] == ["handbook.md"]
        skipped = {Path(s["source"]).name: s["reason"] for s in report["skipped"]}
        assert set(skipped) == {
            "passwd.txt",
            "db.md",
            "ops",
            "theirs.md",
            "relative.md",
            "dangling.md",
        }
        assert all("symbolic link" in why for why in skipped.values())
        _nothing_of(c, live, "acme_reader", SECRET)
        _nothing_of(c, live, "acme_reader", "root:x:0:0")
        docs = c.get("/v1/documents", headers=live.headers("acme")).json()["documents"]
        assert [d["title"] for d in docs if d["source"].startswith("links/")] == ["Handbook"]
    # no key of a walked file can lie outside the folder
    keys = [str(p) for p, err in iter_files([folder]) if err is None]
    assert keys == [str((folder / "handbook.md").resolve())]


def test_a_second_sync_deletes_files_that_vanished_or_became_links(fs) -> None:
    live, root, outside = fs["live"], fs["root"], fs["outside"]
    folder = root / "acme" / "second"
    folder.mkdir()
    note = canary("second-sync")
    (folder / "a.md").write_text(f"# A\n\nThe note says {note}.\n")
    (folder / "b.md").write_text("# B\n\nThe badger gate closes at six.\n")
    with httpx.Client(base_url=live.url, timeout=60) as c:
        assert len(_sync(c, live, "acme", folder)["added"]) == 2
        (folder / "a.md").unlink()
        (folder / "a.md").symlink_to(outside / "db.md")  # same name, now a link out
        (folder / "b.md").unlink()
        report = _sync(c, live, "acme", folder)
        assert sorted(Path(k).name for k in report["deleted"]) == ["a.md", "b.md"]
        assert report["added"] == [] and report["updated"] == []
        _nothing_of(c, live, "acme_reader", SECRET)
        _nothing_of(c, live, "acme_reader", note)


def test_hard_links_are_not_read_by_a_server_sync(fs) -> None:
    live, root, outside = fs["live"], fs["root"], fs["outside"]
    folder = root / "acme" / "hard"
    folder.mkdir()
    secret = outside / "hard-secret.md"
    word = canary("hard-link")
    secret.write_text(f"# Hard\n\nThe vault code is {word}.\n")
    os.link(secret, folder / "copy.md")
    with httpx.Client(base_url=live.url, timeout=60) as c:
        report = _sync(c, live, "acme", folder)
        assert report["added"] == []
        [skip] = report["skipped"]
        assert skip["source"].endswith("copy.md") and "hard links" in skip["reason"]
        _nothing_of(c, live, "acme_reader", word)
    # the descriptor check refuses it too, whatever the walk said
    with pytest.raises(ParseError, match="hard links"):
        read_file(folder / "copy.md", Boundary.of(folder, strict=True))


def _can_mount() -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    a, b = tempfile.mkdtemp(), tempfile.mkdtemp()
    ok = subprocess.run(["mount", "--bind", a, b], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["umount", b], check=False)
    return ok


@pytest.mark.skipif(not _can_mount(), reason="needs root and mount --bind (CAP_SYS_ADMIN)")
def test_bind_mounts_inside_a_sync_root_are_not_entered(fs) -> None:
    live, root, outside = fs["live"], fs["root"], fs["outside"]
    folder = root / "acme" / "mounted"
    (folder / "mnt").mkdir(parents=True)
    (folder / "file.md").write_text("")
    subprocess.run(["mount", "--bind", str(outside), str(folder / "mnt")], check=True)
    subprocess.run(["mount", "--bind", str(outside / "db.md"), str(folder / "file.md")], check=True)
    try:
        assert (folder / "mnt" / "db.md").exists()  # the mount works, on the same device
        assert os.stat(folder / "mnt").st_dev == os.stat(folder).st_dev
        with httpx.Client(base_url=live.url, timeout=60) as c:
            report = _sync(c, live, "acme", folder)
            assert report["added"] == []
            why = {Path(s["source"]).name: s["reason"] for s in report["skipped"]}
            assert set(why) == {"mnt", "file.md"} and all("mount" in w for w in why.values())
            _nothing_of(c, live, "acme_reader", SECRET)
        with pytest.raises(ParseError, match="another mount"):  # on the descriptor too
            read_file(folder / "mnt" / "db.md", Boundary.of(folder, strict=True))
    finally:
        subprocess.run(["umount", str(folder / "file.md")], check=False)
        subprocess.run(["umount", str(folder / "mnt")], check=False)


def test_a_file_or_folder_swapped_for_a_link_after_the_walk_is_not_read(tmp_path) -> None:
    """Time of check, time of use: the walk saw regular files; by the time each is
    opened, one is a link and the folder above another is a link out."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.md").write_text(f"# Out\n\n{SECRET}\n")
    (root / "sub" / "f.md").write_text("# In\n\nfine\n")
    (root / "g.md").write_text("# G\n\nfine\n")
    boundary = Boundary.of(root, strict=True)
    found = [p for p, err in iter_files([root], boundary=boundary) if err is None]
    assert sorted(p.name for p in found) == ["f.md", "g.md"]
    (root / "sub").rename(root / "moved")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    (root / "g.md").unlink()
    (root / "g.md").symlink_to(outside / "f.md")
    for p in found:
        with pytest.raises(ParseError, match="outside the folder|symbolic link"):
            file_source(p, boundary)
        with pytest.raises(ParseError, match="outside the folder|symbolic link"):
            read_file(p, boundary)
    # the parse workers check the same on their own descriptor
    from ragline.ingest.workers import ParsePool

    with ParsePool(workers=1, boundary=boundary) as pool:
        out = dict(pool.imap([(p.name, p, None) for p in found]))
    assert all(isinstance(v, ParseError) for v in out.values()), out


def test_racing_links_never_get_a_secret_indexed(pg_url, schema, tmp_path) -> None:
    """A thread flips a file between a document and a link to the secret (and its folder
    between a folder and a link out) while syncs run: the secret is never indexed."""
    idx = make_index(pg_url, schema, embedder=FakeEmbedder())
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "x.md").write_text(f"# Secret\n\n{SECRET}\n")
    stop = threading.Event()

    def flip() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            f, d = root / "x.md", root / "d"
            try:
                f.unlink(missing_ok=True)
                if i % 2:
                    f.write_text(f"# Doc\n\nVersion {i}.\n")
                else:
                    f.symlink_to(outside / "x.md")
                if i % 3 == 0:
                    shutil.rmtree(
                        d, ignore_errors=True
                    ) if d.is_dir() and not d.is_symlink() else d.unlink(missing_ok=True)
                    if i % 2:
                        d.mkdir()
                        (d / "x.md").write_text("# In d\n\nfine\n")
                    else:
                        d.symlink_to(outside, target_is_directory=True)
            except OSError:
                pass

    t = threading.Thread(target=flip, daemon=True)
    t.start()
    try:
        for _ in range(25):
            idx.sync(root, tenant="t", strict=True)
            hits = idx.search(SECRET, tenant="t", mode="bm25", include_history=True)
            assert not [h for h in hits if SECRET in h.text]
    finally:
        stop.set()
        t.join(5)
    with idx.db.connection() as conn:
        n = conn.execute(
            "SELECT count(*) FROM chunks WHERE strpos(text, %s) > 0", (SECRET,)
        ).fetchone()[0]
    assert n == 0
    idx.close()


def test_sync_roots_are_per_tenant_and_errors_name_only_the_callers(fs) -> None:
    live, root, own = fs["live"], fs["root"], fs["own"]
    acme = root / "acme" / "handbook"
    acme.mkdir()
    (acme / "p.md").write_text("# P\n\nThe capybara lot opens at six.\n")
    (own / "i.md").write_text("# I\n\nThe initech stapler rule.\n")
    with httpx.Client(base_url=live.url, timeout=60) as c:
        # globex's admin may not sync acme's folder, nor the shared root itself
        for path in (acme, root / "acme", root, root / "globex" / ".." / "acme"):
            r = c.post("/v1/sync", json={"path": str(path)}, headers=live.headers("globex"))
            assert r.status_code == 403, r.text
            msg = r.json()["error"]["message"]
            assert str(root / "acme") not in msg.replace(str(path), "") and str(own) not in msg
            assert str(root / "globex") in msg  # its own root, so it knows what it may sync
        # TENANT=DIR gives one tenant one folder; a tenant with no root is told so
        assert [Path(k).name for k in _sync(c, live, "initech", own)["added"]] == ["i.md"]
        r = c.post("/v1/sync", json={"path": str(own)}, headers=live.headers("acme"))
        assert r.status_code == 403 and str(own) not in r.json()["error"]["message"].replace(
            str(own), "", 1
        )
        r = c.post("/v1/sync", json={"path": str(acme)}, headers=live.headers("hooli"))
        msg = r.json()["error"]["message"]
        assert r.status_code == 403 and "no server folder is configured for tenant 'hooli'" in msg
        assert str(root) not in msg.replace(str(acme), "") and str(own) not in msg
        # acme may, and what it synced is acme's only
        _sync(c, live, "acme", acme)
        r = c.post(
            "/v1/search",
            json={"query": "capybara lot", "mode": "bm25"},
            headers=live.headers("globex"),
        )
        assert r.json()["hits"] == []
