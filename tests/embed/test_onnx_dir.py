"""OnnxDirEmbedder on a real model directory (MiniLM from its wheels) and on tiny graphs
the tests write with ``onnx.helper`` (pooling modes, truncation, pre-pooled outputs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragline.core.errors import ConfigError
from ragline.core.protocols import Embedder
from ragline.embed.minilm import MiniLMEmbedder
from ragline.embed.onnx_dir import OnnxDirEmbedder, pool

from . import minilm_dir

TEXTS = [
    "PostgreSQL stores the vectors in an HNSW index.",
    "Chunks overlap by a few sentences so answers that straddle a boundary survive.",
    "short",
    "The quick brown fox jumps over the lazy dog. " * 60,  # longer than 256 tokens: truncated
]


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def real_dir(tmp_path_factory):
    return minilm_dir(tmp_path_factory.mktemp("minilm-onnx"))


# -- a real model directory -----------------------------------------------------------
def test_matches_minilm_embedder(real_dir, minilm):
    emb = OnnxDirEmbedder(real_dir)
    assert isinstance(emb, Embedder)
    assert (emb.dim, emb.max_tokens, emb.pooling) == (384, 256, "mean")
    assert emb._session is None  # light constructor: dim came from the configs
    docs = emb.embed_documents(TEXTS)
    assert docs.dtype == np.float32 and docs.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(docs, minilm.embed_documents(TEXTS), atol=1e-5)
    np.testing.assert_allclose(emb.embed_query(TEXTS[0]), minilm.embed_query(TEXTS[0]), atol=1e-5)
    for t in TEXTS:
        assert emb.count_tokens(t) == minilm.count_tokens(t)
    assert (emb.calls, emb.texts_embedded) == (2, len(TEXTS) + 1)


def test_model_id_is_a_content_hash(real_dir, tmp_path):
    a = OnnxDirEmbedder(real_dir)
    assert a.model_id.startswith("onnx-dir:") and len(a.model_id) == len("onnx-dir:") + 12
    copy = shutil.copytree(real_dir, tmp_path / "elsewhere")
    assert OnnxDirEmbedder(copy).model_id == a.model_id  # the path is not part of it
    assert OnnxDirEmbedder(copy, pooling="cls").model_id != a.model_id
    tok = json.loads((copy / "tokenizer.json").read_text())
    tok["truncation"] = None
    (copy / "tokenizer.json").write_text(json.dumps(tok))
    assert OnnxDirEmbedder(copy).model_id != a.model_id


def test_nested_onnx_layout(tmp_path, minilm):
    d = minilm_dir(tmp_path / "nested", nested=True)
    assert not (d / "model.onnx").exists()
    emb = OnnxDirEmbedder(d)
    assert emb.model_file == d / "onnx" / "model.onnx"
    np.testing.assert_allclose(
        emb.embed_documents(TEXTS[:2]), minilm.embed_documents(TEXTS[:2]), atol=1e-5
    )


def test_prompts_from_config(tmp_path, minilm):
    d = minilm_dir(tmp_path / "prompted")
    (d / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: ", "document": "passage: "}})
    )
    emb = OnnxDirEmbedder(d)
    np.testing.assert_allclose(
        emb.embed_query("cats"), minilm.embed_query("query: cats"), atol=1e-5
    )
    np.testing.assert_allclose(
        emb.embed_documents(["cats"])[0], minilm.embed_documents(["passage: cats"])[0], atol=1e-5
    )
    assert emb.count_tokens("cats") == minilm.count_tokens("passage: cats")
    assert OnnxDirEmbedder(d, query_prompt="", document_prompt="").embed_query("x").shape == (384,)


def test_missing_files_are_named(tmp_path):
    with pytest.raises(ConfigError, match="directory not found"):
        OnnxDirEmbedder(tmp_path / "nope")
    d = minilm_dir(tmp_path / "m")
    (d / "tokenizer.json").unlink()
    with pytest.raises(ConfigError, match=r"missing .*tokenizer\.json"):
        OnnxDirEmbedder(d)
    (d / "model.onnx").unlink()
    with pytest.raises(ConfigError, match=r"model\.onnx or onnx/model\.onnx"):
        OnnxDirEmbedder(d)


def test_unsupported_configs_are_refused(tmp_path):
    d = minilm_dir(tmp_path / "m")
    cfg = d / "1_Pooling" / "config.json"
    c = json.loads(cfg.read_text())
    cfg.write_text(json.dumps({**c, "pooling_mode_cls_token": True}))
    with pytest.raises(ConfigError, match="exactly one of mean, cls, max, lasttoken"):
        OnnxDirEmbedder(d)
    cfg.write_text(json.dumps({"pooling_mode": "cls"}))
    assert OnnxDirEmbedder(d).pooling == "cls"
    mods = json.loads((d / "modules.json").read_text())
    mods.append(
        {"idx": 3, "name": "3", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
    )
    (d / "modules.json").write_text(json.dumps(mods))
    with pytest.raises(ConfigError, match="Dense"):
        OnnxDirEmbedder(d)
    with pytest.raises(ConfigError, match="choose one of"):
        OnnxDirEmbedder(minilm_dir(tmp_path / "n"), pooling="median")


def test_max_seq_length_fallbacks(tmp_path):
    d = minilm_dir(tmp_path / "m")
    assert OnnxDirEmbedder(d).max_tokens == 256
    (d / "sentence_bert_config.json").unlink()
    assert OnnxDirEmbedder(d).max_tokens == 512  # config.json max_position_embeddings
    assert OnnxDirEmbedder(d, max_seq_length=64).max_tokens == 64


# -- tiny graphs written by the test ------------------------------------------------------
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "red", "green", "blue", "apple", "sky", "grass"]
D = 6


def tiny_dir(
    root: Path, *, pooled_output: bool = False, static_dim: bool = True
) -> tuple[Path, np.ndarray]:
    """A model that maps each token id to a row of a fixed table (its 'hidden state'),
    masked by attention_mask; optionally mean-pooled in the graph as sentence_embedding."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    rng = np.random.default_rng(7)
    table = rng.normal(size=(len(VOCAB), D)).astype(np.float32)
    last = D if static_dim else "dim"
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["tok"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["tok", "mask3"], ["hidden"]),
    ]
    inits = [
        numpy_helper.from_array(table, "table"),
        numpy_helper.from_array(np.array([2], np.int64), "axis2"),
    ]
    if pooled_output:
        nodes.append(
            helper.make_node("ReduceMean", ["hidden"], ["sentence_embedding"], axes=[1], keepdims=0)
        )
        out = helper.make_tensor_value_info(
            "sentence_embedding", TensorProto.FLOAT, ["batch", last]
        )
    else:
        out = helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "seq", last]
        )
        nodes[-1].output[0] = "last_hidden_state"
    graph = helper.make_graph(
        nodes,
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [out],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    root.mkdir(parents=True)
    onnx.save(model, str(root / "model.onnx"))
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.save(str(root / "tokenizer.json"))
    return root, table


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_tiny_graph_pooling_modes(tmp_path):
    d, table = tiny_dir(tmp_path / "tiny")
    ids = {"red apple": [2, 4, 7, 3], "green grass sky": [2, 5, 9, 8, 3]}
    texts = list(ids)
    expected = {
        "mean": [table[ids[t]].mean(axis=0) for t in texts],
        "cls": [table[2], table[2]],
        "max": [table[ids[t]].max(axis=0) for t in texts],
        "lasttoken": [table[3], table[3]],  # [SEP], despite the shorter row's padding
    }
    for mode, rows in expected.items():
        emb = OnnxDirEmbedder(d, pooling=mode)
        assert emb.dim == D and emb.max_tokens == 512  # no configs: defaults
        np.testing.assert_allclose(emb.embed_documents(texts), unit(np.array(rows)), atol=1e-6)
    assert OnnxDirEmbedder(d).pooling == "mean"  # no modules.json, no 1_Pooling
    assert OnnxDirEmbedder(d).count_tokens("red apple blue") == 3


def test_tiny_graph_truncates_to_max_seq_length(tmp_path):
    d, table = tiny_dir(tmp_path / "tiny")
    (d / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 4}))
    emb = OnnxDirEmbedder(d)
    got = emb.embed_documents(["red green blue apple"])[0]
    np.testing.assert_allclose(got, unit(table[[2, 4, 5, 3]].mean(axis=0)), atol=1e-6)


def test_tiny_graph_pre_pooled_output_and_dim_probe(tmp_path):
    d, table = tiny_dir(tmp_path / "pooled", pooled_output=True, static_dim=False)
    emb = OnnxDirEmbedder(d)
    assert emb._dim is None
    assert emb.dim == D  # learnt by running the model once
    got = emb.embed_query("sky")
    np.testing.assert_allclose(got, unit(table[[2, 8, 3]].mean(axis=0)), atol=1e-6)


def test_pool_function_masks_padding():
    hidden = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    mask = np.array([[1, 1, 1], [1, 1, 0]])
    np.testing.assert_allclose(pool(hidden, mask, "mean")[1], hidden[1, :2].mean(axis=0))
    np.testing.assert_allclose(pool(hidden, mask, "max")[1], hidden[1, 1])
    np.testing.assert_allclose(pool(hidden, mask, "lasttoken")[1], hidden[1, 1])
    np.testing.assert_allclose(pool(hidden, mask, "cls"), hidden[:, 0])
