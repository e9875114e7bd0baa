"""The cleaning family: how well did a cleaning pipeline remove boilerplate, identify the
language, find near duplicates and scrub PII, and how healthy is the Unicode of its output?
Per slice (document class) and ontology branch.

Record section: ``cleaning`` (:mod:`kg_rageval.records.cleaning`; ``docs/records.md``). One
row per record with a scorable ``cleaning`` section. Every metric is a ratio of sums over the
rows (micro), so slices, branches and intervals are exact; each reports ``rows`` = the
documents in its denominator (the audit's ``min_rows``). Per-label tables are in ``meta``.

* **Boilerplate** (spans ``[start, end)`` of the raw text; documents with ``gold`` and
  ``removed``): ``boilerplate_precision = Σ matched / Σ removed``, ``boilerplate_recall = Σ
  matched / Σ gold``, F1 their harmonic mean; matched: the one-to-one alignment of
  :func:`kg_rageval.families.linking.evaluate.match_spans`, identical spans (strict) or, for
  the ``_overlap`` metrics, spans sharing a character (greedy, most shared characters first).
* **Unicode health** (documents with ``text``; :mod:`.unicode`): ``nfc_nfkc_equal_rate`` =
  documents with NFC(text) = NFKC(text) / documents; ``invisible_doc_rate`` = documents with an
  invisible code point (``Cf`` ∪ ``Default_Ignorable_Code_Point``) / documents;
  ``invisible_char_rate`` = Σ invisible code points / Σ code points; mixed-script confusable
  tokens (Latin / Cyrillic / Greek letters in one ``\\w+`` token) apart:
  ``mixed_script_token_rate`` = Σ mixed tokens / Σ tokens, ``mixed_script_doc_rate``.
* **Language ID** (documents with ``language.gold``; codes compared lower-cased):
  ``language_accuracy`` = Σ pred = gold / Σ documents (``pred: null`` is wrong);
  ``language_macro_f1`` = mean over the languages seen (gold or predicted) of
  ``F1_L = 2·tp_L / (2·tp_L + fp_L + fn_L)``, from the summed per-language counts (a null
  prediction is a false negative of the gold language, no language's false positive).
  ``meta["per_language"]``: precision, recall, F1 and support per language — sklearn's
  ``classification_report(y_true, y_pred, labels=languages)``.
* **Near duplicates**: a pair ``{a, b}`` is *gold* when either document's ``duplicates.gold``
  names the other, *predicted* when either's ``duplicates.pred`` does (or, with
  ``minhash_threshold``, when the reference MinHash/LSH detector of :mod:`.minhash` flags the
  two texts; records' ``pred`` are then not read). A pair is *judged* when one of its documents
  is labelled (``gold`` present, ``[]`` included) and has detector output; it is counted on
  the row of its smaller such document id. ``duplicate_precision`` = Σ gold ∧ predicted / Σ
  predicted, ``duplicate_recall`` = Σ gold ∧ predicted / Σ gold.
* **PII** (documents with ``pii.gold`` and ``pii.pred``): per entity type, spans aligned within
  ``(document, type)`` strict or with overlap as for boilerplate; ``pii_precision`` /
  ``pii_recall`` / ``pii_f1`` (strict) and ``_overlap``, micro over types.
  ``meta["per_pii_type"]``: per type ``gold``, ``pred``, precision / recall / F1 strict and
  overlap; ``meta["pii_failures"]``: the recall failures first (gold spans missed under strict
  matching, by type and record), then the spurious predictions.

Empty denominators are missing evidence (``value=None`` with a reason), never 0 or 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from itertools import compress, repeat
from operator import is_not
from typing import Any

import numpy as np

from kg_rageval.base.errors import InputError
from kg_rageval.families.cleaning.minhash import minhash_pairs
from kg_rageval.families.cleaning.unicode import unicode_health
from kg_rageval.families.linking.evaluate import match_spans
from kg_rageval.records import Record
from kg_rageval.records.cleaning import CleaningSection, cleaning_section
from kg_rageval.records.fields import _EMPTY, _GET, section_columns
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation, columns_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, harmonic, ratio

STATS = (
    "n",
    "bp_docs",
    "bp_gold",
    "bp_removed",
    "bp_strict",
    "bp_overlap",
    "text_docs",
    "nfc_eq_nfkc",
    "chars",
    "invisible",
    "invisible_docs",
    "tokens",
    "mixed_tokens",
    "mixed_docs",
    "lang_docs",
    "lang_correct",
    "dup_docs",
    "dup_gold",
    "dup_pred",
    "dup_tp",
    "pii_docs",
    "pii_gold",
    "pii_pred",
    "pii_strict",
    "pii_overlap",
)

METRICS = (
    "boilerplate_precision",
    "boilerplate_recall",
    "boilerplate_f1",
    "boilerplate_precision_overlap",
    "boilerplate_recall_overlap",
    "boilerplate_f1_overlap",
    "nfc_nfkc_equal_rate",
    "invisible_doc_rate",
    "invisible_char_rate",
    "mixed_script_token_rate",
    "mixed_script_doc_rate",
    "language_accuracy",
    "language_macro_f1",
    "duplicate_precision",
    "duplicate_recall",
    "duplicate_f1",
    "pii_precision",
    "pii_recall",
    "pii_f1",
    "pii_precision_overlap",
    "pii_recall_overlap",
    "pii_f1_overlap",
)


def _rows(m: Metric, n: float) -> Metric:
    return dataclasses.replace(m, rows=int(n))


def _prf(
    prefix: str, suffix: str, tp: float, gold: float, pred: float, docs: float, what: str
) -> list[Metric]:
    p = ratio(f"{prefix}_precision{suffix}", tp, pred, missing=f"no predicted {what}")
    r = ratio(f"{prefix}_recall{suffix}", tp, gold, missing=f"no labelled {what}")
    f = harmonic(f"{prefix}_f1{suffix}", p, r)
    return [_rows(p, docs), _rows(r, docs), _rows(f, docs)]


class CleaningFamily(Family):
    """Stats per row (all additive): ``n``; boilerplate ``bp_docs``, ``bp_gold``,
    ``bp_removed``, ``bp_strict`` / ``bp_overlap`` (matched spans); Unicode ``text_docs``,
    ``nfc_eq_nfkc``, ``chars``, ``invisible``, ``invisible_docs``, ``tokens``,
    ``mixed_tokens``, ``mixed_docs``; language ``lang_docs``, ``lang_correct`` and per language
    ``L`` of the call ``lang_tp:L`` / ``lang_fp:L`` / ``lang_fn:L``; near duplicates
    ``dup_docs``, ``dup_gold``, ``dup_pred``, ``dup_tp`` (pairs); PII ``pii_docs``,
    ``pii_gold``, ``pii_pred``, ``pii_strict`` / ``pii_overlap``."""

    name = "cleaning"
    version = "1"

    def __init__(self, languages: Iterable[str] = ()):
        self.languages = tuple(sorted(set(languages)))
        self.stats = STATS + tuple(f"lang_{x}:{lang}" for lang in self.languages for x in ("tp", "fp", "fn"))

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        out: list[Metric] = []
        out += _prf(
            "boilerplate", "", s["bp_strict"], s["bp_gold"], s["bp_removed"], s["bp_docs"], "boilerplate span"
        )
        out += _prf(
            "boilerplate",
            "_overlap",
            s["bp_overlap"],
            s["bp_gold"],
            s["bp_removed"],
            s["bp_docs"],
            "boilerplate span",
        )
        no_text = "no document with a cleaned text"
        out.append(
            _rows(
                ratio("nfc_nfkc_equal_rate", s["nfc_eq_nfkc"], s["text_docs"], missing=no_text),
                s["text_docs"],
            )
        )
        out.append(
            _rows(
                ratio("invisible_doc_rate", s["invisible_docs"], s["text_docs"], missing=no_text),
                s["text_docs"],
            )
        )
        out.append(
            _rows(
                ratio("invisible_char_rate", s["invisible"], s["chars"], missing="no character in the texts"),
                s["text_docs"],
            )
        )
        out.append(
            _rows(
                ratio(
                    "mixed_script_token_rate", s["mixed_tokens"], s["tokens"], missing="no token in the texts"
                ),
                s["text_docs"],
            )
        )
        out.append(
            _rows(
                ratio("mixed_script_doc_rate", s["mixed_docs"], s["text_docs"], missing=no_text),
                s["text_docs"],
            )
        )
        out.append(
            _rows(
                ratio(
                    "language_accuracy",
                    s["lang_correct"],
                    s["lang_docs"],
                    missing="no document with a gold language",
                ),
                s["lang_docs"],
            )
        )
        f1s = []
        for lang in self.languages:
            tp, fp, fn = (s.get(f"lang_{x}:{lang}", 0.0) for x in ("tp", "fp", "fn"))
            if tp + fp + fn:
                f1s.append(2 * tp / (2 * tp + fp + fn))
        out.append(
            _rows(
                Metric("language_macro_f1", float(np.mean(f1s)))
                if f1s and s["lang_docs"]
                else Metric("language_macro_f1", None, missing="no document with a gold language"),
                s["lang_docs"],
            )
        )
        out += _prf(
            "duplicate", "", s["dup_tp"], s["dup_gold"], s["dup_pred"], s["dup_docs"], "near-duplicate pair"
        )
        out += _prf("pii", "", s["pii_strict"], s["pii_gold"], s["pii_pred"], s["pii_docs"], "PII span")
        out += _prf(
            "pii", "_overlap", s["pii_overlap"], s["pii_gold"], s["pii_pred"], s["pii_docs"], "PII span"
        )
        return {m.name: m for m in out}


def _arr(xs: Iterable[int]) -> np.ndarray:
    return np.asarray(list(xs), dtype=np.int64)


def _matches(gold: list[tuple[int, int, int]], pred: list[tuple[int, int, int]], overlap: bool) -> np.ndarray:
    """Indices of the gold spans ``(group, start, end)`` matched one-to-one by ``pred``."""
    if not gold or not pred:
        return np.zeros(0, dtype=np.int64)
    g = list(zip(*gold, strict=True))
    p = list(zip(*pred, strict=True))
    gi, _pi = match_spans(
        _arr(g[0]), _arr(g[1]), _arr(g[2]), _arr(p[0]), _arr(p[1]), _arr(p[2]), overlap=overlap
    )
    return np.asarray(gi, dtype=np.int64)


_NOTHING = (
    "nothing to score: no boilerplate gold with removed spans, text, gold language, "
    "labelled duplicates with detector output or PII gold with predictions"
)
"""Why a record with a cleaning section but no scorable part is unscored."""


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _prf_dict(tp: int, gold: int, pred: int) -> dict[str, float | None]:
    """Precision, recall (``None`` on an empty denominator) and ``F1 = 2·tp / (gold + pred)``
    (sklearn's F1: 0 when one side is empty and the other is not)."""
    p = tp / pred if pred else None
    r = tp / gold if gold else None
    f = 2 * tp / (gold + pred) if gold + pred else None
    return {"precision": p, "recall": r, "f1": f}


def _tables(
    ev: Evaluation,
    any_rows: bool,
    languages: list[str],
    types: list[str],
    pii: tuple[list[Any], list[Any], list[Any], list[Any]],
    minhash_threshold: float | None,
) -> Evaluation:
    """``ev`` with the per-label tables of ``meta`` (shown, not summed): per language from the
    sums, per PII type and the PII failures from the spans ``pii`` (gold and predicted groups,
    then the gold and predicted ``(record, type, start, end)``)."""
    pii_g, pii_p, pii_g_info, pii_p_info = pii

    # per-label tables (shown, not summed)
    tot = ev.totals() if any_rows else {}
    per_lang = {}
    for lang in languages:
        tp, fp, fn = (int(tot.get(f"lang_{x}:{lang}", 0)) for x in ("tp", "fp", "fn"))
        per_lang[lang] = {**_prf_dict(tp, tp + fn, tp + fp), "support": tp + fn}
    ev.meta["per_language"] = per_lang
    strict = set(map(int, _matches(pii_g, pii_p, False)))
    over = set(map(int, _matches(pii_g, pii_p, True)))
    strict_p = set(map(int, _matches(pii_p, pii_g, False)))
    per_type = {}
    for t in types:
        gi = [k for k, x in enumerate(pii_g_info) if x[1] == t]
        n_pred = sum(1 for x in pii_p_info if x[1] == t)
        per_type[t] = {
            "gold": len(gi),
            "pred": n_pred,
            "strict": _prf_dict(sum(k in strict for k in gi), len(gi), n_pred),
            "overlap": _prf_dict(sum(k in over for k in gi), len(gi), n_pred),
        }
    ev.meta["per_pii_type"] = per_type
    missed = [
        {"kind": "missed", "record_id": r, "type": t, "start": a, "end": b}
        for k, (r, t, a, b) in enumerate(pii_g_info)
        if k not in strict
    ]
    spurious = [
        {"kind": "spurious", "record_id": r, "type": t, "start": a, "end": b}
        for k, (r, t, a, b) in enumerate(pii_p_info)
        if k not in strict_p
    ]
    ev.meta["pii_failures"] = (missed + spurious)[:200]
    ev.meta["n_pii_failures"] = len(missed) + len(spurious)
    if minhash_threshold is not None:
        ev.meta["minhash_threshold"] = float(minhash_threshold)
    return ev


_COLUMN_FIELDS = frozenset({"doc_id", "text", "language"})
"""The section fields the column path reads (any other part: the record loop)."""
_PAIR_FIELDS = frozenset({"gold", "pred"})
_NONE = type(None)


def _take(values: list[Any], at: np.ndarray) -> list[Any]:
    """``[values[k] for k in at]`` (``values`` itself when ``at`` is every position in order)."""
    if at.size == len(values) and (at.size == 0 or int(at[-1]) == at.size - 1):
        return values
    return list(map(values.__getitem__, at.tolist()))


def _mask(values: list[Any], absent: Any) -> np.ndarray:
    return np.fromiter(map(is_not, values, repeat(absent)), dtype=bool, count=len(values))


def _score_columns(records: list[Record]) -> Evaluation | None:
    """:func:`score_cleaning` of sections holding only ``doc_id``, ``text`` and ``language``,
    read from the records' columns (:class:`~kg_rageval.records.fields.RecordColumns`):
    language counts as comparisons of language codes, no row dict a record. The same
    evaluation, or ``None`` when a section has another part or a column is not in its
    well-formed shape (the record loop then scores it, or raises the first problem as it
    always did)."""
    got = section_columns(records, "cleaning")
    if got is None:
        return None
    cols, rid, secs, has = got
    at = np.flatnonzero(has)
    present = list(compress(secs, has))
    if not present or not all(map(_COLUMN_FIELDS.issuperset, present)):
        return None
    sec_ids = _take(rid, at)
    doc = list(map(_GET, present, repeat("doc_id"), repeat(_EMPTY)))
    if not _mask(doc, _EMPTY).all():  # no doc_id: the record's id
        doc = [i if d is _EMPTY else d for d, i in zip(doc, sec_ids)]
    if not set(map(type, doc)) <= {str} or "" in doc or len(set(doc)) != len(doc):
        return None
    text = list(map(_GET, present, repeat("text")))
    lang = list(map(_GET, present, repeat("language")))
    if not set(map(type, text)) <= {str, _NONE} or not set(map(type, lang)) <= {dict, _NONE}:
        return None
    if _NONE in set(map(type, lang)):
        lang = [_EMPTY if x is None else x for x in lang]
    if not all(map(_PAIR_FIELDS.issuperset, lang)):
        return None
    gold = list(map(_GET, lang, repeat("gold")))
    pred = list(map(_GET, lang, repeat("pred")))
    if not set(map(type, gold)) | set(map(type, pred)) <= {str, _NONE}:
        return None
    code = {v: v.strip().lower() for v in set(gold) | set(pred) if v is not None}
    if not all(code.values()):
        return None
    code[None] = None  # type: ignore[index]
    has_text, has_lang = _mask(text, None), _mask(gold, None)
    scored = has_text | has_lang
    rows = np.flatnonzero(scored)
    if not rows.size:
        return None
    n = rows.size
    languages = sorted(
        {code[x] for x in set(compress(gold, has_lang)) | set(compress(pred, has_lang))} - {None}
    )
    family = CleaningFamily(languages)
    stats: dict[str, np.ndarray] = {"n": np.ones(n)}
    tpos = np.flatnonzero(has_text[rows])
    if tpos.size:
        health = [unicode_health(t) for t in compress(text, scored & has_text)]
        for stat, vals in (
            ("text_docs", [1] * len(health)),
            ("nfc_eq_nfkc", [int(h.nfc_equals_nfkc) for h in health]),
            ("chars", [h.chars for h in health]),
            ("invisible", [h.invisible for h in health]),
            ("invisible_docs", [int(h.invisible > 0) for h in health]),
            ("tokens", [h.tokens for h in health]),
            ("mixed_tokens", [h.mixed_script_tokens for h in health]),
            ("mixed_docs", [int(h.mixed_script_tokens > 0) for h in health]),
        ):
            col = stats[stat] = np.zeros(n)
            col[tpos] = vals
    lpos = np.flatnonzero(has_lang[rows])
    if lpos.size:
        pick = scored & has_lang
        labels = [None, *languages]
        g = _codes_of(compress(gold, pick), code, labels)
        p = _codes_of(compress(pred, pick), code, labels)
        stats["lang_docs"] = np.zeros(n)
        stats["lang_docs"][lpos] = 1.0
        stats["lang_correct"] = np.zeros(n)
        stats["lang_correct"][lpos] = g == p
        for c, x in enumerate(languages, start=1):
            for stat, hit in (
                ("tp", (g == c) & (p == c)),
                ("fn", (g == c) & (p != c)),
                ("fp", (p == c) & (g != c)),
            ):
                col = stats[f"lang_{stat}:{x}"] = np.zeros(n)
                col[lpos] = hit
    slices = list(map(_GET, _take(records, at[rows]), repeat("slices")))
    names = sorted(set().union(*(x for x in slices if isinstance(x, dict))))
    kc = cols.key_columns(at[rows])
    keys = {k: kc[k] for k in sorted(["gold_node", *(f"slice:{x}" for x in names)])}
    nothing = at[~scored].tolist()
    unscored = [
        unscored_entry(rid[k], "no cleaning section", Reason.NO_SECTION)
        for k in np.flatnonzero(~has).tolist()
    ]
    unscored += [unscored_entry(rid[k], _NOTHING, Reason.NO_GOLD) for k in nothing]
    zeros = np.zeros(n)
    ev = columns_evaluation(
        family,
        _take(sec_ids, rows),
        [stats.get(x, zeros) for x in family.stats],
        keys=keys,
        unscored=unscored,
    )
    return _tables(ev, True, languages, [], ([], [], [], []), None)


def _codes_of(values: Iterable[Any], code: dict[Any, Any], labels: list[Any]) -> np.ndarray:
    """The position in ``labels`` of each value's language code (``None``: 0)."""
    pos = {v: labels.index(c) for v, c in code.items()}
    return np.fromiter(map(pos.__getitem__, values), dtype=np.int64)


def score_cleaning(
    ontology: Any, records: Iterable[Record], *, minhash_threshold: float | None = None
) -> Evaluation:
    """One row per record with a scorable ``cleaning`` section (module docstring).
    ``ontology`` is not read (the per-branch roll-up takes it). ``minhash_threshold``: judge
    the reference MinHash/LSH detector on the texts instead of the records' ``duplicates.pred``."""
    if minhash_threshold is None:
        records = list(records)
        ev = _score_columns(records)
        if ev is not None:
            return ev
    recs: list[tuple[Record, CleaningSection]] = []
    unscored = []
    seen: dict[str, Any] = {}
    for rec in records:
        sec = cleaning_section(rec)
        if sec is None:
            unscored.append(unscored_entry(rec["id"], "no cleaning section", Reason.NO_SECTION))
            continue
        if sec.doc_id in seen:
            raise InputError(
                f"cleaning: record {rec['id']!r}, field cleaning.doc_id: document {sec.doc_id!r} "
                f"already given by record {seen[sec.doc_id]!r}"
            )
        seen[sec.doc_id] = rec["id"]
        recs.append((rec, sec))

    # near-duplicate pairs, judged over the whole call
    if minhash_threshold is not None:
        texts = {sec.doc_id: sec.text for _, sec in recs if sec.text is not None}
        pred_pairs = minhash_pairs(texts, float(minhash_threshold))
        has_output = set(texts)
    else:
        pred_pairs = {
            _pair(sec.doc_id, o) for _, sec in recs for o in (sec.duplicates_pred or ()) if o != sec.doc_id
        }
        has_output = {sec.doc_id for _, sec in recs if sec.duplicates_pred is not None}
    judged = {sec.doc_id for _, sec in recs if sec.duplicates_gold is not None and sec.doc_id in has_output}
    gold_pairs = {
        _pair(sec.doc_id, o) for _, sec in recs for o in (sec.duplicates_gold or ()) if o != sec.doc_id
    }
    dup: dict[str, dict[str, int]] = {d: {"dup_gold": 0, "dup_pred": 0, "dup_tp": 0} for d in judged}
    for pair in gold_pairs | pred_pairs:
        owners = [d for d in pair if d in judged]
        if not owners:
            continue
        st = dup[min(owners)]
        is_gold, is_pred = pair in gold_pairs, pair in pred_pairs
        st["dup_gold"] += is_gold
        st["dup_pred"] += is_pred
        st["dup_tp"] += is_gold and is_pred

    languages = sorted(
        {
            x
            for _, sec in recs
            if sec.language_gold is not None
            for x in (sec.language_gold, sec.language_pred)
            if x
        }
    )
    family = CleaningFamily(languages)
    rows: list[dict[str, Any]] = []
    bp_g: list[tuple[int, int, int]] = []
    bp_p: list[tuple[int, int, int]] = []
    pii_g: list[tuple[int, int, int]] = []
    pii_p: list[tuple[int, int, int]] = []
    pii_g_info: list[tuple[str, str, int, int]] = []
    pii_p_info: list[tuple[str, str, int, int]] = []
    bp_row: list[int] = []
    pii_row: list[int] = []
    types = sorted(
        {s.type for _, sec in recs for side in (sec.pii_gold, sec.pii_pred) if side is not None for s in side}
    )
    tcode = {t: i for i, t in enumerate(types)}
    for rec, sec in recs:
        row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec), "n": 1}
        scored = False
        i = len(rows)
        if sec.boilerplate_gold is not None and sec.boilerplate_removed is not None:
            row.update(bp_docs=1, bp_gold=len(sec.boilerplate_gold), bp_removed=len(sec.boilerplate_removed))
            bp_g += [(i, a, b) for a, b in sec.boilerplate_gold]
            bp_row += [i] * len(sec.boilerplate_gold)
            bp_p += [(i, a, b) for a, b in sec.boilerplate_removed]
            scored = True
        if sec.text is not None:
            h = unicode_health(sec.text)
            row.update(
                text_docs=1,
                nfc_eq_nfkc=int(h.nfc_equals_nfkc),
                chars=h.chars,
                invisible=h.invisible,
                invisible_docs=int(h.invisible > 0),
                tokens=h.tokens,
                mixed_tokens=h.mixed_script_tokens,
                mixed_docs=int(h.mixed_script_tokens > 0),
            )
            scored = True
        if sec.language_gold is not None:
            g, p = sec.language_gold, sec.language_pred
            row.update(lang_docs=1, lang_correct=int(g == p))
            if g == p:
                row[f"lang_tp:{g}"] = 1
            else:
                row[f"lang_fn:{g}"] = 1
                if p is not None:
                    row[f"lang_fp:{p}"] = 1
            scored = True
        if sec.doc_id in dup:
            row.update(dup_docs=1, **dup[sec.doc_id])
            scored = True
        if sec.pii_gold is not None and sec.pii_pred is not None:
            row.update(pii_docs=1, pii_gold=len(sec.pii_gold), pii_pred=len(sec.pii_pred))
            n_t = len(types)
            pii_g += [(i * n_t + tcode[s.type], s.start, s.end) for s in sec.pii_gold]
            pii_g_info += [(rec["id"], s.type, s.start, s.end) for s in sec.pii_gold]
            pii_p += [(i * n_t + tcode[s.type], s.start, s.end) for s in sec.pii_pred]
            pii_p_info += [(rec["id"], s.type, s.start, s.end) for s in sec.pii_pred]
            pii_row += [i] * len(sec.pii_gold)
            scored = True
        if not scored:
            unscored.append(unscored_entry(rec["id"], _NOTHING, Reason.NO_GOLD))
            continue
        rows.append(row)

    for key, gold, pred, owner in (("bp", bp_g, bp_p, bp_row), ("pii", pii_g, pii_p, pii_row)):
        for mode, overlap in (("strict", False), ("overlap", True)):
            for gi in _matches(gold, pred, overlap):
                r = rows[owner[int(gi)]]
                r[f"{key}_{mode}"] = r.get(f"{key}_{mode}", 0) + 1

    keys = sorted({x for r in rows for x in r if x == "gold_node" or x.startswith("slice:")})
    ev = build_evaluation(family, rows, keys=keys, unscored=unscored)
    return _tables(
        ev, bool(rows), languages, types, (pii_g, pii_p, pii_g_info, pii_p_info), minhash_threshold
    )


__all__ = ["METRICS", "CleaningFamily", "score_cleaning"]
