"""The consistency family (issue #31, "Self-consistency"): agreement over n answers sampled at a
temperature above 0, as agreement of the **concept sets** the answers name, through the
ontology — two answers that name a concept and its child agree in part, where an exact-repeat
check would call them different.

Record section (``docs/consistency.md``)::

    "consistency": {"temperature": 0.7,
                    "samples": [{"text": "...", "concepts": ["DOID:1612"]},
                                {"text": "...", "concepts": ["DOID:3459"]}, ...]}

Conventions (each record is scored alone, then the records are averaged, so slices and
branches pool exactly):

* **Pairs.** Every unordered pair of the record's n ≥ 2 samples counts once: n(n−1)/2 pairs.
* ``concept_agreement`` — mean over pairs of the Jaccard index |A ∩ B| / |A ∪ B| of the two
  concept sets (ids resolved by the one :class:`~kg_rageval.ontology.IdResolver`, so a CURIE,
  an IRI and an alternative id of a concept are the same concept). Two empty sets (both answers
  name no concept) agree: J(∅, ∅) = 1; how often a sample is empty is reported beside it
  (``empty_sample_rate``).
* ``hier_agreement`` — the same Jaccard over the ancestor-or-self closures of the sets, the
  roots (depth 0) left out (every concept shares them: they would give free credit), as in the
  hierarchical P/R/F1 of the hierarchy family. A concept not in the ontology (a fault of the
  system under test: counted in ``not_in_ontology_rate``, never an abort) is an opaque element
  with no ancestor.
* ``text_agreement`` — mean over pairs of the exact match of the texts after case folding and
  whitespace collapsing, over records whose samples all carry a text (the exact-repeat view).
* ``modal_share`` — the share of the samples whose concept set is the most frequent one (the
  majority vote of self-consistency decoding); ``unanimous_rate`` — records whose samples
  all name the same concept set.

The family needs the ontology (a :class:`~kg_rageval.base.errors.ConfigError` without one):
concepts are compared through it.

Unscored records (counted, with their code): no section — ``no_section``; fewer than
``min_samples`` samples — ``missing_prediction`` (the sampling run is incomplete); a
``temperature`` of 0 or below — ``not_applicable`` (greedy samples repeat by construction: their
agreement says nothing about consistency).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import chain, combinations, compress, repeat
from operator import is_not
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.ontology import IdOptions, IdResolver
from kg_rageval.records import Record, located, record_error
from kg_rageval.records.fields import _GET, all_slice_keys, section, section_columns
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation, columns_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, ratio

_SAMPLE = frozenset({"text", "concepts"})
_SECTION = frozenset({"samples", "temperature"})


class ConsistencyFamily(Family):
    name = "consistency"
    version = "1"
    stats = (
        "n",
        "concept_sum",
        "hier_sum",
        "n_hier",
        "text_sum",
        "n_text",
        "modal_sum",
        "unanimous",
        "samples",
        "samples_empty",
        "ids",
        "ids_unknown",
        "ids_inactive",
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        why = "no record with at least two samples"
        return {
            "concept_agreement.mean": mean_of(
                "concept_agreement.mean", s["concept_sum"], s["n"], missing=why
            ),
            "hier_agreement.mean": mean_of(
                "hier_agreement.mean",
                s["hier_sum"],
                s["n_hier"],
                missing="no record with at least two samples",
            ),
            "text_agreement.mean": mean_of(
                "text_agreement.mean",
                s["text_sum"],
                s["n_text"],
                missing="no record whose samples all have a text",
            ),
            "modal_share.mean": mean_of("modal_share.mean", s["modal_sum"], s["n"], missing=why),
            "unanimous_rate": ratio("unanimous_rate", s["unanimous"], s["n"], missing=why),
            "empty_sample_rate": ratio("empty_sample_rate", s["samples_empty"], s["samples"], missing=why),
            "not_in_ontology_rate": ratio(
                "not_in_ontology_rate", s["ids_unknown"], s["ids"], missing="no concept named"
            ),
            "inactive_rate": ratio("inactive_rate", s["ids_inactive"], s["ids"], missing="no concept named"),
        }


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """|a ∩ b| / |a ∪ b|, and 1.0 for two empty sets (module docstring)."""
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


def pairwise_mean(items: list[Any], agree: Any) -> float:
    """Mean of ``agree(x, y)`` over the unordered pairs of ``items`` (len ≥ 2)."""
    vals = [agree(x, y) for x, y in combinations(items, 2)]
    return math.fsum(vals) / len(vals)


def _norm_text(t: str) -> str:
    return " ".join(t.casefold().split())


def samples_of(rec: Record) -> tuple[list[str | None], list[list[str]], float | None]:
    """The checked texts, concept lists and temperature of a record's section."""
    sec = section(rec, "consistency") or {}
    bad = set(sec) - {"samples", "temperature"}
    if bad:
        raise record_error(
            rec, f"consistency.{sorted(bad)[0]}", "unknown field; expected samples or temperature"
        )
    temp = sec.get("temperature")
    if temp is not None and (
        isinstance(temp, bool) or not isinstance(temp, (int, float)) or not math.isfinite(temp)
    ):
        raise record_error(rec, "consistency.temperature", f"expected a number, found {temp!r}")
    samples = sec.get("samples")
    if not isinstance(samples, list):
        raise record_error(rec, "consistency.samples", f"expected a list of samples, found {samples!r}")
    texts: list[str | None] = []
    concepts: list[list[str]] = []
    for i, s in enumerate(samples):
        f = f"consistency.samples.{i}"
        if not isinstance(s, dict):
            raise record_error(rec, f, f"expected an object, found {type(s).__name__}")
        unk = set(s) - _SAMPLE
        if unk:
            raise record_error(rec, f"{f}.{sorted(unk)[0]}", "unknown field; expected text or concepts")
        t = s.get("text")
        if t is not None and not isinstance(t, str):
            raise record_error(rec, f"{f}.text", f"expected a string, found {type(t).__name__}")
        c = s.get("concepts", [])
        if not isinstance(c, list) or not all(isinstance(x, str) for x in c):
            raise record_error(rec, f"{f}.concepts", f"expected a list of concept ids, found {c!r}")
        texts.append(t)
        concepts.append(c)
    return texts, concepts, None if temp is None else float(temp)


class _Closure:
    """Resolved concept sets and their ancestor-or-self closures (roots left out)."""

    def __init__(self, ontology: Any, options: IdOptions):
        self.o = ontology
        self.resolver = IdResolver(ontology, options)
        self._up: dict[int, tuple[int, ...]] = {}  # node index -> its closure, roots left out

    def closure(self, i: int) -> tuple[int, ...]:
        """Ancestor-or-self indices of node ``i`` at depth > 0 (computed once per node)."""
        up = self._up.get(i)
        if up is None:
            o = self.o
            anc = o.anc_idx[o.anc_ptr[i] : o.anc_ptr[i + 1]].tolist()
            depth = o.depth_min
            up = self._up[i] = tuple(a for a in (*anc, i) if int(depth[a]) > 0)
        return up

    def sets(
        self, rec: Record, concepts: list[list[str]]
    ) -> tuple[list[frozenset[Any]], list[frozenset[Any]], dict[str, int]]:
        flat = [c for cs in concepts for c in cs]
        counts = {"ids": len(flat), "ids_unknown": 0, "ids_inactive": 0}
        places = [(i, j) for i, cs in enumerate(concepts) for j in range(len(cs))]
        res = self.resolver.resolve(
            flat,
            "pred",
            lambda k: located(rec, f"consistency.samples.{places[k][0]}.concepts[{places[k][1]}]"),
        )
        counts["ids_unknown"] = int(res.unknown.sum())
        counts["ids_inactive"] = int(res.inactive.sum())
        closure = self.closure
        idx = res.idx.tolist()
        exact, hier = [], []
        k = 0
        for cs in concepts:
            ex: set[Any] = set()
            hi: set[Any] = set()
            for c in cs:
                i = idx[k]
                k += 1
                if i < 0:
                    ex.add(("unknown", c))
                    hi.add(("unknown", c))
                    continue
                ex.add(i)
                hi.update(closure(i))
            exact.append(frozenset(ex))
            hier.append(frozenset(hi))
        return exact, hier, counts


_NONE = type(None)
_NO_CONCEPTS: list[str] = []
"""Stands for an absent ``concepts`` field in the column read (never changed)."""


def _ragged(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concat(arange(s, s + n) for s, n in zip(starts, lengths))``."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offs = np.cumsum(lengths) - lengths
    return np.repeat(starts - offs, lengths) + np.arange(total, dtype=np.int64)


def _sets(sample: np.ndarray, elem: np.ndarray, n_samples: int, m: int) -> tuple[np.ndarray, ...]:
    """Each sample's set of the elements ``elem`` (named by ``sample``) as CSR: ``(start,
    size, elements)``, the elements sorted and distinct within a sample."""
    key = np.sort(sample * m + elem)
    key = key[np.concatenate([[True], key[1:] != key[:-1]])] if key.size else key
    size = np.bincount(key // m, minlength=n_samples)
    return np.cumsum(size) - size, size, key % m


def _inter(pa: np.ndarray, pb: np.ndarray, start: np.ndarray, size: np.ndarray, elem: np.ndarray, m: int):
    """``|A ∩ B|`` of the sample pairs ``(pa, pb)`` of the sets in CSR (:func:`_sets`): each
    element of ``A`` looked up, as the key ``b·m + e``, in the sorted keys of every sample's
    set."""
    la, lb = size[pa], size[pb]
    sample = np.repeat(np.arange(size.size, dtype=np.int64), size)
    keys = sample * m + elem  # sorted: by sample, then element
    a_pos = _ragged(start[pa], la)
    query = np.repeat(pb, la) * m + elem[a_pos]
    hit = (
        keys[np.minimum(np.searchsorted(keys, query), max(keys.size - 1, 0))] == query
        if keys.size
        else query < 0
    )
    pair = np.repeat(np.arange(pa.size, dtype=np.int64), la)
    return np.bincount(pair[hit], minlength=pa.size), la, lb


def _pair_jaccard(pa, pb, start, size, elem, m) -> tuple[np.ndarray, np.ndarray]:
    """:func:`jaccard` of each sample pair (as ``len(a & b) / len(a | b)``, 1.0 for two empty
    sets) and whether the two sets are equal."""
    inter, la, lb = _inter(pa, pb, start, size, elem, m)
    union = la + lb - inter
    jac = np.ones(pa.size)
    nz = union > 0
    jac[nz] = inter[nz] / union[nz]
    return jac, (inter == la) & (inter == lb)


def _group_fsum_mean(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """``math.fsum(group) / len(group)`` of each group ``values[ptr[r]:ptr[r + 1]]`` (every
    group non-empty): :func:`pairwise_mean`'s figure, exactly."""
    vals = values.tolist()
    lo, hi = ptr[:-1].tolist(), ptr[1:].tolist()
    sums = np.fromiter(map(math.fsum, map(vals.__getitem__, map(slice, lo, hi))), dtype=float, count=len(lo))
    return sums / np.diff(ptr)


def _score_columns(
    ontology: Any, records: list[Record], min_samples: int, closure: _Closure
) -> Evaluation | None:
    """:func:`score_consistency` read from the records' columns
    (:class:`~kg_rageval.records.fields.RecordColumns`): the samples' concept sets as sorted
    element arrays, every pair's intersection from one sort, no set or row dict a sample. The
    same evaluation, or ``None`` when a column is not in its well-formed shape or an id error
    would be raised (the record loop then raises the first problem as it always did)."""
    got = section_columns(records, "consistency")
    if got is None:
        return None
    cols, rid, secs, has = got
    present = list(compress(secs, has))
    if not present or not all(map(_SECTION.issuperset, present)):
        return None
    temps = list(map(_GET, present, repeat("temperature")))
    samples = list(map(_GET, present, repeat("samples")))
    if not set(map(type, temps)) <= {int, float, _NONE} or not set(map(type, samples)) <= {list}:
        return None
    try:
        temp = np.asarray([np.nan if t is None else t for t in temps], dtype=float)
    except OverflowError:
        return None
    given = np.fromiter(map(is_not, temps, repeat(None)), dtype=bool, count=len(temps))
    if not np.isfinite(temp[given]).all():
        return None
    flat = list(chain.from_iterable(samples))
    if not set(map(type, flat)) <= {dict} or not all(map(_SAMPLE.issuperset, flat)):
        return None
    texts = list(map(_GET, flat, repeat("text")))
    concepts = list(map(_GET, flat, repeat("concepts"), repeat(_NO_CONCEPTS)))
    if not set(map(type, texts)) <= {str, _NONE} or not set(map(type, concepts)) <= {list}:
        return None
    ids_flat = list(chain.from_iterable(concepts))
    if not set(map(type, ids_flat)) <= {str}:
        return None
    nsamp = np.fromiter(map(len, samples), dtype=np.int64, count=len(samples))
    ncon = np.fromiter(map(len, concepts), dtype=np.int64, count=len(concepts))
    greedy = given & (temp <= 0)
    few = ~greedy & (nsamp < min_samples)
    ok = ~greedy & ~few
    # the scored sections' samples and concepts (positions in ``flat`` / ``ids_flat``)
    samp_start = np.cumsum(nsamp) - nsamp
    sc = np.flatnonzero(ok)
    ns = nsamp[sc]
    s_idx = _ragged(samp_start[sc], ns)
    con_start = np.cumsum(ncon) - ncon
    nc = ncon[s_idx]
    c_idx = _ragged(con_start[s_idx], nc)
    names = list(map(ids_flat.__getitem__, c_idx.tolist()))
    try:
        res = closure.resolver.resolve(names, "pred", lambda k: "")
    except InputError:
        return None  # the record loop raises it, naming the first record
    n_rows, n_s = sc.size, s_idx.size
    if not n_rows:
        return None
    o = ontology
    n_nodes = len(o.ids)
    idx = res.idx
    unknown = idx < 0
    opaque: dict[str, int] = {}
    ucode = np.asarray([opaque.setdefault(c, len(opaque)) for c in compress(names, unknown)], dtype=np.int64)
    m = n_nodes + len(opaque) + 1
    exact = idx.copy()
    exact[unknown] = n_nodes + ucode
    c_sample = np.repeat(np.arange(n_s, dtype=np.int64), nc)
    e_start, e_size, e_elem = _sets(c_sample, exact, n_s, m)
    known = np.flatnonzero(~unknown)
    lens, anc = o.ancestor_rows(idx[known])
    anc = np.asarray(anc, dtype=np.int64)
    anc_sample = np.repeat(c_sample[known], lens)
    deep = np.asarray(o.depth_min)[anc] > 0  # the roots left out
    h_start, h_size, h_elem = _sets(
        np.concatenate([anc_sample[deep], c_sample[unknown]]),
        np.concatenate([anc[deep], n_nodes + ucode]),
        n_s,
        m,
    )
    # every unordered pair of each scored record's samples, grouped by record
    r_start = np.cumsum(ns) - ns
    pa_parts, pb_parts, pr_parts = [], [], []
    for n in np.flatnonzero(np.bincount(ns)).tolist():
        rows = np.flatnonzero(ns == n)
        a, b = np.triu_indices(n, 1)
        base = r_start[rows][:, None]
        pa_parts.append((base + a).ravel())
        pb_parts.append((base + b).ravel())
        pr_parts.append(np.repeat(rows, a.size))
    pr = np.concatenate(pr_parts)
    order = np.argsort(pr, kind="stable")
    pa, pb, pr = np.concatenate(pa_parts)[order], np.concatenate(pb_parts)[order], pr[order]
    npairs = ns * (ns - 1) // 2
    ptr = np.concatenate([[0], np.cumsum(npairs)])
    jac_e, same_e = _pair_jaccard(pa, pb, e_start, e_size, e_elem, m)
    jac_h, _ = _pair_jaccard(pa, pb, h_start, h_size, h_elem, m)
    mult = 1 + np.bincount(pa[same_e], minlength=n_s) + np.bincount(pb[same_e], minlength=n_s)
    modal = np.maximum.reduceat(mult, r_start) if n_rows else np.zeros(0, dtype=np.int64)
    # text agreement over the records whose samples all carry a text
    s_texts = list(map(texts.__getitem__, s_idx.tolist()))
    no_text = np.fromiter(map(is_not, s_texts, repeat(None)), dtype=bool, count=n_s) == 0
    all_text = np.bincount(np.repeat(np.arange(n_rows), ns), weights=no_text, minlength=n_rows) == 0
    # _norm_text of each text (casefold, split, join mapped at C speed), coded by first sight
    norm = list(map(" ".join, map(str.split, map(str.casefold, compress(s_texts, ~no_text)))))
    code = {t: i for i, t in enumerate(dict.fromkeys(norm))}
    tcode = np.full(n_s, -1, dtype=np.int64)
    tcode[~no_text] = np.fromiter(map(code.__getitem__, norm), dtype=np.int64, count=len(norm))
    same_t = (tcode[pa] == tcode[pb]) & all_text[pr]
    text_sum = np.where(all_text, np.bincount(pr[same_t], minlength=n_rows) / np.maximum(npairs, 1), 0.0)
    con_row = np.repeat(np.repeat(np.arange(n_rows), ns), nc)
    per_row = lambda w: np.bincount(con_row, weights=w, minlength=n_rows)  # noqa: E731
    empty = np.bincount(np.repeat(np.arange(n_rows), ns), weights=e_size == 0, minlength=n_rows)
    stat = {
        "n": np.ones(n_rows),
        "concept_sum": _group_fsum_mean(jac_e, ptr),
        "hier_sum": _group_fsum_mean(jac_h, ptr),
        "n_hier": np.ones(n_rows),
        "text_sum": text_sum,
        "n_text": all_text.astype(float),
        "modal_sum": modal / ns,
        "unanimous": (modal == ns).astype(float),
        "samples": ns.astype(float),
        "samples_empty": empty,
        "ids": per_row(None),
        "ids_unknown": per_row(unknown.astype(float)),
        "ids_inactive": per_row(np.asarray(res.inactive, dtype=float)),
    }
    at = np.flatnonzero(has)
    unscored = []
    why = np.full(len(records), -1, dtype=np.int8)
    why[~has] = 0
    why[at[greedy]] = 1
    why[at[few]] = 2
    sec_of = np.full(len(records), -1, dtype=np.int64)
    sec_of[at] = np.arange(at.size)
    for k in np.flatnonzero(why >= 0).tolist():
        w = int(why[k])
        if w == 0:
            unscored.append(unscored_entry(rid[k], "no consistency section", Reason.NO_SECTION))
        elif w == 1:
            t = float(temp[sec_of[k]])
            unscored.append(
                unscored_entry(rid[k], f"temperature {t:g}: greedy samples repeat", Reason.NOT_APPLICABLE)
            )
        else:
            unscored.append(
                unscored_entry(
                    rid[k],
                    f"{int(nsamp[sec_of[k]])} samples (< min_samples {min_samples})",
                    Reason.MISSING_PREDICTION,
                )
            )
    rows_at = at[sc]
    kc = cols.key_columns(rows_at)
    none = np.full(n_rows, None, dtype=object)
    fam = ConsistencyFamily()
    return columns_evaluation(
        fam,
        [rid[k] for k in rows_at.tolist()],
        [stat[x] for x in fam.stats],
        keys={k: kc.get(k, none) for k in sorted(set(all_slice_keys(records)) | {"gold_node"})},
        details={"n_samples": ns.tolist()},
        unscored=unscored,
        meta={"min_samples": min_samples},
    )


def score_consistency(
    ontology: Any,
    records: Iterable[Record],
    *,
    min_samples: int = 2,
    **ids: Any,
) -> Evaluation:
    """One row per record with at least ``min_samples`` samples at a temperature above 0
    (module docstring for every convention)."""
    if min_samples < 2:
        raise InputError(
            f"consistency: min_samples must be at least 2 (agreement needs a pair), not {min_samples}"
        )
    if ontology is None:
        raise ConfigError("consistency: needs the ontology (concept sets are compared through it)")
    closure = _Closure(ontology, IdOptions.of(**ids))
    records = list(records)
    ev = _score_columns(ontology, records, min_samples, closure)
    if ev is not None:
        return ev
    rows, unscored = [], []
    for rec in records:
        if rec.get("consistency") is None:
            unscored.append(unscored_entry(rec["id"], "no consistency section", Reason.NO_SECTION))
            continue
        texts, concepts, temp = samples_of(rec)
        if temp is not None and temp <= 0:
            unscored.append(
                unscored_entry(
                    rec["id"], f"temperature {temp:g}: greedy samples repeat", Reason.NOT_APPLICABLE
                )
            )
            continue
        if len(concepts) < min_samples:
            unscored.append(
                unscored_entry(
                    rec["id"],
                    f"{len(concepts)} samples (< min_samples {min_samples})",
                    Reason.MISSING_PREDICTION,
                )
            )
            continue
        exact, hier, counts = closure.sets(rec, concepts)
        modal = Counter(exact).most_common(1)[0][1]
        row: dict[str, Any] = {
            "record_id": rec["id"],
            **row_keys(rec),
            "n": 1,
            "concept_sum": pairwise_mean(exact, jaccard),
            "modal_sum": modal / len(exact),
            "unanimous": int(modal == len(exact)),
            "samples": len(exact),
            "samples_empty": sum(1 for s in exact if not s),
            "n_samples": len(exact),
            **counts,
        }
        row["hier_sum"], row["n_hier"] = pairwise_mean(hier, jaccard), 1
        if all(t is not None for t in texts):
            norm = [_norm_text(t) for t in texts if t is not None]
            row["text_sum"], row["n_text"] = pairwise_mean(norm, lambda a, b: float(a == b)), 1
        rows.append(row)
    keys = sorted(
        set(all_slice_keys(records))
        | {k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")}
    )
    return build_evaluation(
        ConsistencyFamily(),
        rows,
        keys=keys,
        details=["n_samples"],
        unscored=unscored,
        meta={"min_samples": min_samples},
    )
