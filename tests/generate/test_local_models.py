"""Local models from part wheels: assembly is checked, and the 1.5B model answers with
citations through ``--generator local`` (skipped unless its parts are installed:
``make install-local-llm``)."""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

import pytest

from ragline.core.errors import ConfigError, MissingDependencyError
from ragline.generate import local_models as lm


def _fake_model(tmp_path: Path, monkeypatch, payloads: list[bytes], sha: str | None = None):
    for i, data in enumerate(payloads, 1):
        pkg = tmp_path / "site" / f"fakepart{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("RAGLINE_MODELS_DIR", str(tmp_path / "models"))
    whole = b"".join(payloads)
    model = lm.LocalModel(
        name="fake", title="Fake", packages=("fakepart1", "fakepart2", "fakepart3"),
        part_glob="data/part*.bin", size=len(whole),
        sha256=sha or hashlib.sha256(whole).hexdigest(), license="Apache-2.0",
        install="pip install fakepart1 fakepart2 fakepart3",
    )  # fmt: skip
    monkeypatch.setitem(lm.MODELS, "fake", model)
    return whole


def test_parts_join_in_order_and_are_checked(tmp_path, monkeypatch):
    whole = _fake_model(tmp_path, monkeypatch, [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3])
    path = lm.assemble("fake")
    assert path.read_bytes() == whole and "Apache" in path.with_suffix(".LICENSE.txt").read_text()
    assert {r["name"]: r["assembled"] for r in lm.status()}["fake"] is True
    assert lm.assemble("fake") == path  # reused


def test_a_wrong_checksum_is_refused(tmp_path, monkeypatch):
    _fake_model(tmp_path, monkeypatch, [b"x", b"y", b"z"], sha="0" * 64)
    with pytest.raises(ConfigError, match="not the expected"):
        lm.assemble("fake")
    assert not list((tmp_path / "models").glob("*.gguf*"))


def test_missing_parts_name_the_install(tmp_path, monkeypatch):
    _fake_model(tmp_path, monkeypatch, [b"x", b"y"])  # part 3 is not installed
    with pytest.raises(MissingDependencyError, match="fakepart3.*pip install fakepart1"):
        lm.assemble("fake")
    with pytest.raises(ConfigError, match="choose one of: qwen2.5-coder-1.5b"):
        lm.assemble("nope")


QWEN = lm.MODELS[lm.DEFAULT_LOCAL]
_files, _missing = lm.part_files(QWEN)


@pytest.mark.skipif(bool(_missing), reason="needs the Qwen part wheels (make install-local-llm)")
def test_local_qwen_answers_with_citations(pg_url, schema):
    pytest.importorskip("llama_cpp", reason="needs llama-cpp-python")
    from tests.conftest import make_index
    from tests.fakes import FakeEmbedder

    examples = Path(__file__).resolve().parents[2] / "examples" / "docs"
    idx = make_index(
        pg_url, schema, embedder=FakeEmbedder(), generator="local", generator_max_tokens=80
    )
    try:
        idx.ingest(examples / "x570-user-manual.md")
        t0 = time.perf_counter()
        a = idx.ask("How long does the X-570 battery last on a full charge?", mode="bm25", k=3)
        seconds = time.perf_counter() - t0
        assert a.generator == "local:qwen2.5-coder-1.5b"
        assert not a.abstained, a.notes
        assert "10 hours" in a.text and re.search(r"\[\d\]", a.text), a.text
        assert a.citations and a.citations[0].source.endswith("x570-user-manual.md")
        print(f"local qwen answer in {seconds:.1f}s: {a.text!r}")
    finally:
        idx.close()
