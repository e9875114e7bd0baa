"""The file path of ``records rebase`` (block reading, the untouched-record check, lines copied
when they are already their record's encoding) against the reference: the record walk over
``kg_rageval.records.iter_objects`` with every record encoded by ``json.dumps``
(``ensure_ascii=False``) — the output bytes, the report and every input error identical."""

from __future__ import annotations

import gzip
import json

import pytest

from kg_rageval.base import limits
from kg_rageval.base.errors import InputError
from kg_rageval.drift import build_mapping
from kg_rageval.drift import rebase as R
from kg_rageval.drift import rebase_io as RIO
from kg_rageval.ontology import OntologyBuilder
from kg_rageval.records import iter_objects


def _build(nodes, edges, aliases=()):
    b = OntologyBuilder("mem")
    for nid, label, *rest in nodes:
        b.add_node(nid, label=label, **(rest[0] if rest else {}))
    for c, p in edges:
        b.add_edge(c, p)
    for a, t in aliases:
        b.add_alias(a, t)
    return b.build()


@pytest.fixture(scope="module")
def mapping():
    old = _build(
        [("root", "Root"), ("A", "A"), ("B", "B"), ("a1", "a one"), ("a2", "a two"), ("a3", "a three")]
        + [("b1", "b one"), ("b2", "b two"), ("b3", "b three"), ("b4", "b four")],
        [("A", "root"), ("B", "root"), ("a1", "A"), ("a2", "A"), ("a3", "A")]
        + [("b1", "B"), ("b2", "B"), ("b3", "B"), ("b4", "B")],
        aliases=[("x1", "a1")],
    )
    new = _build(
        [("root", "Root"), ("A", "A"), ("B", "B"), ("a1", "A one"), ("a4", "a four"), ("b2", "b two")]
        + [("a2", "a two", {"status": "deprecated", "replaced_by": "a1"})]
        + [("b1", "b one", {"status": "revoked", "replaced_by": "b3"}), ("b3", "b three"), ("b5", "b five")],
        [("A", "root"), ("B", "root"), ("a1", "A"), ("a2", "A"), ("a4", "A"), ("b2", "A")]
        + [("b1", "B"), ("b3", "B"), ("b5", "B")],
        aliases=[("b4", "b5"), ("y1", "b3")],
    )
    return build_mapping(old, new)


# every shape the walk reads, untouched and touched, and the spellings a line can have
SHAPES = [
    {"id": "u1", "labels": {"gold": ["a1"], "pred": ["b3"]}, "slices": {"intent": "lookup"}},
    {
        "id": "u2",
        "labels": {"gold": ["a1", "a4"], "pred": "b3"},
        "mentions": {"gold": [{"id": "a1", "nearest": None}]},
    },
    {"id": "u3", "labels": {"gold": [], "pred": None}, "mentions": {"pred": [{"id": "b2"}, "x", {"id": ""}]}},
    {
        "id": "u4",
        "answer": {"concepts": ["b3"], "output": "a2"},
        "reference": {"concepts": ["a1"], "unseen_concepts": []},
    },
    {
        "id": "u5",
        "retrieval": {"gold": {"d1": 2}, "run": ["d1", "d2"]},
        "query": "naïve “quotes” ünïcödé 日本",
    },
    {"id": "u6", "labels": "a1", "mentions": [], "answer": [1], "score": 0.5, "big": 12345678901234567890123},
    {"id": "t1", "labels": {"gold": ["a2"], "pred": ["b1"]}},  # replaced
    {"id": "t2", "labels": {"gold": ["a1", "a1"]}},  # collapsed
    {"id": "t3", "labels": {"gold": ["b2"]}},  # moved: reported, content unchanged
    {"id": "t4", "labels": {"gold": ["zz"]}, "rebase": {"old": 1}},  # unknown: flagged, previous kept
    {"id": "t5", "mentions": {"gold": [{"id": "b4", "nearest": "x1"}]}},  # merged
    {"id": "t6", "gold_node": "a3", "relations": {"answers": ["b4", "kg:e"]}},
    {"id": "t7", "retrieval": {"filters": [{"field": "f", "op": "within", "value": ["b1", "text"]}]}},
    {"id": "t8", "answer": {"output": {"technique": "b1"}}, "reference": {"concepts": ["a2", "a1"]}},
    {"id": "t9", "labels": {"gold": [["a1"], "a1"], "pred": [1, "b1"]}},
    {"id": 10, "labels": {"gold": ["a1"]}},  # an integer id
]


def _spellings(rec: dict) -> list[str]:
    """The record as json.dumps writes it, compact, with escapes, and with floats spelled as
    orjson would (lines that are not their record's encoding)."""
    out = [json.dumps(rec, ensure_ascii=False), json.dumps(rec, separators=(",", ":")), json.dumps(rec)]
    out.append(json.dumps(rec, ensure_ascii=False).replace(": ", ":  ", 1))
    return out


def _reference(mapping, data):
    """The records written as the walk over iter_objects and json.dumps write them."""
    lines: list[str] = []
    dumps = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    rep = R.rebase_records(iter_objects(data), mapping, lambda r: lines.append(dumps(r)), source=str(data))
    text = "".join(x + "\n" for x in lines).encode("utf-8")
    return text, rep


def _compare(mapping, tmp_path, text: bytes, name: str = "r.jsonl"):
    data = tmp_path / name
    data.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    want, ref = _reference(mapping, data)
    out = tmp_path / "o.jsonl"
    rep = R.rebase_file(mapping.old, mapping.new, data, out, mapping=mapping)
    assert out.read_bytes() == want
    a, b = rep.to_dict(), ref.to_dict()
    for d in (a, b):
        d.pop("seconds"), d.pop("input"), d.pop("output"), d["mapping"].pop("seconds", None)
    assert a == b
    return rep


@pytest.mark.parametrize("block", [1 << 16, 7, 64])
def test_file_path_equals_the_walk_and_json_dumps(mapping, tmp_path, monkeypatch, block):
    monkeypatch.setattr(RIO, "_BLOCK", block)
    lines = []
    for rec in SHAPES:
        for j, s in enumerate(_spellings(rec)):
            r = json.loads(s)
            r["id"] = f"{r['id']}-{j}" if isinstance(r["id"], str) else r["id"] * 10 + j
            lines.append(
                json.dumps(r, ensure_ascii=False)
                if j == 0
                else s.replace(json.dumps(rec["id"]), json.dumps(r["id"]), 1)
            )
    lines += [
        '{"id": "f1", "x": 1e16, "y": 1e-05, "z": 0.1, "w": -0.0}',
        '{"id": "f2", "x": 1e16}'.replace("1e16", "1E16"),
        '{"id": "f3", "x": -0}',
        '{"id": "f4", "x": 1, "x": 2}',
        '{"id": "f5", "s": "tab\\there \\"q\\" \\u00e9 \\ud83d\\ude00"}',
        '{"id": "f6", "labels": {"gold": ["a1"]}} ',
        '{"id": "f7", "labels": {"gold": ["a1"]}}\r',
        "",
        "   ",
        '{"id": "f8", "n": [1, [2, [3, {}]], {"k": []}]}',
    ]
    text = ("\ufeff" + "\n".join(lines) + "\n").encode("utf-8")
    rep = _compare(mapping, tmp_path, text)
    assert rep.n_records == len(lines) - 2 and rep.records_flagged > 0 and rep.records_rebased > 0
    _compare(mapping, tmp_path, text[:-1])  # no newline at the end
    _compare(mapping, tmp_path, text, "r.jsonl.gz")
    _compare(mapping, tmp_path, b"")


def test_untouched_check_is_sound_and_not_vacuous(mapping):
    """A record the check lets through is one the walk leaves without a touch; and it lets
    through the untouched shapes above (u1–u6, 10), not the touched ones (t1–t9)."""
    clean = RIO._Quick(mapping).clean
    rb = R._Rebaser(mapping)
    passed = []
    for rec in SHAPES:
        rb.touches = []
        rb.record(json.loads(json.dumps(rec)))
        if clean(json.loads(json.dumps(rec))):
            assert rb.touches == [], rec
            passed.append(rec["id"])
    assert passed == ["u1", "u2", "u3", "u4", "u5", "u6", 10]


@pytest.mark.parametrize(
    ("line", "same"),
    [
        ('{"id": "a", "v": [1, 2, {"k": null, "t": true}], "s": "x, y: z"}', True),
        ('{"id": "a", "s": "ünï"}', True),
        ('{"id":"a"}', False),
        ('{"id": "a" }', False),
        ('{"id": "a", "s": "\\u00fc"}', False),
        ('{"id": "a", "x": 1e16}', False),
        ('{"id": "a", "x": 1.50}', False),
        ('{"id": "a", "x": 1, "x": 1}', False),
    ],
)
def test_verbatim_only_when_the_line_is_the_encoding(line, same):
    import orjson

    raw = line.encode("utf-8")
    doc = orjson.loads(raw) if "1e16" not in line else json.loads(line)
    assert RIO._verbatim([raw], [doc]) is same
    assert (json.dumps(doc, ensure_ascii=False).encode("utf-8") == raw) is same
    assert RIO._verbatim([b'{"id": "b"}', raw], [{"id": "b"}, doc]) is same  # in a batch


@pytest.mark.parametrize(
    "text",
    [
        b'{"id": "a"}\n{"id": "b"\n',
        b'{"id": "a"}\n[1]\n',
        b'{"id": "a"}\n{"x": 1}\n',
        b'{"id": "a"}\n{"id": ""}\n',
        b'{"id": "a"}\n{"id": true}\n',
        b'{"id": "a"}\n{"id": "a"}\n',
        b'{"id": 1}\n{"id": "1"}\n',
        b'{"id": "a"}\n\xff\xfe\n',
        b'{"id": "a"}\n{"id": "b", "x": NaN}\n',
        b'{"id": "a"}\n' + b"[" * 300 + b"]" * 300 + b"\n",
    ],
)
@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_input_errors_are_the_readers(mapping, tmp_path, monkeypatch, text, name):
    monkeypatch.setattr(RIO, "_BLOCK", 5)
    data = tmp_path / name
    data.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    with pytest.raises(InputError) as want:
        _reference(mapping, data)
    with pytest.raises(InputError) as got:
        R.rebase_file(mapping.old, mapping.new, data, tmp_path / "o.jsonl", mapping=mapping)
    assert str(got.value) == str(want.value)
    assert not (tmp_path / "o.jsonl").exists()


def test_a_line_over_the_limit_is_refused_as_the_reader_does(mapping, tmp_path, monkeypatch):
    monkeypatch.setattr(RIO, "_BLOCK", 16)
    data = tmp_path / "r.jsonl"
    data.write_bytes(b'{"id": "a"}\n{"id": "b", "long": "' + b"x" * 100 + b'"}\n{"id": "c"}\n')
    with limits.limits({"max_line_bytes": 64}):
        with pytest.raises(InputError) as want:
            _reference(mapping, data)
        with pytest.raises(InputError) as got:
            R.rebase_file(mapping.old, mapping.new, data, tmp_path / "o.jsonl", mapping=mapping)
    assert str(got.value) == str(want.value) and "line 2" in str(got.value)


# ---------------------------------------------------------------------- learnt line shapes
_POOL = ["a1", "a4", "b3", "b5", "root", "b2", "a2", "b1", "b4", "x1", "y1", "zz", ""]
_SAFE = ["a1", "a4", "b3", "b5", "root", "A", "B"]


class _Ids:
    """Ids drawn mostly from those the walk leaves alone, else from every kind."""

    def __init__(self, seed: int):
        import random

        self.rng = random.Random(seed)

    def choice(self, xs: list) -> object:
        if xs and xs[0] == "a1" and self.rng.random() < 0.85:
            return self.rng.choice(_SAFE)
        return self.rng.choice(xs)

    def randrange(self, a: int, b: int) -> int:
        return self.rng.randrange(a, b)


_TEMPLATES = [
    lambda rng, i: {
        "id": f"s{i}",
        "labels": {"gold": [rng.choice(_POOL)], "pred": [rng.choice(_POOL)]},
        "mentions": {"gold": [{"start": 0, "end": rng.randrange(1, 9), "id": rng.choice(_POOL)}]},
        "slices": {"intent": "lookup"},
    },
    lambda rng, i: {
        "id": f"m{i}",
        "labels": {"gold": [rng.choice(_POOL), rng.choice(_POOL)], "pred": rng.choice(_POOL)},
        "mentions": {
            "gold": [{"id": rng.choice(_POOL), "nearest": rng.choice(_POOL + [None])}, "x"],
            "pred": [{"id": rng.choice(_POOL), "nearest": rng.choice(_POOL)}],
        },
        "ok": rng.choice([True, False]),
        "n": rng.choice([0, -7, 12345678901234567]),
        "x": None,
    },
    lambda rng, i: {"id": f"p{i}", "labels": {"pred": [], "gold": None, "other": ["zz"]}, "q": "a, b: c {x}"},
]


def _records(n: int, seed: int = 7) -> list[dict]:
    rng = _Ids(seed)
    return [_TEMPLATES[i % len(_TEMPLATES)](rng, i) for i in range(n)]


def test_a_learnt_shape_matches_exactly_the_encodings_and_answers_as_the_check(mapping):
    """A shape's pattern matches ``json.dumps(r, ensure_ascii=False)`` of every record of the
    shape (and no other spelling of it), and its id check is :meth:`_Quick.clean`'s answer."""
    quick = RIO._Quick(mapping)
    shapes = RIO._Shapes(quick)
    recs = _records(600)
    for r in recs:
        shapes.learn(json.loads(json.dumps(r)))
    assert len(shapes.shapes) == 4  # the second template's gold "nearest" is a string or null
    seen = {True: 0, False: 0}
    for r in recs:
        line = json.dumps(r, ensure_ascii=False).encode("utf-8")
        hits = [(m, check) for match, check, _ in shapes.shapes if (m := match(line)) is not None]
        assert len(hits) == 1, line
        m, check = hits[0]
        assert (check([m.groups()]) == set()) is quick.clean(r)
        seen[quick.clean(r)] += 1
        for other in (
            json.dumps(r, separators=(",", ":")),
            json.dumps(r, ensure_ascii=False).replace(": ", ":  ", 1),
            json.dumps(r, ensure_ascii=False).replace('"id": "', '"id": "\\u0041', 1),
            json.dumps(r, ensure_ascii=False).replace(', "', ',"', 1),
            json.dumps(r, ensure_ascii=False) + " ",
        ):
            assert all(match(other.encode()) is None for match, _, _ in shapes.shapes), other
    assert seen[True] > 100 and seen[False] > 100  # both answers are exercised
    # no shape for a record with a float, an escape in a key, or a section beyond labels/mentions
    for r in (
        {"id": "f", "x": 0.5},
        {"id": "f", 'k"': 1},
        {"id": "f", "answer": {"concepts": ["b3"]}},
        {"id": 3, "labels": {"gold": ["a1"]}},
    ):
        before = len(shapes.shapes)
        shapes.learn(r)
        assert len(shapes.shapes) == before


@pytest.mark.parametrize("block", [1 << 16, 7, 300])
def test_file_path_with_learnt_shapes_equals_the_walk(mapping, tmp_path, monkeypatch, block):
    """Records of a few shapes (ids untouched, replaced, merged, moved, unknown, empty, repeated),
    among lines of other spellings and shapes: output bytes and report are the reference's,
    and most lines were recognised by a learnt shape."""
    monkeypatch.setattr(RIO, "_BLOCK", block)
    recognised = []
    split = RIO._Shapes.split

    def counting(self, lines):
        got = split(self, lines)
        recognised.append(len(got[0]))
        return got

    monkeypatch.setattr(RIO._Shapes, "split", counting)
    lines = [json.dumps(r, ensure_ascii=False) for r in _records(1500)]
    lines[700] = lines[700].replace(": ", ":", 1)  # other spellings of a learnt shape
    lines[701] = lines[701].replace('"id": "', '"id": "\\u0041', 1)
    lines[702] = lines[702].replace("[", "[ ", 1)
    lines[703] = lines[703].replace('"lookup"', '"l\\u00f6\\u00f6kup"').replace('"lookup"', '"löökup"')
    lines[704] = lines[704].replace('"slices"', '"sl\\u00efces"')
    lines[705] = json.dumps({"id": "f1", "labels": {"gold": ["a1"]}, "v": 1.5})
    lines[706] = '{"id": "f2", "labels": {"gold": ["a1"], "pred": ["b3"]}, "n": -0}'
    lines[707] = '{"id": "f3", "labels": {"gold": ["a1"], "pred": ["b3"]}, "n": 007}'.replace("007", "7")
    lines[708] = json.dumps(
        {"id": "f4", "labels": {"gold": ["a1"], "pred": ["b3"]}, "q": "ünï"}, ensure_ascii=False
    )
    text = ("\n".join(lines) + "\n").encode("utf-8")
    rep = _compare(mapping, tmp_path, text)
    assert rep.records_rebased > 100 and rep.records_flagged > 20
    if block != 7:
        assert sum(recognised) > 300


@pytest.mark.parametrize(
    "tail",
    [
        b'{"id": "s1", "labels": {"gold": ["a1"]}}\n',  # a duplicate id on a recognised line
        b'{"id": "", "labels": {"gold": ["a1"]}}\n',
        b'{"id": "s9", "labels": {"gold": ["a1"]}}\n{"id": "s9", "labels": {"gold": ["a2"]}}\n',
        b'{"id": "s9", "labels": {"gold": ["a2"]}}\n{"id": "s9", "labels": {"gold": ["a1"]}}\n',
        b'{"id": "s9", "labels": {"gold": ["a1"]}}\n{"id": "s10", "labels": {"gold": ["a1"]}\n',
    ],
)
@pytest.mark.parametrize("block", [5, 200, 1 << 16])
def test_input_errors_among_recognised_lines_are_the_readers(mapping, tmp_path, monkeypatch, tail, block):
    monkeypatch.setattr(RIO, "_BLOCK", block)
    head = b"".join(b'{"id": "s%d", "labels": {"gold": ["a1"]}}\n' % i for i in range(1, 9))
    data = tmp_path / "r.jsonl"
    data.write_bytes(head + tail)
    with pytest.raises(InputError) as want:
        _reference(mapping, data)
    with pytest.raises(InputError) as got:
        R.rebase_file(mapping.old, mapping.new, data, tmp_path / "o.jsonl", mapping=mapping)
    assert str(got.value) == str(want.value)
