"""The spec read without pydantic (issue #33): :func:`plain_spec` gives the values the pydantic
models give (the reference: ``parse_spec``) on every plainly valid spec, declines everything
the models would coerce or reject, and :func:`spec_of` then raises the models' error message
unchanged; a tiny ``score conformance`` does not import pydantic."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import MappingProxyType

import pytest
from conformance_helpers import build_attack_like

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.conformance import derive_schema, score_conformance
from kg_rageval.families.conformance.metrics import as_derived
from kg_rageval.families.conformance.spec import (
    PlainSpec,
    as_model,
    is_spec,
    load_spec,
    parse_spec,
    plain_spec,
    read_spec,
    spec_of,
)
from kg_rageval.families.conformance.spec_model import FieldSpec, NodeSelector, SchemaSpec
from kg_rageval.records import read_records

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "conformance"


@pytest.fixture(scope="module")
def attack():
    return build_attack_like()


def values(spec) -> dict:
    """Every attribute the pydantic models declare (their ``model_fields``), read from either
    kind of spec: a field the plain classes lack fails here."""

    def sel(s, cls=NodeSelector):
        if s is None:
            return None
        return {k: getattr(s, k) for k in cls.model_fields}

    out = {k: getattr(spec, k) for k in SchemaSpec.model_fields if k != "fields"}
    out["fields"] = {}
    for name, f in spec.fields.items():
        d = sel(f, FieldSpec)
        d["subject"], d["object"] = sel(f.subject), sel(f.object)
        out["fields"][name] = d
    out["required_fields"] = spec.required_fields
    out["allows"] = [
        (name, status, spec.allows(f, status))
        for name, f in spec.fields.items()
        for status in ("deprecated", "revoked", "active")
    ]
    out["describe"] = {name: f.describe() for name, f in spec.fields.items()}
    return out


def error(fn, data) -> str:
    with pytest.raises(ConfigError) as exc:
        fn(data, source="s.yaml")
    return str(exc.value)


FULL = {
    "title": "Full_1",
    "description": "every key",
    "fields": {
        "technique": {
            "within": ["attack-pattern"],
            "node_type": "technique",
            "ids": ["T1", "T2"],
            "required": True,
            "description": "d",
            "allow_deprecated": True,
            "allow_revoked": False,
        },
        "many": {"kind": "list", "within": "a", "min_items": 0, "max_items": 4, "unique_items": True},
        "rel": {
            "kind": "triples",
            "predicates": ["p", "q"],
            "subject": {"within": "x", "node_type": ["t"]},
            "object": {"ids": ["o"]},
            "max_items": 2,
        },
        "rel2": {"kind": "triples", "predicates": "ontology", "subject": None},
        "s": {"kind": "string"},
        "n": {"kind": "number", "required": False},
        "i": {"kind": "integer", "description": None},
        "b": {"kind": "boolean"},
        "any_node": {},
        "x-y_z": {"within": None},
    },
    "required": ["s", "n"],
    "allow_deprecated": True,
    "allow_revoked": True,
    "additional_properties": True,
    "enum_threshold": 1,
    "id_pattern": "^T[0-9]+$",
}

VALID = [
    {"fields": {"t": {}}},
    {"fields": {"t": {"within": "a"}}, "title": "A"},
    FULL,
    json.loads((FIX / "attack_spec.json").read_text(encoding="utf-8")),
]


@pytest.mark.parametrize("data", VALID)
def test_plain_spec_holds_the_models_values(data):
    plain, model = plain_spec(data, source="s.yaml"), parse_spec(data, source="s.yaml")
    assert isinstance(plain, PlainSpec)
    assert values(plain) == values(model)
    assert as_model(plain) == model  # the public model back, the source kept
    assert as_model(model) is model
    assert spec_of(data, source="s.yaml") == plain


def test_plain_spec_copies_the_lists():
    data = {"fields": {"t": {"within": ["a"], "kind": "list"}}, "required": ["t"]}
    plain = plain_spec(data)
    assert plain is not None
    plain.fields["t"].within.append("b")
    plain.required.append("u")
    assert data == {"fields": {"t": {"within": ["a"], "kind": "list"}}, "required": ["t"]}


def test_spec_files_read_alike():
    for ext in ("yaml", "json", "toml"):
        path = FIX / f"attack_spec.{ext}"
        plain, model = read_spec(path), load_spec(path)
        assert isinstance(plain, PlainSpec) and plain.source == str(path) == model.source
        assert values(plain) == values(model)


def test_derived_schema_and_scores_alike(attack):
    path = FIX / "attack_spec.yaml"
    plain, model = read_spec(path), load_spec(path)
    a, b = derive_schema(attack, plain), derive_schema(attack, model)
    assert a.json_schema == b.json_schema and a.size_bytes == b.size_bytes
    assert a.vocabularies.keys() == b.vocabularies.keys()
    recs = read_records(FIX / "records.jsonl")
    ea, eb = score_conformance(attack, recs, a), score_conformance(attack, recs, b)
    assert ea.to_dict(rows=True) == eb.to_dict(rows=True)
    # the path and the mapping go through the plain reader and score the same
    assert score_conformance(attack, recs, path).to_dict(rows=True) == eb.to_dict(rows=True)
    assert as_derived(attack, plain).spec is plain
    assert is_spec(plain) and is_spec(model) and not is_spec({"fields": {}})


def test_plain_selector_copy_like_the_model():
    data = {"fields": {"t": {"within": "a", "node_type": ["x", "y"]}}}
    plain, model = plain_spec(data), parse_spec(data)
    assert plain is not None
    p = plain.fields["t"].model_copy(update={"node_type": ["x"]})
    m = model.fields["t"].model_copy(update={"node_type": ["x"]})
    assert type(p) is type(plain.fields["t"])
    assert p.node_type == m.node_type == ["x"] and p.within == m.within == ["a"]
    assert plain.fields["t"].node_type == ["x", "y"]


# valid for the models, but only after a coercion or outside the plain shape: the models read them
UNUSUAL = [
    {"fields": {"t": {"within": 3}}},  # an integer id becomes "3"
    {"fields": {"t": {"required": "true"}}},
    {"fields": {"t": {"required": 1}}},
    {"fields": {"t": {"kind": "list", "max_items": 3.0}}},
    {"fields": {"t": {"kind": "list", "max_items": "3"}}},
    {"fields": {"t": {}}, "enum_threshold": "5"},
    {"fields": {"t": {}}, "allow_revoked": "yes"},
    {"fields": {"t": {}}, "source": "elsewhere"},  # the model field that parse_spec overwrites
    {"fields": MappingProxyType({"t": {}})},
    {"fields": {"t": MappingProxyType({"within": "a"})}},
    {"fields": {"t": {"kind": "triples", "predicates": ["p"], "subject": MappingProxyType({"ids": "i"})}}},
    {"fields": {"t": {"within": ("a", "b")}}},
]


@pytest.mark.parametrize("data", UNUSUAL, ids=range(len(UNUSUAL)))
def test_unusual_specs_go_to_the_models(data):
    assert plain_spec(data) is None
    model = parse_spec(data, source="s.yaml")
    got = spec_of(data, source="s.yaml")
    assert isinstance(got, SchemaSpec) and got == model


INVALID = [
    {"fields": {}},
    {"fields": {"t": {"kind": "nodes"}}},
    {"fields": {"t": {"kind": "triples"}}},
    {"fields": {"r": {"kind": "triples", "predicates": "onto"}}},
    {"fields": {"r": {"kind": "triples", "predicates": []}}},
    {"fields": {"r": {"kind": "triples", "predicates": ["p", ""]}}},
    {"fields": {"r": {"kind": "triples", "predicates": "ontology", "within": "a"}}},
    {"fields": {"r": {"kind": "node", "subject": {"within": "a"}}}},
    {"fields": {"t": {"within": ["a", 3]}}},
    {"fields": {"t": {"within": []}}},
    {"fields": {"t": {"within": ""}}},
    {"fields": {"t": {"within": ["a", ""]}}},
    {"fields": {"t": {"within": "a"}}, "colour": 1},
    {"fields": {"t": {"colour": 1}}},
    {"fields": {"t": {"kind": "triples", "predicates": ["p"], "subject": {"colour": "x"}}}},
    {"fields": {"t": {"within": "a", "max_items": 3}}},
    {"fields": {"t": {"kind": "number", "node_type": "x"}}},
    {"fields": {"t": {"within": "a"}}, "required": ["zz"]},
    {"fields": {"t": {"within": "a"}}, "id_pattern": "T[0-9"},
    {"fields": {"t": {"kind": "list", "min_items": 3, "max_items": 1}}},
    {"fields": {"t": {"kind": "list", "min_items": -1}}},
    {"fields": {"t": {}}, "enum_threshold": 0},
    {"fields": {"t": {}}, "title": "not an identifier"},
    {"fields": {"bad name": {}}},
    {"fields": {"t": None}},
    {"fields": {"t": "node"}},
    {"fields": ["t"]},
    {"title": "NoFields"},
    {"fields": {"t": {}}, "required": "t"},
    {"fields": {"t": {}}, "description": 3},
    {"fields": {1: {}}},
    ["technique"],
    "title: x",
]


@pytest.mark.parametrize("data", INVALID, ids=range(len(INVALID)))
def test_invalid_specs_raise_the_models_error(data):
    assert plain_spec(data) is None
    assert error(spec_of, data) == error(parse_spec, data)


_POOL = [
    None,
    True,
    False,
    0,
    1,
    -1,
    3,
    3.0,
    "",
    "a",
    "ontology",
    "node",
    "list",
    "triples",
    "number",
    "true",
    "5",
    "T[0-9",
    [],
    ["a"],
    ["a", "b"],
    ["a", ""],
    ["a", 3],
    {},
    {"within": "a"},
    {"ids": ["i"], "node_type": "t"},
    {"colour": 1},
]
_FIELD_KEYS = [*FieldSpec.model_fields, "colour"]
_SPEC_KEYS = [k for k in SchemaSpec.model_fields if k != "fields"] + ["colour"]


def _random_spec(rng: random.Random) -> dict:
    def field() -> dict:
        base: dict = {"kind": rng.choice(["node", "list", "triples", "string", "integer"])}
        if base["kind"] == "triples" and rng.random() < 0.7:
            base["predicates"] = rng.choice(["ontology", ["p"]])
        for k in rng.sample(_FIELD_KEYS, rng.choice((0, 0, 1, 1, 2, 3))):
            base[k] = rng.choice(_POOL)
        return base

    names = rng.sample(["t", "u", "v", "bad name"], rng.randint(1, 3))
    data: dict = {"fields": {n: field() for n in names}}
    for k in rng.sample(_SPEC_KEYS, rng.choice((0, 0, 1, 2))):
        data[k] = rng.choice(_POOL + [names[:1], "Title"])
    return data


def test_random_specs_agree_with_the_models():
    """3,000 specs mixing valid and invalid values: whenever the plain reader accepts one, the
    models accept it with the same values; otherwise spec_of is the models' result or error."""
    rng = random.Random(33)
    accepted = rejected = 0
    for _ in range(3000):
        data = _random_spec(rng)
        plain = plain_spec(data, source="s.yaml")
        try:
            model = parse_spec(data, source="s.yaml")
        except ConfigError as exc:
            assert plain is None, data
            assert error(spec_of, data) == str(exc)
            rejected += 1
            continue
        if plain is not None:
            assert values(plain) == values(model), data
            accepted += 1
        else:
            assert spec_of(data, source="s.yaml") == model
    assert accepted > 150 and rejected > 1000, (accepted, rejected)  # both sides exercised
