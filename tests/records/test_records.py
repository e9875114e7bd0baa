"""The JSONL readers every family and file reader share (``kg_rageval.records``): errors name
the file, line and field; nothing is read silently wrong."""

from __future__ import annotations

import gzip

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.records import (
    iter_jsonl,
    iter_objects,
    located,
    read_records,
    record_error,
    record_text,
    where,
    write_records,
)


def test_iter_jsonl_skips_blank_lines_and_keeps_line_numbers(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"id": "a"}\r\n\n   \n[1, 2]\n')  # a BOM and CRLF are fine
    assert list(iter_jsonl(p)) == [(1, {"id": "a"}), (4, [1, 2])]
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress(b'{"id": "a"}\n\n{"id": "b"}\n'))
    assert [n for n, _ in iter_jsonl(gz)] == [1, 3]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"id": "a"}\n{"id": \n', r"r\.jsonl, line 2: not valid JSON: Expecting value \(column 8\)"),
        (
            b'{"id": "a"}\n{"id": "\xff"}\n',
            r"r\.jsonl, line 2: not UTF-8 text: invalid start byte \(byte 0xff at column 9\)",
        ),
    ],
)
def test_iter_jsonl_errors_name_file_and_line(tmp_path, content, message):
    p = tmp_path / "r.jsonl"
    p.write_bytes(content)
    with pytest.raises(InputError, match=message):
        list(iter_jsonl(p))


def test_iter_jsonl_missing_file_and_broken_gzip(tmp_path):
    with pytest.raises(InputError, match=r"nope\.jsonl: no such file"):
        list(iter_jsonl(tmp_path / "nope.jsonl"))
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match=r"r\.jsonl\.gz: cannot read the gzip file: Not a gzipped file"):
        list(iter_jsonl(gz))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1]", "line 2: expected a JSON object, found list"),
        ('{"x": 1}', "line 2: field 'id' is missing or not a non-empty string"),
        ('{"id": true}', "line 2: field 'id' is missing or not a non-empty string"),
        ('{"id": ""}', "line 2: field 'id' is missing or not a non-empty string"),
        ('{"id": 1}', r"line 2: duplicate document id '1' \(first on line 1\)"),  # 1 is read as "1"
    ],
)
def test_iter_objects_checks_each_line(tmp_path, line, message):
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "1"}\n' + line + "\n")
    with pytest.raises(InputError, match=message):
        list(iter_objects(p, what="document"))


def test_read_records_marks_line_and_source_and_messages_use_them(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('\n{"id": 7, "query": "q"}\n')
    (r,) = read_records(p)
    assert r == {"id": "7", "query": "q", "_line": 2, "_source": str(p)}
    assert where(r, "answer.text") == "record '7' (line 2), field answer.text"
    assert located(r, "answer.text") == f"{p}, record '7' (line 2), field answer.text"
    assert str(record_error(r, "answer.text", "expected a string")) == (
        f"{p}, record '7' (line 2), field answer.text: expected a string"
    )
    assert located({"id": "m"}, "labels") == "record 'm', field labels"  # built in memory


def test_record_text_prefers_text_then_query():
    assert record_text({"text": "t", "query": "q"}) == "t"
    assert record_text({"text": 5, "query": "q"}) == "q"
    assert record_text({"id": "a"}) is None


def test_write_records_round_trip(tmp_path):
    p = tmp_path / "o.jsonl"
    write_records(p, [{"id": "b", "z": 1, "a": 2, "_line": 9}], sort_keys=True)
    assert p.read_text() == '{"a": 2, "id": "b", "z": 1}\n'
    assert read_records(p)[0]["z"] == 1


def test_iter_record_chunks_streams_in_file_order_and_checks_across_chunks(tmp_path):
    from kg_rageval.records import iter_record_chunks, read_records

    path = tmp_path / "r.jsonl"
    path.write_text("".join(f'{{"id": "q{i}"}}\n' + ("\n" if i == 2 else "") for i in range(7)))
    chunks = list(iter_record_chunks(path, size=3))
    assert [[r["id"] for r in c] for c in chunks] == [["q0", "q1", "q2"], ["q3", "q4", "q5"], ["q6"]]
    # line numbers count the blank line after q2; every record names its file
    assert [r["_line"] for c in chunks for r in c] == [1, 2, 3, 5, 6, 7, 8]
    assert {r["_source"] for c in chunks for r in c} == {str(path)}
    assert [r for c in chunks for r in c] == read_records(path)
    assert [len(c) for c in iter_record_chunks(path, size=7)] == [7]  # exact multiple: no empty chunk

    (tmp_path / "empty.jsonl").write_text("\n")
    assert list(iter_record_chunks(tmp_path / "empty.jsonl")) == []

    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "a"}\n')
    stream = iter_record_chunks(dup, size=2)
    assert [r["id"] for r in next(stream)] == ["a", "b"]
    with pytest.raises(InputError, match=r"duplicate record id 'a' \(first on line 1\)"):
        next(stream)
    with pytest.raises(ValueError, match="at least 1"):
        next(iter_record_chunks(path, size=0))
