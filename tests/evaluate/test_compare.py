"""`ragline index compare`: paired per-query differences and their p-value."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ragline.cli.main import cli
from ragline.evaluate.compare import compare_runs, paired_randomization_p
from ragline.rebuild import build_version
from tests.conftest import EXAMPLES, REPO, make_index


def test_randomization_p_value():
    same = [0.2, 0.5, 0.9, 0.1]
    assert paired_randomization_p(same, same) == 1.0
    a = [0.0] * 30
    b = [1.0] * 30  # every query better: a sign flip almost never reaches the observed sum
    assert paired_randomization_p(a, b) < 0.001
    assert paired_randomization_p(a, b) == paired_randomization_p(b, a)  # two-sided
    mixed = [1.0, 0.0] * 15
    assert paired_randomization_p(a, mixed[:30]) > paired_randomization_p(a, b)
    with pytest.raises(ValueError):
        paired_randomization_p([1.0], [1.0, 2.0])


def test_compare_runs_pairs_queries():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    a = {"q1": ["d1"], "q2": ["x", "d2"]}
    b = {"q1": ["d1"], "q2": ["d2"]}
    out = compare_runs(a, b, qrels, metrics=("mrr@10",))
    assert out["mrr@10"] == {"a": 0.75, "b": 1.0, "diff": 0.25, "p_value": 1.0, "queries": 2}


def test_cli_compare_two_versions(pg_url, schema):
    from tests.fakes import FakeEmbedder

    # a fake model (registered as a backend in conftest: the CLI reopens the collection
    # with it): real ONNX batches grow this process's memory for later tests' RSS bounds
    fake = FakeEmbedder()
    idx = make_index(pg_url, schema, embedder=fake)
    idx.ingest(EXAMPLES)
    assert build_version(idx, chunking="fixed")["state"] == "ready"
    idx.close()
    env = {"RAGLINE_DATABASE_URL": pg_url, "RAGLINE_DB_SCHEMA": schema}
    questions = str(REPO / "examples" / "questions.jsonl")
    out = CliRunner().invoke(
        cli, ["index", "compare", "1", "2", "--questions", questions, "--json"], env=env
    )
    assert out.exit_code == 0, out.output
    ndcg = json.loads(out.output)["metrics"]["ndcg@10"]
    assert 0 < ndcg["a"] <= 1 and 0 < ndcg["b"] <= 1 and 0 < ndcg["p_value"] <= 1
    assert ndcg["diff"] == pytest.approx(
        ndcg["b"] - ndcg["a"], abs=2e-4
    )  # each rounded to 4 places
    text = CliRunner().invoke(
        cli, ["index", "compare", "1", "2", "--questions", questions], env=env
    )
    assert "ndcg@10" in text.output and "p-value" in text.output
