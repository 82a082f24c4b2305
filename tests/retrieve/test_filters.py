"""Metadata filters apply inside both legs, combined with permissions."""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from ragline.cli.main import cli
from ragline.core.errors import ConfigError, FilterError
from ragline.core.filters import Filters


def _setup(idx, tmp_path):
    (tmp_path / "hu.txt").write_text(
        "Akkumulátor töltés\n\nA robot akkumulátora tíz órán át működik egy töltéssel.\n"
    )
    (tmp_path / "en.md").write_text(
        "---\nproduct: X-570\n---\n# Battery\n\nThe robot battery lasts ten hours per charge.\n"
    )
    (tmp_path / "old.html").write_text(
        "<html><head><title>Battery memo</title></head><body><h1>Battery memo</h1>"
        "<p>The robot battery used to last eight hours per charge.</p></body></html>"
    )
    old = time.time() - 400 * 86400
    os.utime(tmp_path / "old.html", (old, old))
    idx.ingest(tmp_path, metadata={"department": "ops"})
    (tmp_path / "hr.md").write_text("# HR battery\n\nHR notes mention the robot battery too.\n")
    idx.ingest(tmp_path / "hr.md", groups=["hr"], metadata={"department": "hr"})


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_filters_in_each_leg(fake_index, tmp_path, mode):
    _setup(fake_index, tmp_path)

    def names(**kw):
        hits = fake_index.search("robot battery akkumulátor töltés charge", k=20, mode=mode, **kw)
        return sorted(h.source.rsplit("/", 1)[-1] for h in hits)

    assert names() == ["en.md", "hu.txt", "old.html"]
    assert names(filters={"language": "hu"}) == ["hu.txt"]
    assert names(filters={"type": "md"}) == ["en.md"]
    assert names(filters={"type": "md|html"}) == ["en.md", "old.html"]
    assert names(filters={"product": "X-570"}) == ["en.md"]
    assert names(
        filters={
            "modified_before": time.strftime("%Y-%m-%d", time.gmtime(time.time() - 300 * 86400))
        }
    ) == ["old.html"]
    assert names(
        filters={"modified_after": time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86400))}
    ) == ["en.md", "hu.txt"]
    assert names(filters={"source": str(tmp_path / "en")}) == ["en.md"]
    # filters never widen permissions: hr.md needs the hr group even when the filter names it
    # (to a caller outside hr the value does not exist: the error lists only what it can read)
    with pytest.raises(FilterError, match="values of 'department': ops$"):
        names(filters={"department": "hr"})
    hr = fake_index.search(
        "robot battery", k=20, mode=mode, groups=["hr"], filters={"department": "hr"}
    )
    assert [h.source.rsplit("/", 1)[-1] for h in hr] == ["hr.md"]


def test_filters_that_cannot_match_say_so(fake_index, tmp_path):
    _setup(fake_index, tmp_path)
    q = "robot battery"
    with pytest.raises(
        FilterError, match=r"unknown filter key 'langauge'; known keys: language, .*department"
    ):
        fake_index.search(q, filters={"langauge": "hu"})
    with pytest.raises(
        FilterError, match=r"language=de matches no document; languages present: en, hu"
    ):
        fake_index.search(q, filters={"language": "de"})
    with pytest.raises(
        FilterError,
        match=r"type=docs matches no document; types present: text/html, text/markdown, text/plain",
    ):
        fake_index.search(q, filters={"type": "docs"})
    with pytest.raises(FilterError, match="values of 'product': X-570"):
        fake_index.ask(q, filters={"product": "X-999"})
    with pytest.raises(
        FilterError, match="no document's source starts with the source filter's prefix"
    ):
        fake_index.search(q, filters={"source": "/nowhere/"})
    # one valid value among several is enough; known keys and values that merely do not
    # meet (English documents of hu's type) return nothing, without an error
    assert fake_index.search(q, filters={"language": "hu|de"})
    assert fake_index.search(q, filters={"language": "hu", "type": "md"}) == []


def test_bad_filters_are_explained():
    with pytest.raises(ConfigError, match="ISO date"):
        Filters.parse({"modified_after": "last tuesday"})
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        Filters.from_pairs(["language"])
    assert Filters.parse({}) is None


def test_cli_meta_and_filter(pg_url, schema, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nAlpacas graze on the hillside.\n")
    (tmp_path / "b.md").write_text("# B\n\nAlpacas sleep in the barn.\n")
    env = {"RAGLINE_DATABASE_URL": pg_url, "RAGLINE_DB_SCHEMA": schema, "RAGLINE_DATA_DIR": ""}
    r = CliRunner().invoke(cli, ["ingest", str(tmp_path / "a.md"), "--meta", "farm=north"], env=env)
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["ingest", str(tmp_path / "b.md"), "--meta", "farm=south"], env=env)
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["search", "alpacas", "--filter", "farm=south", "--json"], env=env)
    hits = json.loads(r.output)["hits"]
    assert [h["source"].rsplit("/", 1)[-1] for h in hits] == ["b.md"]
    r = CliRunner().invoke(
        cli, ["search", "alpacas", "--filter", "modified_after=yesterday"], env=env
    )
    assert r.exit_code == 1 and "ISO date" in r.output
    # changing only the metadata of an unchanged file updates it without re-embedding
    r = CliRunner().invoke(
        cli, ["ingest", str(tmp_path / "b.md"), "--meta", "farm=east", "--json"], env=env
    )
    out = json.loads(r.output)
    assert out["embedded"] == 0 and len(out["updated"]) == 1
    r = CliRunner().invoke(cli, ["search", "alpacas", "--filter", "farm=east", "--json"], env=env)
    assert [h["source"].rsplit("/", 1)[-1] for h in json.loads(r.output)["hits"]] == ["b.md"]
