"""The window store: one DuckDB file that keeps every ingested window as mergeable sums.

Tables (schema version :data:`SCHEMA_VERSION`, kept in ``meta``):

* ``windows``: one row per window (key, windowing, rows, source file, ingest time).
* ``sums``: per window x branch x intent x slice the mergeable sums: ``n`` rows, ``nil``
  (links to nothing), ``unknown`` (links to an id the ontology lacks), feedback counts
  (``thumbs_down``, ``thumbs_up``, ``regenerated``, ``refused``), ``latency_n`` /
  ``latency_sum`` (``system.latency_ms.total``) and ``cost_n`` / ``cost_sum``
  (``system.cost_usd``). The slice ``(all)`` holds every row once; a row with slices is
  counted again under each ``key=value`` it carries (so sum over ``(all)`` for totals).
* ``concepts``: per window x branch x intent x concept the count of rows whose *first*
  linked concept (the one that gives the branch) is that concept; NIL rows under ``(NIL)``.
  New-concept drift reads it against a golden set at drift time, so the golden set can
  change without re-ingesting.
* ``latency``: the raw per-row ``latency_ms.total`` column (window, branch, intent), so
  quantiles of any merge of windows are exact.
* ``embeddings``: a bounded sample of the query embeddings per window x branch: the
  ``reservoir`` rows with the smallest seeded hash of their record id (a bottom-k sample:
  seeded, independent of the order of the file, and the same rows on every ingest).

Ingesting a window that the store already holds is refused (:class:`InputError`) unless
``replace=True``, which deletes the old window first, in the same transaction: a window is
never counted twice, and never half-replaced. Aggregation is SQL over a staging table.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.monitor.traffic import NIL_BRANCH, TrafficRow, Windowing, iter_traffic

SCHEMA_VERSION = 1
ALL_SLICES = "(all)"
DEFAULT_RESERVOIR = 2000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS windows (
  win VARCHAR PRIMARY KEY, windowing VARCHAR, rows BIGINT, source VARCHAR,
  first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ, ingested_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS sums (
  win VARCHAR, branch VARCHAR, intent VARCHAR, slice VARCHAR,
  n BIGINT, nil BIGINT, unknown BIGINT, thumbs_down BIGINT, thumbs_up BIGINT,
  regenerated BIGINT, refused BIGINT, latency_n BIGINT, latency_sum DOUBLE,
  cost_n BIGINT, cost_sum DOUBLE);
CREATE TABLE IF NOT EXISTS concepts (
  win VARCHAR, branch VARCHAR, intent VARCHAR, concept VARCHAR, n BIGINT);
CREATE TABLE IF NOT EXISTS latency (
  win VARCHAR, branch VARCHAR, intent VARCHAR, latency_ms DOUBLE);
CREATE TABLE IF NOT EXISTS embeddings (
  win VARCHAR, branch VARCHAR, record_id VARCHAR, model VARCHAR, h UBIGINT,
  embedding DOUBLE[]);
"""

_STAGE_COLUMNS = (
    "window",
    "branch",
    "intent",
    "concept",
    "slices",
    "nil",
    "unknown",
    "thumbs_down",
    "thumbs_up",
    "regenerated",
    "refused",
    "latency_ms",
    "cost",
    "ts",
)


def _stage_types() -> dict[str, Any]:
    import pyarrow as pa

    return {"slices": pa.list_(pa.string()), "latency_ms": pa.float64(), "cost": pa.float64()}


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:  # pragma: no cover - the monitor extra
        raise ConfigError("the window store needs duckdb: pip install 'kg-rageval[monitor]'") from None
    return duckdb


def _hash(record_id: str, seed: int) -> int:
    digest = hashlib.blake2b(f"{seed}\x1f{record_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if value >= 0 else None


def _latency(record: Mapping[str, Any]) -> float | None:
    system = record.get("system")
    if not isinstance(system, Mapping):
        return None
    lat = system.get("latency_ms")
    if isinstance(lat, Mapping):
        return _num(lat.get("total"))
    return _num(lat)


def _cost(record: Mapping[str, Any]) -> float | None:
    system = record.get("system")
    return _num(system.get("cost_usd")) if isinstance(system, Mapping) else None


def _refused(record: Mapping[str, Any]) -> bool:
    answer = record.get("answer")
    return isinstance(answer, Mapping) and answer.get("refused") is True


@dataclass(frozen=True)
class IngestSummary:
    """What one ingest wrote: rows per window, and the windows it replaced."""

    windows: dict[str, int]
    replaced: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"windows": dict(self.windows), "replaced": list(self.replaced)}


class WindowStore:
    """A DuckDB window store (``--store PATH``); see the module docstring for its tables."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        duckdb = _duckdb()
        self.path = Path(path)
        if read_only and not self.path.exists():
            raise InputError(f"{self.path}: no such store (run `kg-rageval monitor ingest` first)")
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            raise InputError(f"{self.path}: not a DuckDB window store ({exc})") from None
        tables = {
            r[0] for r in self.con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        if "meta" in tables:
            row = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise InputError(
                    f"{self.path}: written by a newer kg-rageval (store schema {version}, this one "
                    f"reads up to {SCHEMA_VERSION}); upgrade kg-rageval to read it"
                )
            if version < 1:
                raise InputError(f"{self.path}: store without a schema version; not a window store")
        elif tables:
            raise InputError(f"{self.path}: a DuckDB file that is not a window store (no meta table)")
        elif read_only:
            raise InputError(f"{self.path}: an empty DuckDB file, not a window store")
        else:
            self.con.execute(_SCHEMA)
            self.con.execute(
                "INSERT INTO meta VALUES ('schema_version', ?), ('created_by', ?)",
                [str(SCHEMA_VERSION), _version()],
            )

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> WindowStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------

    def ingest_rows(
        self,
        chunks: Iterable[Sequence[TrafficRow]],
        *,
        windowing: str = "1d",
        source: str = "",
        replace: bool = False,
        reservoir: int = DEFAULT_RESERVOIR,
        seed: int = 0,
    ) -> IngestSummary:
        """Aggregate rows (chunk by chunk) into the store. A window already in the store is
        refused unless ``replace`` (then deleted first, in the same transaction)."""
        import pyarrow as pa

        if reservoir < 0:
            raise ConfigError(f"reservoir {reservoir}: expected a number >= 0")
        con = self.con
        stage_types = _stage_types()
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(
                "CREATE TEMP TABLE stage (win VARCHAR, branch VARCHAR, intent VARCHAR, "
                "concept VARCHAR, slices VARCHAR[], nil BOOLEAN, unknown BOOLEAN, "
                "thumbs_down BOOLEAN, thumbs_up BOOLEAN, regenerated BOOLEAN, refused BOOLEAN, "
                "latency_ms DOUBLE, cost DOUBLE, ts TIMESTAMPTZ)"
            )
            con.execute(
                "CREATE TEMP TABLE stage_emb (win VARCHAR, branch VARCHAR, record_id VARCHAR, "
                "model VARCHAR, h UBIGINT, embedding DOUBLE[])"
            )
            for chunk in chunks:
                rows = []
                emb_rows = []
                for r in chunk:
                    rec = r.record
                    fb = r.feedback
                    thumbs = fb.get("thumbs")
                    concepts = r.concepts
                    rows.append((
                        r.window, r.branch, r.intent or "",
                        concepts[0] if concepts else (r.unknown_concepts[0] if r.unknown_concepts else NIL_BRANCH),
                        [f"{k}={v}" for k, v in sorted(r.slices.items())] if r.slices else [],
                        not concepts and not r.unknown_concepts,
                        bool(r.unknown_concepts) and not concepts,
                        thumbs == "down", thumbs == "up", fb.get("regenerated") is True,
                        _refused(rec), _latency(rec), _cost(rec), r.timestamp,
                    ))  # fmt: skip
                    if r.embedding is not None and reservoir:
                        emb_rows.append(
                            (
                                r.window,
                                r.branch,
                                r.record_id,
                                r.embedding_model,
                                _hash(r.record_id, seed),
                                list(r.embedding),
                            )
                        )
                if rows:
                    cols = list(zip(*rows, strict=True))
                    stage_tbl = pa.table(  # noqa: F841 - read by DuckDB below
                        {
                            c: pa.array(v, type=stage_types.get(c))
                            for c, v in zip(_STAGE_COLUMNS, cols, strict=True)
                        }
                    )
                    con.execute("INSERT INTO stage SELECT * FROM stage_tbl")
                if emb_rows:
                    ecols = list(zip(*emb_rows, strict=True))
                    names = ("window", "branch", "record_id", "model", "h", "embedding")
                    emb_tbl = pa.table(  # noqa: F841 - read by DuckDB below
                        {
                            c: pa.array(v, type=pa.uint64() if c == "h" else None)
                            for c, v in zip(names, ecols, strict=True)
                        }
                    )
                    con.execute("INSERT INTO stage_emb SELECT * FROM emb_tbl")
            summary = self._commit_stage(windowing, source, replace, reservoir)
            con.execute("DROP TABLE stage")
            con.execute("DROP TABLE stage_emb")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return summary

    def _commit_stage(self, windowing: str, source: str, replace: bool, reservoir: int) -> IngestSummary:
        con = self.con
        found = dict(con.execute("SELECT win, count(*) FROM stage GROUP BY win ORDER BY win").fetchall())
        present = {
            w
            for (w,) in con.execute(
                "SELECT win FROM windows WHERE win IN (SELECT DISTINCT win FROM stage)"
            ).fetchall()
        }
        if present and not replace:
            raise InputError(
                f"{self.path}: window(s) {', '.join(sorted(present))} already in the store; "
                "ingesting them again would count them twice (use --replace to replace them)"
            )
        models = con.execute(
            "SELECT win, branch, count(DISTINCT model) FROM "
            "(SELECT win, branch, model FROM stage_emb UNION ALL "
            " SELECT win, branch, model FROM embeddings WHERE win NOT IN (SELECT win FROM stage)) "
            "GROUP BY win, branch HAVING count(DISTINCT model) > 1"
        ).fetchall()
        if models:
            w, b, _ = models[0]
            raise InputError(
                f"window {w}, branch {b}: embeddings of more than one embedding_model; "
                "embeddings of different models are never compared (split the traffic by model)"
            )
        for table in ("windows", "sums", "concepts", "latency", "embeddings"):
            con.execute(f"DELETE FROM {table} WHERE win IN (SELECT DISTINCT win FROM stage)")
        con.execute(
            """
            INSERT INTO sums
            WITH exploded AS (
              SELECT *, '(all)' AS slice FROM stage
              UNION ALL
              SELECT * EXCLUDE (s), s AS slice FROM (SELECT *, unnest(slices) AS s FROM stage))
            SELECT win, branch, intent, slice, count(*), count(*) FILTER (nil),
                   count(*) FILTER (unknown), count(*) FILTER (thumbs_down),
                   count(*) FILTER (thumbs_up), count(*) FILTER (regenerated),
                   count(*) FILTER (refused), count(latency_ms), coalesce(sum(latency_ms), 0),
                   count(cost), coalesce(sum(cost), 0)
            FROM exploded GROUP BY ALL
            """
        )
        con.execute(
            "INSERT INTO concepts SELECT win, branch, intent, concept, count(*) FROM stage GROUP BY ALL"
        )
        con.execute(
            "INSERT INTO latency SELECT win, branch, intent, latency_ms FROM stage "
            "WHERE latency_ms IS NOT NULL"
        )
        con.execute(
            "INSERT INTO embeddings SELECT win, branch, record_id, model, h, embedding FROM stage_emb "
            "QUALIFY row_number() OVER (PARTITION BY win, branch ORDER BY h, record_id) <= ?",
            [reservoir],
        )
        now = datetime.now(timezone.utc)
        con.execute(
            "INSERT INTO windows SELECT win, ?, count(*), ?, min(ts), max(ts), ? FROM stage GROUP BY win",
            [windowing, source, now],
        )
        return IngestSummary(
            windows={str(k): int(v) for k, v in found.items()}, replaced=tuple(sorted(present))
        )

    # -- reading ---------------------------------------------------------------------------

    def windows(self) -> list[str]:
        """The window keys in the store, in order."""
        return [w for (w,) in self.con.execute("SELECT win FROM windows ORDER BY win").fetchall()]

    def require(self, window: str) -> None:
        if window not in self.windows():
            have = ", ".join(self.windows()) or "none"
            raise InputError(f"{self.path}: no window {window!r} in the store (windows: {have})")

    def branch_counts(self, window: str) -> dict[str, int]:
        """Rows per branch in ``window`` (slice ``(all)``: every row once)."""
        return {
            b: int(n)
            for b, n in self.con.execute(
                "SELECT branch, sum(n) FROM sums WHERE win = ? AND slice = '(all)' GROUP BY branch ORDER BY branch",
                [window],
            ).fetchall()
        }

    def concept_counts(self, window: str) -> dict[tuple[str, str], int]:
        """Rows per (branch, first linked concept) in ``window``."""
        return {
            (b, c): int(n)
            for b, c, n in self.con.execute(
                "SELECT branch, concept, sum(n) FROM concepts WHERE win = ? GROUP BY ALL ORDER BY ALL",
                [window],
            ).fetchall()
        }

    def sums(self, windows: Sequence[str], *, by: Sequence[str] = ("branch",)) -> list[dict[str, Any]]:
        """The mergeable sums of ``windows`` merged, grouped by ``by`` (any of ``window``,
        ``branch``, ``intent``, ``slice``; without ``slice`` only the ``(all)`` slice)."""
        allowed = {"win", "branch", "intent", "slice"}
        bad = [b for b in by if b not in allowed]
        if bad:
            raise ConfigError(f"group by {bad}: expected any of {sorted(allowed)}")
        keys = ", ".join(by)
        where = "" if "slice" in by else " AND slice = '(all)'"
        cols = "n, nil, unknown, thumbs_down, thumbs_up, regenerated, refused, latency_n, latency_sum, cost_n, cost_sum"
        agg = ", ".join(f"sum({c}) AS {c}" for c in cols.split(", "))
        marks = ", ".join("?" for _ in windows) or "NULL"
        sql = f"SELECT {keys + ', ' if keys else ''}{agg} FROM sums WHERE win IN ({marks}){where}"
        if keys:
            sql += f" GROUP BY {keys} ORDER BY {keys}"
        cur = self.con.execute(sql, list(windows))
        names = [d[0] for d in cur.description]
        out = []
        for row in cur.fetchall():
            d = dict(zip(names, row, strict=True))
            for c in cols.split(", "):
                d[c] = float(d[c]) if c.endswith("_sum") else int(d[c])
            out.append(d)
        return out

    def latency_quantiles(
        self, windows: Sequence[str], qs: Sequence[float] = (0.5, 0.95), *, branch: str | None = None
    ) -> dict[float, float | None]:
        """Exact quantiles (linear interpolation, as ``numpy.quantile``) of the raw latency
        column over ``windows`` merged; ``None`` for no rows."""
        marks = ", ".join("?" for _ in windows) or "NULL"
        params: list[Any] = list(windows)
        sql = f"FROM latency WHERE win IN ({marks})"
        if branch is not None:
            sql += " AND branch = ?"
            params.append(branch)
        out: dict[float, float | None] = {}
        for q in qs:
            (v,) = self.con.execute(
                f"SELECT quantile_cont(latency_ms, {float(q)!r}) {sql}", params
            ).fetchone()
            out[q] = None if v is None else float(v)
        return out

    def embeddings(self, window: str, branch: str | None = None) -> tuple[Any, str | None]:
        """The stored embedding sample of ``window`` (one branch or all) as an (n, d) float
        array, in a stable order, and its model (``None`` when there are none)."""
        import numpy as np

        sql = "SELECT embedding, model FROM embeddings WHERE win = ?"
        params: list[Any] = [window]
        if branch is not None:
            sql += " AND branch = ?"
            params.append(branch)
        rows = self.con.execute(sql + " ORDER BY branch, h, record_id", params).fetchall()
        if not rows:
            return np.zeros((0, 0)), None
        models = {m for _, m in rows}
        if len(models) > 1:
            raise InputError(
                f"window {window}: embeddings of models {sorted(models)}; embeddings of different "
                "models are never compared"
            )
        dims = {len(e) for e, _ in rows}
        if len(dims) > 1:
            raise InputError(f"window {window}: embeddings of different lengths {sorted(dims)}")
        return np.asarray([e for e, _ in rows], dtype=float), rows[0][1]

    def window_info(self) -> list[dict[str, Any]]:
        cur = self.con.execute(
            "SELECT win, windowing, rows, source, first_ts, last_ts FROM windows ORDER BY win"
        )
        names = [d[0] for d in cur.description]
        return [
            {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in zip(names, r, strict=True)}
            for r in cur.fetchall()
        ]


def _version() -> str:
    from kg_rageval import __version__

    return str(__version__)


def ingest(
    store: WindowStore,
    traffic: str | Path,
    ontology: Any,
    *,
    traces: bool = False,
    window: str = "1d",
    branch_depth: int = 1,
    branches: list[str] | None = None,
    replace: bool = False,
    reservoir: int = DEFAULT_RESERVOIR,
    seed: int = 0,
) -> IngestSummary:
    """Read a production traffic file into ``store``: records JSONL (:func:`iter_traffic`,
    chunk by chunk) or, with ``traces``, an OTLP / OpenInference trace file
    (:func:`records_from_traces`, one record per trace)."""
    windowing = Windowing.parse(window)
    chunks: Iterable[Sequence[TrafficRow]]
    if traces:
        from kg_rageval.monitor.traffic import records_from_traces, row_maker

        make = row_maker(ontology, window=windowing, branch_depth=branch_depth, branches=branches)
        chunks = [[make(r) for r in records_from_traces(traffic)]]
    else:
        chunks = iter_traffic(
            traffic, ontology, window=windowing, branch_depth=branch_depth, branches=branches
        )
    return store.ingest_rows(
        chunks, windowing=window, source=str(traffic), replace=replace, reservoir=reservoir, seed=seed
    )


ingest_records = ingest
ingest_traces = partial(ingest, traces=True)
"""``ingest(..., traces=True)``: an OTLP / OpenInference trace file into the store."""


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=str)
