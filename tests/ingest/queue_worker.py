"""A `ragline worker` with the deterministic fake embedder, slowed down so a test can kill it
mid-task: ``python -m tests.ingest.queue_worker URL SCHEMA NAME STALE_AFTER SLEEP_S
[drain|wait] [BATCH_CHUNKS] [fake|fake-DIM|minilm]`` (bench/cluster.py runs it with a real
batch size, with vectors of the default model's dimension, and with MiniLM). The same
Worker class `ragline worker` runs; only the embedder differs."""

from __future__ import annotations

import sys
import time

from tests.conftest import make_index
from tests.fakes import FakeEmbedder


class SlowEmbedder(FakeEmbedder):
    def __init__(self, sleep_s: float, dim: int | None = None) -> None:
        super().__init__(dim)
        self.sleep_s = sleep_s

    def embed_documents(self, texts):
        time.sleep(self.sleep_s * len(texts))
        return super().embed_documents(texts)


def main() -> None:
    from ragline.ingest.queue import Worker

    url, schema, name, stale, sleep_s = sys.argv[1:6]
    batch = int(sys.argv[7]) if len(sys.argv) > 7 else 1
    if len(sys.argv) > 8 and sys.argv[8] == "minilm":
        from ragline.embed.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder(threads=1)
    else:
        kind = sys.argv[8] if len(sys.argv) > 8 else "fake"
        dim = int(kind.removeprefix("fake-")) if kind.startswith("fake-") else None
        embedder = SlowEmbedder(float(sleep_s), dim)
    index = make_index(url, schema, embedder=embedder, ingest_batch_chunks=batch)
    worker = Worker(index.db, lambda _c: index, name=name, stale_after=float(stale), poll_s=0.2)
    print("ready", flush=True)
    worker.run(drain=len(sys.argv) > 6 and sys.argv[6] == "drain")
    index.close()


if __name__ == "__main__":
    main()
