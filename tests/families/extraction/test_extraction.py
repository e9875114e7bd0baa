"""The extraction family: NER P/R/F1 per type equal to seqeval's classification_report
(default and strict) on a CoNLL-2003 sample; hierarchy-aware type credit, unknown types and
predicates, domain/range violations worked by hand on fixtures/extraction; relation P/R/F1 equal
to the official TACRED scorer's formula; the TACRED / DocRED readers and their one-line errors;
the score command; gates per document class, slice and branch in the audit."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kg_rageval.audit.config import config_from_mapping
from kg_rageval.audit.runner import run_audit
from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.cli.main import main
from kg_rageval.families.extraction import score_extraction
from kg_rageval.ontology import load_ontology
from kg_rageval.records import read_records
from kg_rageval.records.conll import read_conll
from kg_rageval.records.relation_sets import read_docred, read_tacred

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "extraction"
CONLL = FIX / "conll2003_sample.conll"
ONTO = FIX / "types.ttl"


@pytest.fixture(scope="module")
def onto():
    return load_ontology(ONTO)


def _vals(ev, prefix=""):
    return {k: m.value for k, m in ev.metrics().items() if k.startswith(prefix)}


def _per_type(ev, key="slice:entity_type", pre="ner"):
    out = {}
    for t, g in ev.breakdown(key).items():
        if t is not None:
            m = g["metrics"]
            out[t] = tuple(m[f"{pre}_{x}"].value for x in ("precision", "recall", "f1"))
    return out


# seqeval 1.2.2 classification_report(digits=6) of the sample (default mode, then strict IOB2)
SEQEVAL_DEFAULT = {
    "LOC": (2 / 3, 2 / 3, 2 / 3),
    "MISC": (2 / 3, 0.5, 0.571429),
    "ORG": (0.75, 1.0, 0.857143),
    "PER": (1 / 3, 0.5, 0.4),
}
SEQEVAL_STRICT = {
    "LOC": (0.5, 1 / 3, 0.4),
    "MISC": (0.5, 0.25, 1 / 3),
    "ORG": (0.75, 1.0, 0.857143),
    "PER": (1 / 3, 0.5, 0.4),
}


@pytest.mark.parametrize(
    ("mode", "per", "micro", "macro"),
    [
        ("default", SEQEVAL_DEFAULT, (0.615385, 2 / 3, 0.64), (0.604167, 2 / 3, 0.623810, 0.638095)),
        ("strict", SEQEVAL_STRICT, (0.545455, 0.5, 0.521739), (0.520833, 0.520833, 0.497619, 0.492063)),
    ],
)
def test_ner_equals_seqeval_classification_report(mode, per, micro, macro):
    recs = read_conll(CONLL, gold_col=3, pred_col=4)
    ev = score_extraction(None, recs, mode=mode)
    got = _per_type(ev)
    assert got == {t: pytest.approx(v, abs=1e-6) for t, v in per.items()}
    v = _vals(ev, "ner")
    assert (v["ner_precision"], v["ner_recall"], v["ner_f1"]) == pytest.approx(micro, abs=1e-6)
    assert (v["ner_hier_precision"], v["ner_hier_f1"]) == (v["ner_precision"], v["ner_f1"])  # flat types
    m = ev.meta["macro"]["ner"]
    assert (m["precision"], m["recall"], m["f1"], m["weighted_f1"]) == pytest.approx(macro, abs=1e-6)
    seqeval = pytest.importorskip("seqeval")
    assert seqeval
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOB2

    y = [r["extraction"]["gold_tags"] for r in recs]
    p = [r["extraction"]["pred_tags"] for r in recs]
    kw = {"mode": "strict", "scheme": IOB2} if mode == "strict" else {}
    ref = classification_report(y, p, output_dict=True, **kw)
    for t, (pp, rr, ff) in got.items():
        assert (pp, rr, ff) == pytest.approx((ref[t]["precision"], ref[t]["recall"], ref[t]["f1-score"]))
    assert v["ner_f1"] == pytest.approx(ref["micro avg"]["f1-score"])
    assert m["f1"] == pytest.approx(ref["macro avg"]["f1-score"])
    assert m["weighted_f1"] == pytest.approx(ref["weighted avg"]["f1-score"])


def test_hierarchy_credit_unknown_types_and_domain_range(onto):
    """fixtures/extraction/records.jsonl by hand (root ex:Entity left out of every closure):
    n1 items PER/Agent (1,1,2), CITY/LOC (1,1,2), ORG/PER (1,2,2), FOO unknown (0,1,0), MISC
    missed (0,0,1); n2 LOC/CITY (1,2,1); w1 two exact (2,2,2) each; w2 has no predictions."""
    recs = read_records(FIX / "records.jsonl")
    ev = score_extraction(onto, recs, type_prefix="ex:")
    v = _vals(ev)
    assert (v["ner_precision"], v["ner_recall"]) == pytest.approx((2 / 7, 2 / 7))
    assert (v["ner_hier_precision"], v["ner_hier_recall"]) == pytest.approx((8 / 11, 8 / 12))
    assert v["ner_unknown_type_rate"] == pytest.approx(1 / 7)
    assert (v["re_precision"], v["re_recall"], v["re_f1"]) == pytest.approx((1 / 3, 1.0, 0.5))
    assert v["re_unknown_predicate_rate"] == pytest.approx(1 / 3)
    assert (v["re_domain_violation_rate"], v["re_range_violation_rate"]) == pytest.approx((0.5, 0.5))
    assert [u["code"] for u in ev.unscored] == ["missing_prediction"] and ev.n_records == 3
    # an ancestor predicted: full hierarchical precision, half the recall; a descendant: the reverse
    n2 = score_extraction(onto, [r for r in recs if r["id"] == "n2"], type_prefix="ex:")
    assert (_vals(n2)["ner_hier_precision"], _vals(n2)["ner_hier_recall"]) == pytest.approx((0.5, 1.0))
    # per ontology class: the rows' gold_node is the type; the unknown FOO has none
    nodes = {r["slice:entity_type"]: r["gold_node"] for r in ev.rows() if r.get("slice:entity_type")}
    assert nodes["PER"] == "ex:PER" and nodes["FOO"] is None
    news = ev.breakdown("slice:doc_class")["news"]["metrics"]
    assert news["ner_hier_precision"].value == pytest.approx(4 / 7)


def test_gold_unknown_is_an_error_predicted_unknown_a_fault(onto):
    bad = {"id": "b1", "extraction": {"gold_tags": ["B-FOO"], "pred_tags": ["B-PER"]}}
    with pytest.raises(InputError, match=r"b1.*extraction.gold_tags.*'ex:FOO' is not a class"):
        score_extraction(onto, [bad], type_prefix="ex:")
    rel = {
        "id": "b2",
        "extraction": {
            "relations": {"gold": [{"subject": "a", "relation": "ex:nope", "object": "b"}], "pred": []}
        },
    }
    with pytest.raises(InputError, match=r"b2.*relations.gold\[0\].relation.*not a predicate"):
        score_extraction(onto, [rel], type_prefix="ex:")
    iobes = {"id": "b3", "extraction": {"gold_tags": ["S-PER"], "pred_tags": ["B-PER"]}}
    with pytest.raises(InputError, match=r"b3.*extraction.gold_tags"):
        score_extraction(None, [iobes], mode="strict", scheme="IOB2")
    with pytest.raises(InputError, match="mode must be one of"):
        score_extraction(None, [], mode="lenient")


def _tacred_reference(key, prediction, no_relation="no_relation"):
    """The official TACRED scorer's micro formula (Zhang et al. 2017, scorer.py), transcribed."""
    correct, guessed, gold = Counter(), Counter(), Counter()
    for g, p in zip(key, prediction):
        if g == no_relation and p == no_relation:
            pass
        elif g == no_relation:
            guessed[p] += 1
        elif p == no_relation:
            gold[g] += 1
        else:
            guessed[p] += 1
            gold[g] += 1
            if g == p:
                correct[p] += 1
    prec = sum(correct.values()) / sum(guessed.values()) if sum(guessed.values()) else 1.0
    rec = sum(correct.values()) / sum(gold.values()) if sum(gold.values()) else 0.0
    return prec, rec, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


def test_tacred_micro_equals_the_official_scorer(onto):
    recs = read_tacred(FIX / "tacred_sample.json", FIX / "tacred_pred.json")
    gold = [json.loads((FIX / "tacred_sample.json").read_text())[i]["relation"] for i in range(6)]
    preds = json.loads((FIX / "tacred_pred.json").read_text())
    key_pred = [preds[f"t{i + 1}"] for i in range(6)]
    ref = _tacred_reference(gold, key_pred)
    assert ref == pytest.approx((0.6, 0.75, 2 / 3))  # correct 3 (t1 t4 t6), guessed 5, gold 4
    ev = score_extraction(onto, recs, type_prefix="ex:")
    v = _vals(ev, "re")
    assert (v["re_precision"], v["re_recall"], v["re_f1"]) == pytest.approx(ref)
    assert v["re_domain_violation_rate"] == pytest.approx(1 / 5)  # t5: founded_by with a PER subject
    assert _per_type(ev, "slice:relation_type", "re") == {
        "ex:city_of_birth": pytest.approx((0.5, 0.5, 0.5)),
        "ex:founded_by": pytest.approx((2 / 3, 1.0, 0.8)),
    }
    # without the ontology: the same relation figures, no domain/range check
    assert _vals(score_extraction(None, recs), "re_f1") == {"re_f1": pytest.approx(2 / 3)}


def test_docred_document_triples(onto):
    recs = read_docred(FIX / "docred_sample.json", FIX / "docred_pred.json")
    assert [r["id"] for r in recs] == ["Acme", "Zeta"]
    ev = score_extraction(onto, recs, type_prefix="ex:")
    v = _vals(ev, "re")
    assert (v["re_precision"], v["re_recall"], v["re_f1"]) == pytest.approx((1 / 3, 0.5, 0.4))
    assert (v["re_domain_violation_rate"], v["re_range_violation_rate"]) == pytest.approx((2 / 3, 2 / 3))


def test_readers_name_file_record_and_field(tmp_path):
    t = tmp_path / "t.json"
    t.write_text(json.dumps([{"id": "s1", "relation": "x", "token": ["a"], "subj_start": 0, "subj_end": 0}]))
    with pytest.raises(InputError) as e:
        read_tacred(t)
    msg = str(e.value)
    assert "t.json" in msg and "record 0 (id 's1')" in msg and "obj_start" in msg and "\n" not in msg
    t.write_text(
        json.dumps(
            [
                {
                    "id": "s1",
                    "relation": "x",
                    "token": ["a"],
                    "subj_start": 0,
                    "subj_end": 3,
                    "obj_start": 0,
                    "obj_end": 0,
                }
            ]
        )
    )
    with pytest.raises(InputError, match="span 0..3 outside the 1 tokens"):
        read_tacred(t)
    d = tmp_path / "d.json"
    d.write_text(
        json.dumps([{"title": "A", "vertexSet": [[{"type": "PER"}]], "labels": [{"h": 0, "t": 4, "r": "r"}]}])
    )
    with pytest.raises(
        InputError, match=r"d.json, record 0 \(title 'A'\): labels\[0\]: entity index out of range"
    ):
        read_docred(d)
    with pytest.raises(InputError, match="above the limit"):
        read_docred(d, max_bytes=10)
    (tmp_path / "bad.json").write_text("[{")
    with pytest.raises(InputError, match="bad.json, line 1: not JSON"):
        read_tacred(tmp_path / "bad.json")


def test_score_command(capsys):
    code = main(
        [
            "score",
            "extraction",
            "-O",
            str(ONTO),
            "--data",
            str(FIX / "records.jsonl"),
            "--type-prefix",
            "ex:",
            "--format",
            "json",
        ]
    )
    assert code == 0
    p = json.loads(capsys.readouterr().out)
    assert p["counts"]["records"] == 4 and p["counts"]["scored_records"] == 3
    assert p["metrics"]["extraction.ner_hier_precision"]["value"] == pytest.approx(8 / 11)
    assert "PER" in p["breakdowns"]["slice:entity_type"]


GATES = [
    "extraction.ner_f1[slice:doc_class=web] >= 0.9",
    "extraction.ner_hier_precision[slice:doc_class=news] >= 0.5",
    "extraction.ner_hier_recall[node:ex:Agent] >= 0.7",
    "extraction.re_f1 >= 0.6",
    "extraction.re_f1[slice:doc_class=news] >= 0.5",
]


def test_extraction_gates_in_the_audit(tmp_path):
    """Branch ex:Agent (rows of types PER, ORG, Agent): hierarchical recall (1+1+2+2)/(2+2+2+2)."""
    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(FIX / "records.jsonl"),
            "families": {"extraction": {"type_prefix": "ex:"}},
            "gates": GATES,
            "min_rows": 1,
            "missing_runs": {"budgets": {"extraction": 0.25}},
        },
        base_dir=tmp_path,
    )
    res = run_audit(cfg, progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    g = by["extraction.ner_f1[slice:doc_class=web] >= 0.9"]
    assert (g.status, g.observed) == ("pass", pytest.approx(1.0))
    g = by["extraction.ner_hier_precision[slice:doc_class=news] >= 0.5"]
    assert (g.status, g.observed) == ("pass", pytest.approx(4 / 7))
    g = by["extraction.ner_hier_recall[node:ex:Agent] >= 0.7"]
    assert (g.status, g.observed) == ("pass", pytest.approx(0.75))
    g = by["extraction.re_f1 >= 0.6"]
    assert (g.status, g.observed) == ("fail", pytest.approx(0.5))
    assert by["extraction.re_f1[slice:doc_class=news] >= 0.5"].status == "missing"
    assert res.exit_code == 1


def test_extraction_gates_per_entity_and_relation_type(tmp_path):
    """The rows' own slices (Scorer.row_slices) are gateable: ORG F1 2/3 and founded_by F1 2/3
    on the fixture; a type no row has is missing evidence; a slice name the records and the
    family both lack is still an invalid config."""
    base = {
        "ontology": str(ONTO),
        "records": str(FIX / "records.jsonl"),
        "families": {"extraction": {"type_prefix": "ex:"}},
        "min_rows": 1,
        "missing_runs": {"budgets": {"extraction": 0.25}},
    }
    gates = [
        "extraction.ner_f1[slice:entity_type=ORG] >= 0.6",
        "extraction.ner_f1[slice:entity_type=PER] >= 0.6",
        "extraction.re_f1[slice:relation_type=ex:founded_by] >= 0.6",
        "extraction.ner_f1[slice:entity_type=DATE] >= 0.6",
    ]
    res = run_audit(config_from_mapping({**base, "gates": gates}, base_dir=tmp_path), progress=False)
    by = {str(r.gate): r for r in res.gate_results}
    assert (by[gates[0]].status, by[gates[0]].observed) == ("pass", pytest.approx(2 / 3))
    assert (by[gates[1]].status, by[gates[1]].observed) == ("fail", pytest.approx(0.5))
    assert (by[gates[2]].status, by[gates[2]].observed) == ("pass", pytest.approx(2 / 3))
    assert by[gates[3]].status == "missing"
    with pytest.raises(ConfigError, match="no record has the slice 'entity_typ'"):
        run_audit(
            config_from_mapping(
                {**base, "gates": ["extraction.ner_f1[slice:entity_typ=ORG] >= 0.6"]}, base_dir=tmp_path
            ),
            progress=False,
        )


def _score_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["score", "extraction", *args, "--format", "json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else {"err": out.err})


def test_score_command_reads_the_reference_tools_files(capsys):
    """--conll (conlleval layout: gold and predicted tags, the last two columns): seqeval's
    default micro P/R/F1 8/13, 8/12, 0.64; --tacred/--tacred-pred: the TACRED scorer's P 0.6,
    R 0.75; --docred/--docred-pred: P 1/3, R 1/2, F1 0.4."""
    code, p = _score_json(capsys, "--conll", str(FIX / "conll2003_sample.conll"))
    assert code == 0 and p["data"].endswith("conll2003_sample.conll")
    m = p["metrics"]
    assert m["extraction.ner_precision"]["value"] == pytest.approx(8 / 13)
    assert m["extraction.ner_recall"]["value"] == pytest.approx(8 / 12)
    assert m["extraction.ner_f1"]["value"] == pytest.approx(0.64)
    code, p = _score_json(
        capsys, "--tacred", str(FIX / "tacred_sample.json"), "--tacred-pred", str(FIX / "tacred_pred.json")
    )
    assert code == 0
    assert p["metrics"]["extraction.re_precision"]["value"] == pytest.approx(0.6)
    assert p["metrics"]["extraction.re_recall"]["value"] == pytest.approx(0.75)
    code, p = _score_json(
        capsys, "--docred", str(FIX / "docred_sample.json"), "--docred-pred", str(FIX / "docred_pred.json")
    )
    assert code == 0
    assert p["metrics"]["extraction.re_precision"]["value"] == pytest.approx(1 / 3)
    assert p["metrics"]["extraction.re_f1"]["value"] == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give exactly one of --data, --conll, --tacred, --docred"),
        (
            ("--data", str(FIX / "records.jsonl"), "--conll", str(FIX / "conll2003_sample.conll")),
            "given: --data, --conll",
        ),
        (
            ("--data", str(FIX / "records.jsonl"), "--tacred-pred", str(FIX / "tacred_pred.json")),
            "--tacred-pred goes with --tacred",
        ),
    ],
)
def test_score_command_needs_one_source(capsys, args, message):
    code, p = _score_json(capsys, *args)
    assert code == 2 and message in p["err"]


def test_readers_name_the_line_of_bytes_that_are_not_utf8(tmp_path):
    """A non-UTF-8 CoNLL or TACRED file is a one-line InputError naming the file and where, not
    an internal UnicodeDecodeError."""
    conll = tmp_path / "bad.conll"
    conll.write_bytes(b"Paris B-LOC\n\xff O\n")
    with pytest.raises(InputError, match="not UTF-8") as exc:
        read_conll(conll)
    assert "line 2" in str(exc.value) and "bad.conll" in str(exc.value)
    tac = tmp_path / "bad.json"
    tac.write_bytes(b'[{"id": "\xff"}]')
    with pytest.raises(InputError, match="not UTF-8") as exc:
        read_tacred(tac)
    assert "byte 9" in str(exc.value)
