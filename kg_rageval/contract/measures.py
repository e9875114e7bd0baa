"""Measure names: one parser for ir_measures syntax, trec_eval names and kg-rageval's own,
and the one alias table from those spellings to canonical metric names.

:func:`parse_measure` turns any accepted spelling into a :class:`MeasureSpec` (a frozen value
object); ``str(spec)`` is the canonical ir_measures spelling and :attr:`MeasureSpec.trec_name`
the trec_eval output name where trec_eval has the measure. Accepted spellings:

* **ir_measures**: ``Name(param=value,...)@cutoff`` — ``nDCG@10``, ``P(rel=2)@10``,
  ``AP(rel=2)``, ``RR``, ``R@100``, ``Judged@10``, ``Bpref``, ``infAP``, ``ERR@10``,
  ``RBP(p=0.8)``, ``Success@5``, ``Rprec``, ``IPrec@0.2``, ``SetP``, ``SetR``, ``SetF``,
  ``SetAP``, ``NumRet``, ``NumRel``, ``NumRelRet``, ``NumQ`` (``NumRet(rel=1)`` is
  ``NumRelRet``, as in ir_measures). Names are case-insensitive; ``MAP``, ``MRR``, ``NDCG``,
  ``Recall``, ``Precision``, ``Hit`` are aliases.
* **trec_eval**: ``map``, ``map_cut_10``, ``P_10``, ``recall_100``, ``ndcg``, ``ndcg_cut_10``,
  ``recip_rank``, ``Rprec``, ``bpref``, ``infAP``, ``success_5``, ``set_P``, ``set_recall``,
  ``set_F``, ``set_map``, ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``,
  ``num_nonrel_judged_ret``, ``gm_map``, ``gm_bpref``, ``iprec_at_recall_0.20``,
  ``11pt_avg``, ``rbp``, ``unj_5``.
* **kg-rageval (records)**: ``recall@k``, ``precision@k``, ``hit@k``, ``ndcg@k``, ``mrr``,
  ``mrr@k``, ``map``, ``r_precision``.

Parameters: ``rel`` (relevance threshold, default the run-wide one, 1 unless ``-l``), ``p``
(RBP persistence; 0.8 by default as in ir_measures, trec_eval's ``rbp`` is 0.9), ``beta`` (SetF), ``gmax`` (ERR's maximum grade), ``dcg`` (``log2`` or
``exp-log2``, nDCG). Unknown names or parameters raise ``ValueError`` naming them.

**Canonical metric names** (:func:`measure_metric`, the one alias table used by
:func:`kg_rageval.scoring.resolve_metric`, gates, ``kg-rageval metrics`` and ``compare``): a
measure the records family ``retrieval`` computes is named as that family names it
(``nDCG@10``, ``ndcg_cut_10`` → ``retrieval.ndcg@10``; ``RR``, ``recip_rank`` →
``retrieval.mrr``; ``P_10`` → ``retrieval.precision@10``; ``map``, ``AP`` → ``retrieval.map``;
see :data:`RECORD_METRICS`); every other measure is a metric of the TREC-file family
``trec`` (``kg-rageval score retrieval --qrels/--run``) under its ir_measures spelling
(``Bpref`` → ``trec.Bpref``, ``P(rel=2)@10`` → ``trec.P(rel=2)@10``, ``judged_10``… →
``trec.Judged@10``, ``ERR@10`` → ``trec.ERR@10``). The family ``trec`` also answers to every
measure under its ir_measures spelling (``trec.nDCG@10``): it is the number computed from the
qrels/run files, ``retrieval.ndcg@10`` the one computed from records.

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# canonical measure -> (parameters it takes, cutoff kind: "int" | "float" | "none" | "opt")
MEASURES: dict[str, tuple[frozenset[str], str]] = {
    "P": (frozenset({"rel"}), "int"),
    "R": (frozenset({"rel"}), "opt"),
    "AP": (frozenset({"rel"}), "opt"),
    "GMAP": (frozenset({"rel"}), "none"),
    "RR": (frozenset({"rel"}), "opt"),
    "Rprec": (frozenset({"rel"}), "none"),
    "nDCG": (frozenset({"dcg"}), "opt"),
    "Success": (frozenset({"rel"}), "int"),
    "Bpref": (frozenset({"rel"}), "none"),
    "GMBpref": (frozenset({"rel"}), "none"),
    "infAP": (frozenset({"rel"}), "none"),
    "Judged": (frozenset(), "opt"),
    "Unjudged": (frozenset(), "int"),
    "ERR": (frozenset({"gmax"}), "int"),
    "RBP": (frozenset({"p", "rel"}), "none"),
    "IPrec": (frozenset({"rel"}), "float"),
    "11ptAvg": (frozenset({"rel"}), "none"),
    "SetP": (frozenset({"rel"}), "none"),
    "SetR": (frozenset({"rel"}), "none"),
    "SetF": (frozenset({"rel", "beta"}), "none"),
    "SetAP": (frozenset({"rel"}), "none"),
    "NumRet": (frozenset(), "none"),
    "NumRel": (frozenset({"rel"}), "none"),
    "NumRelRet": (frozenset({"rel"}), "none"),
    "NumNonRelJudgedRet": (frozenset({"rel"}), "none"),
    "NumQ": (frozenset(), "none"),
}

COUNTS = frozenset({"NumRet", "NumRel", "NumRelRet", "NumNonRelJudgedRet", "NumQ"})
"""Measures trec_eval sums (not averages) over queries."""

_ALIASES = {
    "p": "P",
    "precision": "P",
    "r": "R",
    "recall": "R",
    "ap": "AP",
    "map": "AP",
    "gmap": "GMAP",
    "rr": "RR",
    "mrr": "RR",
    "rprec": "Rprec",
    "r_precision": "Rprec",
    "ndcg": "nDCG",
    "success": "Success",
    "hit": "Success",
    "bpref": "Bpref",
    "infap": "infAP",
    "judged": "Judged",
    "unjudged": "Unjudged",
    "err": "ERR",
    "rbp": "RBP",
    "iprec": "IPrec",
    "setp": "SetP",
    "setr": "SetR",
    "setf": "SetF",
    "setap": "SetAP",
    "numret": "NumRet",
    "numrel": "NumRel",
    "numrelret": "NumRelRet",
    "numq": "NumQ",
    "numnonreljudgedret": "NumNonRelJudgedRet",
    "gmbpref": "GMBpref",
    "11ptavg": "11ptAvg",
}

_TREC_FIXED = {
    "map": ("AP", None),
    "gm_map": ("GMAP", None),
    "Rprec": ("Rprec", None),
    "bpref": ("Bpref", None),
    "gm_bpref": ("GMBpref", None),
    "recip_rank": ("RR", None),
    "infAP": ("infAP", None),
    "ndcg": ("nDCG", None),
    "set_P": ("SetP", None),
    "set_recall": ("SetR", None),
    "set_F": ("SetF", None),
    "set_map": ("SetAP", None),
    "num_q": ("NumQ", None),
    "num_ret": ("NumRet", None),
    "num_rel": ("NumRel", None),
    "num_rel_ret": ("NumRelRet", None),
    "num_nonrel_judged_ret": ("NumNonRelJudgedRet", None),
    "11pt_avg": ("11ptAvg", None),
    "rbp": ("RBP", None),
}
_OTHER = {"R-Prec": "Rprec"}
"""Further spellings read as another (ir_measures' ``R-Prec``)."""
_TREC_CUT = {
    "P": "P",
    "recall": "R",
    "map_cut": "AP",
    "ndcg_cut": "nDCG",
    "success": "Success",
    "unj": "Unjudged",
}
_LEGACY_CUT = {"recall": "R", "precision": "P", "hit": "Success", "ndcg": "nDCG", "mrr": "RR"}
_IR_RE = re.compile(r"^([A-Za-z0-9_]+)(?:\(([^()]*)\))?(?:@([0-9.]+))?$")


@dataclass(frozen=True)
class MeasureSpec:
    """One measure with its parameters. ``rel=None`` means the run-wide relevance threshold."""

    measure: str
    cutoff: int | float | None = None
    rel: int | None = None
    params: tuple[tuple[str, object], ...] = field(default=())

    def param(self, name: str, default=None):
        return dict(self.params).get(name, default)

    def __str__(self) -> str:
        """ir_measures spelling, parameters in alphabetical order (``RBP(p=0.5,rel=1)``)."""
        kv = dict(self.params)
        if self.rel is not None:
            kv["rel"] = self.rel
        args = [f"{k}={_fmt(kv[k])}" for k in sorted(kv)]
        s = self.measure + (f"({','.join(args)})" if args else "")
        return s + (f"@{_fmt(self.cutoff)}" if self.cutoff is not None else "")

    @property
    def trec_name(self) -> str | None:
        """trec_eval's output name (with the run-wide threshold and default parameters), or
        ``None`` when trec_eval has no such measure."""
        if self.rel is not None:
            return None
        m, c = self.measure, self.cutoff
        if m == "RBP":
            return "rbp" if self.params == (("p", 0.9),) else None
        if self.params:
            return None
        if m == "IPrec":
            return f"iprec_at_recall_{float(c or 0.0):.2f}"
        cut = {
            "P": "P",
            "R": "recall",
            "AP": "map_cut",
            "nDCG": "ndcg_cut",
            "Success": "success",
            "Unjudged": "unj",
        }
        if c is not None:
            return f"{cut[m]}_{c}" if m in cut else None
        rev = {v[0]: k for k, v in _TREC_FIXED.items()}
        if m == "R":
            return "set_recall"
        return rev.get(m)


def _fmt(v) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return repr(v) if "." in repr(v) else str(v)
    return str(v)


def _value(key: str, raw: str, name: str):
    raw = raw.strip()
    if key == "rel":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"measure {name!r}: rel must be an integer, got {raw!r}") from None
    if key == "dcg":
        if raw not in ("log2", "exp-log2"):
            raise ValueError(f"measure {name!r}: dcg must be log2 or exp-log2, got {raw!r}")
        return raw
    try:
        v = float(raw)
    except ValueError:
        raise ValueError(f"measure {name!r}: {key} must be a number, got {raw!r}") from None
    if key == "p" and not (0.0 < v < 1.0):
        raise ValueError(f"measure {name!r}: p must lie in (0, 1), got {raw!r}")
    if key in ("beta", "gmax") and not v > 0:
        raise ValueError(f"measure {name!r}: {key} must be positive, got {raw!r}")
    return v


def _spec(measure: str, cutoff_raw: str | None, kw: dict[str, object], name: str) -> MeasureSpec:
    allowed, kind = MEASURES[measure]
    bad = sorted(set(kw) - allowed)
    if bad:
        raise ValueError(
            f"measure {name!r}: {measure} takes no parameter {bad[0]!r} "
            f"(it takes: {', '.join(sorted(allowed)) or 'none'})"
        )
    cutoff: int | float | None = None
    if cutoff_raw is not None:
        if kind == "none":
            raise ValueError(f"measure {name!r}: {measure} takes no cut-off")
        if kind == "float":
            cutoff = float(cutoff_raw)
            if not 0.0 <= cutoff <= 1.0:
                raise ValueError(f"measure {name!r}: recall level must lie in [0, 1]")
        else:
            try:
                cutoff = int(cutoff_raw)
            except ValueError:
                raise ValueError(f"measure {name!r}: cut-off must be a positive integer") from None
            if cutoff <= 0:
                raise ValueError(f"measure {name!r}: cut-off must be a positive integer")
    elif kind in ("int", "float"):
        raise ValueError(f"measure {name!r}: {measure} needs a cut-off ({measure}@k)")
    rel = kw.pop("rel", None)
    if measure == "RBP" and kw.get("p") == 0.8:
        kw.pop("p")  # ir_measures' default, left out of the name as ir_measures does (trec_eval's rbp: 0.9)
    if measure == "SetF" and kw.get("beta") == 1.0:
        kw.pop("beta")
    if measure == "nDCG" and kw.get("dcg") == "log2":
        kw.pop("dcg")
    return MeasureSpec(measure, cutoff, rel if rel is None else int(rel), tuple(sorted(kw.items())))  # type: ignore[arg-type, call-overload]


def parse_measure(name: str) -> MeasureSpec:
    """The :class:`MeasureSpec` of any accepted spelling (see the module docstring)."""
    s = name.strip()
    if not s:
        raise ValueError("empty measure name")
    s = _OTHER.get(s, s)
    # trec_eval names first (case-sensitive, as trec_eval spells them)
    if s in _TREC_FIXED:
        m, c = _TREC_FIXED[s]
        return _spec(m, c, {"p": 0.9} if m == "RBP" else {}, name)
    if s.startswith("iprec_at_recall_"):
        return _spec("IPrec", s[len("iprec_at_recall_") :], {}, name)
    mt = re.match(r"^(P|recall|map_cut|ndcg_cut|success|unj)_(\d+)$", s)
    if mt:
        return _spec(_TREC_CUT[mt.group(1)], mt.group(2), {}, name)
    # kg-rageval record metric names
    ml = re.match(r"^(recall|precision|hit|ndcg|mrr)@(\d+)$", s)
    if ml:
        return _spec(_LEGACY_CUT[ml.group(1)], ml.group(2), {}, name)
    mi = _IR_RE.match(s)
    if not mi:
        raise ValueError(f"cannot parse measure name {name!r} (expected e.g. nDCG@10, P(rel=2)@10, AP, RR)")
    base, args, cut = mi.group(1), mi.group(2), mi.group(3)
    measure = _ALIASES.get(base.lower())
    if measure is None:
        raise ValueError(f"unknown measure {base!r} in {name!r}; known: {', '.join(sorted(MEASURES))}")
    kw: dict[str, object] = {}
    if args:
        for part in args.split(","):
            if "=" not in part:
                raise ValueError(f"measure {name!r}: parameter {part.strip()!r} is not key=value")
            k, v = part.split("=", 1)
            k = k.strip()
            if k in kw:
                raise ValueError(f"measure {name!r}: parameter {k!r} given twice")
            kw[k] = _value(k, v, name)
    if measure == "NumRet" and "rel" in kw:  # ir_measures: NumRet(rel=1) is NumRelRet
        measure = "NumRelRet"
    return _spec(measure, cut, kw, name)


MEASURES_FAMILY = "trec"
"""The registered family of the measures computed from TREC/BEIR/JSON qrels and runs."""
RECORD_FAMILY = "retrieval"
"""The registered family computing retrieval metrics from records."""

RECORD_METRICS: dict[str, tuple[str, str | None]] = {
    # measure: (record metric without cut-off, record metric template with a cut-off "{k}")
    "nDCG": ("", "ndcg@{k}"),
    "P": ("", "precision@{k}"),
    "R": ("", "recall@{k}"),
    "Success": ("", "hit@{k}"),
    "RR": ("mrr", "mrr@{k}"),
    "AP": ("map", None),
    "Rprec": ("r_precision", None),
}
"""Measures the ``retrieval`` family computes from records, by the name it gives them (the
run-wide relevance threshold and default parameters only; ``""``/``None``: not computed in that
form — ``nDCG`` without a cut-off, ``R`` without one (set recall), ``AP@k`` are ``trec`` only)."""


def record_metric(spec: MeasureSpec) -> str | None:
    """The ``retrieval`` family's metric for ``spec`` (``recall@10`` for ``R@10``), or ``None``."""
    if spec.rel is not None or spec.params or spec.measure not in RECORD_METRICS:
        return None
    bare, cut = RECORD_METRICS[spec.measure]
    if spec.cutoff is None:
        return bare or None
    return cut.format(k=spec.cutoff) if cut else None


def measure_metric(name: str) -> tuple[str, str] | None:
    """``(family, metric)`` of the canonical metric name a measure spelling stands for (see the
    module docstring), or ``None`` when ``name`` is no measure name."""
    try:
        spec = parse_measure(name)
    except ValueError:
        return None
    rec = record_metric(spec)
    return (RECORD_FAMILY, rec) if rec is not None else (MEASURES_FAMILY, str(spec))


def measure_aliases(spec: MeasureSpec) -> list[str]:
    """The other spellings of ``spec`` shown by ``kg-rageval metrics``: its ir_measures name,
    its trec_eval name and its ``retrieval`` name, each once."""
    out = [str(spec)]
    for extra in (spec.trec_name, record_metric(spec)):
        if extra and extra not in out:
            out.append(extra)
    return out


def template_aliases(family: str, template: str) -> list[str]:
    """The other spellings of a declared metric template of ``family`` (``retrieval`` or
    ``trec``) that resolve to it: ``["nDCG@{k}", "ndcg_cut_{k}"]`` for ``retrieval.ndcg@{k}``,
    ``["recip_rank", "MRR"]``-style names for ``retrieval.mrr``; empty for other families and for
    templates that are no measure."""
    if family not in (RECORD_FAMILY, MEASURES_FAMILY) or "{" in template.replace("{k}", ""):
        return []
    probe = template.replace("{k}", "7")
    got = measure_metric(probe)
    if got is None:
        return []
    spec = parse_measure(probe)
    if got != (family, probe) and not (family == MEASURES_FAMILY and str(spec) == probe):
        return []
    names = measure_aliases(spec) + [n for n, m in _OTHER.items() if m == str(spec)]
    out: list[str] = []
    for n in names:
        back = parse_measure(n)
        if back != spec:  # an alias must resolve to this very metric (trec_eval's set_recall is SetR)
            continue
        n = n.replace("7", "{k}") if "{k}" in template else n
        if n != template and n not in out:
            out.append(n)
    return out


def parse_measures(names) -> list[MeasureSpec]:
    """Parse many names (comma-separated strings allowed), keeping order, dropping repeats."""
    out: list[MeasureSpec] = []
    for n in names:
        for part in _split(n):
            spec = parse_measure(part)
            if spec not in out:
                out.append(spec)
    return out


def _split(s: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch in ", " and depth == 0:
            if cur.strip():
                parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts
