"""TACRED and DocRED JSON files as ``extraction`` records with relations
(``docs/extraction.md``, *Readers*).

* **TACRED** (:func:`read_tacred`): a JSON list of sentences ``{"id", "relation", "token",
  "subj_start", "subj_end", "obj_start", "obj_end", "subj_type", "obj_type", ...}``. Each is one
  record whose gold relations are the one triple ``(subj, relation, obj)`` — ``subj`` / ``obj``
  are the token spans ``"<start>:<end>"`` — with the types ``subj_type`` / ``obj_type``
  (``no_relation`` kept: the scorer drops the negative labels). Predictions: a JSON object
  ``{sentence id: relation}`` (a sentence with no prediction gets none: a missing run).
* **DocRED** (:func:`read_docred`): a JSON list of documents ``{"title", "sents",
  "vertexSet", "labels": [{"h", "t", "r", ...}]}``; each is one record whose gold triples are
  ``("e<h>", r, "e<t>")`` with the types of the entities' first mentions. Predictions: the
  official result format, a JSON list of ``{"title", "h_idx", "t_idx", "r"}`` (documents with no
  prediction get an empty list: the predictor said no relation).

A file above ``max_bytes``, a missing or mistyped field, an entity index out of range is an
:class:`~kg_rageval.base.errors.InputError` naming the file, the record (index and id / title)
and the field. The files are read, never executed or followed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.records._io import collector_paused

MAX_BYTES = 256 * 1024 * 1024


def _load(path: str | Path, max_bytes: int) -> Any:
    p = Path(path)
    size = p.stat().st_size
    if size > max_bytes:
        raise InputError(f"{size} bytes, above the limit of {max_bytes}", source=str(p))
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text: {e.reason}", source=str(p), location=f"byte {e.start}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON: {e.msg}", source=str(p), location=f"line {e.lineno}") from None


def _field(src: str, where: str, d: Any, key: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(d, dict):
        raise InputError(f"expected an object, found {type(d).__name__}", source=src, location=where)
    v = d.get(key)
    if not isinstance(v, kind) or isinstance(v, bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(
            f"field {key!r}: expected {names}, found {type(v).__name__}", source=src, location=where
        )
    return v


def _tacred_triple(span: dict[str, str], r: str, types: dict[str, str | None]) -> dict[str, Any]:
    return {
        "subject": span["subj"],
        "relation": r,
        "object": span["obj"],
        "subject_type": types["subj_type"],
        "object_type": types["obj_type"],
    }


def _docred_triple(
    etypes: list[str | None], where: str, h: int, t: int, r: str, at: str, file: str
) -> dict[str, Any]:
    n = len(etypes)
    if not (0 <= h < n and 0 <= t < n):
        raise InputError(f"{at}: entity index out of range 0..{n - 1}", source=file, location=where)
    return {
        "subject": f"e{h}",
        "relation": r,
        "object": f"e{t}",
        "subject_type": etypes[h],
        "object_type": etypes[t],
    }


def _read_tacred(
    gold_path: str | Path, pred_path: str | Path | None = None, *, max_bytes: int = MAX_BYTES
) -> list[dict[str, Any]]:
    """The sentences of a TACRED JSON file as records (module docstring)."""
    src = str(gold_path)
    data = _load(gold_path, max_bytes)
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of sentences, found {type(data).__name__}", source=src)
    preds: dict[str, Any] | None = None
    if pred_path is not None:
        preds = _load(pred_path, max_bytes)
        if not isinstance(preds, dict):
            raise InputError(
                f"expected a JSON object {{sentence id: relation}}, found {type(preds).__name__}",
                source=str(pred_path),
            )
        for k, v in preds.items():
            if not isinstance(v, str) or not v:
                raise InputError("expected a relation label", source=str(pred_path), location=f"id {k!r}")
    out = []
    for i, d in enumerate(data):
        where = f"record {i}"
        sid = _field(src, where, d, "id", str)
        where = f"record {i} (id {sid!r})"
        rel = _field(src, where, d, "relation", str)
        tokens = _field(src, where, d, "token", list)
        span = {}
        for side in ("subj", "obj"):
            a = _field(src, where, d, f"{side}_start", int)
            b = _field(src, where, d, f"{side}_end", int)
            if not 0 <= a <= b < len(tokens):
                raise InputError(
                    f"field {side}_start/{side}_end: span {a}..{b} outside the {len(tokens)} tokens",
                    source=src,
                    location=where,
                )
            span[side] = f"{a}:{b}"
        types = {
            k: d.get(k) if isinstance(d.get(k), str) and d.get(k) else None for k in ("subj_type", "obj_type")
        }

        relations: dict[str, Any] = {"gold": [_tacred_triple(span, rel, types)]}
        if preds is not None and sid in preds:
            relations["pred"] = [_tacred_triple(span, preds[sid], types)]
        out.append(
            {
                "id": sid,
                "_source": src,
                "extraction": {"tokens": [str(t) for t in tokens], "relations": relations},
            }
        )
    return out


def _read_docred(
    gold_path: str | Path, pred_path: str | Path | None = None, *, max_bytes: int = MAX_BYTES
) -> list[dict[str, Any]]:
    """The documents of a DocRED JSON file as records (module docstring)."""
    src = str(gold_path)
    data = _load(gold_path, max_bytes)
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of documents, found {type(data).__name__}", source=src)
    preds: dict[str, list[tuple[int, int, str]]] | None = None
    if pred_path is not None:
        ps = str(pred_path)
        raw = _load(pred_path, max_bytes)
        if not isinstance(raw, list):
            raise InputError(f"expected a JSON list of predictions, found {type(raw).__name__}", source=ps)
        preds = {}
        for j, q in enumerate(raw):
            w = f"record {j}"
            title = _field(ps, w, q, "title", str)
            h = _field(ps, w, q, "h_idx", int)
            t = _field(ps, w, q, "t_idx", int)
            r = _field(ps, w, q, "r", str)
            preds.setdefault(title, []).append((h, t, r))
    out = []
    titles = set()
    for i, d in enumerate(data):
        where = f"record {i}"
        title = _field(src, where, d, "title", str)
        where = f"record {i} (title {title!r})"
        if title in titles:
            raise InputError("field 'title': a second document of this title", source=src, location=where)
        titles.add(title)
        vertex = _field(src, where, d, "vertexSet", list)
        etypes: list[str | None] = []
        for k, ms in enumerate(vertex):
            if not isinstance(ms, list) or not ms or not isinstance(ms[0], dict):
                raise InputError(
                    f"field 'vertexSet[{k}]': expected a list of mentions", source=src, location=where
                )
            t = ms[0].get("type")
            etypes.append(t if isinstance(t, str) and t else None)
        gold = []
        for j, lab in enumerate(d.get("labels") or []):
            lw = f"{where}, labels[{j}]"
            gold.append(
                _docred_triple(
                    etypes,
                    where,
                    _field(src, lw, lab, "h", int),
                    _field(src, lw, lab, "t", int),
                    _field(src, lw, lab, "r", str),
                    f"labels[{j}]",
                    src,
                )
            )
        relations: dict[str, Any] = {"gold": gold}
        if preds is not None:
            relations["pred"] = [
                _docred_triple(etypes, where, h, t, r, "h_idx/t_idx", str(pred_path))
                for h, t, r in preds.get(title, [])
            ]
        out.append({"id": title, "_source": src, "extraction": {"relations": relations}})
    if preds is not None:
        extra = sorted(set(preds) - titles)
        if extra:
            raise InputError(f"prediction for a document not in {src}: {extra[0]!r}", source=str(pred_path))
    return out


def read_tacred(
    gold_path: str | Path, pred_path: str | Path | None = None, *, max_bytes: int = MAX_BYTES
) -> list[dict[str, Any]]:
    """The sentences of a TACRED JSON file as records (module docstring), built with the cyclic
    garbage collector paused (:func:`~kg_rageval.records.collector_paused`: the parsed file
    and the records hold no reference cycles)."""
    with collector_paused():
        return _read_tacred(gold_path, pred_path, max_bytes=max_bytes)


def read_docred(
    gold_path: str | Path, pred_path: str | Path | None = None, *, max_bytes: int = MAX_BYTES
) -> list[dict[str, Any]]:
    """The documents of a DocRED JSON file as records (module docstring), built with the cyclic
    garbage collector paused (as :func:`read_tacred`)."""
    with collector_paused():
        return _read_docred(gold_path, pred_path, max_bytes=max_bytes)


__all__ = ["MAX_BYTES", "read_docred", "read_tacred"]
