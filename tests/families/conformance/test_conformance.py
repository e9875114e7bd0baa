"""Constrained-generation conformance: spec, derived schema, validators' agreement, metrics.

Expected values are worked by hand on ``fixtures/conformance`` (see its README) and the
``vehicles`` taxonomy; validators are checked against each other (stock jsonschema Draft
2020-12, our set-based validator, the pydantic model, the outlines_core regex and index)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conformance_helpers import (
    TECHNIQUES,
    build_attack_like,  # tests/ is on sys.path (as for test_conformance_generation)
)

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.conformance import (
    FAILURE_KINDS,
    check_schema,
    derive_id_pattern,
    derive_schema,
    load_spec,
    parse_spec,
    score_conformance,
)
from kg_rageval.records import read_records

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "conformance"


@pytest.fixture(scope="module")
def attack():
    return build_attack_like()


@pytest.fixture(scope="module")
def spec():
    return load_spec(FIX / "attack_spec.yaml")


@pytest.fixture(scope="module")
def derived(attack, spec):
    return derive_schema(attack, spec)


# ---------------------------------------------------------------------- spec
def test_spec_same_in_yaml_json_toml():
    y, j, t = (load_spec(FIX / f"attack_spec.{ext}") for ext in ("yaml", "json", "toml"))
    dump = lambda s: s.model_dump(exclude={"source"})  # noqa: E731
    assert dump(y) == dump(j) == dump(t)
    assert y.required_fields == ["technique", "tactic"]
    assert y.fields["technique"].within == ["attack-pattern"]  # a string becomes a list


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"fields": {}}, "field fields: at least one output field is needed"),
        ({"fields": {"t": {"kind": "nodes"}}}, "field fields.t.kind: unknown kind 'nodes'"),
        ({"fields": {"t": {"kind": "triples"}}}, "field fields.t: a triples field needs 'predicates'"),
        (
            {"fields": {"r": {"kind": "triples", "predicates": "onto"}}},
            "fields.r.predicates: must be 'ontology'",
        ),
        ({"fields": {"t": {"within": ["a", 3]}}}, "field fields.t.within[1]: Input should be a valid string"),
        ({"fields": {"t": {"within": "a"}}, "colour": 1}, "field colour: unknown key"),
        (
            {"fields": {"t": {"within": "a", "max_items": 3}}},
            "min_items/max_items/unique_items apply to 'list'",
        ),
        (
            {"fields": {"t": {"kind": "number", "node_type": "x"}}},
            "node selectors (within/node_type/ids) need kind",
        ),
        (
            {"fields": {"t": {"within": "a"}}, "required": ["zz"]},
            "'required' names fields that are not declared: 'zz'",
        ),
        (
            {"fields": {"t": {"within": "a"}}, "id_pattern": "T[0-9"},
            "field id_pattern: not a valid regular expression",
        ),
        (
            {"fields": {"t": {"kind": "list", "min_items": 3, "max_items": 1}}},
            "min_items (3) is greater than max_items (1)",
        ),
        (["technique"], "a schema spec must be a mapping, found list"),
    ],
)
def test_malformed_spec_names_file_and_field(data, needle):
    with pytest.raises(ConfigError) as exc:
        parse_spec(data, source="my-spec.yaml")
    assert str(exc.value).startswith("my-spec.yaml: ")
    assert needle in str(exc.value)


def test_malformed_spec_files(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("fields: [unclosed\n")
    with pytest.raises(
        ConfigError,
        match=r"(?s)s\.yaml: cannot parse the schema spec: while parsing a flow sequence.*line 1, column 9",
    ):
        load_spec(bad)
    other = tmp_path / "s.ini"
    other.write_text("x")
    with pytest.raises(
        ConfigError, match="unknown schema spec file type '.ini'; use .yaml, .yml, .json or .toml"
    ):
        load_spec(other)
    latin = tmp_path / "s.json"
    latin.write_bytes(b'{"title": "\xe9"}')
    with pytest.raises(
        ConfigError, match=r"s\.json: cannot parse the schema spec: 'utf-8' codec can't decode"
    ):
        load_spec(latin)
    with pytest.raises(ConfigError, match="no such schema spec file"):
        load_spec(tmp_path / "absent.yaml")


def test_spec_resolution_errors(attack):
    with pytest.raises(ConfigError, match=r"field fields\.t\.within: unknown ontology id 'nope'"):
        derive_schema(attack, parse_spec({"fields": {"t": {"within": "nope"}}}))
    with pytest.raises(
        ConfigError,
        match=r"fields\.t\.node_type: unknown node type\(s\) 'techniq'; the ontology has group, software, tactic, technique",
    ):
        derive_schema(attack, parse_spec({"fields": {"t": {"node_type": "techniq"}}}))
    with pytest.raises(ConfigError, match=r"field fields\.t: the selectors .* admit no active ontology node"):
        derive_schema(
            attack, parse_spec({"fields": {"t": {"within": "x-mitre-tactic", "node_type": "technique"}}})
        )
    with pytest.raises(ConfigError, match="declares no properties"):
        from kg_rageval.ontology import OntologyBuilder as B

        b = B("tiny")
        b.add_node("a")
        derive_schema(b.build(), parse_spec({"fields": {"r": {"kind": "triples", "predicates": "ontology"}}}))


# ---------------------------------------------------------------------- schema
def test_schema_enums_and_structure(derived):
    from jsonschema import Draft202012Validator

    s = derived.json_schema
    Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["additionalProperties"] is False
    assert s["required"] == ["technique", "tactic"]
    # T1086 (revoked) and T1064 (deprecated) are excluded; grouping nodes have no node type
    assert s["properties"]["technique"]["enum"] == TECHNIQUES
    assert s["properties"]["tactic"]["enum"] == ["TA0002", "TA0005", "TA0006"]
    assert s["properties"]["related"] == {
        "type": "array",
        "items": {"type": "string", "enum": TECHNIQUES},
        "maxItems": 3,
    }
    item = s["properties"]["relations"]["items"]
    assert item["properties"]["predicate"]["enum"] == ["uses", "achieves", "subtechnique-of", "related-to"]
    assert item["additionalProperties"] is False and item["required"] == ["subject", "predicate", "object"]
    # no selector: every active node but the virtual root (20 nodes - 2 inactive)
    assert len(item["properties"]["subject"]["enum"]) == 18
    assert s["properties"]["confidence"] == {"type": "number"}


def test_schema_status_options(attack):
    base = {"fields": {"t": {"within": "attack-pattern", "node_type": "technique"}}}
    dep = derive_schema(attack, parse_spec({**base, "allow_deprecated": True}))
    assert dep.json_schema["properties"]["t"]["enum"] == sorted(TECHNIQUES + ["T1064"])
    both = derive_schema(attack, parse_spec({**base, "allow_deprecated": True, "allow_revoked": True}))
    assert len(both.json_schema["properties"]["t"]["enum"]) == 10
    per_field = derive_schema(
        attack,
        parse_spec(
            {"fields": {"t": {"within": "attack-pattern", "node_type": "technique", "allow_revoked": True}}}
        ),
    )
    assert per_field.json_schema["properties"]["t"]["enum"] == sorted(TECHNIQUES + ["T1086"])


def test_vehicles_within_includes_multi_parent_node(vehicles):
    d = derive_schema(
        vehicles,
        parse_spec(
            {
                "fields": {
                    "car": {"within": "car"},
                    "boat": {"within": "Boat"},
                    "both": {"within": ["car", "boat"]},
                }
            }
        ),
    )
    p = d.json_schema["properties"]
    assert p["car"]["enum"] == ["amphibious_car", "car", "hatchback", "sedan"]
    assert p["boat"]["enum"] == ["amphibious_car", "boat", "submarine"]  # resolved by label
    assert p["both"]["enum"] == ["amphibious_car", "boat", "car", "hatchback", "sedan", "submarine"]
    ids = derive_schema(vehicles, parse_spec({"fields": {"x": {"within": "car", "ids": ["sedan", "boat"]}}}))
    assert ids.json_schema["properties"]["x"]["enum"] == ["sedan"]  # selectors intersect


# outputs with their hand-labelled validity and failure kinds under attack_spec
CASES = [
    ({"technique": "T1003.001", "tactic": "TA0006"}, set()),
    (
        {"technique": "T1059", "tactic": "TA0002", "related": ["T1059.001", "T1059.003"], "confidence": 0.75},
        set(),
    ),
    (
        {
            "technique": "T1110",
            "tactic": "TA0006",
            "confidence": 1,
            "relations": [{"subject": "G0016", "predicate": "uses", "object": "T1110.001"}],
        },
        set(),
    ),
    ({"technique": "T1003"}, {"missing_field"}),
    ({"tactic": "TA0006"}, {"missing_field"}),
    ({"technique": "T1003", "tactic": "TA0006", "note": "x"}, {"extra_field"}),
    ({"technique": "T1086", "tactic": "TA0006"}, {"enum_violation"}),  # revoked
    ({"technique": "T1064", "tactic": "TA0006"}, {"enum_violation"}),  # deprecated
    ({"technique": "TA0006", "tactic": "TA0006"}, {"enum_violation"}),  # a tactic in the technique field
    ({"technique": "T9999", "tactic": "TA0006"}, {"enum_violation"}),
    ({"technique": "T1003", "tactic": 6}, {"wrong_type"}),
    ({"technique": "T1003", "tactic": "TA0006", "confidence": "high"}, {"wrong_type"}),
    ({"technique": "T1003", "tactic": "TA0006", "related": "T1059"}, {"wrong_type"}),
    (
        {"technique": "T1003", "tactic": "TA0006", "related": ["T1059", "T1110", "T1003", "T1059.001"]},
        {"other"},
    ),
    (
        {
            "technique": "T1003",
            "tactic": "TA0006",
            "relations": [{"subject": "G0007", "predicate": "likes", "object": "T1003"}],
        },
        {"enum_violation"},
    ),
    (
        {"technique": "T1003", "tactic": "TA0006", "relations": [{"subject": "G0007", "predicate": "uses"}]},
        {"missing_field"},
    ),
    (
        {
            "technique": "T1003",
            "tactic": "TA0006",
            "relations": [{"subject": "G0007", "predicate": "uses", "object": "T1003", "why": 1}],
        },
        {"extra_field"},
    ),
    ({"tactic": "TA0006", "x": 1, "technique2": "T1003"}, {"missing_field", "extra_field"}),
    (["T1003"], {"wrong_type"}),
    (None, {"wrong_type"}),
    ('{"technique": "T1003", "tactic": "TA0006"}', set()),  # a JSON string is parsed
    ('{"technique": "T1003", "tactic": ', {"not_json"}),
    ("T1003", {"not_json"}),
]


@pytest.mark.parametrize("engine", ["compiled", "jsonschema", "pydantic"])
@pytest.mark.parametrize("output, kinds", CASES)
def test_failure_kinds(derived, output, kinds, engine):
    _, failures = check_schema(derived, output, engine=engine)
    assert {f["kind"] for f in failures} == kinds


def _random_outputs(n, seed=0):
    import random

    rng = random.Random(seed)
    wrong = ["TA0002", "T1086", "T1064", "nope", "attack-pattern", None, 1, 2.5, True, [], {}, ["T1003"]]
    good = {
        "technique": TECHNIQUES,
        "tactic": ["TA0002", "TA0005", "TA0006"],
        "related": TECHNIQUES,
        "subject": ["G0007", "S0002", "T1003"],
        "predicate": ["uses", "achieves"],
        "object": ["T1003", "TA0006"],
    }

    def pick(slot, p_ok=0.85):
        return rng.choice(good[slot]) if rng.random() < p_ok else rng.choice(wrong)

    out = []
    for _ in range(n):
        o = {}
        if rng.random() < 0.9:
            o["technique"] = pick("technique")
        if rng.random() < 0.9:
            o["tactic"] = pick("tactic")
        if rng.random() < 0.4:
            o["related"] = (
                [pick("related") for _ in range(rng.randrange(5))] if rng.random() < 0.9 else pick("related")
            )
        if rng.random() < 0.4:
            o["relations"] = [
                {k: pick(k) for k in ("subject", "predicate", "object") if rng.random() < 0.95}
                | ({"why": 1} if rng.random() < 0.05 else {})
                for _ in range(rng.randrange(3))
            ]
        if rng.random() < 0.3:
            o["confidence"] = rng.choice([0.5, 1, -3, 2.0, "high", True, None])
        if rng.random() < 0.05:
            o["extra"] = 1
        out.append(o if rng.random() < 0.97 else rng.choice(wrong))
    return out


def test_engines_agree_on_random_outputs(derived):
    """400 random outputs: the compiled checker gives jsonschema's (kind, path) failures, and
    the pydantic model the same verdicts."""
    outs = _random_outputs(400)
    n_valid = 0
    for o in outs:
        _, a = check_schema(derived, o, engine="compiled")
        _, b = check_schema(derived, o, engine="jsonschema")
        assert {(f["kind"], f["path"]) for f in a} == {(f["kind"], f["path"]) for f in b}, o
        assert derived.accepts_fast(o) is (not b), o
        n_valid += not b
    assert 100 < n_valid < 200  # both verdicts are well represented (133 valid)


def test_validators_agree(derived):
    """Stock jsonschema, our set-based validator, the pydantic model and the outlines regex
    accept exactly the conforming outputs."""
    from pydantic import ValidationError

    from kg_rageval.families.conformance.outlines_backend import canonical_json, to_regex

    model = derived.pydantic_model()
    n = 0
    for output, kinds in CASES:
        if isinstance(output, str):
            continue
        expected = not kinds
        assert derived.stock_validator.is_valid(output) is expected, output
        assert derived.validator.is_valid(output) is expected, output
        try:
            model.model_validate(output)
            pyd = True
        except ValidationError:
            pyd = False
        assert pyd is expected, output
        n += 1
    assert n == 20
    _needs_outlines_core()  # the three validators above run on a core install too
    rx = re.compile(to_regex(derived))
    for output, kinds in CASES:
        if isinstance(output, dict):
            assert (rx.fullmatch(canonical_json(output, derived)) is not None) is (not kinds), output


def test_pydantic_strictness(derived):
    from pydantic import ValidationError

    model = derived.pydantic_model()
    assert model.__name__ == "AttackAnswer"
    ok = model.model_validate({"technique": "T1003", "tactic": "TA0006", "confidence": 2})
    assert ok.confidence == 2 and ok.related is None
    for bad in (
        {"technique": "T1003", "tactic": "TA0006", "confidence": "2"},  # no coercion
        {"technique": "T1003", "tactic": "TA0006", "related": None},  # null is not absent
        {"technique": "T1003", "tactic": "TA0006", "confidence": True},
    ):
        with pytest.raises(ValidationError):
            model.model_validate(bad)
        assert not derived.validator.is_valid(bad)


# ---------------------------------------------------------------------- outlines
def _needs_outlines_core() -> None:
    pytest.importorskip("outlines_core", reason="the Outlines backend needs the outlines extra")


def test_outlines_backend_without_the_extra_names_it(derived, monkeypatch):
    """On a core install the Outlines functions raised ModuleNotFoundError (a traceback, exit 3
    from a command); they now raise a ConfigError naming the extra (``sys.modules[name] = None``
    makes the import fail as an absent package does)."""
    import sys

    from kg_rageval.base.errors import ConfigError
    from kg_rageval.families.conformance import outlines_backend as ob

    for mod in ("outlines_core", "outlines_core.json_schema", "outlines", "outlines.types"):
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(ConfigError, match=r"needs outlines_core: pip install 'kg-rageval\[outlines\]'"):
        ob.to_regex(derived)
    with pytest.raises(ConfigError, match=r"needs outlines_core: pip install 'kg-rageval\[outlines\]'"):
        ob.build_index(derived, {"a": [1]}, eos_token_id=0)
    with pytest.raises(ConfigError, match=r"Outlines output type needs outlines: pip install"):
        ob.output_type(derived)
    assert ob.canonical_json({"technique": "T1003"}, derived) == '{"technique":"T1003"}'  # no extra


def test_outlines_regex_and_index(derived):
    _needs_outlines_core()
    from kg_rageval.families.conformance.outlines_backend import (
        accepts,
        build_index,
        canonical_json,
        openai_response_format,
        to_regex,
    )

    regex = to_regex(derived)
    assert regex.startswith(r'\{[ ]?"technique"[ ]?:[ ]?("T1003"|"T1003\.001"|')
    # a tiny hand-made vocabulary: every printable ASCII character plus two longer tokens
    vocab = {chr(c): [c] for c in range(32, 127)}
    vocab['"technique"'] = [200]
    vocab["T1003"] = [201]
    index = build_index(derived, vocab, eos_token_id=0)

    def chars(s):
        return [ord(c) for c in s]

    good = canonical_json({"technique": "T1003.001", "tactic": "TA0006", "confidence": 0.5}, derived)
    assert good == '{"technique":"T1003.001","tactic":"TA0006","confidence":0.5}'
    assert accepts(index, chars(good))
    assert accepts(index, [ord("{"), 200, ord(":"), ord('"'), 201, *chars('","tactic":"TA0002"}')])
    assert not accepts(index, chars('{"technique":"T1003.009","tactic":"TA0006"}'))  # not in the enum
    assert not accepts(index, chars('{"technique":"T1003.001"'))  # incomplete
    assert not accepts(index, chars('{"technique":"T1086","tactic":"TA0006"}'))  # revoked
    # the index refuses the first character of a wrong id right away
    state = index.get_initial_state()
    for t in chars('{"technique":"'):
        state = index.get_next_state(state, t)
    allowed = set(index.get_allowed_tokens(state))
    assert ord("T") in allowed and 201 in allowed and ord("X") not in allowed
    fmt = openai_response_format(derived)
    assert fmt["json_schema"]["name"] == "AttackAnswer" and fmt["json_schema"]["strict"] is False
    assert "$schema" not in fmt["json_schema"]["schema"]


@pytest.mark.slow
def test_outlines_output_type(derived):
    pytest.importorskip("outlines", reason="the Outlines backend needs the outlines extra")
    from outlines.types import JsonSchema

    from kg_rageval.families.conformance.outlines_backend import output_type, to_regex

    t = output_type(derived)
    assert isinstance(t, JsonSchema)
    assert json.loads(t.schema)["properties"]["tactic"]["enum"] == ["TA0002", "TA0005", "TA0006"]
    from outlines.types.dsl import to_regex as outlines_to_regex

    assert outlines_to_regex(t) == f"({to_regex(derived)})"


# ---------------------------------------------------------------------- lookup mode
def test_lookup_mode_for_large_vocabularies(attack):
    d = derive_schema(
        attack,
        parse_spec(
            {
                "fields": {
                    "technique": {"within": "attack-pattern", "node_type": "technique", "required": True},
                    "tactic": {"node_type": "tactic"},
                },
                "enum_threshold": 5,
            }
        ),
    )
    t = d.json_schema["properties"]["technique"]
    assert t == {
        "type": "string",
        "pattern": r"^(T[0-9]+|T[0-9]+\.[0-9]+)$",
        "x-kg-rageval-vocabulary": "technique",
    }
    assert d.json_schema["properties"]["tactic"]["enum"] == ["TA0002", "TA0005", "TA0006"]  # 3 <= 5
    assert d.json_schema["x-kg-rageval-vocabularies"]["technique"]["size"] == 8
    model = d.pydantic_model()
    from pydantic import ValidationError

    for value, ok in (("T1003.001", True), ("T9999", False), ("T1086", False), ("X1", False)):
        out = {"technique": value}
        assert d.validator.is_valid(out) is ok
        try:
            model.model_validate(out)
            assert ok
        except ValidationError:
            assert not ok
        kinds = {f["kind"] for f in check_schema(d, out)[1]}
        assert kinds == (set() if ok else {"enum_violation"})
    # a stock validator only sees the id shape: documented limitation of lookup mode
    assert d.stock_validator.is_valid({"technique": "T9999"})
    _needs_outlines_core()  # the decoder's regex: with the outlines extra
    from kg_rageval.families.conformance.outlines_backend import to_regex

    rx = re.compile(to_regex(d))
    assert rx.fullmatch('{"technique":"T9999"}') and not rx.fullmatch('{"technique":"X1"}')


def test_derive_id_pattern():
    assert derive_id_pattern(["T1003", "T1003.001"]) == r"^(T[0-9]+|T[0-9]+\.[0-9]+)$"
    assert derive_id_pattern(["SCT:1", "SCT:22"]) == "^SCT:[0-9]+$"
    many = [f"{'x' * (i + 1)}-{i}" for i in range(40)]  # 40 shapes collapse into one
    assert derive_id_pattern(many) == "^[A-Za-z]+\\-[0-9]+$"
    wild = [f"{'-' * i}a" for i in range(40)]
    pat = derive_id_pattern(wild)
    assert all(re.search(pat, w) for w in wild) and not re.search(pat, 'a"b')


# ---------------------------------------------------------------------- metrics
@pytest.fixture(scope="module")
def scored(attack, spec):
    return score_conformance(attack, read_records(FIX / "records.jsonl"), spec)


def _m(ev, name):
    m = ev.metrics()[name]
    return (m.numerator, m.denominator)


def test_schema_validity_and_failure_counts(scored):
    assert len(scored) == 5 and scored.unscored_counts == {"missing output": 1}
    assert _m(scored, "schema_validity") == (2, 5)
    counts = {k: _m(scored, f"failure_rate_{k}")[0] for k in FAILURE_KINDS}
    assert counts == {
        "not_json": 1,
        "missing_field": 1,
        "wrong_type": 0,
        "extra_field": 1,
        "enum_violation": 1,
        "other": 0,
    }
    rows = {r["record_id"]: r for r in scored.rows()}
    assert rows["r2"]["failure_kinds"] == "not_json"
    assert rows["r5"]["failure_kinds"] == "missing_field,extra_field"
    assert rows["r1"]["failure_kinds"] is None


def test_vocabulary_and_status(scored):
    assert _m(scored, "vocabulary_conformance") == (12, 13)
    assert _m(scored, "entity_vocabulary") == (10, 11)
    assert _m(scored, "predicate_vocabulary") == (2, 2)
    assert _m(scored, "field_conformance") == (9, 11)
    assert _m(scored, "status_conformance") == (9, 10)
    assert _m(scored, "revoked_rate") == (1, 10)
    assert _m(scored, "deprecated_rate") == (0, 10)
    assert _m(scored, "outputs_with_inactive_ids") == (1, 5)
    p = {r["record_id"]: r["problems"] for r in scored.rows()}["r3"]
    assert p["unknown_ids"] == [
        {
            "value": "Credential Access",
            "slot": "tactic",
            "suggestion": {"id": "TA0006", "label": "Credential Access", "how": "label"},
        }
    ]
    assert p["inactive_ids"] == [
        {"id": "T1086", "slot": "technique", "status": "revoked", "replacement": "T1059.001"}
    ]
    assert p["not_admitted"][0]["reason"] == "revoked ids are not allowed"


def test_suggestions(attack, derived):
    recs = [
        {
            "id": "s",
            "answer": {"output": {"technique": "t1003.001", "tactic": "TA006", "related": ["Brute Forse"]}},
        }
    ]
    ev = score_conformance(attack, recs, derived)
    sug = {u["value"]: u["suggestion"] for u in ev.rows()[0]["problems"]["unknown_ids"]}
    assert sug["t1003.001"] == {"id": "T1003.001", "label": "LSASS Memory", "how": "case"}
    assert sug["TA006"]["id"] in ("TA0006", "TA0002", "TA0005") and sug["TA006"]["how"] == "fuzzy"
    assert sug["Brute Forse"] == {"id": "T1110", "label": "Brute Force", "how": "fuzzy"}


def test_domain_range_through_subsumption(scored, attack, derived):
    assert _m(scored, "domain_range_conformance") == (1, 2)
    assert _m(scored, "domain_conformance") == (2, 2)
    assert _m(scored, "range_conformance") == (1, 2)
    triples = [
        ("G0007", "uses", "T1003.001"),  # object two levels under attack-pattern: ok
        ("S0002", "uses", "S0002"),  # software in domain and range: ok
        ("T1003", "achieves", "TA0006"),  # ok
        ("T1003", "uses", "T1059"),  # domain violation
        ("G0007", "subtechnique-of", "T1003"),  # domain violation
        ("T1003.001", "subtechnique-of", "TA0006"),  # range violation
        ("G0007", "related-to", "T1003"),  # no declared domain/range: unchecked
        ("G0007", "uses", "T0000"),  # unknown object: domain checked (ok), range not
    ]
    out = {
        "technique": "T1003",
        "tactic": "TA0006",
        "relations": [{"subject": s, "predicate": p, "object": o} for s, p, o in triples],
    }
    ev = score_conformance(attack, [{"id": "t", "answer": {"output": out}}], derived)
    s = ev.totals()
    assert (s["dr_triples"], s["dr_checked"], s["dr_ok"], s["dr_unchecked"]) == (8, 7, 4, 1)
    assert (s["domain_checked"], s["domain_ok"], s["range_checked"], s["range_ok"]) == (7, 5, 6, 5)
    sides = [(v["triple"][0], v["side"]) for v in ev.rows()[0]["problems"]["domain_range_violations"]]
    assert sides == [("T1003", "domain"), ("G0007", "domain"), ("T1003.001", "range")]
    # RDFS reading: every declared domain class must hold, so 'uses' (intrusion-set, software) fails
    strict = score_conformance(
        attack, [{"id": "t", "answer": {"output": out}}], derived, domain_semantics="all"
    )
    st = strict.totals()
    assert (st["domain_checked"], st["domain_ok"]) == (7, 2)


def test_semantic_conformance(scored, attack, derived):
    assert _m(scored, "semantic_precision") == (3, 4)
    assert _m(scored, "semantic_recall") == (3, 8)
    assert _m(scored, "valid_but_wrong_rate") == (1, 4)
    assert _m(scored, "confusion_parent") == (1, 1)
    assert _m(scored, "triple_precision") == (1, 2)
    assert _m(scored, "triple_recall") == (1, 1)
    assert scored.totals()["sem_invalid"] == 2
    gold = {"technique": "T1003.001", "tactic": "TA0006", "related": ["T1003"]}
    preds = {
        "T1003.001": "exact",
        "T1003": "parent",
        "T1003.002": "sibling",
        "T1059.001": "cousin",
        "T1110": "unrelated",
    }
    recs = [
        {
            "id": p,
            "answer": {"output": {"technique": p, "tactic": "TA0002", "related": ["T1003.001"]}},
            "reference": {"output": gold},
        }
        for p in preds
    ]
    ev = score_conformance(attack, recs, derived)
    got = {}
    for r in ev.rows():
        for c in (r["problems"] or {}).get("confusions", []):
            got[(r["record_id"], c["field"])] = c["relation"]
    for p, rel in preds.items():
        if rel != "exact":
            assert got[(p, "technique")] == rel
        assert got[(p, "tactic")] == "sibling"  # TA0002 and TA0006 share x-mitre-tactic
        assert got[(p, "related")] == "child"  # T1003.001 is a child of the reference T1003
    assert got[("T1110", "technique")] == "unrelated"
    # unrelated to the technique, but T1110 is a cousin of the related T1003: closest wins
    rec = [
        {
            "id": "x",
            "answer": {"output": {"technique": "T1110.001", "tactic": "TA0006"}},
            "reference": {"output": {"technique": "T1003.001", "tactic": "TA0006"}},
        }
    ]
    c = score_conformance(attack, rec, derived).rows()[0]["problems"]["confusions"]
    assert c == [{"field": "technique", "pred": "T1110.001", "gold": "T1003.001", "relation": "cousin"}]


def test_empty_denominators_are_missing(attack, derived):
    ev = score_conformance(attack, [{"id": "a"}], derived)
    m = ev.metrics()
    assert all(v.value is None for v in m.values())
    assert m["schema_validity"].missing == "no records with answer.output"
    ev = score_conformance(
        attack, [{"id": "a", "answer": {"output": {"technique": "T1003", "tactic": "TA0006"}}}], derived
    )
    m = ev.metrics()
    assert m["schema_validity"].value == 1.0
    assert m["domain_range_conformance"].value is None and m["semantic_precision"].value is None
    json.dumps(ev.to_dict(), allow_nan=False)


def test_breakdowns_and_rollup(scored, attack):
    bd = scored.breakdown("slice:intent")
    assert bd["technique_lookup"]["n"] == 3
    assert bd["technique_lookup"]["metrics"]["schema_validity"].value == pytest.approx(1 / 3)
    assert bd["relations"]["metrics"]["schema_validity"].value == 0.5
    roll = scored.rollup(attack)
    # gold nodes: r1, r2, r4 -> T1003.001; r3 -> T1059.001; r5 has no reference
    assert roll["T1003"]["n"] == 3 and roll["attack-pattern"]["n"] == 4
    assert scored.meta["rollup_skipped"] == 1
    ev2 = scored.merge(scored)
    assert ev2.metrics()["schema_validity"].numerator == 4


def test_spec_as_path_or_mapping(attack, spec):
    a = score_conformance(attack, read_records(FIX / "records.jsonl"), FIX / "attack_spec.json")
    b = score_conformance(attack, read_records(FIX / "records.jsonl"), spec.model_dump(exclude={"source"}))
    assert a.totals() == b.totals()
    with pytest.raises(TypeError):
        score_conformance(attack, [], 42)


@pytest.mark.parametrize("output, kinds", CASES)
def test_pydantic_engine_same_failures(derived, output, kinds):
    _, failures = check_schema(derived, output, engine="pydantic")
    assert {f["kind"] for f in failures} == kinds


def test_pydantic_engine_same_totals(attack, spec):
    recs = read_records(FIX / "records.jsonl")
    ref = score_conformance(attack, recs, spec, engine="jsonschema").totals()
    assert score_conformance(attack, recs, spec, engine="pydantic").totals() == ref
    assert score_conformance(attack, recs, spec).totals() == ref
    with pytest.raises(ValueError, match="engine must be one of compiled, jsonschema, pydantic"):
        score_conformance(attack, recs, spec, engine="fast")


def test_confusions_match_ontology_relation(attack, derived):
    """Every (reference, prediction) pair of active techniques: the classified confusion is
    Ontology.relation (the per-pair reference) against the vectorised hierarchy kernel."""
    import numpy as np

    from kg_rageval.families.conformance.metrics import relation_codes
    from kg_rageval.ontology import RELATIONS

    pairs = [(g, p) for g in TECHNIQUES for p in TECHNIQUES if g != p]
    codes = relation_codes(
        attack,
        np.asarray([attack.index(g) for g, _ in pairs]),
        np.asarray([attack.index(p) for _, p in pairs]),
    )
    assert [RELATIONS[c] for c in codes] == [attack.relation(g, p) for g, p in pairs]
    recs = [
        {
            "id": f"{g}>{p}",
            "answer": {"output": {"technique": p, "tactic": "TA0006"}},
            "reference": {"output": {"technique": g}},
        }
        for g, p in pairs
    ]
    ev = score_conformance(attack, recs, derived)
    got = [r["problems"]["confusions"][0]["relation"] for r in ev.rows()]
    assert got == [attack.relation(g, p) for g, p in pairs]
    assert sum(ev.totals()[f"conf_{r}"] for r in RELATIONS[1:]) == len(pairs) == 56


@pytest.mark.parametrize("engine", ["compiled", "jsonschema", "pydantic"])
def test_integer_and_unique_items(attack, engine):
    d = derive_schema(
        attack,
        parse_spec(
            {
                "fields": {
                    "n": {"kind": "integer"},
                    "ids": {"kind": "list", "node_type": "tactic", "unique_items": True, "min_items": 1},
                }
            }
        ),
    )
    cases = [
        ({"n": 2}, set()),
        ({"n": 2.0}, set()),
        ({"n": 2.5}, {"wrong_type"}),
        ({"n": True}, {"wrong_type"}),
        ({"n": "2"}, {"wrong_type"}),
        ({"ids": ["TA0002", "TA0002"]}, {"other"}),
        ({"ids": []}, {"other"}),
        ({"ids": ["TA0002", "TA0006"]}, set()),
        ({"ids": ["TA0002", 3]}, {"wrong_type"}),
    ]
    for output, kinds in cases:
        assert {f["kind"] for f in check_schema(d, output, engine=engine)[1]} == kinds, output
        assert d.accepts_fast(output) is (not kinds), output


def test_compiled_checker_falls_back_to_jsonschema(attack, spec):
    d = derive_schema(attack, spec)
    d.json_schema["properties"]["technique"]["minLength"] = 6  # outside the derived subset
    assert d.checker is None
    _, failures = check_schema(d, {"technique": "T1003", "tactic": "TA0006"})
    assert [(f["kind"], f["path"]) for f in failures] == [("other", "technique")]


def test_memo_per_distinct_output_equals_scoring_each_record(attack, derived, monkeypatch):
    # every record of the fixture three times (new ids, interleaved) plus exact-equality edge
    # cases: 1 vs 1.0 vs True, key order; a repeat must get its own rows and details (the
    # confusions of a repeated wrong id are not appended twice to one shared list)
    import kg_rageval.families.conformance.metrics as M

    base = list(read_records(FIX / "records.jsonl"))
    recs = [{**r, "id": f"{r['id']}#{k}"} for k in range(3) for r in base]
    recs += [
        {"id": f"e{i}", "answer": {"output": o}, "reference": {"output": {"technique": "T1003"}}}
        for i, o in enumerate(
            [
                {"technique": "T1059", "tactic": "TA0006"},
                {"tactic": "TA0006", "technique": "T1059"},
                {"technique": "T1059", "tactic": "TA0006"},
                {"technique": 1},
                {"technique": 1.0},
                {"technique": True},
            ]
        )
    ]
    memo = score_conformance(attack, recs, derived)
    monkeypatch.setattr(M, "_MEMO_MAX", 0)
    plain = score_conformance(attack, recs, derived)
    assert memo.rows() == plain.rows()
    assert memo.meta == plain.meta
    assert {k: m.value for k, m in memo.metrics().items()} == {k: m.value for k, m in plain.metrics().items()}
    assert M._exact_key({"a": 1}) != M._exact_key({"a": 1.0}) != M._exact_key({"a": True})
    assert M._exact_key({"a": 1, "b": 2}) != M._exact_key({"b": 2, "a": 1})
    assert M._exact_key({"a": {1, 2}}) is None
    # the flat-strings key of (output, reference): exact too, and never an _exact_key

    class S(str):
        pass

    flat = M._pair_key({"a": "x", "b": "y"}, {"a": "x"})
    assert (
        flat == M._pair_key({"a": "x", "b": "y"}, {"a": "x"}) != M._pair_key({"b": "y", "a": "x"}, {"a": "x"})
    )
    assert flat != M._pair_key({"a": "x", "b": "y"}, {"a": "x", "c": "x"})
    assert M._pair_key({"a": S("x")}, {}) is None and M._pair_key({S("a"): "x"}, {}) is None
    assert M._pair_key({"a": 1}, {}) == M._exact_key(({"a": 1}, {})) != M._pair_key({"a": "1"}, {})


def test_memo_counts_aliases_and_replacements_per_record(attack, derived, monkeypatch):
    # a repeat is the first call's pair: scored once, its alias/replacement counts (meta
    # n_aliased, replaced_ids) added again for every row; each row gets its own details dict
    from kg_rageval.families.conformance.metrics import _Scorer
    from kg_rageval.ontology import IdOptions

    calls = []

    def fake(self, value, reference):
        calls.append(value)
        self.n_aliased += 2
        self.n_replaced += 1
        return {"outputs": 1.0}, {"failure_kinds": [], "_pending": [("technique", "T1059", ("T1003",))]}

    monkeypatch.setattr(_Scorer, "score", fake)
    s = _Scorer(derived, "any", "compiled", IdOptions.of())
    out = {"technique": "T1059", "tactic": "TA0006"}
    a = s.pair(out, {"technique": "T1003"})
    b = s.pair(dict(out), {"technique": "T1003"})
    c = s.pair({"tactic": "TA0006", "technique": "T1059"}, {"technique": "T1003"})
    assert len(calls) == 2 and (a, b, c) == (0, 0, 1)
    assert s.pair_ids == [(2, 1), (2, 1)] and (s.n_aliased, s.n_replaced) == (0, 0)  # counted per row
    recs = [
        {"id": f"r{i}", "answer": {"output": o}, "reference": {"output": {"technique": "T1003"}}}
        for i, o in enumerate([out, dict(out), {"tactic": "TA0006", "technique": "T1059"}])
    ]
    ev = score_conformance(attack, recs, derived)
    assert (ev.meta["n_aliased"], ev.meta["replaced_ids"]) == (6, 3) and len(calls) == 4
    p = ev.details["problems"]
    assert p[0] == p[1] and p[0] is not p[1]
    stored = ev.details.raw("problems")  # one dict per distinct pair, each row read as its own
    assert (
        len(stored.values) == 2 and stored.codes.tolist() == [0, 0, 1] and stored.codes.dtype.name == "uint8"
    )
    assert p[0]["confusions"] == [
        {"field": "technique", "pred": "T1059", "gold": "T1003", "relation": "sibling"}
    ]
    p[0]["confusions"] = None
    assert ev.details["problems"][0] == p[1] and ev.rows()[0]["problems"] is not ev.rows()[1]["problems"]
    assert ev.stats["conf_sibling"].tolist() == [1.0, 1.0, 1.0]


def test_a_deprecated_prediction_is_filed_inactive_not_as_a_relation(attack, spec):
    """IdResolver.wrong_category, the one rule: a deprecated id allowed by the schema and wrong
    is ``inactive``, never a sibling/cousin of the node it no longer stands for (issue #28)."""
    lenient = derive_schema(attack, spec.model_copy(update={"allow_deprecated": True}))
    rec = [
        {
            "id": "d",
            "answer": {"output": {"technique": "T1064", "tactic": "TA0006"}},
            "reference": {"output": {"technique": "T1003.001", "tactic": "TA0006"}},
        }
    ]
    ev = score_conformance(attack, rec, lenient)
    c = ev.rows()[0]["problems"]["confusions"]
    assert c == [{"field": "technique", "pred": "T1064", "gold": "T1003.001", "relation": "inactive"}]
    assert _m(ev, "confusion_inactive") == (1, 1)
    assert _m(ev, "confusion_cousin") == (0, 1) and _m(ev, "confusion_unrelated") == (0, 1)
