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
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.monitor.traffic import (
    EPOCH,
    NIL_BRANCH,
    UNKNOWN_BRANCH,
    TrafficRow,
    Windowing,
)

SCHEMA_VERSION = 2
ALL_SLICES = "(all)"
DEFAULT_RESERVOIR = 2000
CHUNK_ROWS = 65536
ENGINES = ("auto", "sql", "python")
"""How :func:`ingest` reads a records file: ``sql`` (DuckDB's ``read_json``, when every record is
of the plain shape :func:`_sql_stage` checks; else the record-by-record path), ``python``
(record by record), ``auto`` (``sql`` for files of :data:`SQL_MIN_BYTES` or more)."""
SQL_MIN_BYTES = 8 << 20

SUM_COLUMNS = (
    "n", "nil", "unknown", "thumbs_down", "thumbs_up", "regen_n", "regenerated", "refusal_n",
    "refused", "reviewed_n", "reviewed_k", "judged_n", "judged_k", "latency_n", "latency_sum",
    "cost_n", "cost_sum", "cost_sq",
)  # fmt: skip
"""The mergeable sums of a ``sums`` row (module docstring); ``*_sum`` / ``*_sq`` are floats."""

# bit i of a row's flag mask: the i-th flag column of ``sums`` (nil ... judged_k)
_FLAGS = SUM_COLUMNS[1:13]
_NIL, _UNKNOWN, _TD, _TU, _REGEN_N, _REGEN, _REF_N, _REF, _REV_N, _REV_K, _JUD_N, _JUD_K = (
    1 << i for i in range(12)
)
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


def _record_flags(record: Mapping[str, Any], feedback: Mapping[str, Any]) -> int:
    """The flag bits a row's record and feedback give (thumbs, regeneration, refusal,
    faithfulness); the link bits (nil, unknown) are the caller's."""
    from kg_rageval.monitor.performance import faithful_source

    f = 0
    thumbs = feedback.get("thumbs")
    if thumbs == "down":
        f |= _TD
    elif thumbs == "up":
        f |= _TU
    regen = feedback.get("regenerated")
    if isinstance(regen, bool):
        f |= _REGEN_N | (_REGEN if regen else 0)
    answer = record.get("answer")
    if isinstance(answer, Mapping):
        refused = answer.get("refused")
        if isinstance(refused, bool):
            f |= _REF_N | (_REF if refused else 0)
    if "review" in record or (isinstance(answer, Mapping) and "judgment" in answer):
        source, ok = faithful_source(record)
        if source == "reviewed":
            f |= _REV_N | (_REV_K if ok else 0)
        elif source == "judged":
            f |= _JUD_N | (_JUD_K if ok else 0)
    return f


def _us(ts: datetime) -> int:
    """Whole microseconds since the Unix epoch (exact)."""
    delta = ts - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


# (cell key, flags, latency, cost, timestamp in us, (record id, model, embedding) or None)
StageValues = tuple[tuple[Any, ...], int, "float | None", "float | None", int, "tuple[str, str, list] | None"]


def row_values(r: TrafficRow) -> StageValues:
    """The stage values of a :class:`TrafficRow` (``ingest_rows``)."""
    concepts, unknown = r.concepts, r.unknown_concepts
    concept = concepts[0] if concepts else (unknown[0] if unknown else NIL_BRANCH)
    slices = tuple(f"{k}={v}" for k, v in sorted(r.slices.items())) if r.slices else ()
    f = _record_flags(r.record, r.feedback)
    if not concepts:
        f |= _UNKNOWN if unknown else _NIL
    emb = (r.record_id, r.embedding_model, list(r.embedding)) if r.embedding is not None else None
    key = (r.window, r.branch, r.intent or "", concept, slices)
    return key, f, _latency(r.record), _cost(r.record), _us(r.timestamp), emb


def record_values_maker(
    ontology: Any,
    *,
    window: str | Windowing = "1d",
    branch_depth: int = 1,
    branches: list[str] | None = None,
) -> Callable[[Mapping[str, Any]], StageValues]:
    """``record -> stage values`` without building a :class:`TrafficRow`: the checks of
    :func:`~kg_rageval.monitor.traffic.to_row`, in its order and with its errors (file, line,
    field), and the values :func:`row_values` gives for the row it would build."""
    from functools import lru_cache

    from kg_rageval.audit.config import CoverageConfig
    from kg_rageval.audit.pernode import make_branch_of
    from kg_rageval.monitor.traffic import _number, linked_ids, parse_timestamp
    from kg_rageval.ontology import IdResolver
    from kg_rageval.records import record_error, record_slices

    windowing = window if isinstance(window, Windowing) else Windowing.parse(window)
    resolve = lru_cache(maxsize=1 << 16)(IdResolver(ontology).node_id)
    branch_of = lru_cache(maxsize=1 << 16)(
        make_branch_of(ontology, CoverageConfig(branch_depth=branch_depth, branches=branches))
    )
    key_seconds = windowing.key_seconds
    isfinite = math.isfinite
    small = 1 << 40

    def values(record: Mapping[str, Any]) -> StageValues:
        # the common shapes of parsed JSON are checked inline (``type(x) is dict``: a parsed
        # object); anything else goes through to_row's own helpers, which raise its errors
        raw_ts = record.get("timestamp")
        if type(raw_ts) is int and -small < raw_ts < small:
            secs, us = raw_ts, raw_ts * 1_000_000
        else:
            ts = parse_timestamp(raw_ts, record)
            us = _us(ts)
            secs = int((ts - EPOCH).total_seconds())
        release = record.get("release")
        if release is not None and type(release) is not str:
            raise record_error(record, "release", "expected a string")
        labels = record.get("labels")
        pred = labels.get("predicted") if type(labels) is dict else None
        if pred is None:
            ids: Sequence[str] = linked_ids(record)
        elif type(pred) is list and all(type(p) is str for p in pred):
            ids = pred
        elif type(pred) is str:
            ids = [pred] if pred else []
        else:
            ids = linked_ids(record)
        first: str | None = None
        first_unknown: str | None = None
        for cid in ids:
            node = resolve(cid)
            if node is not None:
                first = node
                break
            if first_unknown is None:
                first_unknown = cid
        if first is not None:
            branch, concept, f = branch_of(first), first, 0
        elif first_unknown is not None:
            branch, concept, f = UNKNOWN_BRANCH, first_unknown, _UNKNOWN
        else:
            branch, concept, f = NIL_BRANCH, NIL_BRANCH, _NIL
        emb = record.get("embedding")
        if emb is not None:
            model = record.get("embedding_model")
            if (
                not isinstance(emb, list)
                or not emb
                or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and isfinite(x) for x in emb
                )
            ):
                raise record_error(record, "embedding", "expected a non-empty list of finite numbers")
            if not isinstance(model, str) or not model:
                raise record_error(
                    record, "embedding_model", "an embedding needs the name and version of its model"
                )
        feedback = record.get("feedback") or {}
        if type(feedback) is not dict and not isinstance(feedback, Mapping):
            raise record_error(record, "feedback", "expected an object")
        thumbs = feedback.get("thumbs")
        if thumbs is None:
            pass
        elif thumbs == "down":
            f |= _TD
        elif thumbs == "up":
            f |= _TU
        else:
            raise record_error(record, "feedback.thumbs", f"expected 'up', 'down' or null, found {thumbs!r}")
        intent = record.get("intent")
        key = key_seconds(secs, release)
        if key is None:
            raise record_error(record, "release", "--window release needs a release on every record")
        sl = record.get("slices")
        slices: tuple[str, ...] = ()
        if sl:
            if type(sl) is dict and all(type(v) is str for v in sl.values()):
                slices = tuple(f"{k}={v}" for k, v in sorted(sl.items()))
            else:
                slices = tuple(
                    f"{k.removeprefix('slice:')}={v}" for k, v in sorted(record_slices(record).items())
                )
        conf = record.get("confidence")
        if conf is not None:
            _number(record, "confidence", conf, 0.0, 1.0)
        regen = feedback.get("regenerated")
        if regen is True:
            f |= _REGEN_N | _REGEN
        elif regen is False:
            f |= _REGEN_N
        answer = record.get("answer")
        if answer is not None or "review" in record:
            f |= _record_flags(record, {})
        system = record.get("system")
        lat = cost = None
        if type(system) is dict:
            lt = system.get("latency_ms")
            if type(lt) is dict:
                lt = lt.get("total")
            if type(lt) is float or type(lt) is int:
                lat = float(lt) if lt >= 0 and isfinite(lt) else None
            elif lt is not None:
                lat = _latency(record)
            c = system.get("cost_usd")
            if type(c) is float or type(c) is int:
                cost = float(c) if c >= 0 and isfinite(c) else None
            elif c is not None:
                cost = _cost(record)
        elif system is not None:
            lat, cost = _latency(record), _cost(record)
        cell = (key, branch, intent if isinstance(intent, str) and intent else "", concept, slices)
        return (
            cell, f, lat, cost, us,
            (str(record.get("id")), model, [float(x) for x in emb]) if emb is not None else None,
        )  # fmt: skip

    return values


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


# -- the SQL path: DuckDB reads the JSONL itself -----------------------------------------------

_NUM = "('UBIGINT', 'BIGINT', 'DOUBLE')"
_TS_RE = r"\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)"
_READ_COLUMNS = {
    "id": "JSON", "timestamp": "JSON", "intent": "JSON", "release": "JSON", "slices": "JSON",
    "mentions": "JSON", "embedding": "JSON", "confidence": "JSON",
    # an object of known leaves: a value that is not an object (or null) makes DuckDB's reader
    # fail, and the file goes record by record; a leaf that is null reads as missing
    "labels": "STRUCT(predicted JSON)",
    "feedback": "STRUCT(thumbs JSON, regenerated JSON)",
    "system": "STRUCT(latency_ms JSON, cost_usd JSON)",
    "answer": "STRUCT(refused JSON, judgment JSON)",
    "review": "STRUCT(faithful JSON)",
}  # fmt: skip


def _sql_read(path: str, width: int, max_object: int) -> str:
    cols = ", ".join(f"'{c}': '{t}'" for c, t in _READ_COLUMNS.items())
    src = path.replace("'", "''")
    return f"""
    CREATE TEMP TABLE stage_rows AS
    WITH r AS (
      SELECT *, row_number() OVER () AS rn,
        json_type(id) AS t_id, json_type("timestamp") AS t_ts,
        json_type(labels.predicted) AS t_pred, json_type(slices) AS t_sl,
        json_type(feedback.thumbs) AS t_th, json_type(feedback.regenerated) AS t_rg,
        CASE WHEN json_type(system.latency_ms) = 'OBJECT'
             THEN json_extract(system.latency_ms, '$.total') ELSE system.latency_ms END AS j_lat,
        system.cost_usd AS j_cost
      FROM read_json('{src}', format = 'newline_delimited', columns = {{{cols}}},
                     maximum_object_size = {max_object})),
    v AS (
      SELECT *,
        CASE WHEN t_ts IN ('UBIGINT', 'BIGINT') THEN TRY_CAST("timestamp" AS BIGINT) * 1000000
             WHEN t_ts = 'VARCHAR' AND regexp_full_match("timestamp" ->> '$', '{_TS_RE}')
             THEN epoch_us(TRY_CAST("timestamp" ->> '$' AS TIMESTAMPTZ)) END AS ts_us,
        CASE WHEN t_sl = 'OBJECT' THEN CAST(slices AS MAP(VARCHAR, JSON)) END AS m_sl,
        json_type(j_lat) AS t_lat, TRY_CAST(j_lat AS DOUBLE) AS d_lat,
        json_type(j_cost) AS t_cost, TRY_CAST(j_cost AS DOUBLE) AS d_cost,
        json_type(answer.refused) AS t_ref, json_type(review.faithful) AS t_fa
      FROM r)
    SELECT rn, hash(id ->> '$') AS rh,
      (t_id = 'VARCHAR' AND id ->> '$' <> ''
       AND ts_us IS NOT NULL AND ts_us >= 0 AND ts_us < {1 << 40} * 1000000
       AND (release IS NULL OR json_type(release) = 'VARCHAR')
       AND CASE WHEN labels IS NULL THEN mentions IS NULL
                WHEN t_pred = 'VARCHAR' THEN true
                WHEN t_pred = 'ARRAY' THEN coalesce(list_bool_and(list_transform(
                     TRY_CAST(labels.predicted AS JSON[]), lambda x: json_type(x) = 'VARCHAR')), false)
                     OR labels.predicted = '[]'
                ELSE false END
       AND (slices IS NULL OR (t_sl = 'OBJECT' AND coalesce(list_bool_and(list_transform(
            map_values(m_sl), lambda x: json_type(x) = 'VARCHAR')), true)))
       AND (t_th IS NULL OR (t_th = 'VARCHAR' AND feedback.thumbs ->> '$' IN ('up', 'down')))
       AND answer.judgment IS NULL
       AND embedding IS NULL
       AND (confidence IS NULL OR (json_type(confidence) IN {_NUM}
            AND TRY_CAST(confidence AS DOUBLE) BETWEEN 0 AND 1))
       AND (t_lat IS NULL OR t_lat NOT IN {_NUM} OR isfinite(d_lat))
       AND (t_cost IS NULL OR t_cost NOT IN {_NUM} OR isfinite(d_cost))) AS ok,
      strftime(make_timestamp((ts_us // 1000000) // {width} * {width} * 1000000), '%Y-%m-%dT%H:%M:%SZ') AS win,
      CASE WHEN t_pred = 'VARCHAR' THEN
                CASE WHEN labels.predicted ->> '$' = '' THEN []::VARCHAR[] ELSE [labels.predicted ->> '$'] END
           WHEN t_pred = 'ARRAY' THEN TRY_CAST(labels.predicted AS VARCHAR[])
           ELSE []::VARCHAR[] END AS ids,
      CASE WHEN json_type(intent) = 'VARCHAR' THEN intent ->> '$' ELSE '' END AS intent,
      CASE WHEN t_sl = 'OBJECT' THEN list_transform(list_sort(map_entries(m_sl)),
           lambda e: e.key || '=' || json_extract_string(e.value, '$')) ELSE []::VARCHAR[] END AS slices,
      (CASE WHEN t_th = 'VARCHAR' AND feedback.thumbs ->> '$' = 'down' THEN {_TD} ELSE 0 END
       | CASE WHEN t_th = 'VARCHAR' AND feedback.thumbs ->> '$' = 'up' THEN {_TU} ELSE 0 END
       | CASE WHEN t_rg = 'BOOLEAN' THEN {_REGEN_N}
              | CASE WHEN feedback.regenerated ->> '$' = 'true' THEN {_REGEN} ELSE 0 END ELSE 0 END
       | CASE WHEN t_ref = 'BOOLEAN' THEN {_REF_N}
              | CASE WHEN answer.refused ->> '$' = 'true' THEN {_REF} ELSE 0 END ELSE 0 END
       | CASE WHEN t_fa = 'BOOLEAN' THEN {_REV_N}
              | CASE WHEN review.faithful ->> '$' = 'true' THEN {_REV_K} ELSE 0 END ELSE 0 END)::INTEGER AS flags,
      CASE WHEN t_lat IN {_NUM} AND d_lat >= 0 THEN d_lat END AS lat,
      CASE WHEN t_cost IN {_NUM} AND d_cost >= 0 THEN d_cost END AS cost,
      ts_us
    FROM v
    """


def _no_special_numbers(path: Path, block: int = 16 << 20) -> bool:
    """``True`` when no ``NaN`` / ``Infinity`` token occurs anywhere in the file (bytes,
    conservatively: also inside strings). DuckDB's reader takes them where the record-by-record
    reader refuses them naming the field; such a file goes to that reader."""
    tail = b""
    with path.open("rb") as fh:
        while chunk := fh.read(block):
            window = tail + chunk
            if b"NaN" in window or b"Infinity" in window:
                return False
            tail = chunk[-8:]
    return True


def _sql_stage(
    con: Any,
    path: Path,
    windowing: Windowing,
    resolve: Callable[[str], str | None],
    branch_of: Callable[[str], str],
) -> bool:
    """Stage ``path`` read by DuckDB itself (``read_json``) into ``stage_cell`` /
    ``stage_latw``, when every record is of the plain shape this path checks in SQL (string
    ids, unique; integer epoch seconds or an ISO 8601 timestamp with a zone; linked ids in
    ``labels.predicted``; string slice values; no embedding, no judgment; every other field
    absent or of its expected type). ``False`` (nothing staged) when any record is not, or
    DuckDB cannot read the file: the caller then reads it record by record, whose checks name
    the file, line and field of the first bad record."""
    from kg_rageval.base import limits

    duckdb = _duckdb()
    assert windowing.width is not None
    if not _no_special_numbers(path):
        return False
    width = int(windowing.width.total_seconds())
    try:
        con.execute(_sql_read(str(path), width, limits.get("max_line_bytes")))
    except duckdb.Error:
        con.execute("DROP TABLE IF EXISTS stage_rows")
        return False
    bad, dup = con.execute(
        "SELECT count(*) FILTER (NOT ok OR ok IS NULL), count(*) - count(DISTINCT rh) FROM stage_rows"
    ).fetchone()
    if bad or dup:
        con.execute("DROP TABLE stage_rows")
        return False
    import pyarrow as pa

    raw = [r for (r,) in con.execute("SELECT DISTINCT unnest(ids) FROM stage_rows").fetchall()]
    nodes = [resolve(r) for r in raw]
    idmap = pa.table(  # noqa: F841 - read by DuckDB below
        {
            "raw": pa.array(raw, pa.string()),
            "node": pa.array(nodes, pa.string()),
            "nbranch": pa.array([branch_of(n) if n is not None else None for n in nodes], pa.string()),
        }
    )
    flag_sums = ", ".join(f"sum((flags >> {i}) & 1) AS {c}" for i, c in enumerate(_FLAGS))
    con.execute(
        """
        CREATE TEMP TABLE stage_first AS
        WITH ex AS (SELECT rn, unnest(ids) AS raw, generate_subscripts(ids, 1) AS pos FROM stage_rows
                    WHERE len(ids) > 1),
        j AS (SELECT ex.rn, ex.pos, ex.raw, m.node, m.nbranch FROM ex JOIN idmap m USING (raw))
        SELECT rn, arg_min(node, pos) FILTER (WHERE node IS NOT NULL) AS node,
               arg_min(nbranch, pos) FILTER (WHERE node IS NOT NULL) AS nbranch,
               arg_min(raw, pos) FILTER (WHERE node IS NULL) AS unk
        FROM j GROUP BY rn
        """
    )
    nil_or_unknown = f"CASE WHEN unk IS NOT NULL THEN '{UNKNOWN_BRANCH}' ELSE '{NIL_BRANCH}' END"
    con.execute(
        f"""
        CREATE TEMP TABLE stage_x AS
        WITH y AS (
          SELECT r.win, r.intent, r.slices, r.lat, r.cost, r.ts_us, r.flags,
            CASE WHEN len(r.ids) = 1 THEN m.node ELSE f.node END AS node,
            CASE WHEN len(r.ids) = 1 THEN m.nbranch ELSE f.nbranch END AS nbranch,
            CASE WHEN len(r.ids) = 1 THEN (CASE WHEN m.node IS NULL THEN r.ids[1] END) ELSE f.unk END AS unk
          FROM stage_rows r
          LEFT JOIN idmap m ON m.raw = r.ids[1] AND len(r.ids) = 1
          LEFT JOIN stage_first f ON f.rn = r.rn)
        SELECT win, intent, slices, lat, cost, ts_us,
          coalesce(nbranch, {nil_or_unknown}) AS branch,
          coalesce(node, unk, '{NIL_BRANCH}') AS concept,
          flags | CASE WHEN node IS NOT NULL THEN 0 WHEN unk IS NOT NULL THEN {_UNKNOWN} ELSE {_NIL} END AS flags
        FROM y
        """
    )
    con.execute("DROP TABLE stage_rows")
    con.execute(
        f"""
        CREATE TEMP TABLE stage_cell AS
        SELECT win, branch, intent, concept, slices, count(*) AS n, {flag_sums},
          count(lat) AS latency_n, coalesce(sum(lat), 0) AS latency_sum, count(cost) AS cost_n,
          coalesce(sum(cost), 0) AS cost_sum, coalesce(sum(cost * cost), 0) AS cost_sq,
          min(ts_us) AS ts_min, max(ts_us) AS ts_max
        FROM stage_x GROUP BY win, branch, intent, concept, slices
        """
    )
    con.execute(
        "CREATE TEMP TABLE stage_latw AS SELECT win, branch, intent, lat AS latency_ms FROM stage_x "
        "WHERE lat IS NOT NULL ORDER BY win"
    )
    con.execute("DROP TABLE stage_x")
    con.execute("DROP TABLE stage_first")
    return True


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
    chunk_rows: int = CHUNK_ROWS,
    engine: str = "auto",
) -> IngestSummary:
    """Read a production traffic file into ``store``: records JSONL (chunk by chunk, checked
    as :func:`~kg_rageval.monitor.traffic.iter_traffic` checks them, no row object built) or, with ``traces``, an OTLP / OpenInference trace file
    (:func:`records_from_traces`, one record per trace)."""
    windowing = Windowing.parse(window)
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


ingest_records = ingest
ingest_traces = partial(ingest, traces=True)
"""``ingest(..., traces=True)``: an OTLP / OpenInference trace file into the store."""


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=str)
