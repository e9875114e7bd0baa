"""Entitlement, filter replay, false exclusion, attribution, category diagnosis, predicate
precision/recall and hard-filter-vs-soft-boost: worked examples checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_helpers import PER_QUERY

from kg_rageval.base.errors import InputError, MissingEvidence, UnknownIdError
from kg_rageval.families.retrieval import (
    Corpus,
    category_diagnosis,
    hard_vs_soft,
    parse_filters,
    read_corpus,
    replay,
    score_retrieval,
)
from kg_rageval.ontology.loaders.table import load_table
from kg_rageval.records import read_records


@pytest.fixture(scope="module")
def attack(fixtures_dir):
    return load_table(fixtures_dir / "retrieval" / "attack-mini.tsv")


@pytest.fixture(scope="module")
def seed(fixtures_dir, attack):
    d = fixtures_dir / "retrieval"
    return read_corpus(d / "seed_filter_corpus.jsonl", attack), read_records(d / "seed_filter_records.jsonl")


def test_seed_filter_example(attack, seed):
    corpus, recs = seed
    ev = score_retrieval(attack, recs, corpus, k=10)
    m = ev.metrics()
    # tenant isolation removes d3 (q2's second gold doc) before scoring: not a false exclusion
    assert m["n_gold_ineligible"].value == 1
    assert m["filter_false_exclusion_rate"].value == 0.5
    assert (m["filter_false_exclusion_rate"].numerator, m["filter_false_exclusion_rate"].denominator) == (
        2,
        4,
    )
    assert m["doc_exclusion_rate"].value == 0.5
    # correct Recall@10 keeps the eligible gold as denominator: it drops to 50% ...
    assert m["recall@10"].value == 0.5 and m["recall@10"].denominator == 4
    # ... while rebuilding gold after filtering (the seed's invalid evaluator) reports 100%
    surv = {r["id"]: set(r["retrieval"]["run"]) for r in recs}
    rebuilt = []
    for r in recs:
        filtered_gold = set(r["retrieval"]["gold"]) & surv[r["id"]] - {"d3"}
        if filtered_gold:
            rebuilt.append(len(filtered_gold & surv[r["id"]]) / len(filtered_gold))
    assert np.mean(rebuilt) == 1.0 and len(rebuilt) == 2
    assert list(ev.details["attribution"]) == ["filter", "hit", "filter", "hit"]
    assert list(ev.details["fe_cause"]) == ["field:locale", None, "field:locale", None]
    assert m["attribution@10.filter"].value + m["attribution@10.hit"].value == 1.0


def test_category_example_by_hand(attack, fixtures_dir):
    d = fixtures_dir / "retrieval"
    corpus = read_corpus(d / "category_corpus.jsonl", attack)
    recs = read_records(d / "category_records.jsonl")
    ev = score_retrieval(attack, recs, corpus)
    m = ev.metrics()
    assert m["n_scored"].value == 6  # c1-c5, c7 (c6: gold all ineligible, c8: no gold)
    assert m["n_q_gold_all_ineligible"].value == 1 and m["n_gold_ineligible"].value == 1
    assert m["n_ineligible_retrieved"].value == 1  # c6's run leaks k7 (globex)
    assert (
        m["n_missing_run"].value == 1 and m["n_no_gold"].value == 1 and m["n_no_gold_nonempty_run"].value == 1
    )
    fe = m["filter_false_exclusion_rate"]
    assert (fe.numerator, fe.denominator) == (3, 6)
    de = m["doc_exclusion_rate"]
    assert (de.numerator, de.denominator) == (3, 7)
    att = {p: m[f"attribution@10.{p}"].numerator for p in ("hit", "filter", "retriever", "ranker")}
    assert att == {"hit": 2, "filter": 3, "retriever": 1, "ranker": 0}
    docs = {p: m[f"doc_attribution@10.{p}"].numerator for p in ("found", "filter", "retriever", "ranker")}
    assert docs == {"found": 2, "filter": 3, "retriever": 2, "ranker": 0}
    assert m["recall@10"].value == pytest.approx(1.5 / 6)
    assert m["mrr"].value == pytest.approx((1 + 1 / 3) / 6)
    assert (m["predicate_precision"].value, m["predicate_recall"].value) == (
        pytest.approx(1 / 3),
        pytest.approx(1 / 3),
    )
    assert list(ev.keys["gold_node"]) == [
        "T1562.001",
        "T1562.002",
        "T1003.001",
        "T1003.002",
        "attack",
        None,
        "T1070",
        None,
    ]
    assert list(ev.details["fe_cause"])[:4] == ["sibling", "sibling", None, "unrelated"]
    diag = category_diagnosis(ev, attack)
    assert diag["n_false_exclusions"] == 3
    top = diag["by_cause_under"][0]
    assert (top["cause"], top["under"], top["n"]) == ("sibling", "T1562", 2)
    assert diag["sentences"][0] == (
        "67% of false exclusions (2/3) come from sibling-category filters under T1562 (Impair Defenses)"
    )
    # per node, rolled up: a parent pools its subtree's queries
    roll = ev.rollup(attack)
    assert roll["T1562"]["metrics"]["filter_false_exclusion_rate"].value == 1.0
    assert roll["TA0005"]["metrics"]["filter_false_exclusion_rate"].value == pytest.approx(2 / 3)
    assert roll["TA0006"]["metrics"]["filter_false_exclusion_rate"].value == 0.5
    assert roll["attack"]["metrics"]["filter_false_exclusion_rate"].value == 0.5
    # attribution at a smaller cut-off: c5's gold at rank 3 becomes a ranker loss
    m1 = score_retrieval(attack, recs, corpus, attribution_k=1).metrics()
    assert {p: m1[f"attribution@1.{p}"].numerator for p in ("hit", "filter", "retriever", "ranker")} == {
        "hit": 1,
        "filter": 3,
        "retriever": 1,
        "ranker": 1,
    }


def test_empty_denominator_is_missing_evidence(attack, seed):
    corpus, recs = seed
    no_filters = [
        {"id": r["id"], "retrieval": {k: v for k, v in r["retrieval"].items() if k != "filters"}}
        for r in recs
    ]
    m = score_retrieval(attack, no_filters, corpus).metrics()
    assert m["filter_false_exclusion_rate"].value is None
    assert "no queries with entitlement-eligible gold" in m["filter_false_exclusion_rate"].missing
    assert m["n_filters_not_logged"].value == 4
    with pytest.raises(MissingEvidence):
        m["filter_false_exclusion_rate"].require()
    # without a corpus nothing can be replayed: missing, not 0
    assert score_retrieval(attack, recs).metrics()["filter_false_exclusion_rate"].value is None


def test_replay_operators_and_entitlement(attack):
    docs = [
        {"id": "a", "categories": ["T1003.001"], "tenant": "acme", "lang": ["en", "nl"]},
        {"id": "b", "categories": ["T1562.001", "T1110"], "tenant": "acme", "lang": "de"},
        {"id": "c", "categories": [], "tenant": "globex"},
        {"id": "e", "categories": "TA0005", "jurisdiction": "EU"},
    ]
    c = Corpus.from_records(docs, attack)
    idx = np.arange(4)
    cases = [
        ("category", "within", "TA0006", [True, True, False, False]),
        ("category", "within", ["T1562", "T1070"], [False, True, False, False]),
        ("category", "eq", "T1003", [False, False, False, False]),
        ("category", "in", ["TA0005", "T1110"], [False, True, False, True]),
        ("lang", "eq", "nl", [True, False, False, False]),
        ("lang", "in", ["de", "fr"], [False, True, False, False]),
        ("lang", "ne", "de", [True, False, True, True]),
        ("lang", "not_in", ["en", "de"], [False, False, True, True]),
        ("missing_field", "eq", "x", [False, False, False, False]),
    ]
    for f, op, v, want in cases:
        flt = parse_filters([{"field": f, "op": op, "value": v}], "test")
        ok, first = replay(c, attack, np.zeros(4, dtype=np.int64), idx, [flt])
        assert ok.tolist() == want, (f, op, v)
        assert (first == -1).tolist() == want
    # conjunction: the first failing filter is reported
    flt = parse_filters(
        [
            {"field": "tenant", "op": "eq", "value": "acme"},
            {"field": "category", "op": "within", "value": "TA0006"},
        ],
        "t",
    )
    ok, first = replay(c, attack, np.zeros(4, dtype=np.int64), idx, [flt])
    assert ok.tolist() == [True, True, False, False] and first.tolist() == [-1, -1, 0, 0]
    # entitlement: fail closed on a missing field; unnamed fields do not restrict
    assert c.eligible(idx, {"tenant": "acme"}).tolist() == [True, True, False, False]
    assert c.eligible(idx, {"tenant": ["acme", "globex"], "jurisdiction": "EU"}).tolist() == [False] * 4
    assert c.eligible(idx, None).all()
    with pytest.raises(InputError, match=r"\['locale'\] are not entitlement fields"):
        c.check_principal({"locale": "en"})
    with pytest.raises(InputError, match="'within' applies to the category field"):
        parse_filters([{"field": "lang", "op": "within", "value": "x"}], "t")
    with pytest.raises(InputError, match=r"t\[0\].op: 'like' is not an operator"):
        parse_filters([{"field": "lang", "op": "like", "value": "x"}], "t")
    with pytest.raises(UnknownIdError, match="T9999"):
        replay(
            c,
            attack,
            np.zeros(1, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            [parse_filters([{"field": "category", "op": "within", "value": "T9999"}], "t")],
        )
    with pytest.raises(UnknownIdError, match="T0000"):
        Corpus.from_records([{"id": "x", "categories": ["T0000"]}], attack)


def test_within_replay_matches_brute_force_on_polyhierarchy(vehicles):
    rng = np.random.default_rng(5)
    ids = list(vehicles.ids)
    docs = [
        {"id": f"d{i}", "categories": list(rng.choice(ids, int(rng.integers(0, 3)), replace=False))}
        for i in range(300)
    ]
    c = Corpus.from_records(docs, vehicles)
    nq = 50
    filters, pq, pd = [], [], []
    for q in range(nq):
        x = ids[int(rng.integers(0, len(ids)))]
        filters.append(parse_filters([{"field": "category", "op": "within", "value": x}], "t"))
        for dd in rng.choice(300, 20, replace=False):
            pq.append(q)
            pd.append(int(dd))
    ok, _ = replay(c, vehicles, np.asarray(pq), np.asarray(pd), filters)
    want = []
    for q, dd in zip(pq, pd):
        x = filters[q][0].values[0]
        sub = set(vehicles.subtree(x))
        want.append(any(cat in sub for cat in docs[dd]["categories"]))
    assert ok.tolist() == want
    assert sum(want) > 100  # amphibious_car under both car and boat is exercised


def test_hard_vs_soft(attack, fixtures_dir):
    docs = [
        {"id": f"e{i}", "categories": [], "tenant": "acme", "locale": "en-US" if i % 2 else "nl-NL"}
        for i in range(8)
    ]
    corpus = Corpus.from_records(docs, attack)
    # gold is always en-US; the run interleaves nl-NL distractors above it
    recs = [
        {
            "id": f"q{i}",
            "retrieval": {
                "gold": ["e1"] if i < 9 else ["e2"],
                "run": ["e0", "e2", "e1", "e4", "e3", "e6", "e5"],
                "principal": {"tenant": "acme"},
            },
        }
        for i in range(10)
    ]
    res = hard_vs_soft(
        recs,
        corpus,
        {"field": "locale", "op": "eq", "value": "en-US"},
        ontology=attack,
        k=2,
        boost=0.1,
        delta_min=0.0,
        epsilon=0.2,
        recall_loss_max=0.2,
        n_resamples=500,
    )
    # hard top-2 = e1, e3 (gold e1 found for q0-q8; q9's gold e2 is excluded)
    # soft: scores 1-r/7 plus 0.1 for en-US -> e0 (1.0) e1 (0.714+0.1) e2 (0.857): top-2 = e0, e2
    assert res.n_queries == 10
    assert res.hard_recall == pytest.approx(0.9) and res.soft_recall == pytest.approx(0.1)
    assert res.hard_precision == pytest.approx(0.45) and res.soft_precision == pytest.approx(0.05)
    assert res.exclusion_rate == pytest.approx(0.1)
    assert res.precision_gain == pytest.approx(0.4)
    assert res.recommendation == "hard"
    strict = hard_vs_soft(
        recs,
        corpus,
        {"field": "locale", "op": "eq", "value": "en-US"},
        ontology=attack,
        k=2,
        boost=0.1,
        delta_min=0.0,
        epsilon=0.05,
        recall_loss_max=0.2,
        n_resamples=500,
    )
    assert strict.recommendation == "soft" and "exclusion rate 0.1000 > epsilon 0.05" in strict.reasons[1]
    with pytest.raises(InputError, match="entitlement fields are always hard"):
        hard_vs_soft(
            recs,
            corpus,
            {"field": "tenant", "op": "eq", "value": "acme"},
            ontology=attack,
            delta_min=0,
            epsilon=0,
            recall_loss_max=0,
        )
    with pytest.raises(MissingEvidence):
        hard_vs_soft(
            [],
            corpus,
            {"field": "locale", "op": "eq", "value": "en-US"},
            ontology=attack,
            delta_min=0,
            epsilon=0,
            recall_loss_max=0,
        )


def test_batched_entitlement_matches_per_principal(attack):
    rng = np.random.default_rng(9)
    tenants = ["acme", "globex", "initech"]
    docs = []
    for i in range(200):
        d = {"id": f"x{i}"}
        if rng.random() < 0.9:
            d["tenant"] = tenants[int(rng.integers(0, 3))]
        if rng.random() < 0.5:
            d["jurisdiction"] = list(rng.choice(["NL", "EU", "US"], int(rng.integers(1, 3)), replace=False))
        docs.append(d)
    c = Corpus.from_records(docs, attack)
    principals = [
        None,
        {"tenant": "acme"},
        {"tenant": ["acme", "globex"], "jurisdiction": "EU"},
        {"jurisdiction": ["US", "NL"]},
        {"tenant": "nobody"},
    ]
    from kg_rageval.families.retrieval.corpus import eligible_pairs

    grp = rng.integers(0, len(principals), 1000)
    dd = rng.integers(0, 200, 1000)
    got = eligible_pairs(c, grp, dd, principals)
    for g, d, ok in zip(grp.tolist(), dd.tolist(), got.tolist()):
        pr = principals[g] or {}
        want = True
        for f, v in pr.items():
            vals = set(v if isinstance(v, list) else [v])
            have = docs[d].get(f)
            have = set(have if isinstance(have, list) else ([have] if have is not None else []))
            want &= bool(vals & have)
        assert ok == want
    assert got.sum() > 200


@pytest.fixture(scope="module")
def two_roots():
    from kg_rageval.ontology import OntologyBuilder

    b = OntologyBuilder("two-roots")
    for node, parent in (("A", None), ("a1", "A"), ("a2", "A"), ("B", None), ("b1", "B")):
        b.add_node(node, label=node.upper())
        if parent:
            b.add_edge(node, parent)
    return b.build()


def test_retrieved_gold_excluded_by_the_log_is_an_inconsistent_filter_log(two_roots):
    """Issue #19: a gold doc retrieved although the logged filter excludes it is counted as an
    inconsistent filter log, not as a false exclusion and a hit at the same time."""
    c = Corpus.from_records(
        [
            {"id": "x", "categories": ["a1"]},
            {"id": "y", "categories": ["b1"]},
            {"id": "z", "categories": ["b1"]},
        ],
        two_roots,
    )
    within_a = [{"field": "category", "op": "within", "value": "A"}]
    recs = [
        {"id": "q1", "retrieval": {"gold": ["y"], "run": ["y", "x"], "filters": within_a}},  # inconsistent
        {
            "id": "q2",
            "retrieval": {"gold": ["y", "z"], "run": ["x", "z"], "filters": within_a},
        },  # z inconsistent, y excluded
        {"id": "q3", "retrieval": {"gold": ["x"], "run": ["x"], "filters": within_a}},  # consistent hit
    ]
    ev = score_retrieval(two_roots, recs, c, k=10)
    m = ev.metrics()
    assert (m["filter_log_inconsistency_rate"].numerator, m["filter_log_inconsistency_rate"].denominator) == (
        2,
        3,
    )
    assert m["fe_docs_inconsistent"].value == 2
    # no query is a false exclusion: each retrieved a gold doc the log says it excluded
    assert (m["filter_false_exclusion_rate"].numerator, m["filter_false_exclusion_rate"].denominator) == (
        0,
        3,
    )
    # documents: only q2's y (not retrieved, excluded) is an exclusion
    assert (m["doc_exclusion_rate"].numerator, m["doc_exclusion_rate"].denominator) == (1, 4)
    assert list(ev.details["attribution"]) == ["hit", "hit", "hit"]
    assert list(ev.details["filter_inconsistent"]) == ["y", "z", None]
    assert m["doc_attribution@10.filter"].numerator == 1


def test_filter_on_an_entitlement_field_is_refused(attack):
    c = Corpus.from_records([{"id": "a", "categories": ["T1003"], "tenant": "acme"}], attack)
    rec = {
        "id": "q",
        "retrieval": {
            "gold": ["a"],
            "run": ["a"],
            "filters": [{"field": "tenant", "op": "eq", "value": "acme"}],
        },
    }
    with pytest.raises(
        InputError, match=r"record 'q'.*retrieval.filters\[0\].field: 'tenant' is an entitlement field"
    ):
        score_retrieval(attack, [rec], c)
    # without a corpus the default entitlement fields apply
    with pytest.raises(InputError, match="'jurisdiction' is an entitlement field"):
        score_retrieval(
            attack,
            [
                {
                    "id": "q",
                    "retrieval": {
                        "gold": ["a"],
                        "run": [],
                        "gold_filters": [{"field": "jurisdiction", "op": "eq", "value": "EU"}],
                    },
                }
            ],
        )


def test_category_diagnosis_never_names_the_virtual_root(two_roots):
    assert two_roots.virtual_root
    c = Corpus.from_records([{"id": "x", "categories": ["a1"]}, {"id": "y", "categories": ["b1"]}], two_roots)
    recs = [
        {
            "id": "q1",
            "retrieval": {
                "gold": ["y"],
                "run": ["x"],
                "filters": [{"field": "category", "op": "within", "value": "a1"}],
            },
        },
        {
            "id": "q2",
            "retrieval": {
                "gold": ["x"],
                "run": [],
                "filters": [{"field": "category", "op": "within", "value": "a2"}],
            },
        },
    ]
    ev = score_retrieval(two_roots, recs, c)
    assert list(ev.details["fe_cause"]) == ["unrelated", "sibling"]
    assert list(ev.details["fe_under"]) == [None, "A"]
    diag = category_diagnosis(ev, two_roots)
    assert "kgr:virtual-root" not in str(diag)
    # gold spanning two real roots has no gold node (not the virtual root)
    span = score_retrieval(two_roots, [{"id": "q", "retrieval": {"gold": ["x", "y"], "run": []}}], c)
    assert list(span.keys["gold_node"]) == [None]
    assert diag["sentences"] == [
        "50% of false exclusions (1/2) come from sibling-category filters under A (A)",
        "50% of false exclusions (1/2) come from unrelated-category filters",
    ]


@pytest.fixture(scope="module")
def pq_corpus(attack):
    return Corpus.from_records(
        [
            {"id": "a1", "categories": ["T1003.001"]},
            {"id": "a2", "categories": ["T1003.002"]},
            {"id": "b1", "categories": ["T1562.001"]},
            {"id": "b2", "categories": ["T1562.002"]},
        ],
        attack,
    )


def test_hard_vs_soft_with_a_per_query_preference(attack, pq_corpus):
    from kg_rageval.families.retrieval import score_preference

    pref = {"field": "category", "op": "within", "value": {"from": "labels.pred"}}
    ev = score_preference(attack, PER_QUERY, pq_corpus, preference=pref, k=1, boost=0.1)
    m = ev.metrics()
    assert list(ev.record_ids) == ["q1", "q2", "q4"] and ev.meta["n_without_preference"] == 1
    assert (m["hard_recall"].value, m["soft_recall"].value) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert m["precision_gain"].value == pytest.approx(-1 / 3) and m["recall_delta"].value == pytest.approx(
        -1 / 3
    )
    assert (m["exclusion_rate"].numerator, m["exclusion_rate"].denominator) == (2, 3)
    assert m["unknown_preference"].value == 1
    assert list(ev.details["preference"]) == [
        "categories within T1003",
        "categories within T1003",
        "categories within T9999",
    ]
    res = hard_vs_soft(
        PER_QUERY,
        pq_corpus,
        pref,
        ontology=attack,
        k=1,
        delta_min=0.0,
        epsilon=0.5,
        recall_loss_max=0.1,
        n_resamples=200,
    )
    assert res.n_queries == 3 and res.n_without_preference == 1 and res.n_unknown_preference == 1
    assert res.preference == "category within {labels.pred}" and res.recommendation == "soft"
    assert res.precision_gain == pytest.approx(-1 / 3)
    # each record's own retrieval.preference; mentions.pred ids through a path
    own = [
        {
            **r,
            "retrieval": {
                **r["retrieval"],
                "preference": {"field": "category", "op": "within", "value": "T1003"},
            },
        }
        for r in PER_QUERY[:2]
    ]
    assert score_preference(attack, own, pq_corpus, k=1).metrics()["hard_recall"].value == 0.5
    ment = [
        {
            "id": "m",
            "mentions": {"pred": [{"start": 0, "end": 1, "id": None}, {"start": 2, "end": 3, "id": "T1003"}]},
            "retrieval": {"gold": ["a1"], "run": ["b1", "a1"]},
        }
    ]
    ev = score_preference(
        attack,
        ment,
        pq_corpus,
        k=1,
        preference={"field": "category", "op": "within", "value": {"from": "mentions.pred"}},
    )
    assert ev.metrics()["hard_recall"].value == 1.0 and list(ev.details["preference"]) == [
        "categories within T1003"
    ]
    with pytest.raises(InputError, match="entitlement fields are always hard"):
        score_preference(
            attack, PER_QUERY, pq_corpus, preference={"field": "tenant", "op": "eq", "value": {"from": "x"}}
        )


def test_principal_classes_equal_the_per_principal_loop(attack):
    """``eligible_pairs`` groups the principals by their value per field; the result equals
    the frozen per-principal loop on values of every shape: strings, lists, numbers and
    booleans (compared in their JSON spelling), an empty list, ``None``, a missing field, a
    field the corpus lacks, no principal and an empty one — with few pairs (each looked up)
    and with more pairs than (class, document) cells (each cell decided once)."""
    import retrieval_reference as ref

    from kg_rageval.families.retrieval.corpus import eligible_pairs

    rng = np.random.default_rng(11)
    docs = []
    for i in range(300):
        d = {"id": f"x{i}"}
        u = rng.random()
        if u < 0.8:
            d["tenant"] = ["acme", "globex", "1", "true", "null"][int(rng.integers(0, 5))]
        if rng.random() < 0.5:
            d["jurisdiction"] = list(rng.choice(["NL", "EU", "US"], int(rng.integers(1, 3)), replace=False))
        docs.append(d)
    c = Corpus.from_records(docs, attack, entitlement_fields=("tenant", "jurisdiction", "status"))
    values = ["acme", ["acme", "globex"], 1, True, None, [], ["1", 1], "nobody", ["EU"]]
    principals = [None, {}]
    for _ in range(60):
        pr = {}
        if rng.random() < 0.8:
            pr["tenant"] = values[int(rng.integers(0, len(values)))]
        if rng.random() < 0.4:
            pr["jurisdiction"] = values[int(rng.integers(0, len(values)))]
        if rng.random() < 0.1:
            pr["status"] = "published"  # no document has the field: fail closed
        principals.append(pr or None)
    # 5,000 pairs: every (pair, value) searched; 200,000: fewer (class, document) cells than
    # pairs, each cell decided once (both ways of ``eligible_pairs``)
    for n in (5000, 200_000):
        grp = rng.integers(0, len(principals), n)
        dd = rng.integers(0, len(docs), n)
        got = eligible_pairs(c, grp, dd, principals)
        want = ref.eligible_pairs(c, grp, dd, principals)
        assert np.array_equal(got, want)
        assert n // 10 < got.sum() < n - n // 10
    assert eligible_pairs(c, grp[:0], dd[:0], principals).shape == (0,)
    assert eligible_pairs(c, grp, dd, [None] * len(principals)).all()


def test_preference_resolves_alternative_ids_as_every_family():
    """A preference on an alt id filters on its concept (``IdResolver``); before, it was a
    concept the ontology lacks (``unknown_preference`` 1, a filter passing nothing)."""
    from kg_rageval.families.retrieval import score_preference
    from kg_rageval.ontology import OntologyBuilder

    b = OntologyBuilder("aliased")
    for nid in ("root", "A", "B"):
        b.add_node(nid)
    b.add_edge("A", "root")
    b.add_edge("B", "root")
    b.add_alias("A-old", "A")
    o = b.build()
    c = Corpus.from_records([{"id": "a", "categories": ["A"]}, {"id": "b", "categories": ["B"]}], o)
    rec = {
        "id": "q",
        "retrieval": {
            "gold": ["a"],
            "run": ["b", "a"],
            "preference": {"field": "category", "op": "within", "value": "A-old"},
        },
    }
    m = score_preference(o, [rec], c, k=1).metrics()
    assert m["unknown_preference"].value == 0
    assert (m["hard_recall"].value, m["soft_recall"].value) == (1.0, 0.0)  # soft: b 1.0 vs a 0.5 + 0.1
    m = score_preference(o, [rec], c, k=1, aliases=False).metrics()
    assert m["unknown_preference"].value == 1 and m["hard_recall"].value == 0.0
    with pytest.raises(InputError, match="A-old"):
        score_preference(o, [rec], c, k=1, aliases=False, on_unknown="error")
