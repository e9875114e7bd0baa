"""The fast paths of the provenance family against the plain computations they replace.

* claims of ``answer.text``: split once per distinct text inside ``memo_claims`` and resolved
  per record, against the previous per-record ``_inline`` resolution (kept below);
* ``_q``: the unreserved-characters shortcut against ``urllib.parse.quote``;
* the Turtle of compact answers and the trail's triple count against the generic writer on
  the built predicates (a merged duplicate answer, a refusal, no text, escapes, several
  documents)."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from kg_rageval.families.generation.verifiers import sentence_claims
from kg_rageval.families.provenance.citations import claim_citations, memo_claims
from kg_rageval.families.provenance.trail import Trail, _block, _q, build_trail, trail_turtle

_MARKER = re.compile(r"\[([^\[\]]+)\]")


def _old_inline(sentence: str, cites: list[str]) -> list[str]:
    out: list[str] = []
    for group in _MARKER.findall(sentence):
        for tok in (t.strip() for t in group.split(",")):
            if tok in cites:
                out.append(tok)
            elif tok.isdigit() and 1 <= int(tok) <= len(cites):
                out.append(cites[int(tok) - 1])
    return out


def _old_text_claims(text: str, cites: list[str]):
    if not _MARKER.search(text):
        return None if cites else [(s, []) for s in sentence_claims(text)]
    return [(s, _old_inline(s, cites)) for s in sentence_claims(text)]


TEXTS = [
    "A [1]. B [2]. C.",
    "A [1]. B [2]. C.",
    "X [d1, 2][3]! Y [ d2 ]? X [d1, 2][3]!",
    "No markers. At all.",
    "Out of range [0] [9] [x].",
    "",
    "Tail [1]",
    "A [1].  A [1]. [2, d9]",
]
CITES = [["d1", "d2"], ["d2"], [], ["d1", "d2", "d3"], ["d2", "d1"]]


def _records():
    k = 0
    for t in TEXTS:
        for c in CITES:
            k += 1
            ans = {"text": t}
            if c:
                ans["citations"] = c
            yield {"id": f"r{k}", "answer": ans}


@pytest.mark.parametrize("memo", [True, False])
def test_text_claims_equal_per_record_resolution(memo):
    recs = list(_records())
    if memo:
        with memo_claims():
            got = [claim_citations(r) for r in recs]
    else:
        got = [claim_citations(r) for r in recs]
    want = [_old_text_claims(r["answer"]["text"], r["answer"].get("citations", [])) for r in recs]
    assert got == want
    # one text, other citations: the shared split resolves against each record's own list
    assert got[0] == [("A [1].", ["d1"]), ("B [2].", ["d2"]), ("C.", [])]
    assert got[1] == [("A [1].", ["d2"]), ("B [2].", []), ("C.", [])]
    assert got[2] == [("A [1].", []), ("B [2].", []), ("C.", [])]


@pytest.mark.parametrize(
    "s", ["q000001", "T1583.005:desc", "a~b_c-d.e", "", "with space", "ü/é", "a#b?c", "100%", 42, "-", "~"]
)
def test_q_equals_quote(s):
    assert _q(s) == quote(str(s), safe="")


def test_compact_turtle_and_length_equal_generic_writer():
    recs = [
        {"id": "a1", "answer": {"text": 'He said "hi"\n\tthere [1].', "citations": ["d 1", "d2"]}},
        {"id": "a2", "answer": {"text": "Refused.", "refused": True}},
        {"id": "a3", "answer": {"citations": ["d2"]}},
        {"id": "a1", "answer": {"text": "Again [1].", "citations": ["d3"]}},  # merged with the first a1
        {"id": "a 4/ü", "answer": {"text": "Two [1][2].", "citations": ["d2", "d 1"]}},
    ]
    m = {"run_id": "run 1", "model": {"name": "m", "version": "1"}, "seed": 3}
    with memo_claims():
        t = build_trail(recs, manifest=m)
    assert isinstance(t, Trail) and sum(r is None for r in t.rows) == 2
    generic = "\n".join(
        [
            *(
                f"@prefix {p}: <{ns}> ."
                for p, ns in {
                    "prov": "http://www.w3.org/ns/prov#",
                    "kgr": "https://w3id.org/kg-rageval#",
                    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
                    "xsd": "http://www.w3.org/2001/XMLSchema#",
                }.items()
            ),
            "",
            *(_block(s, preds) for s, preds in t.items()),
        ]
    )
    assert trail_turtle(t) == generic
    assert len(t) == sum(1 for _ in t.triples()) == len({(s, p, o) for s, p, o in t.triples()})


def _generic_violations(trail):
    """The check before the compact-answer rule: every property shape on every subject."""
    from kg_rageval.families.provenance.trail import RDF_TYPE, SHAPES, _check_property

    return [
        (s, prop["path"], msg)
        for s, preds in trail.items()
        for cls, props in SHAPES.items()
        if cls in preds.get(RDF_TYPE, {})
        for prop in props
        for msg in _check_property(s, preds, prop, trail)
    ]


@pytest.mark.parametrize(
    "manifest",
    [
        None,
        {
            "run_id": "r",
            "model": {"name": "m", "version": "1"},
            "seed": 3,
            "decoding": {"t": 0},
            "corpus_hash": "c",
            "ontology_hash": "o",
        },
    ],
)
def test_compact_answer_rule_equals_every_property_shape(manifest):
    """trail_violations decides compact answers by their one possible violation (an answer
    citing nothing); with a broken run or documents it falls back to every property shape."""
    from kg_rageval.families.provenance.trail import KGR, RDF_TYPE, trail_violations

    recs = [
        {"id": "a1", "answer": {"text": "Cites [1].", "citations": ["d1"]}},
        {"id": "a2", "answer": {"text": "Nothing."}},
        {"id": "a3", "answer": {"text": "Refused.", "refused": True}},
        {"id": "a4", "answer": {"citations": ["d1", "d2"]}},
        {"id": "a2", "answer": {"text": "Again [1].", "citations": ["d3"]}},  # merged with the first a2
        {"id": "a5", "answer": {}},
    ]
    with memo_claims():
        t = build_trail(recs, manifest=manifest)
    assert sorted(trail_violations(t)) == sorted(_generic_violations(t))
    assert any(p.endswith("wasDerivedFrom") for _, p, _ in trail_violations(t))
    t.subjects["urn:kg-rageval:doc:d1"][RDF_TYPE].pop(KGR + "Document")  # a document that is not one
    assert sorted(trail_violations(t)) == sorted(_generic_violations(t))
    t.subjects[t.run][RDF_TYPE].pop(KGR + "ModelRun")  # nor is the run
    assert sorted(trail_violations(t)) == sorted(_generic_violations(t))


# ---------------------------------------------------------------------- columns instead of row dicts
def _old_citations(records):
    """score_citations as it was (a dict per row, build_evaluation)."""
    from kg_rageval.families.provenance.citations import CitationFamily, answer_citations
    from kg_rageval.records import absent_answer_code
    from kg_rageval.records.fields import all_slice_keys, flag, gold_documents, row_keys, section
    from kg_rageval.results.builders import build_evaluation

    rows, unscored = [], []
    for r in records:
        if section(r, "answer") is None:
            unscored.append(
                {"record_id": r["id"], "reason": "no answer", "code": absent_answer_code(r).value}
            )
            continue
        row = {"record_id": r["id"], **row_keys(r), "answers": 1}
        claims = [] if flag(r, "answer", "refused") is True else claim_citations(r)
        cited_ids = set(answer_citations(r) or [])
        if claims is None:
            row["completeness"] = "no claim-level citations"
            unscored.append(
                {"record_id": r["id"], "reason": "no claim-level citations", "code": "not_applicable"}
            )
        elif not claims:
            row["no_claims"] = 1
        else:
            row.update(claims=len(claims), cited_claims=sum(1 for _, c in claims if c), with_claims=1)
            if row["cited_claims"] == 0 and not cited_ids:
                row.update(uncited=1, completeness="uncited answer")
            for _, c in claims:
                cited_ids.update(c)
        gold = gold_documents(r)
        if gold is not None:
            row.update(with_gold=1, cited=len(cited_ids), gold=len(gold), cited_gold=len(cited_ids & gold))
        row["cited_ids"] = " ".join(sorted(cited_ids))
        rows.append(row)
    return build_evaluation(
        CitationFamily(),
        rows,
        keys=all_slice_keys(records),
        details=("cited_ids", "completeness"),
        unscored=unscored,
    )


def _old_depth(records, corpus):
    from kg_rageval.families.provenance.corpus import is_stable_source_id
    from kg_rageval.families.provenance.depth import ProvenanceDepthFamily, cited_ids
    from kg_rageval.records.fields import all_slice_keys, row_keys, section
    from kg_rageval.results.builders import build_evaluation

    rows, unscored = [], []
    for r in records:
        if section(r, "answer") is None:
            unscored.append({"record_id": r["id"], "reason": "no answer", "code": "no_section"})
            continue
        ids = cited_ids(r)
        inc = [c for c in ids if c in corpus]
        stable = [c for c in inc if is_stable_source_id(corpus.source_id(c))]
        rows.append(
            {
                "record_id": r["id"],
                **row_keys(r),
                "citations": len(ids),
                "in_corpus": len(inc),
                "resolved": len(stable),
                "unresolved": " ".join(c for c in ids if c not in stable),
            }
        )
    return build_evaluation(
        ProvenanceDepthFamily(),
        rows,
        keys=all_slice_keys(records),
        details=("unresolved",),
        unscored=unscored,
        meta={"corpus": corpus.source, "corpus_hash": corpus.hash, "corpus_documents": len(corpus)},
    )


def test_citation_and_depth_columns_equal_the_row_dicts():
    import numpy as np

    from kg_rageval.families.provenance import Corpus, score_citations, score_depth

    corpus = Corpus({"d1": {"source_id": "s1"}, "d2": {"source_id": "ab" * 16}, "d3": {}})
    recs = [
        dict(
            r,
            **({"retrieval": {"gold": ["d1", "d3"]}} if i % 2 else {}),
            **({"slices": {"s": i % 3}} if i % 4 else {}),
        )
        for i, r in enumerate(_records())
    ]
    recs += [
        {"id": "none"},
        {"id": "ref", "answer": {"refused": True, "citations": ["d1"]}},
        {
            "id": "cl",
            "answer": {"claims": [{"text": "a", "citations": ["d2", "d9"]}, {"text": "b"}]},
            "retrieval": {"gold": {"d2": 1, "d1": 0}},
        },
    ]
    for part in (recs, recs[:1], [{"id": "none"}]):
        with memo_claims():
            pairs = [
                (score_citations(part), _old_citations(part)),
                (score_depth(part, corpus), _old_depth(part, corpus)),
            ]
        for new, old in pairs:
            assert new.record_ids.tolist() == old.record_ids.tolist() and new.unscored == old.unscored
            assert (
                new.meta == old.meta
                and list(new.keys) == list(old.keys)
                and list(new.details) == list(old.details)
            )
            for g in ("stats", "keys", "details"):
                for k, v in getattr(old, g).items():
                    got = getattr(new, g)[k]
                    assert (
                        got.dtype == v.dtype and np.array_equal(got, v)
                        if g == "stats"
                        else got.tolist() == v.tolist()
                    )
            assert new.to_dict(rows=True) == old.to_dict(rows=True)


def test_the_collector_is_paused_during_the_family_call_and_restored(monkeypatch):
    import gc

    import kg_rageval.families.provenance.score as score
    from kg_rageval.families.provenance import Corpus

    seen = []
    real = score.score_citations
    monkeypatch.setattr(score, "score_citations", lambda recs: seen.append(gc.isenabled()) or real(recs))
    recs = [{"id": "a", "answer": {"text": "x"}}]
    assert gc.isenabled()
    score.score_provenance(None, recs, corpus=Corpus({"d": {}}))
    assert seen == [False] and gc.isenabled()
    monkeypatch.setattr(score, "score_citations", lambda recs: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        score.score_provenance(None, recs, corpus=Corpus({"d": {}}))
    assert gc.isenabled()  # restored on an error too
