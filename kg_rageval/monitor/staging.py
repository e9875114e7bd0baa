"""Staging for the window store (:mod:`kg_rageval.monitor.store`): what one production row
contributes, read record by record (:func:`record_values_maker`, :func:`row_values`) or by
DuckDB's own JSON reader (:func:`_sql_stage`).

A row contributes a cell key (window, branch, intent, first concept, slices), a bit mask of its
flags (bit ``i``: the ``i``-th of :data:`FLAG_COLUMNS`), latency, cost and timestamp, and
optionally an embedding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from kg_rageval.monitor.traffic import EPOCH, NIL_BRANCH, UNKNOWN_BRANCH, TrafficRow, Windowing

FLAG_COLUMNS = (
    "nil", "unknown", "thumbs_down", "thumbs_up", "regen_n", "regenerated", "refusal_n",
    "refused", "reviewed_n", "reviewed_k", "judged_n", "judged_k",
)  # fmt: skip
"""The flag columns of the store's ``sums``, in the order of their bits."""
_FLAGS = FLAG_COLUMNS
_NIL, _UNKNOWN, _TD, _TU, _REGEN_N, _REGEN, _REF_N, _REF, _REV_N, _REV_K, _JUD_N, _JUD_K = (
    1 << i for i in range(12)
)


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
StageValues = tuple[
    tuple[Any, ...], int, "float | None", "float | None", int, "tuple[str, Any, list[Any]] | None"
]


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
) -> Callable[[dict[str, Any]], StageValues]:
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

    def values(record: dict[str, Any]) -> StageValues:
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
    import duckdb

    from kg_rageval.base import limits

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
