"""`sync` keeps the index equal to a folder: add, change, delete, rename, no-op."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ragline.cli.main import cli


def _keys(index) -> set[str]:
    return {d.doc_key.rsplit("/", 1)[-1] for d in index.documents()}


def test_add_change_delete_rename_noop(fake_index, tmp_path):
    root = tmp_path / "folder"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\n\nAardvarks eat ants.\n")
    (root / "b.md").write_text("# Beta\n\nBadgers dig setts.\n")
    (root / "sub" / "c.txt").write_text("Cormorant notes\n\nCormorants dive for fish.\n")
    (tmp_path / "outside.md").write_text("# Outside\n\nNot in the folder.\n")
    fake_index.ingest(tmp_path / "outside.md")

    r = fake_index.sync(root)
    assert len(r.added) == 3 and not r.deleted and not r.renamed
    assert _keys(fake_index) == {"a.md", "b.md", "c.txt", "outside.md"}

    calls = fake_index.embedder.calls
    r = fake_index.sync(root)  # no-op
    assert len(r.unchanged) == 3 and not (r.added or r.updated or r.deleted or r.renamed)
    assert fake_index.embedder.calls == calls

    (root / "a.md").write_text("# Alpha\n\nAardvarks eat termites too.\n")  # change
    (root / "b.md").unlink()  # delete
    (root / "sub" / "c.txt").rename(
        root / "sub" / "c-renamed.txt"
    )  # rename (title from first line)
    (root / "d.md").write_text("# Delta\n\nDingoes howl.\n")  # add
    r = fake_index.sync(root)
    assert [k.rsplit("/", 1)[-1] for k in r.updated] == ["a.md"]
    assert [k.rsplit("/", 1)[-1] for k in r.added] == ["d.md"]
    assert [k.rsplit("/", 1)[-1] for k in r.deleted] == ["b.md"]
    assert [(a.rsplit("/", 1)[-1], b.rsplit("/", 1)[-1]) for a, b in r.renamed] == [
        ("c.txt", "c-renamed.txt")
    ]
    assert _keys(fake_index) == {"a.md", "c-renamed.txt", "d.md", "outside.md"}
    assert not fake_index.search("badgers setts", mode="bm25")
    assert fake_index.search("termites", mode="bm25")
    assert all("termites" in h.text for h in fake_index.search("aardvarks", mode="bm25"))


def test_rename_moves_without_reembedding(fake_index, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text("# Field Guide\n\nOtters hold hands while sleeping.\n")
    fake_index.sync(root)
    calls = fake_index.embedder.calls
    (root / "guide.md").rename(root / "field-guide.md")
    r = fake_index.sync(root)
    assert [(a.rsplit("/", 1)[-1], b.rsplit("/", 1)[-1]) for a, b in r.renamed] == [
        ("guide.md", "field-guide.md")
    ]
    assert not r.deleted and not r.added and fake_index.embedder.calls == calls
    hits = fake_index.search("otters", mode="bm25")
    assert len(hits) == 1 and hits[0].source.endswith("field-guide.md")


def test_unparsable_file_keeps_previous_version(fake_index, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    f = root / "note.md"
    f.write_text("# Note\n\nPlatypuses lay eggs.\n")
    fake_index.sync(root)
    f.write_bytes(b"\x00\x01\x02binary now\x00" * 50)
    r = fake_index.sync(root)
    assert len(r.failed) == 1 and not r.deleted
    assert fake_index.search("platypuses", mode="bm25")


def test_sync_cli_json(pg_url, schema, tmp_path):
    (tmp_path / "x.md").write_text("# X\n\nXylophones are loud.\n")
    env = {
        "RAGLINE_DATABASE_URL": pg_url,
        "RAGLINE_DB_SCHEMA": schema,
        "RAGLINE_DATA_DIR": "",
        "RAGLINE_EMBEDDER": "minilm",
    }
    res = CliRunner().invoke(
        cli, ["sync", str(tmp_path), "--json"], env=env, catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert len(out["added"]) == 1 and out["deleted"] == [] and out["renamed"] == []
    res = CliRunner().invoke(cli, ["sync", str(tmp_path / "x.md")], env=env)
    assert res.exit_code == 2 and "is a file" in res.output
