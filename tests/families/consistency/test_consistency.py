"""The consistency family: agreement of sampled answers as concept-set agreement through the
ontology (figures worked by hand on fixtures/hierarchy/vehicles.obo: vehicle is the root; car
and boat at depth 1; sedan, hatchback under car; submarine under boat; saloon obsolete, replaced
by sedan), unscored codes, bad input, gates per node, the CLI."""

from __future__ import annotations

import json
import math

import pytest

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.families.consistency.score import jaccard
from kg_rageval.pytest_plugin import check_gates
from kg_rageval.scoring import get_scorer


def _s(concepts, text=None):
    return {"concepts": concepts} if text is None else {"concepts": concepts, "text": text}


RECORDS = [
    # exact pairs 1, 0, 0 -> 1/3; closures {sedan, car} x2, {hatchback, car}: 1, 1/3, 1/3 -> 5/9;
    # texts "a sedan" twice after folding -> 1/3; modal 2/3
    {
        "id": "a",
        "gold_node": "VH:sedan",
        "consistency": {
            "temperature": 0.7,
            "samples": [
                _s(["VH:sedan"], "A sedan"),
                _s(["VH:sedan"], "a   sedan"),
                _s(["VH:hatchback"], "A hatchback"),
            ],
        },
    },
    # exact 0; closures {submarine, boat} vs {boat, X}: 1/3; one unknown id (counted); modal 1/2
    {
        "id": "b",
        "gold_node": "VH:boat",
        "consistency": {"samples": [_s(["VH:submarine"], "sub"), _s(["VH:boat", "X:unknown"])]},
    },
    {"id": "c", "consistency": {"temperature": 0, "samples": [_s(["VH:car"]), _s(["VH:car"])]}},
    {"id": "d", "consistency": {"temperature": 1.0, "samples": [_s(["VH:car"])]}},
    {"id": "e"},
    # the obsolete saloon is flagged and scored where it stands: exact 0, closures
    # {saloon, car} vs {sedan, car} -> 1/3
    {"id": "f", "gold_node": "VH:sedan", "consistency": {"samples": [_s(["VH:saloon"]), _s(["VH:sedan"])]}},
]


@pytest.fixture(scope="module")
def onto(fixtures_dir):
    from kg_rageval.ontology import load_ontology

    return load_ontology(fixtures_dir / "hierarchy" / "vehicles.obo")


def _values(res):
    return {k.removeprefix("consistency."): v.value for k, v in res.metrics().items()}


def test_agreement_worked_by_hand(onto):
    res = get_scorer("consistency").score(onto, RECORDS)
    m = _values(res)
    assert m["concept_agreement.mean"] == pytest.approx((1 / 3 + 0 + 0) / 3)
    assert m["hier_agreement.mean"] == pytest.approx((5 / 9 + 1 / 3 + 1 / 3) / 3)
    assert m["text_agreement.mean"] == pytest.approx(1 / 3)  # only record a has every text
    assert m["modal_share.mean"] == pytest.approx((2 / 3 + 1 / 2 + 1 / 2) / 3)
    assert m["unanimous_rate"] == 0.0
    assert m["not_in_ontology_rate"] == pytest.approx(1 / 8)
    assert m["inactive_rate"] == pytest.approx(1 / 8)
    assert m["empty_sample_rate"] == 0.0
    ev = res.single
    assert sorted((u["record_id"], u["code"]) for u in ev.unscored) == [
        ("c", "not_applicable"),
        ("d", "missing_prediction"),
        ("e", "no_section"),
    ]


def test_replace_maps_the_obsolete_id_to_its_replacement(onto):
    m = _values(get_scorer("consistency").score(onto, RECORDS[5:], on_status="replace"))
    assert (m["concept_agreement.mean"], m["hier_agreement.mean"], m["unanimous_rate"]) == (1.0, 1.0, 1.0)
    assert m["inactive_rate"] == 0.0


def test_empty_sets_agree_and_are_counted(onto):
    recs = [{"id": "z", "consistency": {"samples": [_s([]), _s([]), _s(["VH:car"])]}}]
    m = _values(get_scorer("consistency").score(onto, recs))
    assert m["concept_agreement.mean"] == pytest.approx(1 / 3)  # (∅, ∅) = 1, the others 0
    assert m["empty_sample_rate"] == pytest.approx(2 / 3)
    assert m["not_in_ontology_rate"] == 0.0
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({1, 2}), frozenset({2, 3})) == pytest.approx(1 / 3)


def test_nothing_scored_is_missing_evidence(onto):
    res = get_scorer("consistency").score(onto, RECORDS[2:5])
    assert all(v.value is None and v.missing for v in res.metrics().values())


def test_needs_the_ontology_and_checks_input(onto):
    with pytest.raises(ConfigError, match="needs the ontology"):
        get_scorer("consistency").score(None, RECORDS)
    bad = [{"id": "x", "consistency": {"samples": [_s(["VH:car"]), {"concepts": "VH:car"}]}}]
    with pytest.raises(InputError, match=r"'x'.*consistency.samples.1.concepts"):
        get_scorer("consistency").score(onto, bad)
    bad = [{"id": "y", "consistency": {"samples": [], "temp": 1}}]
    with pytest.raises(InputError, match=r"'y'.*consistency.temp"):
        get_scorer("consistency").score(onto, bad)


def test_gates_per_node_and_min_rows(onto):
    res = get_scorer("consistency").score(onto, RECORDS)
    results, _ = check_gates(
        res,
        [
            "consistency.concept_agreement.mean[node:VH:car] >= 0.1",
            "consistency.hier_agreement.mean[node:VH:boat] >= 0.5",
        ],
        ontology=onto,
        min_rows=1,
    )
    assert [(r.status, r.observed) for r in results] == [
        ("pass", pytest.approx((1 / 3 + 0) / 2)),
        ("fail", pytest.approx(1 / 3)),
    ]
    thin, _ = check_gates(res, ["consistency.concept_agreement.mean >= 0"], ontology=onto)
    assert thin[0].status == "missing"  # 3 records under the default 30


def test_score_command(tmp_path, fixtures_dir):
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    onto = str(fixtures_dir / "hierarchy" / "vehicles.obo")
    out = CliRunner().invoke(
        cli, ["score", "consistency", "-O", onto, "--data", str(data), "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["counts"]["records"] == 6 and payload["counts"]["scored_records"] == 3
    m = payload["metrics"]
    assert math.isclose(m["consistency.concept_agreement.mean"]["value"], 1 / 9)
    assert math.isclose(m["consistency.hier_agreement.mean"]["value"], 11 / 27)
    assert m["consistency.not_in_ontology_rate"]["numerator"] == 1.0
