"""The hand-built array encodings read back as the values psycopg would have sent."""

from __future__ import annotations

import psycopg
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.store import params

_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


@settings(max_examples=60, deadline=None)
@given(
    arrays=st.lists(st.lists(_TEXT, max_size=5).map(tuple), min_size=1, max_size=6),
    numbers=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40),
    terms=st.lists(
        st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1), max_size=30
    ),
)
def test_encodings_read_back_exactly(pg_url, arrays, numbers, terms):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS enc (i int, a text[])")
        conn.execute("TRUNCATE enc")
        with conn.cursor() as cur, cur.copy("COPY enc (i, a) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["int4", "bytea"])  # the bytes go to text[]'s receive function
            for i, a in enumerate(arrays):
                cp.write_row((i, params.text_array_binary(a)))
        got = conn.execute("SELECT a FROM enc ORDER BY i").fetchall()
        assert [tuple(r[0]) for r in got] == arrays
        back = conn.execute(
            "SELECT %s::int8[], string_to_array(%s, ' ')",
            (params.ints(numbers), params.words(terms)),
        ).fetchone()
        assert back[0] == numbers
        assert back[1] == terms


def test_embedding_cache_keeps_vectors_to_the_bit(fake_index):
    """The embedding cache is written with the binary vector format: every float32 comes
    back exactly (and a pgvector value read from the cache goes back in unchanged)."""
    import numpy as np

    from ragline.store.documents import cached_embeddings, store_embeddings

    rng = np.random.default_rng(3)
    vecs = {f"h{i}": rng.standard_normal(384).astype(np.float32) for i in range(20)}
    vecs["tiny"] = np.full(384, np.float32(1e-38))
    db = fake_index.db
    store_embeddings(db, "m", "default", vecs)
    got = cached_embeddings(db, "m", "default", list(vecs))
    assert set(got) == set(vecs)
    for h, v in vecs.items():
        np.testing.assert_array_equal(np.asarray(got[h].to_numpy(), dtype=np.float32), v)
    store_embeddings(db, "m2", "default", got)  # pgvector values, as a cache hit returns them
    again = cached_embeddings(db, "m2", "default", list(vecs))
    for h, v in vecs.items():
        np.testing.assert_array_equal(np.asarray(again[h].to_numpy(), dtype=np.float32), v)
