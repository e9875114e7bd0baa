"""``emit`` of a payload whose evaluations' meta holds a spooled text (the PROV-O trail of
``score provenance``): written from the temporary file a block at a time, the same bytes as
``json.dumps`` of the payload with the text in place."""

from __future__ import annotations

import json

import pytest

import kg_rageval.base.spool as spool_mod
from kg_rageval.base.spool import Spool, SpooledText
from kg_rageval.cli.common import emit

TEXT = 'é "q" \\ \n\tline ☃ 𝄞 end\x01' * 5  # escapes, 2-, 3- and 4-byte characters, a control


@pytest.mark.parametrize("block", [1, 3, 7, 1 << 20])
def test_spooled_meta_written_as_the_text(block, capsys, monkeypatch):
    monkeypatch.setattr(spool_mod, "BLOCK", block)
    sp = Spool()
    sp.append("x" * 5)  # the text's segment does not start at 0
    start, end = sp.append(TEXT[10:])
    text = SpooledText(TEXT[:10], sp, start, end)
    payload = {
        "command": "score provenance",
        "evaluations": {
            "citations": {"version": "citations/1", "meta": {"corpus": "c"}},
            "prov_trail": {"version": "prov_trail/2", "meta": {"turtle": text, "triples": 3}},
        },
        "tail": ["é", 1],
    }
    emit(payload, "json", str)
    want = dict(payload, evaluations=dict(payload["evaluations"]))
    want["evaluations"]["prov_trail"] = {"version": "prov_trail/2", "meta": {"turtle": TEXT, "triples": 3}}
    assert capsys.readouterr().out == json.dumps(want, indent=2, ensure_ascii=False) + "\n"
    assert payload["evaluations"]["prov_trail"]["meta"]["turtle"] is text  # given back


def test_sentinel_text_in_the_payload_written_whole(capsys):
    sp = Spool()
    start, end = sp.append("body")
    payload = {
        "evaluations": {"t": {"meta": {"turtle": SpooledText("h", sp, start, end)}}},
        "note": "\x00kg-rageval spooled text 0\x00",
    }
    emit(payload, "json", str)
    want = {"evaluations": {"t": {"meta": {"turtle": "hbody"}}}, "note": payload["note"]}
    assert capsys.readouterr().out == json.dumps(want, indent=2, ensure_ascii=False) + "\n"
