"""The stream holds one chunk of record dicts at a time: chunk k is freed before chunk k + 1
is parsed (``enumerate``'s reused result tuple once kept it alive during the next parse, two
chunks of dicts at the peak)."""

from __future__ import annotations

import json
import weakref

import kg_rageval.records as records_pkg
from kg_rageval.scoring.stream import stream_families


class _Chunk(list):
    """A chunk that can be watched with a weak reference."""


def test_previous_chunk_freed_before_the_next_is_read(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}"}) + "\n" for i in range(10)))
    real = records_pkg.iter_record_chunks
    alive_at_read: list[bool] = []

    def watched(*args, **kwargs):
        last = None
        for chunk in real(*args, **kwargs):
            if last is not None:  # the consumer asked for the next chunk: k must be gone
                alive_at_read.append(last() is not None)
            out = _Chunk(chunk)
            del chunk
            last = weakref.ref(out)
            yield out
            del out

    monkeypatch.setattr(records_pkg, "iter_record_chunks", watched)
    seen: list[int] = []
    stream_families({}, path, 3, observers=(lambda k, chunk: seen.append(len(chunk)),))
    assert seen == [3, 3, 3, 1]
    assert alive_at_read == [False, False, False]
