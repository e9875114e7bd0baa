"""ANN backends whose Recall@k ``kg-rageval index recall`` measures, each returning an
``(n_queries, k)`` array of vector row ids (``-1``: no result):

* ``numpy`` — the exact search itself (a recall of 1.0: checks the pipeline, and the baseline);
* ``hnswlib`` — an HNSW graph built here (extra ``index``: ``pip install 'kg-rageval[index]'``),
  ``M``, ``ef_construction`` and the query-time ``ef`` as given, ``seed`` fixed;
* ``faiss`` — ``faiss.IndexHNSWFlat`` with the same parameters (``faiss-cpu``, installed
  separately: ``pip install faiss-cpu``); cosine by normalising the vectors, inner product with
  ``METRIC_INNER_PRODUCT``;
* ``results`` — the ids your own system returned: a ``.npy`` integer array
  ``(n_queries, >= k)``, or a text file with one line per query of row ids separated by
  spaces, tabs or commas (``#`` lines skipped).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from kg_rageval.base.errors import InputError

BACKENDS = ("numpy", "hnswlib", "faiss", "results")
_SEP = re.compile(r"[\s,]+")


def _normalised(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def hnswlib_search(
    vectors: np.ndarray,
    queries: np.ndarray,
    k: int,
    metric: str,
    *,
    m: int = 16,
    ef_construction: int = 200,
    ef: int = 50,
    seed: int = 0,
    threads: int = 1,
) -> np.ndarray:
    try:
        import hnswlib
    except ImportError:
        raise InputError("backend hnswlib needs hnswlib: pip install 'kg-rageval[index]'") from None
    space = {"l2": "l2", "ip": "ip", "cosine": "cosine"}[metric]
    n, d = vectors.shape
    index = hnswlib.Index(space=space, dim=d)
    index.init_index(max_elements=n, ef_construction=ef_construction, M=m, random_seed=seed)
    index.set_num_threads(threads)
    for s in range(0, n, 65536):
        index.add_items(np.asarray(vectors[s : s + 65536], dtype=np.float32), np.arange(s, min(n, s + 65536)))
    index.set_ef(max(ef, k))
    labels, _ = index.knn_query(np.asarray(queries, dtype=np.float32), k=k)
    return labels.astype(np.int64)


def faiss_search(
    vectors: np.ndarray,
    queries: np.ndarray,
    k: int,
    metric: str,
    *,
    m: int = 16,
    ef_construction: int = 200,
    ef: int = 50,
) -> np.ndarray:
    try:
        import faiss
    except ImportError:
        raise InputError("backend faiss needs faiss: pip install faiss-cpu") from None
    d = vectors.shape[1]
    v, q = np.asarray(vectors, dtype=np.float32), np.asarray(queries, dtype=np.float32)
    if metric == "cosine":
        v, q = _normalised(v), _normalised(q)
    kind = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    index = faiss.IndexHNSWFlat(d, m, kind)
    index.hnsw.efConstruction = ef_construction
    index.add(np.ascontiguousarray(v))
    index.hnsw.efSearch = max(ef, k)
    _, ids = index.search(np.ascontiguousarray(q), k)
    return ids.astype(np.int64)


def read_results(path: str | Path, n_queries: int, n_vectors: int) -> np.ndarray:
    """The ANN ids of a results file (module docstring), as ``(n_queries, width)`` int64 with
    ``-1`` padding; an id outside ``[0, n_vectors)`` other than ``-1``, a non-integer or a row
    count that is not ``n_queries`` is an ``InputError`` naming the file, line and field."""
    p = Path(path)
    if p.suffix == ".npy":
        try:
            arr = np.load(p, allow_pickle=False)
        except (ValueError, OSError) as e:
            raise InputError(f"results: cannot read a plain .npy array ({e})", source=str(p)) from None
        if arr.dtype.kind not in "iu":
            raise InputError(
                f"results: expected an integer array of row ids, found dtype {arr.dtype}", source=str(p)
            )
        if arr.ndim != 2 or arr.shape[0] != n_queries:
            raise InputError(
                f"results: expected shape ({n_queries}, k) (one row per query), found {arr.shape}",
                source=str(p),
            )
        out = arr.astype(np.int64)
        bad = np.argwhere((out != -1) & ((out < 0) | (out >= n_vectors)))
        if len(bad):
            r, c = bad[0]
            raise InputError(
                f"results[{r}][{c}]: id {out[r, c]} is not a row of the vectors (0..{n_vectors - 1}, or -1)",
                source=str(p),
            )
        return out
    rows: list[list[int]] = []
    with open(p, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            text = line.strip()
            if text.startswith("#"):
                continue
            row = []
            for j, tok in enumerate(t for t in _SEP.split(text) if t):
                try:
                    v = int(tok)
                except ValueError:
                    raise InputError(
                        f"results[{len(rows)}][{j}]: {tok!r} is not an integer row id",
                        source=f"{p}, line {lineno}",
                    ) from None
                if v != -1 and not 0 <= v < n_vectors:
                    raise InputError(
                        f"results[{len(rows)}][{j}]: id {v} is not a row of the vectors (0..{n_vectors - 1}, or -1)",
                        source=f"{p}, line {lineno}",
                    )
                row.append(v)
            rows.append(row)
            if len(rows) > n_queries:
                raise InputError(
                    f"results: more lines than the {n_queries} queries", source=f"{p}, line {lineno}"
                )
    if len(rows) != n_queries:
        raise InputError(
            f"results: {len(rows)} lines of ids for {n_queries} queries (one line per query)", source=str(p)
        )
    width = max((len(r) for r in rows), default=0) or 1
    out = np.full((n_queries, width), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


__all__ = ["BACKENDS", "faiss_search", "hnswlib_search", "read_results"]
