"""TREC 2024 RAG Track files into kg-rageval records (``docs/interop.md``, *TREC RAG*).

Two kinds of JSONL file, told apart by their rows (a file mixing them is an error naming the
row):

**Answer files** (the track's submission format, as ``castorini/ragnarok`` writes it), one
answer a line::

    {"run_id": "ragnarok", "topic_id": "2024-145979", "topic": "what is a sedan",
     "references": ["msmarco_v2.1_doc_04_420132660#2_1107218284", ...],
     "response_length": 192,
     "answer": [{"text": "A sedan is a car.", "citations": [0, 1]}, ...]}

===========================  ==========================================================
source field                 record field
===========================  ==========================================================
``run_id``, ``topic_id``     ``id`` = ``<run_id>:<topic_id>`` (``topic_id`` alone without a
                             run id, as the nuggets reader names answers); ``slices.run``
``topic``                    ``query``
``answer[].text``            ``answer.text`` (the sentences joined by one space) and
                             ``answer.claims[].text``
``answer[].citations``       ``answer.claims[].citations``: each index into ``references``
                             replaced by the document id it points at; ``answer.citations``
                             the cited ids, first citation first, each once
``references``               ``retrieval.run``: the ranked document ids, in their order
``response_length``, other   ``source.extra.<key>``
===========================  ==========================================================

So the provenance family scores claim-level citation completeness from the track's own
per-sentence citations, and the generation family reads the answer text. A citation index that
is not an integer or is outside ``references`` is an :class:`InputError` naming the file, row
and field (``answer[2].citations[0]``). Missing ``topic`` / ``answer`` / ``references`` /
``run_id`` and sentences without ``citations`` are counted in ``missing`` and left out.

**Nugget and assignment files** (AutoNuggetizer's ``create`` / ``assign`` output: ``qid``,
``nuggets`` lists) are read by the nuggets family's reader
(:func:`kg_rageval.families.nuggets.inputs.read_trec_nuggets`): one record per line with the
``nuggets`` section, id ``<run_id>:<qid>``, so the same topic's answer, assignment and nugget
records share ids; ``nuggets=`` (``--nuggets``) names the nugget file that gives the importance
of assignment nuggets without one. ``counts.kind`` says which kind a file was: ``answers``, ``assignments``
(some nugget has an ``assignment``) or ``nuggets``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.interop._common import Builder, Imported, bad, iter_rows, kind, text_or_none

ANSWER_FIELDS = (
    "id",
    "run_id",
    "query",
    "answer.text",
    "answer.claims.citations",
    "retrieval.run",
)
NUGGET_FIELDS = ("query", "answer.text", "nuggets.assignment")
_ANSWER_KEYS = ("run_id", "topic_id", "topic", "references", "answer")


def _row_kind(obj: dict[str, Any]) -> str | None:
    if "nuggets" in obj:
        return "nuggets"
    if "answer" in obj or "references" in obj:
        return "answers"
    return None


def read(path: str | Path, nuggets: str | Path | None = None) -> Imported:
    """Read a TREC RAG answer, nugget or assignment file; see the module docstring.
    ``nuggets``: the topics' nugget file, giving the importance of assignment nuggets that
    lack one (an assignment file only)."""
    rows = list(iter_rows(path))
    kinds: dict[str, int] = {}
    for row, obj in rows:
        k = _row_kind(obj)
        if k is None:
            raise bad(
                path,
                row,
                "answer",
                "neither a TREC RAG answer (answer, references) nor a nugget row (nuggets)",
            )
        kinds.setdefault(k, row)
        if len(kinds) > 1:
            first = min(kinds.items(), key=lambda kv: kv[1])
            raise bad(
                path,
                row,
                "nuggets" if k == "nuggets" else "answer",
                f"a {k} row in a file of {first[0]} rows (first on row {first[1]})",
            )
    if kinds.get("nuggets"):
        return _read_nuggets(path, nuggets)
    if nuggets is not None:
        raise bad(
            path, rows[0][0] if rows else 1, "answer", "--nuggets goes with an assignment file, not answers"
        )
    return _read_answers(path, rows)


def _read_nuggets(path: str | Path, nuggets: str | Path | None) -> Imported:
    from kg_rageval.families.nuggets.inputs import read_trec_nuggets

    records = read_trec_nuggets(path, nuggets=nuggets)
    missing = dict.fromkeys(NUGGET_FIELDS, 0)
    assigned = False
    for rec in records:
        row = rec.pop("_line")
        rec.pop("_source", None)
        rec["source"] = {"format": "trec-rag", "file": str(path), "row": row}
        for name in ("query", "answer"):
            if name not in rec:
                missing["query" if name == "query" else "answer.text"] += 1
        for item in rec["nuggets"]["items"]:
            if "assignment" in item:
                assigned = True
            else:
                missing["nuggets.assignment"] += 1
    out = Imported("trec-rag", records, missing)
    out.counts = {"kind": "assignments" if assigned else "nuggets"}
    return out


def _str_id(b: Builder, row: int, name: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise bad(b.path, row, name, f"expected a non-empty string, found {kind(value)}")
    return value


def _read_answers(path: str | Path, rows: list[tuple[int, dict[str, Any]]]) -> Imported:
    b = Builder("trec-rag", path, ANSWER_FIELDS)
    n_sentences = 0
    for row, obj in rows:
        topic_id = _str_id(b, row, "topic_id", obj.get("topic_id"))
        run_id = obj.get("run_id")
        if run_id is None:
            b.lack("run_id")
        else:
            run_id = _str_id(b, row, "run_id", run_id)
        rec: dict[str, Any] = {
            "id": b.take_id(row, f"{run_id}:{topic_id}" if run_id else topic_id, "topic_id")
        }
        query = text_or_none(b, row, "topic", obj.get("topic"))
        if query is None:
            b.lack("query")
        else:
            rec["query"] = query
        refs = obj.get("references")
        if refs is not None:
            if not isinstance(refs, list):
                raise bad(b.path, row, "references", f"expected a list of document ids, found {kind(refs)}")
            refs = [_str_id(b, row, f"references[{i}]", r) for i, r in enumerate(refs)]
            rec["retrieval"] = {"run": list(refs)}
        else:
            b.lack("retrieval.run")
        sentences = obj.get("answer")
        if sentences is None:
            b.lack("answer.text")
        else:
            if not isinstance(sentences, list):
                raise bad(b.path, row, "answer", f"expected a list of sentences, found {kind(sentences)}")
            claims, cited = [], []
            for i, s in enumerate(sentences):
                where = f"answer[{i}]"
                if not isinstance(s, dict) or not isinstance(s.get("text"), str):
                    raise bad(
                        b.path,
                        row,
                        f"{where}.text",
                        f"expected a sentence {{text, citations}}, found {kind(s)}",
                    )
                claim: dict[str, Any] = {"text": s["text"]}
                cites = s.get("citations")
                if cites is None:
                    b.lack("answer.claims.citations")
                else:
                    if not isinstance(cites, list):
                        raise bad(
                            b.path,
                            row,
                            f"{where}.citations",
                            f"expected a list of indices, found {kind(cites)}",
                        )
                    ids = []
                    for j, c in enumerate(cites):
                        f = f"{where}.citations[{j}]"
                        if not isinstance(c, int) or isinstance(c, bool):
                            raise bad(b.path, row, f, f"expected an index into references, found {kind(c)}")
                        if refs is None:
                            raise bad(b.path, row, f, "a citation, but the row has no references")
                        if not 0 <= c < len(refs):
                            raise bad(b.path, row, f, f"index {c} is outside references (0..{len(refs) - 1})")
                        ids.append(refs[c])
                        if refs[c] not in cited:
                            cited.append(refs[c])
                    claim["citations"] = ids
                claims.append(claim)
            n_sentences += len(claims)
            rec["answer"] = {
                "text": " ".join(c["text"] for c in claims),
                "claims": claims,
                "citations": cited,
            }
        if run_id:
            rec["slices"] = {"run": run_id}
        extra = {k: v for k, v in obj.items() if k not in _ANSWER_KEYS and v is not None}
        b.add(rec, row, extra)
    out = b.result()
    out.counts = {"kind": "answers", "n_sentences": n_sentences}
    return out
