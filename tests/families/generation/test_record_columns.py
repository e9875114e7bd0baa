"""The generation and provenance members read a chunk's fields as columns
(:class:`kg_rageval.records.fields.RecordColumns`, :class:`~kg_rageval.families.provenance.citations.AnswerColumns`)
and fall back to the checked per-record readers only when a column is not well formed: both
paths give the same evaluations (every stat, key, detail, unscored entry and meta, with the
value types), and a malformed record raises the same one-line error either way (issue #33)."""

from __future__ import annotations

import copy
import random
import sys
from pathlib import Path

import numpy as np
import pytest

import kg_rageval.records.fields as fields
from kg_rageval.base.errors import InputError
from kg_rageval.families.generation import (
    score_calibration,
    score_correctness,
    score_faithfulness,
    score_generation,
    score_refusal,
)
from kg_rageval.families.provenance import score_provenance
from kg_rageval.ontology import load_ontology
from kg_rageval.records.fields import RecordColumns, record_columns, shared_row_keys

ROOT = Path(__file__).resolve().parents[3]
ATTACK = ROOT / "ontologies" / "enterprise-attack-18.1.json.gz"


@pytest.fixture(scope="module")
def onto():
    return load_ontology(ATTACK)


def _records(n: int = 600, seed: int = 3) -> list[dict]:
    """Records reaching every branch the members read: absent and null sections, refusals,
    recorded judgments (valid, empty, invalid), missing texts and confidences, integer
    confidences, several references, given concepts (one the ontology lacks), claim-level
    citations, inline markers by number and by id, graded and listed gold, slices of several
    types, a top-level gold node, several gold labels."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cite = f"T10{i % 7:02d}:desc"
        r: dict = {
            "id": f"q{i}",
            "slices": {"intent": rng.choice(["lookup", "how"])},
            "labels": {"gold": ["T1003"], "pred": ["T1003"]},
            "retrieval": {"gold": {cite: 2, "T1003:proc": 0}, "run": [cite]},
            "answer": {
                "text": rng.choice(
                    ["OS Credential Dumping [1].", "It is T1003 [T1003:desc]. More.", "Plain."]
                ),
                "citations": [cite],
                "refused": False,
                "confidence": rng.random(),
                "judgment": {"claims": ["a", "b"], "supported": ["a"], "unsupported": ["b"]},
            },
            "reference": {"answerable": True, "answer": "OS Credential Dumping"},
        }
        a, ref = r["answer"], r["reference"]
        x = rng.random()
        if x < 0.04:
            del r["answer"]
        elif x < 0.07:
            r["answer"] = None
        elif x < 0.10:
            del ref["answerable"]
        elif x < 0.13:
            ref["answerable"] = False
        elif x < 0.16:
            ref["correct"] = rng.random() < 0.5
        elif x < 0.19:
            a["confidence"] = rng.choice([None, 0, 1, 0.1, 0.15])
        elif x < 0.22:
            del a["text"]
        elif x < 0.26:
            a["refused"] = True
            if rng.random() < 0.5:
                del a["judgment"]
        elif x < 0.29:
            ref["answer"] = ["OS Credential Dumping", "Credential dumping"]
        elif x < 0.32:
            del r["slices"]
        elif x < 0.35:
            r["slices"] = {"intent": 3, "lang": "en", "flag": True}
        elif x < 0.38:
            r["gold_node"] = "TA0006"
        elif x < 0.41:
            r["labels"] = {"gold": ["T1003", "T1003.001"], "pred": []}
        elif x < 0.45:
            del a["judgment"]
        elif x < 0.48:
            a["judgment"] = {"claims": [], "supported": [], "unsupported": []}
        elif x < 0.51:
            a["judgment"] = {"claims": ["a"], "supported": ["a", "b"], "unsupported": []}
        elif x < 0.54:
            a["judgment"] = "not json"
        elif x < 0.57:
            del a["citations"]
        elif x < 0.60:
            a["citations"] = []
        elif x < 0.63:
            a["claims"] = [{"text": "c1", "citations": [cite]}, {"text": "c2"}]
        elif x < 0.66:
            del r["retrieval"]
        elif x < 0.69:
            r["retrieval"]["gold"] = [cite]
        elif x < 0.72:
            a["concepts"] = ["T1003", "T9999"]
        elif x < 0.75:
            ref["concepts"] = ["T1003.001"]
        elif x < 0.78:
            del r["reference"]
        elif x < 0.81:
            r["retrieval"]["contexts"] = [{"id": cite, "text": "OS Credential Dumping text."}, "plain"]
        out.append(r)
    return out


def _checked(monkeypatch) -> None:
    """Every member reads record by record (no columns)."""
    for mod in list(sys.modules.values()):
        if getattr(mod, "record_columns", None) is record_columns:
            monkeypatch.setattr(mod, "record_columns", lambda records: None)


def _same(a, b) -> None:
    assert a.record_ids.tolist() == b.record_ids.tolist()
    assert list(a.stats) == list(b.stats)
    for k in a.stats:
        x, y = np.asarray(a.stats[k]), np.asarray(b.stats[k])
        assert x.dtype == y.dtype and np.array_equal(x, y), k
    for group in ("keys", "details"):
        ga, gb = getattr(a, group), getattr(b, group)
        assert list(ga) == list(gb), group
        for k in ga:
            va, vb = np.asarray(ga[k]).tolist(), np.asarray(gb[k]).tolist()
            assert va == vb and list(map(type, va)) == list(map(type, vb)), (group, k)
    assert a.unscored == b.unscored
    assert a.meta == b.meta
    assert a.metrics() == b.metrics() or str(a.metrics()) == str(b.metrics())


def _members(onto, records):
    from kg_rageval.families.generation.score import make_judge

    judge = make_judge(onto, "ontology")
    return {
        "refusal": score_refusal(records),
        "calibration": score_calibration(records, n_bins=7),
        "faithfulness": score_faithfulness(records),
        "faithfulness_judged": score_faithfulness(records, judge=judge, judgments={"q5": "bad", "nope": {}}),
        "correctness": score_correctness(records, onto),
        "correctness_plain": score_correctness(records, strip_citations=False),
        **{f"generation.{k}": v for k, v in score_generation(onto, records).items()},
    }


def test_generation_columns_equal_the_checked_readers(onto, monkeypatch):
    from kg_rageval.families.generation.correctness import _fields_columns
    from kg_rageval.families.generation.faithfulness import _score_columns

    records = _records()
    cols = record_columns(records)
    assert cols is not None and _fields_columns(records) is not None  # the columns are read
    assert _score_columns(cols, {}, None) is not None
    fast = _members(onto, records)
    _checked(monkeypatch)
    slow = _members(onto, records)
    for name in fast:
        _same(fast[name], slow[name])
    assert len(fast["refusal"]) < len(records) and fast["refusal"].unscored  # both kinds of record
    assert {"correct_refusal", "over_refusal", "answered", "missed_refusal"} >= set(
        fast["refusal"].details["outcome"].tolist()
    )


def test_provenance_columns_equal_the_checked_readers(onto, monkeypatch, tmp_path):
    corpus_path = tmp_path / "corpus.jsonl"
    corpus_path.write_text(
        "".join(f'{{"id": "T10{i:02d}:desc", "source_id": "attack:T10{i:02d}"}}\n' for i in range(5))
    )
    from kg_rageval.families.provenance.inputs import corpus as load_corpus

    corpus = load_corpus(corpus_path, onto, {})
    from kg_rageval.families.provenance.citations import _gold_column, answer_columns

    records = _records(seed=5)
    assert answer_columns(records) is not None and _gold_column(records) is not None
    fast = score_provenance(onto, records, corpus=corpus, trail=True)
    _checked(monkeypatch)
    slow = score_provenance(onto, records, corpus=corpus, trail=True)
    assert list(fast) == list(slow) == ["citations", "provenance_depth", "prov_trail"]
    for name in fast:
        _same(fast[name], slow[name])
    assert fast["prov_trail"].meta == slow["prov_trail"].meta  # the Turtle of the trail included


def test_record_columns_read_the_fields(onto):
    records = [
        {
            "id": "a",
            "answer": {"text": "x", "refused": True},
            "labels": {"gold": ["T1003"]},
            "slices": {"k": 1},
        },
        {"id": "b", "answer": None, "gold_node": "TA0006", "labels": {"gold": ["T1003"]}},
        {"id": "c", "labels": {"gold": ["T1003", "T1005"]}, "slices": {"k": "v", "j": None}},
    ]
    cols = RecordColumns(records)
    assert cols.ids() == ["a", "b", "c"]
    assert cols.present("answer") == [True, False, False]
    assert cols.flags("answer", "refused") == [True, None, None]
    assert cols.texts("answer", "text") == ["x", None, None]
    keys = cols.keys()
    assert list(keys) == ["gold_node", "slice:j", "slice:k"]
    assert keys["gold_node"].tolist() == ["T1003", "TA0006", None]
    assert keys["slice:k"].tolist() == ["1", None, "v"]  # a slice value in its JSON spelling
    assert keys["slice:j"].tolist() == [None, None, None]
    assert cols.key_columns([2, 0])["gold_node"].tolist() == [None, "T1003"]
    # the same keys as the per-record reader of each record, in all_slice_keys order
    assert list(keys) == fields.all_slice_keys(records)
    for k, r in enumerate(records):
        assert {name: col[k] for name, col in keys.items() if col[k] is not None} == {
            name: v for name, v in fields.row_keys(r).items() if v is not None
        }
    # not well formed: the checked readers decide
    assert RecordColumns([{"id": "a", "answer": "text"}]).section("answer") is None
    assert RecordColumns([{"id": "a", "answer": {"refused": "yes"}}]).flags("answer", "refused") is None
    assert RecordColumns([{"id": "a", "answer": {"text": 3}}]).texts("answer", "text") is None
    assert RecordColumns([{"answer": {}}]).ids() is None
    assert record_columns([{"id": "a"}, ["not", "a", "dict"]]) is None  # type: ignore[list-item]
    with shared_row_keys(records):  # one object per chunk, whichever list of the same records
        assert record_columns(list(records)) is record_columns(list(records))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r["answer"].update(refused="yes"), "answer.refused"),
        (lambda r: r["answer"].update(text=3), "answer.text"),
        (lambda r: r["answer"].update(confidence=1.5), "answer.confidence"),
        (lambda r: r["answer"].update(confidence=True), "answer.confidence"),
        (lambda r: r["reference"].update(answer=[]), "reference.answer"),
        (lambda r: r["answer"].update(citations=[1]), "answer.citations"),
        (lambda r: r["answer"].update(claims=[{"text": 1}]), "answer.claims[0]"),
        (lambda r: r.update(answer="text"), "answer"),
        (lambda r: r["retrieval"].update(gold={"d": True}), "retrieval.gold"),
    ],
)
def test_a_malformed_record_raises_the_same_error(onto, monkeypatch, tmp_path, change, field):
    from kg_rageval.families.provenance.inputs import corpus as load_corpus

    corpus_path = tmp_path / "corpus.jsonl"
    corpus_path.write_text('{"id": "T1000:desc", "source_id": "attack:T1000"}\n')
    corpus = load_corpus(corpus_path, onto, {})
    records = [
        r for r in _records(60, seed=9) if r.get("answer") and r.get("reference") and r.get("retrieval")
    ]
    records = copy.deepcopy(records)
    change(records[7])

    def errors() -> list[str]:
        out = []
        for call in (
            lambda: score_generation(onto, records),
            lambda: score_provenance(onto, records, corpus=corpus, trail=True),
        ):
            try:
                call()
                out.append("no error")
            except InputError as exc:
                out.append(str(exc))
        return out

    fast = errors()
    _checked(monkeypatch)
    slow = errors()
    assert fast == slow
    assert any(field in e and "'q" in e for e in fast), fast  # names the record and the field
