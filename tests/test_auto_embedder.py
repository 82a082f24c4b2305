"""Embedder 'auto': chosen from the first documents, recorded, shown by status, reused."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ragline.cli.main import cli


def _run(env, *args, code=0):
    r = CliRunner().invoke(cli, list(args), env=env)
    assert r.exit_code == code, r.output
    return r.output


def test_auto_picks_multilingual_for_hungarian_and_minilm_for_english(pg_url, schema, tmp_path):
    env = {"RAGLINE_DATABASE_URL": pg_url, "RAGLINE_DB_SCHEMA": schema, "RAGLINE_DATA_DIR": ""}
    hu = tmp_path / "hu"
    hu.mkdir()
    (hu / "a.md").write_text(
        "# Hulladék\n\nA szelektív hulladékot minden második kedden szállítják el a ház elől.\n"
    )
    en = tmp_path / "en"
    en.mkdir()
    (en / "b.md").write_text(
        "# Waste\n\nRecycling is collected every other Tuesday from the kerb.\n"
    )
    st = json.loads(_run(env, "-c", "hu", "status", "--json"))
    assert st["embedder"].startswith("auto")
    _run(env, "-c", "hu", "ingest", str(hu))
    assert json.loads(_run(env, "-c", "hu", "status", "--json"))["embedder"].startswith(
        "multilingual-e5"
    )
    _run(env, "-c", "en", "ingest", str(en))
    assert json.loads(_run(env, "-c", "en", "status", "--json"))["embedder"].startswith(
        "all-MiniLM"
    )
    hits = json.loads(
        _run(env, "-c", "hu", "search", "mikor viszik el a szelektív hulladékot", "--json")
    )["hits"]
    assert hits and hits[0]["source"].endswith("a.md")
    # an explicit, different embedder on an existing collection is refused
    out = _run(env, "-c", "hu", "init", "--embedder", "minilm", code=1)
    assert "multilingual-e5" in out
    # searching a collection nothing was ingested into says so
    out = _run(env, "-c", "nothing", "search", "x", code=1)
    assert "ingest documents first" in out
