"""Reading / heading order and title / heading extraction of the parsing family: hand-worked
values on fixtures/parsing/layout.jsonl, Kendall tau-b equal to scipy.stats.kendalltau and the
similarity equal to rapidfuzz's Levenshtein.normalized_similarity on random inputs, per-class
roll-ups as sums, gates per class with min_rows, bad input naming the field.

Hand-worked (fixture):

* rep-1 reading order: reference a < {b, c} < d, extracted c b d x. Written out, the group
  follows the extraction: a c b d. Common blocks c, b, d: reference ranks 1 1 2, extracted
  positions 0 1 2; pairs (c,b) tied in the reference, (c,d) and (b,d) concordant: C − D = 2,
  n0 = 3, n1 = 1, n2 = 0, tau = 2 / sqrt(2) / sqrt(3) = 0.8164965809. Edits a c b d → c b d x:
  delete a, insert x = 2, over max(4, 4). Coverage 3 / 4.
* rep-2: fully reversed, tau = −1; edits p1 p2 p3 p4 → p4 p3 p2 p1 = 4 (rapidfuzz), over 4.
* form-1: one common block (f1): tau undefined (left out); edits 1 over 2; coverage 1 / 2.
* report class: tau mean (0.8164965809 − 1) / 2; ned (2 + 4) / (4 + 4) = 0.75; coverage 7 / 8.
  all: ned 7 / 10, coverage 8 / 10, tau rows 2 (form-1 left out).
* heading order rep-1: h1 h3 h2 against h1 h2 h3: tau = (2 − 1) / 3 = 1/3, edits 2 over 3.
* titles: "Annual  Report 2024" = "ANNUAL REPORT 2024" (casefold, whitespace), "Straße" =
  "STRASSE" (casefold ß → ss), "ﬁnal form" = "final form" (NFKC ligature): 3 / 3, similarity 1.
* headings: "1. scope" vs "1 scope": not exact, 1 − 1/8 = 0.875; "2. Method" not found: 0, 0.
  heading_exact_match 0 / 2, heading_similarity 0.875 / 2.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.families.parsing import score_parsing
from kg_rageval.families.parsing.order import (
    kendall_tau_b,
    levenshtein_distance,
    levenshtein_similarity,
    normalise_heading,
    order_scores,
)

ROOT = Path(__file__).resolve().parents[3]
LAYOUT = ROOT / "fixtures" / "parsing" / "layout.jsonl"
ONTO = ROOT / "ontologies" / "doid-cancer-slim.obo"
TAU1 = 2 / math.sqrt(2) / math.sqrt(3)


def _records() -> list[dict]:
    return [json.loads(line) for line in LAYOUT.read_text().splitlines()]


def test_hand_worked_order_scores() -> None:
    s = order_scores(("a", ("b", "c"), "d"), ("c", "b", "d", "x"))
    assert s.tau == pytest.approx(TAU1, abs=1e-15)
    assert (s.edits, s.norm, s.found, s.labelled) == (2, 4, 3, 4)
    s = order_scores(("p1", "p2", "p3", "p4"), ("p4", "p3", "p2", "p1"))
    assert (s.tau, s.edits, s.norm) == (-1.0, 4, 4)
    s = order_scores(("f1", "f2"), ("f1",))
    assert (s.tau, s.edits, s.norm, s.found) == (None, 1, 2, 1)
    s = order_scores(("a", "b"), None)  # no order produced: every block missing
    assert (s.tau, s.edits, s.norm, s.found) == (None, 2, 2, 0)
    s = order_scores(("a", "b", "c"), ("a", "a", "c", "b"))  # a twice: its first position ranks
    assert s.tau == pytest.approx(1 / 3) and s.edits == 2
    assert kendall_tau_b([1, 1, 1], [0, 1, 2]) is None  # all tied: scipy's NaN


def test_family_metrics_and_class_rollups() -> None:
    ev = score_parsing(None, _records())
    m = ev.metrics()
    assert m["reading_order_tau"].value == pytest.approx((TAU1 - 1) / 2)
    assert m["reading_order_tau"].rows == 2
    assert m["reading_order_ned"].value == pytest.approx(7 / 10)
    assert m["reading_order_ned"].rows == 3
    assert m["reading_order_coverage"].value == pytest.approx(8 / 10)
    assert m["heading_order_tau"].value == pytest.approx(1 / 3)
    assert m["heading_order_ned"].value == pytest.approx(2 / 3)
    assert m["title_exact_match"].value == 1.0 and m["title_similarity"].value == 1.0
    assert m["title_exact_match"].rows == 3
    assert m["heading_exact_match"].value == 0.0
    assert m["heading_similarity"].value == pytest.approx(0.875 / 2)
    assert m["heading_similarity"].rows == 2
    # no text pair and no table: those metrics are missing evidence, not 0 or 1
    assert m["cer"].value is None and m["teds"].value is None
    by = ev.breakdown("slice:doc_class")
    rep, form = by["report"]["metrics"], by["form"]["metrics"]
    assert rep["reading_order_tau"].value == pytest.approx((TAU1 - 1) / 2)
    assert rep["reading_order_ned"].value == pytest.approx(6 / 8)
    assert rep["reading_order_coverage"].value == pytest.approx(7 / 8)
    assert form["reading_order_tau"].value is None  # one common block: undefined, missing
    assert form["reading_order_ned"].value == pytest.approx(1 / 2)
    assert form["heading_order_tau"].value is None


def test_tau_equals_scipy() -> None:
    stats = pytest.importorskip("scipy.stats", reason="scipy is the reference for Kendall tau-b")
    rng = random.Random(11)
    for _ in range(2000):
        n = rng.randint(0, 14)
        x = [rng.randint(0, 6) for _ in range(n)]
        y = [rng.randint(0, 6) for _ in range(n)]
        ours = kendall_tau_b(x, y)
        ref = stats.kendalltau(x, y).statistic if n >= 2 else math.nan
        if ours is None:
            assert math.isnan(ref), (x, y)
        else:
            assert ours == pytest.approx(ref, abs=1e-12), (x, y)
    x = list(range(3000))  # more rows than one block of the pair loop
    y = x[:]
    rng.shuffle(y)
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


def test_order_tau_on_groups_equals_scipy_on_the_same_ranks() -> None:
    stats = pytest.importorskip("scipy.stats", reason="scipy is the reference for Kendall tau-b")
    rng = random.Random(5)
    for _ in range(300):
        ids = [f"b{i}" for i in range(rng.randint(2, 12))]
        ref: list = []
        i = 0
        while i < len(ids):
            k = rng.choice((1, 1, 2, 3))
            ref.append(ids[i] if k == 1 else ids[i : i + k])
            i += k
        ext = [b for b in ids if rng.random() < 0.85]
        rng.shuffle(ext)
        s = order_scores(ref, ext)
        rank = {b: r for r, it in enumerate(ref) for b in ([it] if isinstance(it, str) else it)}
        common = [b for b in ids if b in ext]
        if len(common) < 2:
            assert s.tau is None
            continue
        want = stats.kendalltau([rank[b] for b in common], [ext.index(b) for b in common]).statistic
        if math.isnan(want):
            assert s.tau is None
        else:
            assert s.tau == pytest.approx(want, abs=1e-12)


def test_similarity_equals_rapidfuzz() -> None:
    lev = pytest.importorskip("rapidfuzz.distance.Levenshtein", reason="rapidfuzz is the reference")
    rng = random.Random(3)
    alphabet = "abAB ßﬁé\u00a0\t"
    for _ in range(2000):
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        na, nb = normalise_heading(a), normalise_heading(b)
        assert levenshtein_similarity(na, nb) == pytest.approx(lev.normalized_similarity(na, nb), abs=1e-15)
        assert levenshtein_distance(list(a), list(b)) == lev.distance(a, b)
    assert normalise_heading("  Stra\u00dfe\u00a0 ﬁnal\n") == "strasse final"


def test_audit_gates_per_class(tmp_path) -> None:
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit

    gates = [
        "parsing.reading_order_tau[slice:doc_class=report] >= 0.5",
        "parsing.reading_order_ned[slice:doc_class=form] <= 0.5",
        "parsing.reading_order_tau[slice:doc_class=form] >= 0.5",
        "parsing.title_exact_match[slice:doc_class=report] >= 0.9",
        "parsing.heading_similarity[node:DOID:162] >= 0.8",
    ]
    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(LAYOUT),
            "families": {"parsing": {}},
            "gates": gates,
            "min_rows": 1,
        },
        base_dir=tmp_path,
    )
    by = {str(r.gate): r for r in run_audit(cfg, progress=False).gate_results}
    g = by[gates[0]]
    assert (g.status, g.observed) == ("fail", pytest.approx((TAU1 - 1) / 2))
    g = by[gates[1]]
    assert (g.status, g.observed) == ("pass", pytest.approx(0.5))
    assert by[gates[2]].status == "missing"  # tau undefined for the only form document
    assert (by[gates[3]].status, by[gates[3]].observed) == ("pass", 1.0)
    assert (by[gates[4]].status, by[gates[4]].observed) == ("fail", pytest.approx(0.4375))
    cfg = config_from_mapping(
        {
            "ontology": str(ONTO),
            "records": str(LAYOUT),
            "families": {"parsing": {}},
            "gates": gates[:1],
            "min_rows": 3,
        },
        base_dir=tmp_path,
    )
    g = run_audit(cfg, progress=False).gate_results[0]
    assert (
        str(g.gate) == gates[0] and g.status == "missing"
    )  # 2 documents with a defined tau, under min_rows 3


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"reading_order": {"reference": []}}, "parsing.reading_order.reference"),
        ({"reading_order": {"reference": ["a", "a"]}}, "parsing.reading_order.reference"),
        ({"reading_order": {"reference": ["a", [1]]}}, "parsing.reading_order.reference[1]"),
        ({"heading_order": {"reference": ["a"], "extracted": [["a"]]}}, "parsing.heading_order.extracted[0]"),
        ({"heading_order": {"reference": ["a"], "order": []}}, "parsing.heading_order.order"),
        ({"title": {"reference": " "}}, "parsing.title.reference"),
        ({"headings": [{"reference": "x", "extracted": 3}]}, "parsing.headings[0].extracted"),
        ({"headings": {"reference": "x"}}, "parsing.headings"),
    ],
)
def test_bad_input_names_the_field(section: dict, field: str) -> None:
    with pytest.raises(InputError) as exc:
        score_parsing(None, [{"id": "r1", "parsing": section}])
    assert field in str(exc.value) and "r1" in str(exc.value)


def test_order_bound() -> None:
    with pytest.raises(InputError, match="10000 blocks"):
        score_parsing(
            None,
            [{"id": "r1", "parsing": {"reading_order": {"reference": [f"b{i}" for i in range(10_001)]}}}],
        )
