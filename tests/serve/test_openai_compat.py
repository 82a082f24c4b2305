"""Sources of a streamed chat answer: its markers are positions in the passages read."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragline.core.types import Answer, Hit
from ragline.serve.openai_compat import ChatMessage, sources_for, split_messages, with_footer


def _hit(i: int) -> Hit:
    return Hit(
        chunk_id=100 + i,
        document_id=i,
        doc_key=f"d{i}",
        title=f"Title {i}",
        source=f"/docs/d{i}.md",
        text=f"passage {i}",
        score=1.0 / i,
        rank=i,
        heading_path=("H",),
    )


def test_streamed_markers_map_to_the_passages_read():
    hits = tuple(_hit(i) for i in (1, 2, 3))
    answer = Answer("q?", "Checked text [1].", (), False, hits=hits)
    got = sources_for("First [3]. Second [1, 3]. Bogus [9].", answer)
    assert [(c["number"], c["chunk_id"], c["title"], c["text"]) for c in got] == [
        (1, 101, "Title 1", "passage 1"),
        (3, 103, "Title 3", "passage 3"),
    ]
    footer = with_footer("First [3].", got)
    assert footer.endswith("[3] Title 3 › H (/docs/d3.md)")
    assert sources_for("no markers at all", answer) == []


@pytest.mark.parametrize("bad", [{"a": 1}, ["x"], 3, True])
def test_text_parts_must_hold_strings(bad):
    with pytest.raises(ValidationError, match="content part 1 .* not a string"):
        ChatMessage(
            role="user", content=[{"type": "text", "text": "ok"}, {"type": "text", "text": bad}]
        )
    # other part types may carry anything; a null text is no text
    m = ChatMessage(
        role="user",
        content=[
            {"type": "text", "text": "Why?"},
            {"type": "text", "text": None},
            {"type": "image_url", "image_url": {"url": "x"}},
        ],
    )
    assert split_messages([m])[0] == "Why?"
