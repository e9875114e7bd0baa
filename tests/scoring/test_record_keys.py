"""``Scorer.reads``: the top-level record keys a family declares it reads. A ``score`` command
streaming such a family alone keeps only those keys of each record (``iter_record_chunks(keep=)``),
so a declaration that misses a key the family reads would change its numbers. Every declared
family is traced on the demo records (each record a dict that logs the keys asked of it) and
must ask for no other key; ``tests/scoring/test_streaming.py`` scores every family streamed
(projected) and whole (not) and finds them equal."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from family_demo import add_quality_sections, family_inputs
from stream_helpers import demo  # noqa: F401 (the fixture)

from kg_rageval.records import ROW_KEYS, iter_record_chunks, read_records
from kg_rageval.scoring import REGISTRY, get_scorer
from kg_rageval.scoring.stream import _kept_keys

DECLARED = sorted(n for n, sc in REGISTRY.items() if sc.reads is not None)


class _Traced(dict):
    """A record that logs the keys asked of it (and says so when it is walked whole)."""

    asked: ClassVar[set[str]] = set()

    def get(self, k, d=None):
        _Traced.asked.add(k)
        return dict.get(self, k, d)

    def __getitem__(self, k):
        _Traced.asked.add(k)
        return dict.__getitem__(self, k)

    def __contains__(self, k):
        _Traced.asked.add(k)
        return dict.__contains__(self, k)

    def keys(self):
        _Traced.asked.add("<every key>")
        return dict.keys(self)

    def items(self):
        _Traced.asked.add("<every key>")
        return dict.items(self)

    def values(self):
        _Traced.asked.add("<every key>")
        return dict.values(self)

    def __iter__(self):
        _Traced.asked.add("<every key>")
        return dict.__iter__(self)


def test_the_declared_families():
    """The families whose ``score`` command keeps only the keys they read (a new declaration is
    added here on purpose, with the trace below to back it)."""
    assert DECLARED == ["conformance", "hierarchy", "linking", "retrieval"]
    assert get_scorer("linking").record_keys == frozenset({*ROW_KEYS, "mentions", "text", "query"})
    assert get_scorer("hierarchy").record_keys == frozenset(ROW_KEYS)


@pytest.mark.parametrize("name", DECLARED)
def test_a_declared_family_reads_no_other_key(name, demo):
    sc = get_scorer(name)
    records = add_quality_sections(read_records(demo["path"]), demo["ontology"])
    assert any(set(r) - sc.record_keys - {"_line", "_source"} for r in records), "the demo has other keys"
    _Traced.asked = set()
    sc.bind(demo["ontology"], **family_inputs(name, demo))._call([_Traced(r) for r in records], None)
    assert _Traced.asked, "the trace saw the family's reads"
    assert _Traced.asked - sc.record_keys - {"_line", "_source"} == set()


def test_iter_record_chunks_keeps_the_named_keys_in_record_order(tmp_path):
    p = tmp_path / "r.jsonl"
    rows = [{"answer": {"text": "a"}, "id": "q1", "labels": {"gold": ["X"]}, "z": 1}, {"id": 2, "query": "b"}]
    p.write_text("\n".join(map(json.dumps, rows)) + "\n")
    (chunk,) = iter_record_chunks(p, keep=frozenset({"id", "labels", "query"}))
    assert chunk == [
        {"id": "q1", "labels": {"gold": ["X"]}, "_line": 1, "_source": str(p)},
        {"id": "2", "query": "b", "_line": 2, "_source": str(p)},  # an integer id as its text
    ]
    assert list(chunk[0]) == ["id", "labels", "_line", "_source"]


def test_a_stream_keeps_the_union_or_every_key():
    bounds = {n: get_scorer(n).bind(None) for n in ("hierarchy", "linking")}
    assert _kept_keys(bounds) == frozenset({*ROW_KEYS, "mentions", "text", "query"})
    assert REGISTRY["generation"].reads is None
    assert _kept_keys({**bounds, "generation": get_scorer("generation").bind(None)}) is None


def test_score_hierarchy_hands_the_family_only_its_keys(demo, monkeypatch):
    import kg_rageval.scoring.stream as stream

    seen: list[set[str]] = []
    real = stream.FamilyStream._call

    def spy(self, records):
        seen.append(set().union(*map(set, records)))
        return real(self, records)

    monkeypatch.setattr(stream.FamilyStream, "_call", spy)
    get_scorer("hierarchy").score(demo["ontology"], demo["path"], chunk_size=50)
    assert seen and all(keys <= {*ROW_KEYS, "_line", "_source"} for keys in seen)
    assert all("labels" in keys for keys in seen)
