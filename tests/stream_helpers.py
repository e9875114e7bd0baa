"""Helpers shared by tests (moved out of ``test_streaming.py`` so that tests in other folders can import them;
``tests/`` is on ``sys.path``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from family_demo import add_relation_questions

from kg_rageval.results.evaluation_set import EvaluationSet

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The bundled demo (a section for every family) plus relation questions, with slices that
    only some records have (a slice first seen in a later chunk; keys must keep the
    whole-file order)."""
    from kg_rageval.demo import build_demo
    from kg_rageval.ontology import load_ontology

    out = tmp_path_factory.mktemp("stream_demo")
    build_demo(out, bootstrap=20)
    onto = load_ontology(out / "doid-cancer-slim.obo")
    add_relation_questions(out / "records.jsonl", onto)
    lines = []
    for i, line in enumerate((out / "records.jsonl").read_text().splitlines()):
        rec = json.loads(line)
        if 7 <= i < 20:
            rec.setdefault("slices", {})["late"] = "x" if i % 2 else "y"
        if i >= 100:
            rec.setdefault("slices", {})["aaa"] = i % 3
        lines.append(json.dumps(rec))
    (out / "records.jsonl").write_text("\n".join(lines) + "\n")
    return {
        "dir": out,
        "ontology": onto,
        "path": out / "records.jsonl",
        "inputs": {
            "corpus": str(out / "corpus.jsonl"),
            "spec": str(out / "schema.yaml"),
            # the file families (trec, shacl): their evidence is these files
            "qrels": str(FIXTURES / "trec_eval" / "qrels.test"),
            "run": str(FIXTURES / "trec_eval" / "results.test"),
            "shapes": str(FIXTURES.parent / "shapes" / "output-attack.ttl"),
        },
    }


def _json(result: EvaluationSet) -> str:
    return json.dumps(
        {m: ev.to_dict(rows=True, breakdowns=list(ev.keys)) for m, ev in result.items()}, allow_nan=False
    )


def _assert_same(a: EvaluationSet, b: EvaluationSet) -> None:
    assert list(a) == list(b)
    for m in a:
        x, y = a[m], b[m]
        assert x.record_ids.tolist() == y.record_ids.tolist(), m
        assert list(x.stats) == list(y.stats) and list(x.keys) == list(y.keys), m
        assert list(x.details) == list(y.details), m
        for k in x.stats:
            assert np.array_equal(x.stats[k], y.stats[k]), (m, k)  # bit for bit
        assert x.unscored == y.unscored and x.meta == y.meta, m
    assert _json(a) == _json(b)


def _provenance_runs(demo, tmp_path: Path) -> dict:
    """Two repeat runs of the demo (records missing, answers and citations changed, extra
    records, another order) and two run manifests (the second pins another seed)."""
    base = [json.loads(line) for line in open(demo["path"])]
    rep1, rep2 = [], []
    for i, r in enumerate(base):
        ans = dict(r.get("answer") or {})
        if i % 5 and ans:
            a = dict(ans, text=ans.get("text", "") + (" changed" if i % 3 == 0 else ""))
            rep1.append({"id": r["id"], "answer": a})
        if i % 7 != 3 and ans:
            cites = list(ans.get("citations") or [])
            rep2.append({"id": r["id"], "answer": dict(ans, citations=cites[1:] if i % 4 == 0 else cites)})
    rep1 += [{"id": f"extra-{k}", "answer": {"text": "x"}} for k in range(4)]
    paths = [_write(tmp_path, rep1, "rep1.jsonl"), _write(tmp_path, rep2[::-1], "rep2.jsonl")]
    man = json.loads((FIXTURES / "generation" / "manifest.json").read_text())
    mans = [tmp_path / "m1.json", tmp_path / "m2.json"]
    mans[0].write_text(json.dumps(man))
    mans[1].write_text(json.dumps({**man, "seed": 99, "run_id": "run-b"}))
    return {"repeats": [str(p) for p in paths], "manifests": [str(m) for m in mans]}


def _write(tmp_path: Path, records: list, name: str = "r.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return p
