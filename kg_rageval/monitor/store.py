"""The window store: one DuckDB file that keeps every ingested window as mergeable sums.

Tables (schema version :data:`SCHEMA_VERSION`, kept in ``meta``):

* ``windows``: one row per window (key, windowing, rows, source file, ingest time).
* ``sums``: per window x branch x intent x slice the mergeable sums (:data:`SUM_COLUMNS`):
  ``n`` rows, ``nil`` (links to nothing), ``unknown`` (links to an id the ontology lacks),
  ``thumbs_down`` / ``thumbs_up`` (rows with a thumbs verdict: their sum is the thumbs
  denominator), ``regen_n`` (rows that *carry* a boolean ``feedback.regenerated``) and
  ``regenerated`` (those that are true), ``refusal_n`` / ``refused`` (the same for
  ``answer.refused``): a row without the field is not a "no" and is in neither denominator;
  ``reviewed_n`` / ``reviewed_k`` (rows with a reviewer's ``review.faithful``; ``k`` faithful)
  and ``judged_n`` / ``judged_k`` (rows without a review whose ``answer.judgment`` has at least
  one claim; ``k``: every claim supported; :func:`~kg_rageval.monitor.performance.faithful_source`),
  so faithfulness = ``(reviewed_k + judged_k) / (reviewed_n + judged_n)``;
  ``latency_n`` / ``latency_sum`` (``system.latency_ms.total``) and ``cost_n`` / ``cost_sum`` /
  ``cost_sq`` (``system.cost_usd`` and its square: mean and standard deviation of any merge).
  The slice ``(all)`` holds every row once; a row with slices is counted again under each
  ``key=value`` it carries (so sum over ``(all)`` for totals).
* ``concepts``: per window x branch x intent x concept the count of rows whose *first*
  linked concept (the one that gives the branch) is that concept; NIL rows under ``(NIL)``.
  New-concept drift reads it against a golden set at drift time, so the golden set can
  change without re-ingesting.
* ``latency``: the raw per-row ``latency_ms.total`` column (window, branch, intent), so
  quantiles of any merge of windows are exact (no sketch, no error bound to state).
* ``embeddings``: a bounded sample of the query embeddings per window x branch: the
  ``reservoir`` rows with the smallest seeded hash of their record id (a bottom-k sample:
  seeded, independent of the order of the file, and the same rows on every ingest).

Ingest is columnar and in bounded memory: the file is read chunk by chunk (one ``json.loads``
per line, each record checked as :func:`~kg_rageval.monitor.traffic.to_row` checks it, with the
same errors naming file, line and field), each row becomes a cell code (window, branch, intent,
first concept, slices), a bit mask of its flags and three numbers, and every chunk is
aggregated by SQL (``GROUP BY`` cell) into partial sums; the embedding stage keeps only the
bottom-k per window and branch. Nothing is written to the store until the whole input has
been read and checked. Then each window is committed in its own transaction: a window is never
counted twice, never half-written and never half-replaced. The aggregation is plain SQL over
the partial sums (``GROUP BY`` window, branch, intent, slice), so the same statements run on
any SQL engine over the staged partials; the sums of disjoint inputs merge by addition.

Ingesting a window that the store already holds is refused (:class:`InputError`) unless
``replace=True``, which deletes the old window first, in that window's transaction.
A store of an older schema is refused with a message saying to re-ingest into a new store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.monitor.staging import (
    FLAG_COLUMNS,
    StageValues,
    _sql_stage,
    record_values_maker,
    row_values,
)
from kg_rageval.monitor.traffic import TrafficRow, Windowing

SCHEMA_VERSION = 2
ALL_SLICES = "(all)"
DEFAULT_RESERVOIR = 2000
CHUNK_ROWS = 65536
ENGINES = ("auto", "sql", "python")
"""How :func:`ingest` reads a records file: ``sql`` (DuckDB's ``read_json``, when every record is
of the plain shape :func:`~kg_rageval.monitor.staging._sql_stage` checks; else the record-by-record path), ``python``
(record by record), ``auto`` (``sql`` for files of :data:`SQL_MIN_BYTES` or more)."""
SQL_MIN_BYTES = 8 << 20
SQL_MEMORY_LIMIT = "1GB"
"""DuckDB's memory limit while the SQL path stages a file (it spills to disk beyond it)."""

SUM_COLUMNS = ("n", *FLAG_COLUMNS, "latency_n", "latency_sum", "cost_n", "cost_sum", "cost_sq")
"""The mergeable sums of a ``sums`` row (module docstring); ``*_sum`` / ``*_sq`` are floats."""

_FLAGS = FLAG_COLUMNS
_FLOATS = {"latency_sum", "cost_sum", "cost_sq"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS windows (
  win VARCHAR PRIMARY KEY, windowing VARCHAR, rows BIGINT, source VARCHAR,
  first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ, ingested_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS sums (
  win VARCHAR, branch VARCHAR, intent VARCHAR, slice VARCHAR,
  n BIGINT, nil BIGINT, unknown BIGINT, thumbs_down BIGINT, thumbs_up BIGINT,
  regen_n BIGINT, regenerated BIGINT, refusal_n BIGINT, refused BIGINT,
  reviewed_n BIGINT, reviewed_k BIGINT, judged_n BIGINT, judged_k BIGINT,
  latency_n BIGINT, latency_sum DOUBLE, cost_n BIGINT, cost_sum DOUBLE, cost_sq DOUBLE);
CREATE TABLE IF NOT EXISTS concepts (
  win VARCHAR, branch VARCHAR, intent VARCHAR, concept VARCHAR, n BIGINT);
CREATE TABLE IF NOT EXISTS latency (
  win VARCHAR, branch VARCHAR, intent VARCHAR, latency_ms DOUBLE);
CREATE TABLE IF NOT EXISTS embeddings (
  win VARCHAR, branch VARCHAR, record_id VARCHAR, model VARCHAR, h UBIGINT,
  embedding DOUBLE[]);
"""

# the partial sums of one chunk, by cell code (SQL: the chunk's rows are ``chunk_tbl``)
_PART_SQL = (
    "INSERT INTO stage_part SELECT code, count(*), "
    + ", ".join(f"sum((flags >> {i}) & 1)" for i in range(len(_FLAGS)))
    + ", count(lat), coalesce(sum(lat), 0), count(cost), coalesce(sum(cost), 0), "
    "coalesce(sum(cost * cost), 0), min(ts), max(ts) FROM chunk_tbl GROUP BY code"
)


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:  # pragma: no cover - the monitor extra
        raise ConfigError("the window store needs duckdb: pip install 'kg-rageval[monitor]'") from None
    return duckdb


def _hash(record_id: str, seed: int) -> int:
    digest = hashlib.blake2b(f"{seed}\x1f{record_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


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
                self.con.close()
                raise InputError(
                    f"{self.path}: written by a newer kg-rageval (store schema {version}, this one "
                    f"reads up to {SCHEMA_VERSION}); upgrade kg-rageval to read it"
                )
            if version < 1:
                self.con.close()
                raise InputError(f"{self.path}: store without a schema version; not a window store")
            if version < SCHEMA_VERSION:
                self.con.close()
                raise InputError(
                    f"{self.path}: written by an older kg-rageval (store schema {version}, this one "
                    f"reads {SCHEMA_VERSION}): it does not record which rows carried the regeneration "
                    "and refusal fields, nor the faithfulness and cost sums the guardrails need; "
                    "ingest the traffic again into a new store"
                )
        elif tables:
            self.con.close()
            raise InputError(f"{self.path}: a DuckDB file that is not a window store (no meta table)")
        elif read_only:
            self.con.close()
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
        refused unless ``replace`` (then deleted first, in that window's transaction)."""
        return self.ingest_values(
            ([row_values(r) for r in chunk] for chunk in chunks),
            windowing=windowing, source=source, replace=replace, reservoir=reservoir, seed=seed,
        )  # fmt: skip

    def ingest_values(
        self,
        chunks: Iterable[Sequence[StageValues]],
        *,
        windowing: str = "1d",
        source: str = "",
        replace: bool = False,
        reservoir: int = DEFAULT_RESERVOIR,
        seed: int = 0,
    ) -> IngestSummary:
        """:meth:`ingest_rows` of stage values (:func:`row_values`, :func:`record_values_maker`)."""
        if reservoir < 0:
            raise ConfigError(f"reservoir {reservoir}: expected a number >= 0")
        stage = _Stage(self.con, reservoir, seed)
        try:
            for chunk in chunks:
                stage.add(chunk)
            return stage.commit(self.path, windowing, source, replace)
        finally:
            stage.drop()

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
        agg = ", ".join(f"sum({c}) AS {c}" for c in SUM_COLUMNS)
        marks = ", ".join("?" for _ in windows) or "NULL"
        sql = f"SELECT {keys + ', ' if keys else ''}{agg} FROM sums WHERE win IN ({marks}){where}"
        if keys:
            sql += f" GROUP BY {keys} ORDER BY {keys}"
        cur = self.con.execute(sql, list(windows))
        names = [d[0] for d in cur.description]
        out = []
        for row in cur.fetchall():
            d = dict(zip(names, row, strict=True))
            for c in SUM_COLUMNS:
                d[c] = float(d[c]) if c in _FLOATS else int(d[c])
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

    def latency_values(self, windows: Sequence[str], *, branch: str | None = None) -> Any:
        """The raw latency column of ``windows`` merged (one branch or all), sorted, as a
        float array: what an exact quantile and its order-statistic interval read."""
        import numpy as np

        marks = ", ".join("?" for _ in windows) or "NULL"
        params: list[Any] = list(windows)
        sql = f"SELECT latency_ms FROM latency WHERE win IN ({marks})"
        if branch is not None:
            sql += " AND branch = ?"
            params.append(branch)
        got = self.con.execute(sql + " ORDER BY latency_ms", params).fetchnumpy()["latency_ms"]
        return np.asarray(got, dtype=float)

    def windowing(self) -> str | None:
        """The windowing of the store's windows (``1d``, ``release``, ...); ``None`` when empty
        or mixed."""
        got = {w for (w,) in self.con.execute("SELECT DISTINCT windowing FROM windows").fetchall()}
        return next(iter(got)) if len(got) == 1 else None

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


@dataclass
class StagedPart:
    """One partition's staged partial sums as plain tables (:meth:`_Stage.export`)."""

    keys: list[tuple[Any, ...]]
    part: Any
    lat: Any
    emb: Any
    models: dict[tuple[str, str], set[str]]
    n_records: int = 0
    ids: Any = None
    cpu_seconds: float = 0.0


_STAGE_TABLES = (
    "stage_part",
    "stage_lat",
    "stage_emb",
    "stage_keys",
    "stage_cell",
    "stage_latw",
    "stage_rows",
    "stage_first",
)


class _Stage:
    """The columnar staging of one ingest (temporary tables; the store is untouched until
    :meth:`commit`)."""

    def __init__(self, con: Any, reservoir: int, seed: int) -> None:
        self.con, self.reservoir, self.seed = con, reservoir, seed
        self.index: dict[tuple[Any, ...], int] = {}
        self.models: dict[tuple[str, str], set[str]] = {}
        cols = ", ".join(f"{c} {'DOUBLE' if c in _FLOATS else 'BIGINT'}" for c in SUM_COLUMNS)
        for t in _STAGE_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {t}")
        con.execute(f"CREATE TEMP TABLE stage_part (code INTEGER, {cols}, ts_min BIGINT, ts_max BIGINT)")
        con.execute("CREATE TEMP TABLE stage_lat (code INTEGER, latency_ms DOUBLE)")
        con.execute(
            "CREATE TEMP TABLE stage_emb (win VARCHAR, branch VARCHAR, record_id VARCHAR, "
            "model VARCHAR, h UBIGINT, embedding DOUBLE[])"
        )

    def add(self, chunk: Sequence[StageValues]) -> None:
        import pyarrow as pa

        if not chunk:
            return
        index = self.index
        codes: list[int] = []
        flags: list[int] = []
        lats: list[float | None] = []
        costs: list[float | None] = []
        tss: list[int] = []
        emb_rows: list[tuple[Any, ...]] = []
        for key, f, lat, cost, ts, emb in chunk:
            code = index.get(key)
            if code is None:
                code = index[key] = len(index)
            codes.append(code)
            flags.append(f)
            lats.append(lat)
            costs.append(cost)
            tss.append(ts)
            if emb is not None:
                emb_rows.append((key[0], key[1], *emb))
        chunk_tbl = pa.table(  # noqa: F841 - read by DuckDB below
            {
                "code": pa.array(codes, pa.int32()),
                "flags": pa.array(flags, pa.int32()),
                "lat": pa.array(lats, pa.float64()),
                "cost": pa.array(costs, pa.float64()),
                "ts": pa.array(tss, pa.int64()),
            }
        )
        con = self.con
        con.execute(_PART_SQL)
        con.execute("INSERT INTO stage_lat SELECT code, lat FROM chunk_tbl WHERE lat IS NOT NULL")
        if emb_rows and self.reservoir:
            for w, b, _, model, _ in emb_rows:
                self.models.setdefault((w, b), set()).add(model)
            seed = self.seed
            emb_tbl = pa.table(  # noqa: F841 - read by DuckDB below
                {
                    "win": pa.array([e[0] for e in emb_rows], pa.string()),
                    "branch": pa.array([e[1] for e in emb_rows], pa.string()),
                    "record_id": pa.array([e[2] for e in emb_rows], pa.string()),
                    "model": pa.array([e[3] for e in emb_rows], pa.string()),
                    "h": pa.array([_hash(e[2], seed) for e in emb_rows], pa.uint64()),
                    "embedding": pa.array([e[4] for e in emb_rows], pa.list_(pa.float64())),
                }
            )
            con.execute("INSERT INTO stage_emb SELECT * FROM emb_tbl")
            # keep only the bottom-k of every (window, branch): the sample stays bounded
            con.execute(
                "CREATE OR REPLACE TEMP TABLE stage_emb AS SELECT * FROM stage_emb QUALIFY "
                "row_number() OVER (PARTITION BY win, branch ORDER BY h, record_id) <= ?",
                [self.reservoir],
            )

    def export(self) -> StagedPart:
        """The staged partial sums as plain tables (what a Dask worker sends back): the cell
        keys (code = position), the sums per code, the latencies in file order, the bottom-k
        embedding sample and the models per window and branch."""
        con = self.con
        agg = ", ".join(f"sum({c})::{'DOUBLE' if c in _FLOATS else 'BIGINT'} AS {c}" for c in SUM_COLUMNS)
        part = con.sql(
            f"SELECT code, {agg}, min(ts_min) AS ts_min, max(ts_max) AS ts_max FROM stage_part GROUP BY code"
        ).to_arrow_table()
        lat = con.sql("SELECT code, latency_ms FROM stage_lat").to_arrow_table()
        emb = con.sql("SELECT * FROM stage_emb").to_arrow_table()
        return StagedPart(list(self.index), part, lat, emb, {k: set(v) for k, v in self.models.items()})

    def absorb(self, got: StagedPart) -> None:
        """Add a partition's :meth:`export` to this stage (its codes renumbered to this stage's):
        sums add, latencies append in order, the embedding samples join and are cut to the
        bottom-k again (the bottom-k of a union is the bottom-k of the parts' bottom-ks)."""
        import numpy as np
        import pyarrow as pa

        index = self.index
        remap = np.asarray([index.setdefault(k, len(index)) for k in got.keys] or [0], dtype=np.int32)
        con = self.con
        part = got.part.set_column(  # noqa: F841 - read by DuckDB below
            0, "code", pa.array(remap[got.part.column("code").to_numpy()], pa.int32())
        )
        lat = got.lat.set_column(  # noqa: F841 - read by DuckDB below
            0, "code", pa.array(remap[got.lat.column("code").to_numpy()], pa.int32())
        )
        con.execute("INSERT INTO stage_part SELECT * FROM part")
        con.execute("INSERT INTO stage_lat SELECT * FROM lat")
        for wb, names in got.models.items():
            self.models.setdefault(wb, set()).update(names)
        if got.emb.num_rows and self.reservoir:
            emb = got.emb  # noqa: F841 - read by DuckDB below
            con.execute("INSERT INTO stage_emb SELECT * FROM emb")
            con.execute(
                "CREATE OR REPLACE TEMP TABLE stage_emb AS SELECT * FROM stage_emb QUALIFY "
                "row_number() OVER (PARTITION BY win, branch ORDER BY h, record_id) <= ?",
                [self.reservoir],
            )

    def drop(self) -> None:
        for t in _STAGE_TABLES:
            self.con.execute(f"DROP TABLE IF EXISTS {t}")

    def commit(self, path: Path, windowing: str, source: str, replace: bool) -> IngestSummary:
        import pyarrow as pa

        con = self.con
        keys = list(self.index)
        key_tbl = pa.table(  # noqa: F841 - read by DuckDB below
            {
                "code": pa.array(range(len(keys)), pa.int32()),
                "win": pa.array([k[0] for k in keys], pa.string()),
                "branch": pa.array([k[1] for k in keys], pa.string()),
                "intent": pa.array([k[2] for k in keys], pa.string()),
                "concept": pa.array([k[3] for k in keys], pa.string()),
                "slices": pa.array([list(k[4]) for k in keys], pa.list_(pa.string())),
            }
        )
        con.execute("CREATE TEMP TABLE stage_keys AS SELECT * FROM key_tbl")
        agg = ", ".join(f"sum({c}) AS {c}" for c in SUM_COLUMNS)
        con.execute(
            f"CREATE TEMP TABLE stage_cell AS SELECT k.win, k.branch, k.intent, k.concept, k.slices, p.* "
            f"EXCLUDE (code) FROM (SELECT code, {agg}, min(ts_min) AS ts_min, max(ts_max) AS ts_max "
            "FROM stage_part GROUP BY code) p JOIN stage_keys k USING (code)"
        )
        con.execute(
            "CREATE TEMP TABLE stage_latw AS SELECT k.win, k.branch, k.intent, s.latency_ms "
            "FROM stage_lat s JOIN stage_keys k USING (code) ORDER BY k.win"
        )
        return _commit_cells(con, path, windowing, source, replace, self.models)


def _commit_cells(
    con: Any,
    path: Path,
    windowing: str,
    source: str,
    replace: bool,
    models: Mapping[tuple[str, str], set[str]],
) -> IngestSummary:
    """Write the staged cells (``stage_cell``), latencies (``stage_latw``) and embedding sample
    (``stage_emb``) into the store, one transaction per window."""
    found = {
        str(w): int(n)
        for w, n in con.execute("SELECT win, sum(n) FROM stage_cell GROUP BY win ORDER BY win").fetchall()
    }
    present = {
        w
        for (w,) in con.execute(
            "SELECT win FROM windows WHERE win IN (SELECT win FROM stage_cell)"
        ).fetchall()
    }
    if present and not replace:
        raise InputError(
            f"{path}: window(s) {', '.join(sorted(present))} already in the store; "
            "ingesting them again would count them twice (use --replace to replace them)"
        )
    for (w, b), names in sorted(models.items()):
        if len(names) > 1:
            raise InputError(
                f"window {w}, branch {b}: embeddings of more than one embedding_model; "
                "embeddings of different models are never compared (split the traffic by model)"
            )
    sums = ", ".join(f"sum({c})" for c in SUM_COLUMNS)
    now = datetime.now(timezone.utc)
    for w in found:
        con.execute("BEGIN TRANSACTION")
        try:
            for table in ("windows", "sums", "concepts", "latency", "embeddings"):
                con.execute(f"DELETE FROM {table} WHERE win = ?", [w])
            con.execute(
                f"""
                INSERT INTO sums
                WITH c AS (SELECT * FROM stage_cell WHERE win = ?),
                exploded AS (
                  SELECT *, '(all)' AS slice FROM c
                  UNION ALL
                  SELECT * EXCLUDE (s), s AS slice FROM (SELECT *, unnest(slices) AS s FROM c))
                SELECT win, branch, intent, slice, {sums}
                FROM exploded GROUP BY win, branch, intent, slice
                """,
                [w],
            )
            con.execute(
                "INSERT INTO concepts SELECT win, branch, intent, concept, sum(n) FROM stage_cell "
                "WHERE win = ? GROUP BY ALL",
                [w],
            )
            con.execute(
                "INSERT INTO latency SELECT win, branch, intent, latency_ms FROM stage_latw WHERE win = ?",
                [w],
            )
            con.execute(
                "INSERT INTO embeddings SELECT win, branch, record_id, model, h, embedding "
                "FROM stage_emb WHERE win = ?",
                [w],
            )
            con.execute(
                "INSERT INTO windows SELECT win, ?, sum(n), ?, to_timestamp(0) + to_microseconds(min(ts_min)), "
                "to_timestamp(0) + to_microseconds(max(ts_max)), ? FROM stage_cell WHERE win = ? GROUP BY win",
                [windowing, source, now, w],
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return IngestSummary(windows=found, replaced=tuple(sorted(present)))


def _version() -> str:
    from kg_rageval import __version__

    return str(__version__)


def ingest(
    store: WindowStore,
    traffic: str | Path | Sequence[str | Path],
    ontology: Any,
    *,
    traces: bool = False,
    window: str = "1d",
    branch_depth: int = 1,
    branches: list[str] | None = None,
    replace: bool = False,
    reservoir: int = DEFAULT_RESERVOIR,
    seed: int = 0,
    chunk_rows: int = CHUNK_ROWS,
    engine: str = "auto",
    client: Any = None,
    partitions: int | None = None,
) -> IngestSummary:
    """Read a production traffic file into ``store``: records JSONL (chunk by chunk, checked
    as :func:`~kg_rageval.monitor.traffic.iter_traffic` checks them, no row object built) or, with ``traces``, an OTLP / OpenInference trace file
    (:func:`records_from_traces`, one record per trace).

    ``traffic`` may be several records files: read in the order given, as one input (one
    ingest, one transaction per window). ``client`` (a ``distributed.Client``): the records
    files are split into line-aligned byte ranges (``partitions`` of them, default twice the
    workers' threads), each staged on a worker, and the partial sums merged here by addition
    (:mod:`kg_rageval.monitor.partitioned`); the store written is the in-process one."""
    windowing = Windowing.parse(window)
    several = not isinstance(traffic, (str, Path))
    files = [Path(t) for t in traffic] if not isinstance(traffic, (str, Path)) else [Path(traffic)]
    if several and traces:
        raise ConfigError("--traces reads one trace file at a time")
    if client is not None and not traces:
        from kg_rageval.monitor.partitioned import ingest_partitioned

        summary = ingest_partitioned(
            store, files, ontology, client, stage_cls=_Stage, source=source_name(files),
            windowing=windowing, window=window,
            branch_depth=branch_depth, branches=branches, replace=replace, reservoir=reservoir,
            seed=seed, chunk_rows=chunk_rows, partitions=partitions,
        )  # fmt: skip
        if summary is not None:
            return summary
        # a bad input (or one a partition cannot read exactly): in-process, which names the error
    if several:
        from itertools import chain

        from kg_rageval.records import iter_record_chunks

        stage_values = record_values_maker(
            ontology, window=windowing, branch_depth=branch_depth, branches=branches
        )
        chained = chain.from_iterable(iter_record_chunks(f, chunk_rows) for f in files)
        return store.ingest_values(
            ([stage_values(r) for r in chunk] for chunk in chained), windowing=window,
            source=source_name(files), replace=replace, reservoir=reservoir, seed=seed,
        )  # fmt: skip
    assert isinstance(traffic, (str, Path))
    if traces:
        from kg_rageval.monitor.traffic import records_from_traces, row_maker

        make = row_maker(ontology, window=windowing, branch_depth=branch_depth, branches=branches)
        return store.ingest_rows(
            [[make(r) for r in records_from_traces(traffic)]], windowing=window, source=str(traffic),
            replace=replace, reservoir=reservoir, seed=seed,
        )  # fmt: skip
    if engine not in ENGINES:
        raise ConfigError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    path = Path(traffic)
    if (
        engine != "python"
        and windowing.width is not None
        and path.suffix != ".gz"
        and (engine == "sql" or (path.exists() and path.stat().st_size >= SQL_MIN_BYTES))
    ):
        summary = _sql_ingest(store, path, ontology, windowing, window, branch_depth, branches, replace)
        if summary is not None:
            return summary
    from kg_rageval.records import iter_record_chunks

    values = record_values_maker(ontology, window=windowing, branch_depth=branch_depth, branches=branches)
    chunks = ([values(r) for r in chunk] for chunk in iter_record_chunks(traffic, chunk_rows))
    return store.ingest_values(
        chunks, windowing=window, source=str(traffic), replace=replace, reservoir=reservoir, seed=seed
    )


def source_name(files: Sequence[str | Path]) -> str:
    """The ``windows.source`` of an ingest of ``files`` (their paths, comma-separated)."""
    return ", ".join(str(f) for f in files)


def _sql_ingest(
    store: WindowStore,
    path: Path,
    ontology: Any,
    windowing: Windowing,
    window: str,
    branch_depth: int,
    branches: list[str] | None,
    replace: bool,
) -> IngestSummary | None:
    """:func:`ingest` by :func:`_sql_stage`; ``None`` when the file is not for that path."""
    from functools import lru_cache

    from kg_rageval.audit.config import CoverageConfig
    from kg_rageval.audit.pernode import make_branch_of
    from kg_rageval.ontology import IdResolver

    con = store.con
    resolve = lru_cache(maxsize=1 << 16)(IdResolver(ontology).node_id)
    branch_of = make_branch_of(ontology, CoverageConfig(branch_depth=branch_depth, branches=branches))
    con.execute("SET enable_progress_bar = false")
    # bounded memory: DuckDB spills its staging to disk beyond this (restored afterwards)
    (limit,) = con.execute("SELECT current_setting('memory_limit')").fetchone()
    (order,) = con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()
    con.execute(f"SET memory_limit = '{SQL_MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")
    try:
        for t in _STAGE_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {t}")
        if not _sql_stage(con, path, windowing, resolve, branch_of):
            return None
        con.execute(
            "CREATE TEMP TABLE stage_emb (win VARCHAR, branch VARCHAR, record_id VARCHAR, "
            "model VARCHAR, h UBIGINT, embedding DOUBLE[])"
        )
        return _commit_cells(con, store.path, window, str(path), replace, {})
    finally:
        for t in _STAGE_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {t}")
        con.execute(f"SET memory_limit = '{limit}'")
        con.execute(f"SET preserve_insertion_order = {bool(order)}")


ingest_records = ingest
ingest_traces = partial(ingest, traces=True)
"""``ingest(..., traces=True)``: an OTLP / OpenInference trace file into the store."""


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=str)
