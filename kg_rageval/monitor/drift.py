"""Query drift per ontology branch between a reference window and a current one.

Tests (each returns a :class:`Test`; ``p_value`` ``None`` with a ``reason`` when the windows
hold too little evidence — "insufficient evidence", never a reassuring p = 1):

* :func:`mmd_test` — MMD² with a permutation p-value on query embeddings, Gaussian RBF kernel.
  It is alibi-detect's ``MMDDrift`` (``alibi_detect/cd/pytorch/mmd.py``) step for step: the
  bandwidth is the median heuristic on the *reference* window's pairwise squared distances
  (``sigma_median``: the median of the off-diagonal entries, sigma = sqrt(median / 2)); the
  kernel matrix of the pooled sample has its diagonal zeroed; MMD² is
  ``sum(K_xx)/(n(n-1)) + sum(K_yy)/(m(m-1)) - 2 mean(K_xy)`` (the unbiased estimator, its
  within-sample sums without the diagonal); each permutation shuffles the pooled sample and
  recomputes it; ``p = share of permuted MMD² >= observed`` (no +1 correction, as alibi-detect;
  the comparison in float32, as its ``torch.Tensor`` of permuted values).
* :func:`classifier_test` — a classifier two-sample test: logistic regression, stratified
  k-fold out-of-fold scores, AUC with a Hanley-McNeil 95 % interval; drift when the interval
  lies above 0.5.
* :func:`binned_divergence` — KL and PSI over *declared* histogram bins of a scalar (query
  length, confidence): never over raw embedding coordinates.
* :func:`branch_mix_test` — chi-square on the exact branch counts of the two windows (no
  Yates correction: ``scipy.stats.chi2_contingency(..., correction=False)``). Sparse cells:
  branches whose expected count is below 5 in either window are merged into ``(other)``
  (smallest expected first, until every cell of ``(other)`` too is >= 5 or only one category
  is left); the merged branches are listed.
* :func:`new_concept_test` — share of queries that link to NIL or to a concept unseen in the
  golden set, two-proportion z-test (pooled variance, two-sided, as statsmodels'
  ``proportions_ztest``).
* :func:`adjust` — Holm (default) or Benjamini-Hochberg across every p-value of a report (one
  family: each branch's MMD and new-concept test and the branch-mix test), as statsmodels'
  ``multipletests(method="holm" | "fdr_bh")``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.monitor.traffic import NIL_BRANCH, UNKNOWN_BRANCH

OTHER = "(other)"
MIN_EXPECTED = 5.0
MIN_ROWS = 10


@dataclass
class Test:
    """One drift test: its statistic, p-value (``None``: insufficient evidence), details."""

    test: str
    branch: str | None
    statistic: float | None
    p_value: float | None
    n_reference: int
    n_current: int
    details: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    p_adjusted: float | None = None
    drift: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "branch": self.branch,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "drift": self.drift,
            "n_reference": self.n_reference,
            "n_current": self.n_current,
            "reason": self.reason,
            **({"details": self.details} if self.details else {}),
        }


def _insufficient(test: str, branch: str | None, n_ref: int, n_cur: int, why: str) -> Test:
    return Test(test, branch, None, None, n_ref, n_cur, reason=f"insufficient evidence: {why}")


# -- (f) multiple testing ------------------------------------------------------------------


def adjust(p_values: Sequence[float], method: str = "holm") -> list[float]:
    """Adjusted p-values: ``holm`` (family-wise error) or ``bh`` (false discovery rate),
    equal to ``statsmodels.stats.multitest.multipletests(p, method="holm" | "fdr_bh")[1]``."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    if m == 0:
        return []
    if np.any((p < 0) | (p > 1) | ~np.isfinite(p)):
        raise ConfigError(f"p-values must lie in [0, 1]: {p.tolist()}")
    order = np.argsort(p, kind="mergesort")
    ps = p[order]
    if method == "holm":
        adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * ps))
    elif method in ("bh", "fdr_bh"):
        adj = np.minimum(1.0, np.minimum.accumulate(((m / np.arange(1, m + 1)) * ps)[::-1])[::-1])
    else:
        raise ConfigError(f"correction {method!r}: expected 'holm' or 'bh'")
    out = np.empty(m)
    out[order] = adj
    return out.tolist()


# -- (d) branch mix --------------------------------------------------------------------------


def branch_mix_test(reference: Mapping[str, int], current: Mapping[str, int]) -> Test:
    """Chi-square on the 2 x K table of exact branch counts (see the module docstring for the
    ``(other)`` rule of sparse cells)."""
    from scipy.stats import chi2

    n_ref, n_cur = int(sum(reference.values())), int(sum(current.values()))
    if n_ref == 0 or n_cur == 0:
        return _insufficient("branch_mix", None, n_ref, n_cur, "a window without rows")
    branches = sorted(set(reference) | set(current))
    table = {b: [int(reference.get(b, 0)), int(current.get(b, 0))] for b in branches}
    total = n_ref + n_cur

    def expected_min(cells: list[int]) -> float:
        return min(sum(cells) * n_ref / total, sum(cells) * n_cur / total)

    merged: list[str] = []
    other = [0, 0]
    by_size = sorted(branches, key=lambda b: (sum(table[b]), b))
    for b in by_size:
        if expected_min(table[b]) < MIN_EXPECTED:
            other = [other[0] + table[b][0], other[1] + table[b][1]]
            merged.append(b)
            del table[b]
    while merged and expected_min(other) < MIN_EXPECTED and table:
        b = min(table, key=lambda k: (sum(table[k]), k))
        other = [other[0] + table[b][0], other[1] + table[b][1]]
        merged.append(b)
        del table[b]
    if merged:
        table[OTHER] = other
    cats = sorted(table)
    if len(cats) < 2:
        return _insufficient(
            "branch_mix", None, n_ref, n_cur, "fewer than two branches with expected counts >= 5"
        )
    obs = np.array([[table[c][0] for c in cats], [table[c][1] for c in cats]], dtype=float)
    exp = obs.sum(axis=1, keepdims=True) * obs.sum(axis=0, keepdims=True) / total
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = len(cats) - 1
    return Test(
        "branch_mix",
        None,
        stat,
        float(chi2.sf(stat, dof)),
        n_ref,
        n_cur,
        details={
            "dof": dof,
            "categories": cats,
            "reference": obs[0].astype(int).tolist(),
            "current": obs[1].astype(int).tolist(),
            "merged_into_other": sorted(merged),
            "rule": f"branches with expected count < {MIN_EXPECTED:g} merged into {OTHER}; no Yates correction",
        },
    )


# -- (e) new concepts --------------------------------------------------------------------------


def golden_concepts(path: str | Path, ontology: Any = None) -> set[str]:
    """The concepts a golden set covers: a records file (``labels.gold``, ``gold_node``,
    ``mentions.gold[*].id``) or a test-set build (its directory or ``testset-manifest.json``:
    the ``*.jsonl`` record files beside it). Ids are canonicalised with ``ontology``."""
    from kg_rageval.records import read_records

    p = Path(path)
    if p.is_dir() or p.name.endswith("manifest.json"):
        folder = p if p.is_dir() else p.parent
        files = sorted(folder.glob("*.jsonl")) + sorted(folder.glob("*.jsonl.gz"))
        if not files:
            raise InputError(f"{p}: no record files (*.jsonl) in the test set")
    elif p.exists():
        files = [p]
    else:
        raise InputError(f"{p}: no such golden set")
    resolve = None
    if ontology is not None:
        from kg_rageval.ontology import IdResolver

        resolve = IdResolver(ontology).node_id
    out: set[str] = set()
    for f in files:
        for rec in read_records(f):
            ids: list[Any] = []
            labels = rec.get("labels")
            gold = labels.get("gold") if isinstance(labels, Mapping) else None
            ids.extend(gold if isinstance(gold, list) else [gold])
            ids.append(rec.get("gold_node"))
            mentions = rec.get("mentions")
            if isinstance(mentions, Mapping) and isinstance(mentions.get("gold"), list):
                ids.extend(m.get("id") for m in mentions["gold"] if isinstance(m, Mapping))
            for i in ids:
                if isinstance(i, str) and i:
                    node = resolve(i) if resolve else i
                    out.add(node if node is not None else i)
    if not out:
        raise InputError(f"{p}: the golden set names no concept (labels.gold, gold_node, mentions.gold)")
    return out


def new_concept_counts(
    concepts: Mapping[tuple[str, str], int], golden: set[str]
) -> dict[str, tuple[int, int]]:
    """Per branch: (rows linking to NIL or to a concept outside ``golden``, rows)."""
    out: dict[str, list[int]] = {}
    for (branch, concept), n in concepts.items():
        cell = out.setdefault(branch, [0, 0])
        cell[1] += n
        if concept == NIL_BRANCH or branch in (NIL_BRANCH, UNKNOWN_BRANCH) or concept not in golden:
            cell[0] += n
    return {b: (v[0], v[1]) for b, v in out.items()}


def new_concept_test(
    new_ref: int, n_ref: int, new_cur: int, n_cur: int, *, branch: str | None = None
) -> Test:
    """Two-proportion z-test (pooled, two-sided) on the share of new-concept queries."""
    from scipy.stats import norm

    if n_ref == 0 or n_cur == 0:
        return _insufficient("new_concept", branch, n_ref, n_cur, "a window without rows")
    p1, p2 = new_ref / n_ref, new_cur / n_cur
    pooled = (new_ref + new_cur) / (n_ref + n_cur)
    var = pooled * (1 - pooled) * (1 / n_ref + 1 / n_cur)
    details = {"share_reference": p1, "share_current": p2, "new_reference": new_ref, "new_current": new_cur}
    if var == 0:
        return Test(
            "new_concept", branch, None, None, n_ref, n_cur, details,
            reason="insufficient evidence: the share is 0 or 1 in both windows (no variance)",
        )  # fmt: skip
    z = (p2 - p1) / math.sqrt(var)
    return Test("new_concept", branch, z, float(2 * norm.sf(abs(z))), n_ref, n_cur, details)


# -- (a) MMD ------------------------------------------------------------------------------------


def squared_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pairwise squared Euclidean distances, clamped at 1e-30 (alibi-detect's
    ``squared_pairwise_distance``)."""
    x2 = (x**2).sum(axis=-1, keepdims=True)
    y2 = (y**2).sum(axis=-1, keepdims=True)
    return np.maximum(y2.T - 2.0 * (x @ y.T) + x2, 1e-30)


def sigma_median(x_ref: np.ndarray) -> float:
    """The median-heuristic bandwidth of alibi-detect (``sigma_median(x, x, dist)``)."""
    dist = squared_distances(x_ref, x_ref)
    n = x_ref.shape[0]
    n_median = n + (dist.size - n) // 2 - 1
    return float(math.sqrt(0.5 * np.sort(dist.ravel())[n_median]))


def _mmd2(k: np.ndarray, m: int) -> float:
    n = k.shape[0] - m
    return float(
        k[:-m, :-m].sum() / (n * (n - 1)) + k[-m:, -m:].sum() / (m * (m - 1)) - 2.0 * k[-m:, :-m].mean()
    )


def mmd_test(
    x_ref: np.ndarray,
    x: np.ndarray,
    *,
    sigma: float | None = None,
    n_permutations: int = 100,
    seed: int = 0,
    permutations: np.ndarray | None = None,
    branch: str | None = None,
    min_rows: int = MIN_ROWS,
) -> Test:
    """MMD² and its permutation p-value (alibi-detect's ``MMDDrift``; module docstring).
    ``permutations`` (an ``(n_permutations, n + m)`` index array) replaces the seeded ones,
    so a run can be replayed on alibi-detect's own permutations."""
    x_ref = np.asarray(x_ref, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    n, m = len(x_ref), len(x)
    if n < min_rows or m < min_rows:
        return _insufficient("mmd", branch, n, m, f"fewer than {min_rows} embeddings in a window")
    if x_ref.ndim != 2 or x.ndim != 2 or x_ref.shape[1] != x.shape[1]:
        raise InputError(f"embeddings of different shapes: {x_ref.shape} and {x.shape}")
    if n_permutations < 1:
        raise ConfigError(f"n_permutations {n_permutations}: expected >= 1")
    if sigma is None:
        # alibi-detect keeps an inferred bandwidth as a float32 log-parameter: the same rounding
        # (exp correctly rounded to float32, as torch's)
        s32 = np.float32(math.exp(float(np.float32(math.log(sigma_median(x_ref))))))
        sigma = float(s32)
        gamma = float(np.float32(1.0) / (np.float32(2.0) * s32 * s32))
    elif not (sigma > 0 and math.isfinite(sigma)):
        raise ConfigError(f"bandwidth {sigma!r}: expected a number > 0")
    else:
        gamma = 1.0 / (2.0 * sigma**2)
    pooled = np.concatenate([x_ref, x])
    k = np.exp(-gamma * squared_distances(pooled, pooled))
    np.fill_diagonal(k, 0.0)
    observed = _mmd2(k, m)
    if permutations is None:
        rng = np.random.default_rng(seed)
        permutations = np.stack([rng.permutation(n + m) for _ in range(n_permutations)])
    perms = np.asarray(permutations)
    permuted = np.array([_mmd2(k[idx][:, idx], m) for idx in perms], dtype=np.float32)
    p = float(np.mean(np.float32(observed) <= permuted))
    return Test(
        "mmd",
        branch,
        observed,
        p,
        n,
        m,
        details={"sigma": sigma, "n_permutations": len(perms), "kernel": "gaussian_rbf"},
    )


# -- (b) classifier two-sample test ---------------------------------------------------------


def classifier_test(
    x_ref: np.ndarray,
    x: np.ndarray,
    *,
    folds: int = 5,
    seed: int = 0,
    branch: str | None = None,
    min_rows: int = MIN_ROWS,
) -> Test:
    """Logistic regression told the windows apart: out-of-fold AUC (stratified ``folds``-fold,
    seeded), Hanley-McNeil 95 % CI; p-value one-sided (AUC > 0.5) from the same normal
    approximation. Needs scikit-learn."""
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import StratifiedKFold
    except ImportError:  # pragma: no cover - dev extra
        raise ConfigError("the classifier test needs scikit-learn (pip install scikit-learn)") from None
    from scipy.stats import norm

    x_ref, x = np.asarray(x_ref, dtype=float), np.asarray(x, dtype=float)
    n, m = len(x_ref), len(x)
    if n < max(min_rows, folds) or m < max(min_rows, folds):
        return _insufficient(
            "classifier", branch, n, m, f"fewer than {max(min_rows, folds)} embeddings in a window"
        )
    data = np.concatenate([x_ref, x])
    label = np.r_[np.zeros(n), np.ones(m)]
    scores = np.empty(n + m)
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(data, label):
        clf = LogisticRegression(max_iter=1000).fit(data[train], label[train])
        scores[test] = clf.predict_proba(data[test])[:, 1]
    auc = float(roc_auc_score(label, scores))
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    se = math.sqrt(max(auc * (1 - auc) + (m - 1) * (q1 - auc**2) + (n - 1) * (q2 - auc**2), 0.0) / (n * m))
    # the null's standard error (AUC = 0.5) for the p-value
    se0 = math.sqrt((n + m + 1) / (12 * n * m))
    return Test(
        "classifier",
        branch,
        auc,
        float(norm.sf((auc - 0.5) / se0)),
        n,
        m,
        details={"auc": auc, "ci_low": max(0.0, auc - 1.96 * se), "ci_high": min(1.0, auc + 1.96 * se),
                 "folds": folds, "model": "logistic_regression"},
    )  # fmt: skip


# -- (c) binned divergences ---------------------------------------------------------------


PSI_FLOOR = 1e-4


def binned_divergence(
    reference: Sequence[float] | np.ndarray,
    current: Sequence[float] | np.ndarray,
    bins: Sequence[float] | None,
    *,
    name: str = "value",
) -> dict[str, Any]:
    """KL(current ‖ reference) and PSI over the declared bin edges ``bins`` of a scalar.
    Values outside the edges go to the first/last bin; an empty bin's share is floored at
    1e-4 (as Evidently). Raw embedding coordinates are refused: declare a scalar and its bins."""
    ref, cur = np.asarray(reference, dtype=float), np.asarray(current, dtype=float)
    if ref.ndim != 1 or cur.ndim != 1:
        raise ConfigError(
            f"{name}: KL/PSI are computed over the declared histogram bins of one scalar (query "
            "length, confidence), never over raw embedding coordinates; use the MMD or classifier test"
        )
    if bins is None or len(bins) < 2:
        raise ConfigError(f"{name}: KL/PSI need declared bin edges in the config (at least two)")
    edges = np.asarray(bins, dtype=float)
    if np.any(np.diff(edges) <= 0):
        raise ConfigError(f"{name}: bin edges must increase: {list(bins)}")
    if len(ref) == 0 or len(cur) == 0:
        return {"name": name, "kl": None, "psi": None, "reason": "insufficient evidence: an empty window"}

    def shares(v: np.ndarray) -> np.ndarray:
        idx = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, len(edges) - 2)
        c = np.bincount(idx, minlength=len(edges) - 1).astype(float)
        return np.maximum(c / c.sum(), PSI_FLOOR)

    p, q = shares(ref), shares(cur)
    return {
        "name": name,
        "bins": edges.tolist(),
        "reference": p.tolist(),
        "current": q.tolist(),
        "kl": float(np.sum(q * np.log(q / p))),
        "psi": float(np.sum((q - p) * np.log(q / p))),
    }


# -- the report -----------------------------------------------------------------------------


def drift_report(
    store: Any,
    reference: str,
    current: str,
    *,
    golden: set[str] | None = None,
    alpha: float = 0.05,
    correction: str = "holm",
    n_permutations: int = 100,
    sigma: float | None = None,
    seed: int = 0,
    classifier: bool = False,
    min_rows: int = MIN_ROWS,
) -> dict[str, Any]:
    """Every drift test between two windows of a :class:`~kg_rageval.monitor.store.WindowStore`,
    p-values corrected together (``correction``), ``alert`` when any corrected p < ``alpha``."""
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha {alpha}: expected a number in (0, 1)")
    adjust([], correction)  # validates the method name
    store.require(reference)
    store.require(current)
    tests: list[Test] = [branch_mix_test(store.branch_counts(reference), store.branch_counts(current))]
    ref_counts, cur_counts = store.branch_counts(reference), store.branch_counts(current)
    branches = sorted(set(ref_counts) | set(cur_counts))
    if golden is not None:
        new_r = new_concept_counts(store.concept_counts(reference), golden)
        new_c = new_concept_counts(store.concept_counts(current), golden)
        for b in branches:
            r, c = new_r.get(b, (0, 0)), new_c.get(b, (0, 0))
            tests.append(new_concept_test(r[0], r[1], c[0], c[1], branch=b))
    for b in branches:
        if b in (NIL_BRANCH, UNKNOWN_BRANCH):
            continue
        xr, mr = store.embeddings(reference, b)
        xc, mc = store.embeddings(current, b)
        if mr is not None and mc is not None and mr != mc:
            raise InputError(
                f"branch {b}: embeddings of {mr!r} (reference) and {mc!r} (current): embeddings of "
                "different models are never compared (see `monitor` embedding drift)"
            )
        if mr is None and mc is None:
            continue
        tests.append(
            mmd_test(
                xr, xc, sigma=sigma, n_permutations=n_permutations, seed=seed, branch=b, min_rows=min_rows
            )
        )
        if classifier:
            tests.append(classifier_test(xr, xc, seed=seed, branch=b, min_rows=min_rows))
    tested = [t for t in tests if t.p_value is not None]
    for t, p in zip(
        tested, adjust([t.p_value for t in tested if t.p_value is not None], correction), strict=True
    ):
        t.p_adjusted = p
        t.drift = p < alpha
    return {
        "reference": reference,
        "current": current,
        "alpha": alpha,
        "correction": correction,
        "family": "every p-value of this report (branch mix, per-branch MMD, new-concept, classifier)",
        "alert": any(t.drift for t in tested),
        "n_tests": len(tested),
        "n_insufficient": len(tests) - len(tested),
        "tests": [t.to_dict() for t in tests],
    }
