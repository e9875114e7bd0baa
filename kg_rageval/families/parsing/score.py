"""The parsing family: OCR / text-extraction quality of labelled pages, per document class.

Record section: ``parsing`` (:mod:`kg_rageval.records.parsing`; ``docs/records.md``). The
document class is a slice (``"slices": {"doc_class": "invoice"}``), so every metric exists
per class (``parsing.cer[slice:doc_class=invoice]``) and per ontology branch (``gold_node``).

Text normalisation: jiwer 4's defaults and nothing more (:mod:`.align`): CER on the stripped
text's characters, WER on words split at spaces after runs of whitespace are collapsed. No
case folding, punctuation or Unicode normalisation.

Metrics (kept as sums, so a class, slice or branch pools its records exactly):

* ``cer = Σ (S + D + I) / Σ (S + D + H)`` over character alignments (``S + D + H`` = reference
  characters), equal to ``jiwer.cer(refs, hyps)`` on the same pairs; ``wer`` likewise on words
  (``jiwer.wer``); ``cer_substitution_rate`` / ``_deletion_rate`` / ``_insertion_rate`` the
  three parts of ``cer`` (``Σ S / Σ N`` ...), so lost text (deletions) shows apart from
  misread text;
* ``length_ratio`` = mean over records of ``extracted chars / reference chars`` (the
  extraction-length sanity check of the seed). Caveat, in its formula too: a duplicated or
  wrong text of the right length still scores 1.0 — read it beside ``cer``, never alone;
* ``teds`` / ``teds_s`` (:mod:`.teds`): mean over tables of the tree-edit similarity of the
  extracted HTML table to the reference (with / without cell content), PubTabNet's TEDS; an
  unrecognised (``null``), empty or unparsable extracted table scores 0 in both, and a ``null``
  one is counted in ``table_missing_rate``; a reference table that is not a table is an
  ``InputError`` naming the record and ``parsing.tables[i].reference``. Needs the
  ``ingestion`` extra (apted, lxml);
* ``reading_order_tau`` / ``heading_order_tau`` (:mod:`.order`): **mean over documents** of
  Kendall's τ-b (ties of grouped blocks corrected; = ``scipy.stats.kendalltau``) of the
  labelled ranks against the extracted positions of the blocks in both — the one averaged
  order metric (τ is not a sum); a document where τ is undefined (under two common blocks, or
  all tied) is left out and not counted in the rows;
* ``reading_order_ned`` / ``heading_order_ned``: ``Σ Levenshtein(ref ids, ext ids) / Σ
  max(len ref, len ext)`` over documents (pooled sums); ``*_coverage``: ``Σ labelled blocks
  extracted / Σ labelled blocks`` (read τ beside it: τ over 2 of 50 blocks can be 1.0);
* ``title_exact_match`` / ``heading_exact_match``: ``Σ exact / Σ titles`` (headings) after
  NFKC + casefold + whitespace collapse; ``title_similarity`` / ``heading_similarity``: mean
  over titles (headings) of ``1 − d / max len`` on the normalised texts (= rapidfuzz's
  ``Levenshtein.normalized_similarity``); not found (``null``) scores 0 in both.

A record without a ``parsing`` section is unscored ``no_section``; an empty (or whitespace-only)
reference (and no table, order or heading label) is unscored ``no_gold`` — it has no denominator, so no CER is made up for it; a
missing ``extracted`` text (``null``) is a missing run (``missing_prediction``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.families.parsing.align import char_counts, char_tokens, word_counts
from kg_rageval.families.parsing.order import heading_scores, order_scores
from kg_rageval.families.parsing.teds import TableError, teds_scores
from kg_rageval.records import Record, record_error
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.parsing import OrderPair, ParsingSection, parsing_section
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, ratio

_NO_TEXT = "no record with a non-empty reference text and an extracted text"
_NO_TABLE = "no labelled table"
_ORDER_STATS = ("n", "n_tau", "tau_sum", "edits", "norm", "found", "labelled")
_ORDERS = (("ro", "reading_order"), ("ho", "heading_order"))


class ParsingFamily(Family):
    """Stats per record: character counts ``c_hits`` / ``c_sub`` / ``c_del`` / ``c_ins``, word
    counts ``w_*``, ``length_ratio_sum`` and ``n_text`` (records with a scored text pair),
    ``teds_sum`` / ``teds_s_sum`` / ``n_tables`` / ``n_tables_missing`` (tables; an unrecognised
    table scores 0)."""

    name = "parsing"
    version = "1"
    stats = (
        "n",
        "n_text",
        "c_hits",
        "c_sub",
        "c_del",
        "c_ins",
        "w_hits",
        "w_sub",
        "w_del",
        "w_ins",
        "ref_chars",
        "ext_chars",
        "length_ratio_sum",
        "n_tables",
        "n_tables_missing",
        "teds_sum",
        "teds_s_sum",
        *(f"{o}_{k}" for o in ("ro", "ho") for k in _ORDER_STATS),
        "n_titles",
        "title_exact",
        "title_sim_sum",
        "n_headings",
        "heading_exact",
        "heading_sim_sum",
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        c_n = s["c_hits"] + s["c_sub"] + s["c_del"]
        w_n = s["w_hits"] + s["w_sub"] + s["w_del"]
        out = {
            "cer": ratio("cer", s["c_sub"] + s["c_del"] + s["c_ins"], c_n, missing=_NO_TEXT),
            "wer": ratio("wer", s["w_sub"] + s["w_del"] + s["w_ins"], w_n, missing=_NO_TEXT),
            "cer_substitution_rate": ratio("cer_substitution_rate", s["c_sub"], c_n, missing=_NO_TEXT),
            "cer_deletion_rate": ratio("cer_deletion_rate", s["c_del"], c_n, missing=_NO_TEXT),
            "cer_insertion_rate": ratio("cer_insertion_rate", s["c_ins"], c_n, missing=_NO_TEXT),
            "length_ratio": mean_of("length_ratio", s["length_ratio_sum"], s["n_text"], missing=_NO_TEXT),
            "teds": mean_of("teds", s["teds_sum"], s["n_tables"], missing=_NO_TABLE),
            "teds_s": mean_of("teds_s", s["teds_s_sum"], s["n_tables"], missing=_NO_TABLE),
            "table_missing_rate": ratio(
                "table_missing_rate", s["n_tables_missing"], s["n_tables"], missing=_NO_TABLE
            ),
        }
        basis = dict.fromkeys(out, s["n_text"])
        basis.update(teds=s["n_tables"], teds_s=s["n_tables"], table_missing_rate=s["n_tables"])
        for o, name in _ORDERS:
            why = f"no record with a labelled {name}"
            tau_why = f"no record with a labelled {name} of two or more extracted blocks ranked apart"
            out[f"{name}_tau"] = mean_of(f"{name}_tau", s[f"{o}_tau_sum"], s[f"{o}_n_tau"], missing=tau_why)
            out[f"{name}_ned"] = ratio(f"{name}_ned", s[f"{o}_edits"], s[f"{o}_norm"], missing=why)
            out[f"{name}_coverage"] = ratio(
                f"{name}_coverage", s[f"{o}_found"], s[f"{o}_labelled"], missing=why
            )
            basis.update(
                {f"{name}_tau": s[f"{o}_n_tau"], f"{name}_ned": s[f"{o}_n"], f"{name}_coverage": s[f"{o}_n"]}
            )
        for kind, n in (("title", "n_titles"), ("heading", "n_headings")):
            why = f"no labelled {kind}"
            out[f"{kind}_exact_match"] = ratio(f"{kind}_exact_match", s[f"{kind}_exact"], s[n], missing=why)
            out[f"{kind}_similarity"] = mean_of(f"{kind}_similarity", s[f"{kind}_sim_sum"], s[n], missing=why)
            basis.update({f"{kind}_exact_match": s[n], f"{kind}_similarity": s[n]})
        # a gate's minimum of rows counts the records (tables, titles, headings) a number rests
        # on, never the characters of its denominator nor the records of another kind
        return {k: dataclasses.replace(m, rows=int(basis[k])) for k, m in out.items()}


def _table_stats(rec: Record, tables: Iterable[Any]) -> dict[str, float]:
    out = {"n_tables": 0.0, "n_tables_missing": 0.0, "teds_sum": 0.0, "teds_s_sum": 0.0}
    for i, t in enumerate(tables):
        out["n_tables"] += 1
        if t.extracted is None:
            out["n_tables_missing"] += 1  # an unrecognised table: scores 0, counted as missing
        try:
            s = teds_scores(t.reference, t.extracted)
        except TableError as exc:
            raise record_error(rec, f"parsing.tables[{i}].{exc.side}", str(exc)) from None
        out["teds_sum"] += s.teds
        out["teds_s_sum"] += s.teds_s
    return out


def _order_stats(o: str, pair: OrderPair) -> dict[str, float]:
    sc = order_scores(pair.reference, pair.extracted)
    return {
        f"{o}_n": 1.0,
        f"{o}_n_tau": 0.0 if sc.tau is None else 1.0,
        f"{o}_tau_sum": 0.0 if sc.tau is None else sc.tau,
        f"{o}_edits": float(sc.edits),
        f"{o}_norm": float(sc.norm),
        f"{o}_found": float(sc.found),
        f"{o}_labelled": float(sc.labelled),
    }


def _layout_stats(sec: ParsingSection) -> dict[str, float]:
    out: dict[str, float] = {}
    for o, name in _ORDERS:
        pair = getattr(sec, name)
        if pair is not None:
            out.update(_order_stats(o, pair))
    for kind, n, pairs in (
        ("title", "n_titles", () if sec.title is None else (sec.title,)),
        ("heading", "n_headings", sec.headings),
    ):
        if pairs:
            scores = [heading_scores(p.reference, p.extracted) for p in pairs]
            out[n] = float(len(scores))
            out[f"{kind}_exact"] = float(sum(h.exact for h in scores))
            out[f"{kind}_sim_sum"] = math.fsum(h.similarity for h in scores)
    return out


def score_parsing(ontology: Any, records: Iterable[Record]) -> Evaluation:
    """One row per record with a ``parsing`` section holding a scorable text pair or tables
    (see the module docstring for the unscored codes). ``ontology`` is not needed (rows carry
    ``gold_node`` for per-branch roll-ups)."""
    rows: list[dict[str, Any]] = []
    unscored = []
    for rec in records:
        sec = parsing_section(rec)
        if sec is None:
            unscored.append(unscored_entry(rec["id"], "no parsing section", Reason.NO_SECTION))
            continue
        row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec), "n": 1}
        text_why: tuple[str, Reason] | None = None
        if sec.reference is None or not sec.reference.strip():
            text_why = ("empty reference text: no characters to score against", Reason.NO_GOLD)
        elif sec.extracted is None:
            text_why = ("no extracted text", Reason.MISSING_PREDICTION)
        else:
            c = char_counts(sec.reference, sec.extracted)
            w = word_counts(sec.reference, sec.extracted)
            n_ref = c.reference_length
            n_ext = len(char_tokens(sec.extracted))
            row.update(
                n_text=1,
                c_hits=c.hits,
                c_sub=c.substitutions,
                c_del=c.deletions,
                c_ins=c.insertions,
                w_hits=w.hits,
                w_sub=w.substitutions,
                w_del=w.deletions,
                w_ins=w.insertions,
                ref_chars=n_ref,
                ext_chars=n_ext,
                length_ratio_sum=n_ext / n_ref,
            )
        if sec.tables:
            row.update(_table_stats(rec, sec.tables))
        if sec.has_layout:
            row.update(_layout_stats(sec))
        if text_why is not None and not sec.tables and not sec.has_layout:
            unscored.append(unscored_entry(rec["id"], *text_why))
            continue
        rows.append(row)
    keys = sorted({k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")})
    return build_evaluation(ParsingFamily(), rows, keys=keys, unscored=unscored)


__all__ = ["ParsingFamily", "score_parsing"]
