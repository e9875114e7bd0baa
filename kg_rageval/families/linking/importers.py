"""Importers for existing linking gold standards and system outputs, into the record format.

* **neleval / TAC** tab-separated annotations (neleval's ``Annotation.from_string``): one
  mention per line, ``doc_id <TAB> start <TAB> end <TAB> kb_id [<TAB> score <TAB> type ...]``.
  neleval's **end offset is inclusive**: ``[start, end]`` becomes our ``[start, end + 1)``.
  A kb id beginning with ``NIL`` (neleval's convention, e.g. ``NIL0042``) is NIL (``id: null``;
  the cluster name is kept as ``nil_cluster``). With several candidates (``id score type``
  triples) the top-scoring one is the link, as in neleval. :func:`to_neleval` writes the
  reverse.
* **BIO / IOB2** token tags (:func:`bio_to_mentions`), decoded as ``seqeval``'s strict IOB2
  mode does: an entity starts at ``B-X`` and continues over ``I-X`` of the same type; a stray
  ``I-X`` (no open ``X`` entity) starts nothing. Tokens are joined with one space to make the
  text, so offsets are character offsets into that text.
* **spaCy** ``Doc`` / ``DocBin`` entities (:func:`spacy_mentions`, :func:`docbin_records`):
  ``ent.start_char``, ``ent.end_char``, ``ent.kb_id_`` (empty or ``NIL…`` → NIL) and
  ``ent.label_`` as the mention type.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.base.redact import excerpt
from kg_rageval.records import Record


def _is_nil(kb: str | None) -> bool:
    return kb is None or kb == "" or kb.startswith("NIL")


def _lines(source: str | Path | Iterable[str]) -> tuple[str, Iterable[str]]:
    """A path (``Path``, or a string without tabs and newlines), annotation text, or lines."""
    if isinstance(source, Path) or (isinstance(source, str) and not any(c in source for c in "\t\n")):
        p = Path(source)
        if not p.is_file():
            raise InputError("no such file", source=str(p))
        return str(p), p.read_text(encoding="utf-8").splitlines()
    if isinstance(source, str):
        return "<string>", source.splitlines()
    return "<lines>", source


def read_neleval(source: str | Path | Iterable[str], *, side: str = "gold") -> dict[str, list[dict]]:
    """Mentions per document from neleval/TAC annotations (a path, a string or lines).

    ``side="pred"`` keeps the top candidate's score as ``score``; ``side="gold"`` keeps the
    type as ``type``. Blank lines are skipped; malformed lines raise :class:`InputError`
    naming the line.
    """
    name, lines = _lines(source)
    docs: dict[str, list[dict]] = {}
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip("\n\r")
        if not line.strip():
            continue
        cols = line.rstrip("\t").split("\t")
        if len(cols) < 3:
            raise InputError(
                f"need at least doc id, start, end; got {excerpt(line)}",
                source=name,
                location=f"line {lineno}",
            )
        doc, start, end = cols[0], cols[1], cols[2]
        try:
            s, e_incl = int(start), int(end)
        except ValueError:
            raise InputError(
                f"start and end must be integers, got {start!r}, {end!r}",
                source=name,
                location=f"line {lineno}",
            ) from None
        if e_incl < s:
            raise InputError(
                f"end {e_incl} is before start {s} (neleval ends are inclusive)",
                source=name,
                location=f"line {lineno}",
            )
        cands = _candidates(cols[3:], name, lineno)
        kb, score, typ = cands[0] if cands else (None, None, None)
        m: dict[str, Any] = {"start": s, "end": e_incl + 1, "id": None if _is_nil(kb) else kb}
        if kb and _is_nil(kb):
            m["nil_cluster"] = kb
        if side == "pred" and score is not None:
            m["score"] = score
        if typ:
            m["type"] = typ
        docs.setdefault(doc, []).append(m)
    return docs


def _candidates(cols: list[str], name: str, lineno: int) -> list[tuple[str, float | None, str | None]]:
    if not cols:
        return []
    if len(cols) == 1:
        return [(cols[0], None, None)]
    if len(cols) == 2:
        return [(cols[0], float(cols[1]), None)]
    if len(cols) % 3:
        raise InputError(
            "need kb id, score and type for each of several candidates",
            source=name,
            location=f"line {lineno}",
        )
    out: list[tuple[str, float | None, str | None]] = []
    for i in range(0, len(cols), 3):
        try:
            sc = float(cols[i + 1])
        except ValueError:
            raise InputError(
                f"candidate score {cols[i + 1]!r} is not a number", source=name, location=f"line {lineno}"
            ) from None
        out.append((cols[i], sc, cols[i + 2] or None))
    out.sort(key=lambda c: -(c[1] or 0.0))  # neleval: top-scoring candidate is the link
    return out


def neleval_records(gold: str | Path | Iterable[str], pred: str | Path | Iterable[str]) -> list[Record]:
    """Records (one per document id, sorted) from neleval gold and system annotation files.
    A document only in the gold file gets ``pred: []`` and vice versa."""
    g = read_neleval(gold, side="gold")
    p = read_neleval(pred, side="pred")
    return [
        {"id": d, "mentions": {"gold": g.get(d, []), "pred": p.get(d, [])}} for d in sorted(set(g) | set(p))
    ]


def to_neleval(records: Iterable[Record], side: str, *, nil_prefix: str = "NIL") -> str:
    """neleval annotation text of one side (``"gold"`` or ``"pred"``): inclusive ends, NIL as
    ``nil_cluster`` or ``NIL<n>`` (one fresh cluster per mention)."""
    buf = io.StringIO()
    n = 0
    for r in records:
        for m in (r.get("mentions") or {}).get(side) or []:
            kb = m.get("id")
            if kb is None:
                kb = m.get("nil_cluster") or f"{nil_prefix}{n:05d}"
                n += 1
            cols = [str(r["id"]), str(m["start"]), str(m["end"] - 1), kb]
            if m.get("score") is not None or m.get("type"):
                cols += [repr(float(m.get("score") or 1.0)), str(m.get("type") or "")]
            buf.write("\t".join(cols) + "\n")
    return buf.getvalue()


# ---------------------------------------------------------------------------- BIO / IOB2
def iob2_spans(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """``(type, first token, last token + 1)`` of each entity under strict IOB2 (see above).

    Tags must be ``O``, ``B-X`` or ``I-X``; anything else raises :class:`InputError`."""
    out: list[tuple[str, int, int]] = []
    cur: tuple[str, int] | None = None
    for i, tag in enumerate(tags):
        if tag == "O":
            prefix, typ = "O", ""
        elif len(tag) > 2 and tag[1] == "-" and tag[0] in "BI":
            prefix, typ = tag[0], tag[2:]
        else:
            raise InputError(f"tag {i} is {tag!r}; IOB2 tags are O, B-<type> or I-<type>")
        if cur is not None and not (prefix == "I" and typ == cur[0]):
            out.append((cur[0], cur[1], i))
            cur = None
        if prefix == "B":
            cur = (typ, i)
    if cur is not None:
        out.append((cur[0], cur[1], len(tags)))
    return out


def bio_to_mentions(
    tokens: Sequence[str],
    tags: Sequence[str],
    *,
    type_is_id: bool = False,
    ids: Sequence[str | None] | None = None,
) -> tuple[str, list[dict]]:
    """``(text, mentions)`` from tokens and IOB2 tags; text = tokens joined by one space.

    The id of a mention is its tag type when ``type_is_id`` (``NIL…`` → NIL), else
    ``ids[first token]`` when ``ids`` is given, else NIL. The tag type is kept as ``type``.
    """
    if len(tokens) != len(tags):
        raise InputError(f"{len(tokens)} tokens but {len(tags)} tags")
    starts, pos = [], 0
    for t in tokens:
        starts.append(pos)
        pos += len(t) + 1
    text = " ".join(tokens)
    mentions = []
    for typ, a, b in iob2_spans(tags):
        if type_is_id:
            kb = None if _is_nil(typ) else typ
        elif ids is not None:
            kb = ids[a]
        else:
            kb = None
        mentions.append(
            {"start": starts[a], "end": starts[b - 1] + len(tokens[b - 1]), "id": kb, "type": typ}
        )
    return text, mentions


def bio_records(
    sentences: Iterable[tuple[str, Sequence[str], Sequence[str], Sequence[str]]],
    *,
    type_is_id: bool = False,
) -> list[Record]:
    """Records from ``(id, tokens, gold_tags, pred_tags)`` tuples."""
    out = []
    for rid, tokens, gold, pred in sentences:
        text, g = bio_to_mentions(tokens, gold, type_is_id=type_is_id)
        _, p = bio_to_mentions(tokens, pred, type_is_id=type_is_id)
        out.append({"id": str(rid), "text": text, "mentions": {"gold": g, "pred": p}})
    return out


# ---------------------------------------------------------------------------- spaCy
def spacy_mentions(doc: Any) -> list[dict]:
    """Mentions of a spaCy ``Doc``'s entities (``kb_id_`` empty or ``NIL…`` → NIL)."""
    return [
        {
            "start": e.start_char,
            "end": e.end_char,
            "id": None if _is_nil(e.kb_id_) else e.kb_id_,
            "type": e.label_ or None,
        }
        for e in doc.ents
    ]


def docbin_records(
    gold: Any,
    pred: Any | None = None,
    *,
    ids: Sequence[str] | None = None,
) -> list[Record]:
    """Records from spaCy gold (and optionally predicted) documents.

    ``gold``/``pred`` are sequences of ``Doc`` or paths to ``.spacy`` ``DocBin`` files (read
    with a blank English vocabulary). Documents pair up by position and must have the same
    text. Record ids are ``ids`` or ``doc-<n>``.
    """
    gdocs = _docs(gold)
    pdocs = _docs(pred) if pred is not None else None
    if pdocs is not None and len(pdocs) != len(gdocs):
        raise InputError(f"{len(gdocs)} gold documents but {len(pdocs)} predicted documents")
    out = []
    for k, gd in enumerate(gdocs):
        rid = str(ids[k]) if ids is not None else f"doc-{k}"
        mentions: dict[str, Any] = {"gold": spacy_mentions(gd)}
        if pdocs is not None:
            if pdocs[k].text != gd.text:
                raise InputError(
                    f"document {k}: predicted text differs from gold text", location=f"record {rid!r}"
                )
            mentions["pred"] = spacy_mentions(pdocs[k])
        out.append({"id": rid, "text": gd.text, "mentions": mentions})
    return out


def _docs(src: Any) -> list:
    if isinstance(src, (str, Path)):
        try:
            import spacy
            from spacy.tokens import DocBin
        except ImportError as exc:  # pragma: no cover - spaCy is in the nlp extra
            raise ImportError("reading DocBin files needs spaCy: pip install 'kg-rageval[nlp]'") from exc
        return list(DocBin().from_disk(src).get_docs(spacy.blank("en").vocab))
    return list(src)
