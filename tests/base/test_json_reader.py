"""The fast JSON reader (orjson, when installed) gives exactly what the standard-library path
gives: the same values (types included) on normal inputs and the same errors on hostile ones."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kg_rageval.base import safe_io
from kg_rageval.base.errors import InputError
from kg_rageval.records import read_records

orjson = pytest.importorskip("orjson", reason="orjson (the fast extra) is not installed")

TEXTS = [
    '{"id": "a", "labels": {"gold": ["X"], "pred": ["Y"]}, "score": 0.5}',
    '{"a": 1, "a": 2}',  # last one wins in both
    '{"n": -0, "f": -0.0, "e": 1E5, "s": 1.5e-400, "big": 9223372036854775807}',
    '{"u": 18446744073709551615}',
    '{"huge": 18446744073709551616}',  # orjson would give a float
    '{"long": ' + "1" * 299 + "}",
    '{"longer": ' + "1" * 301 + "}",
    '{"way": ' + "9" * 5000 + "}",
    '{"x": NaN}',
    '{"x": [1, Infinity]}',
    '{"x": -Infinity}',
    '{"x": 1e999}',
    '{"x": -1e999}',
    '{"s": "\\ud800"}',
    '{"s": "\\u00e9\\ud83d\\ude00"}',
    '{"s": "tab\\there"}',
    '{"s": "bad\x01control"}',
    '{"a": 1,}',
    "[1, 2",
    "",
    "   ",
    "nul",
    '{"a": 1} {"b": 2}',
    '"just a string"',
    "3",
    "[]",
    "{}",
    "[" * 300 + "]" * 300,
    "[" * 1100 + "]" * 1100,
    '{"' + "k" * 40 + '": "12345678901234567890123"}',  # a 20-digit run inside a string
    '{"é": "ü", "emoji": "😀"}',
]


def both(text, **kw):
    """(value or error text) with orjson, then with the standard library only."""
    out = []
    for fast in (True, False):
        saved = safe_io._orjson
        if not fast:
            safe_io._orjson = None
        try:
            out.append(("ok", safe_io.loads_json(text, source="f.jsonl", location="line 1", **kw)))
        except Exception as exc:
            out.append(("error", type(exc).__name__, str(exc)))
        finally:
            safe_io._orjson = saved
    return out


def same(a, b):
    """Equal values with equal types all the way down (1 and 1.0 differ; -0.0 and 0.0 differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_fast_reader_equals_stdlib(text):
    fast, std = both(text)
    assert same(fast, std), (fast, std)
    assert safe_io.fast_json_reader() == "orjson"


def test_fast_reader_refuses_what_the_stdlib_path_refuses():
    fast, std = both('{"x": NaN}')
    assert fast == std == ("error", "InputError", std[2])
    assert "NaN" in std[2] and "f.jsonl" in std[2] and "line 1" in std[2]
    huge = both('{"huge": 18446744073709551616}')[0]
    assert huge[1] == {"huge": 18446744073709551616} and type(huge[1]["huge"]) is int


def test_random_numbers_equal_stdlib():
    rng = np.random.default_rng(3)
    vals = np.concatenate(
        [
            rng.standard_normal(300) * 10.0 ** rng.integers(-300, 300, 300),
            rng.random(300),
            rng.integers(-(2**62), 2**62, 300).astype(float),
        ]
    )
    texts = [repr(float(v)) for v in vals] + [f"{v:.25g}" for v in vals] + [f"{v:.3e}" for v in vals]
    texts += [str(int(i)) for i in rng.integers(-(2**63), 2**63 - 1, 300)]
    short = [t for t in texts if not safe_io._long_digits(t)]
    assert len(short) > 1000  # most go through orjson
    for t in texts:
        fast, std = both(t)
        assert fast[0] == "ok" and same(fast, std) and same(fast[1], json.loads(t)), t
    doc = "[" + ", ".join(short) + "]"
    fast, std = both(doc)
    assert same(fast, std) and same(fast[1], json.loads(doc))


def test_depth_limit_is_the_same_on_both_paths(monkeypatch):
    monkeypatch.setenv("KG_RAGEVAL_MAX_JSON_DEPTH", "5")
    fast, std = both('{"a": [[[[[1]]]]]}')
    assert fast == std and fast[0] == "error" and "max_json_depth" in fast[2]
    assert both('{"a": [[[1]]]}')[0] == ("ok", {"a": [[[1]]]})


def test_records_file_read_the_same_both_ways(tmp_path, monkeypatch):
    p = tmp_path / "r.jsonl"
    lines = [
        TEXTS[0],
        '{"id": 7, "x": 18446744073709551616, "y": [1.25, -0.0, "ü"]}',
        "",
        '{"id": "c", "nested": {"a": {"b": [null, true, false]}}}',
    ]
    p.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    fast = read_records(p)
    monkeypatch.setattr(safe_io, "_orjson", None)
    assert same(read_records(p), fast)
    p.write_text(lines[0] + '\n{"id": "b", "s": NaN}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2.*NaN|NaN.*line 2") as std_err:
        read_records(p)
    monkeypatch.undo()
    with pytest.raises(InputError) as fast_err:
        read_records(p)
    assert str(fast_err.value) == str(std_err.value)


def test_read_records_restores_the_garbage_collector(tmp_path):
    import gc

    p = tmp_path / "r.jsonl"
    p.write_text('{"id": "a"}\n{"id": "a"}\n', encoding="utf-8")
    assert gc.isenabled()
    with pytest.raises(InputError, match="duplicate record id 'a'"):
        read_records(p)
    assert gc.isenabled()
    gc.disable()
    try:
        p.write_text('{"id": "a"}\n', encoding="utf-8")
        assert read_records(p)[0]["id"] == "a"
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


def test_long_digit_check_equals_the_regex():
    """The byte-translation check finds exactly the texts with 20 ASCII digits in a row."""
    import re

    rx = re.compile(r"[0-9]{20}")
    texts = [
        "",
        "1" * 19,
        "1" * 20,
        "a" + "9" * 20 + "b",
        "d123 d4567" * 50,
        "12345678901234567890",
        '{"x": 1234567890123456789}',
        '{"x": -12345678901234567890}',
        "١" * 25,
        "é" + "0" * 20,
        "\ud800" + "1" * 21,
        "1.2345678901234567890e5",
    ]
    for t in texts:
        assert (
            safe_io._long_digits(t)
            == bool(rx.search(t))
            == safe_io._long_digits(t.encode("utf-8", "surrogatepass"))
        ), t


@pytest.mark.parametrize(
    "line",
    [
        b'{"id": "a", "labels": {"gold": ["x"], "pred": ["y"]}}',
        b'{"id": "b", "n": 123456789012345678901234}',  # a 20-digit run: the full reader keeps it an int
        b'{"id": "c", "v": 1e999}',  # orjson refuses; the stdlib path reads inf
        b'{"id": "d", "s": "caf\xc3\xa9"}',
        b"[" * 40 + b"]" * 40,
    ],
)
def test_fast_line_is_loads_json_or_defers_to_it(line):
    """records' JSONL fast path (issue #33): orjson on the undecoded bytes gives loads_json's
    value, or NOT_FAST so that loads_json decides (values and errors unchanged)."""
    from kg_rageval.base.safe_io import NOT_FAST, fast_line, loads_json

    got = fast_line(line, 32)
    if got is not NOT_FAST:
        assert got == loads_json(line.decode("utf-8"), source="f", depth_limit=32)
    else:
        assert line.startswith(b"[") or b"1234567890123456789" in line or b"1e999" in line
