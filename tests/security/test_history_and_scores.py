"""Two properties of what a caller can infer rather than read.

- **Scores say nothing of unreadable documents.** What a key gets from a search (which
  chunks, in which order, with which scores, in every mode) is the same whether or not
  documents it may not read exist — other tenants' documents and its own tenant's in
  groups it lacks — in every mode: BM25 statistics (N, avgdl, df) are sums over the ACL
  classes the caller may read (issue 13).
- **History keeps the current permissions.** A key never reads an old version of a
  document it could not read as the current one: every kept version carries the current
  version's groups (issue 14 #6).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragline.ingest.sources import text_source
from tests.conftest import make_index
from tests.fakes import FakeEmbedder
from tests.security.conftest import LONG
from tests.security.world import GROUPS, canary

WORDS = ("pump", "valve", "filter", "boiler", "heron", "quartz", "lantern", "meadow")
_seq = itertools.count()
COMMON = settings(
    max_examples=30 if LONG else 8,
    deadline=None,
    derandomize=not LONG,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def index(pg_url: str, reranker_dir) -> Any:
    from tests.serve.conftest import own_schema

    with own_schema(pg_url) as schema:
        idx = make_index(
            pg_url,
            schema,
            embedder=FakeEmbedder(),
            keep_versions=2,
            reranker=f"onnx:{reranker_dir}",
            traces=False,
        )
        yield idx
        idx.close()


def _text(words: list[str], tag: str) -> str:
    return f"Notes {tag}.\n\nThe " + " and the ".join(words) + f" are checked daily ({tag})."


def _ingest(index: Any, tenant: str, groups: list[str], docs: list[tuple[str, str]]) -> None:
    sources = [text_source(key, key, text) for key, text in docs]
    report = index.ingest_sources(sources, tenant=tenant, groups=groups)
    assert not report.failed, report.failed


def _results(index: Any, tenant: str, groups: list[str], query: str, mode: str) -> list[Any]:
    res = index.search_result(query, tenant=tenant, groups=groups, mode=mode, k=20)
    return [
        (h.doc_key, h.rank, round(h.score, 9), {k: round(v, 9) for k, v in h.scores.items()})
        for h in res.hits
    ]


corpus = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), min_size=1, max_size=4)


def _noise_invariance(index: Any, counters: Any, docs: list[list[str]], mode: str, same: bool):
    n = next(_seq)
    tenant, groups = f"s{n}", ["red"]
    _ingest(index, tenant, [], [(f"d{n}-{i}", _text(w, f"n{n}d{i}")) for i, w in enumerate(docs)])
    queries = [" ".join(w) for w in docs] + list(WORDS[:3])
    before = [_results(index, tenant, groups, q, mode) for q in queries]
    # the same texts again, where this key may not read them
    noise = [(f"x{n}-{i}", _text(w, f"x{n}d{i}")) for i, w in enumerate(docs)]
    if same:
        _ingest(index, tenant, ["blue"], noise)  # its own tenant, a group it lacks
    else:
        _ingest(index, f"o{n}", [], noise)  # another tenant
    after = [_results(index, tenant, groups, q, mode) for q in queries]
    counters.query(f"scores:{mode}", 2 * len(queries))
    assert before == after


@COMMON
@given(docs=corpus)
@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid", "rerank"])
def test_other_tenants_documents_change_no_score(index, counters, mode, docs) -> None:
    _noise_invariance(index, counters, docs, mode, same=False)


@COMMON
@given(docs=corpus)
@pytest.mark.parametrize(
    "mode",
    ["vector", "bm25", "hybrid", "rerank"],
)
def test_unreadable_documents_of_the_tenant_change_no_score(index, counters, mode, docs) -> None:
    _noise_invariance(index, counters, docs, mode, same=True)


group_sets = st.lists(st.sampled_from(GROUPS), max_size=2, unique=True)


@COMMON
@given(first=group_sets, then=group_sets, reader=group_sets)
@example(first=[], then=["red"], reader=[])  # public v1, restricted v2: the review's case
def test_history_is_readable_only_under_the_current_permissions(
    index, counters, first, then, reader
) -> None:
    n = next(_seq)
    tenant, key = f"h{n}", f"doc{n}"
    old, new = canary("hist", n, 1), canary("hist", n, 2)
    _ingest(index, tenant, first, [(key, f"The code word is {old}.")])
    _ingest(index, tenant, then, [(key, f"The code word is {new}.")])
    may_read_current = not then or bool(set(then) & set(reader))
    for mode in ("bm25", "vector", "hybrid"):
        hits = index.search(old, tenant=tenant, groups=reader, mode=mode, include_history=True)
        counters.query(f"history:{mode}")
        leaked = [h for h in hits if old in h.text]
        if not may_read_current:
            assert not leaked, (first, then, reader, mode)
