"""ReFinED adapter: map ReFinED's Wikidata links onto ontology ids through a cross-reference.

ReFinED (Ayoola et al., NAACL 2022; ``amazon-science/ReFinED``) returns, for a text, a list
of ``Span`` objects: ``text``, ``start`` (character offset), ``ln`` (length in characters),
``predicted_entity.wikidata_entity_id`` (a QID such as ``"Q12136"``, or ``None`` when the
mention is not linked — ReFinED's NIL), ``entity_linking_model_confidence_score`` and
``coarse_mention_type``. The adapter accepts those objects or their recorded JSON form
(dicts with the same keys, ``predicted_entity`` a dict or a bare QID string).

Mapping (one rule, documented):

* QID ``None`` → NIL;
* QID in the cross-reference → the ontology id (an id the ontology lacks raises when an
  ontology is given);
* QID absent from the cross-reference → NIL (``unmapped="nil"``, default: the entity exists
  but not in *this* ontology) or the mention is dropped (``unmapped="drop"``);
* a QID mapped to several ontology ids → NIL with the candidates noted (``ambiguous="abstain"``)
  or the first listed id (``ambiguous="first"``).

ReFinED itself (its models download from the network) is not needed to convert recorded
output; :func:`run_refined` imports it only when called.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import ConfigError, InputError, UnknownIdError


def read_xref(path: str | Path) -> dict[str, list[str]]:
    """A cross-reference table ``QID <TAB or comma> ontology id`` (header optional; several
    lines per QID allowed)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", source=str(p))
    text = p.read_text(encoding="utf-8")
    if not text.strip():
        raise InputError("the cross-reference table is empty", source=str(p))
    dialect = "excel-tab" if "\t" in text.splitlines()[0] else "excel"
    out: dict[str, list[str]] = {}
    for lineno, row in enumerate(csv.reader(text.splitlines(), dialect=dialect), start=1):
        if not row or not row[0].strip() or row[0].startswith("#"):
            continue
        if len(row) < 2:
            raise InputError("need a QID and an ontology id", source=str(p), location=f"line {lineno}")
        q, oid = row[0].strip(), row[1].strip()
        if lineno == 1 and not q.startswith("Q"):
            continue  # header
        out.setdefault(q, [])
        if oid not in out[q]:
            out[q].append(oid)
    return out


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def span_qid(span: Any) -> str | None:
    """The predicted QID of a ReFinED span (object or dict); ``None`` for NIL."""
    ent = _get(span, "predicted_entity")
    if ent is None:
        return None
    qid = ent if isinstance(ent, str) else _get(ent, "wikidata_entity_id")
    if qid in (None, "", "Q-1"):  # ReFinED's own "no entity" marker is Q-1
        return None
    return str(qid)


class RefinedAdapter:
    """Convert ReFinED spans to predicted mentions over an ontology (module docstring)."""

    name = "refined"

    def __init__(
        self,
        xref: Mapping[str, str | Iterable[str]] | str | Path,
        *,
        ontology=None,
        unmapped: str = "nil",
        ambiguous: str = "abstain",
    ):
        if unmapped not in ("nil", "drop"):
            raise ConfigError(f"unmapped must be 'nil' or 'drop', not {unmapped!r}")
        if ambiguous not in ("abstain", "first"):
            raise ConfigError(f"ambiguous must be 'abstain' or 'first', not {ambiguous!r}")
        table = read_xref(xref) if isinstance(xref, (str, Path)) else xref
        self.xref: dict[str, list[str]] = {
            q: [v] if isinstance(v, str) else list(v) for q, v in table.items()
        }
        if ontology is not None:
            bad = sorted({i for v in self.xref.values() for i in v if i not in ontology})
            if bad:
                raise UnknownIdError(bad, where="ReFinED cross-reference table")
        self.unmapped = unmapped
        self.ambiguous = ambiguous

    def convert(self, spans: Iterable[Any], *, text: str | None = None) -> list[dict[str, Any]]:
        """Predicted mentions (record format) of ReFinED ``spans``, sorted by offset.

        When ``text`` is given, each span's ``text`` must equal ``text[start:start+ln]``."""
        out = []
        for k, sp in enumerate(spans):
            start, ln = _get(sp, "start"), _get(sp, "ln")
            if type(start) is not int or type(ln) is not int or start < 0 or ln <= 0:
                raise InputError(f"span {k}: need integer start >= 0 and ln > 0, got {start!r}, {ln!r}")
            if (
                text is not None
                and _get(sp, "text") is not None
                and text[start : start + ln] != _get(sp, "text")
            ):
                raise InputError(
                    f"span {k}: text {_get(sp, 'text')!r} does not match the document at "
                    f"[{start}, {start + ln})"
                )
            qid = span_qid(sp)
            m: dict[str, Any] = {"start": start, "end": start + ln, "id": None}
            if qid is not None:
                targets = self.xref.get(qid)
                if not targets:
                    if self.unmapped == "drop":
                        continue
                    m["qid"] = qid
                elif len(targets) == 1 or self.ambiguous == "first":
                    m["id"] = targets[0]
                else:
                    m["qid"] = qid
                    m["candidates"] = list(targets)
            score = _get(sp, "entity_linking_model_confidence_score")
            if score is not None:
                m["score"] = float(score)
            typ = _get(sp, "coarse_mention_type")
            if typ:
                m["type"] = typ
            out.append(m)
        out.sort(key=lambda m: (m["start"], m["end"]))
        return out


def run_refined(text: str, *, model_name: str = "wikipedia_model_with_numbers", entity_set: str = "wikidata"):
    """Run ReFinED on ``text`` (needs the ``refined`` package and its downloaded models)."""
    try:
        from refined.inference.processor import Refined  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ImportError(
            "ReFinED is not installed (pip install "
            "https://github.com/amazon-science/ReFinED/archive/refs/tags/V1.zip; its models "
            "download on first use). Recorded ReFinED output converts without it: "
            "RefinedAdapter(xref).convert(spans)"
        ) from exc
    return Refined.from_pretrained(model_name=model_name, entity_set=entity_set).process_text(text)
