"""Score the ``judges`` section of records: calibration, position bias, judge agreement.

Record field (``docs/records.md``, ``docs/judges.md``)::

    "judges": [
      {"rubric": "answer_correctness", "judge": "gpt-4o-mini",
       "output": {...} | "raw judge text",       # or "error": "timed out ..." (a failed call)
       "human": "correct" | true | false,         # optional human label
       "item": "claim-2",                         # optional: which item of the record
       "order": "AB" | "BA",                      # pairwise: the order the answers were shown
       "lengths": {"A": 120, "B": 310},           # pairwise: answer lengths (words), optional
       "citation": "doc-12"}                      # citation_support: the passage judged
    ]

Pairwise verdicts and labels name the answers as the record knows them (A = the candidate);
an entry shown swapped (``order: "BA"``) has its verdict mapped back before scoring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kg_rageval.families.judges.calibration import (
    JudgeAgreementFamily,
    JudgeCalibrationFamily,
    PositionBiasFamily,
)
from kg_rageval.families.judges.labels import INVALID, RUBRIC_LABELS, SCORED, UNSCORABLE, RubricLabels
from kg_rageval.families.judges.rules import plain_verdict
from kg_rageval.records import Record, record_error
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.evaluation_set import EvaluationSet

FAILED = "failed"
_SWAP = {"A": "B", "B": "A", "tie": "tie"}


def _rubrics() -> dict[str, type[RubricLabels]]:
    """Each rubric's name, labels and approving label (:mod:`kg_rageval.families.judges.labels`,
    the class attributes of its pydantic verdict model, without the model: a tiny run with
    plainly valid verdicts does not import pydantic)."""
    return RUBRIC_LABELS


def _parse_verdict(schema: type[RubricLabels], output: Any, *, context: Any) -> Any:
    """The verdict's ``status``, ``error`` and ``label``: output its model certainly accepts
    is read by :func:`~kg_rageval.families.judges.rules.plain_verdict`; any other is
    validated by the model (:func:`~kg_rageval.families.judges.contracts.parse_verdict`:
    its outcome, and its error message for output that breaks the contract)."""
    plain = plain_verdict(schema.RUBRIC, output, context)
    if plain is not None:
        return _Plain(plain[0], None, plain[1])
    from kg_rageval.families.judges.contracts import RUBRICS, parse_verdict

    return parse_verdict(RUBRICS[schema.RUBRIC], output, context=context)


class _Plain(NamedTuple):
    status: str
    error: str | None
    label: str | None


def _row_keys(record: Record) -> dict[str, Any]:
    from kg_rageval.records.fields import stated_row_keys as row_keys

    return row_keys(record)


def _entries(record: Record) -> list[tuple[int, dict[str, Any]]]:
    raw = record.get("judges")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise record_error(record, "judges", f"expected a list of judge entries, found {type(raw).__name__}")
    out = []
    for i, e in enumerate(raw):
        where = f"judges[{i}]"
        if not isinstance(e, dict):
            raise record_error(record, where, f"expected an object, found {type(e).__name__}")
        rub = e.get("rubric")
        if rub not in _rubrics():
            raise record_error(
                record, f"{where}.rubric", f"{rub!r} is not a rubric; known: {', '.join(_rubrics())}"
            )
        if not isinstance(e.get("judge", "judge"), str) or not e.get("judge", "judge"):
            raise record_error(record, f"{where}.judge", "expected a non-empty string")
        if "output" not in e and "error" not in e:
            raise record_error(
                record, where, "needs 'output' (the judge's verdict) or 'error' (why the call failed)"
            )
        order = e.get("order", "AB")
        if order not in ("AB", "BA"):
            raise record_error(record, f"{where}.order", f"expected 'AB' or 'BA', found {order!r}")
        if e.get("lengths") is not None and not isinstance(e["lengths"], dict):
            raise record_error(
                record, f"{where}.lengths", f'expected {{"A": words, "B": words}}, found {e["lengths"]!r}'
            )
        for name in ("citation", "item", "pair"):
            v = e.get(name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (str, int))):
                raise record_error(record, f"{where}.{name}", f"expected a string, found {v!r}")
        out.append((i, e))
    return out


def _human(
    record: Record, where: str, value: Any, schema: type[RubricLabels]
) -> tuple[str | None, bool | None]:
    """A human label as ``(label or None, approves)``: a label of the rubric, or a bool
    (approve / not approve: the binary metrics only, so the label is ``None``)."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return None, value
    if isinstance(value, str) and value in schema.LABELS:
        return value, value == schema.APPROVE
    raise record_error(record, where, f"expected one of {list(schema.LABELS)} or true/false, found {value!r}")


def _words(text: Any) -> int | None:
    return len(text.split()) if isinstance(text, str) else None


def _length_bin(n: int | None, bins: tuple[int, ...]) -> str | None:
    if n is None:
        return None
    lo = 0
    for b in bins:
        if n < b:
            return f"{lo}-{b - 1}"
        lo = b
    return f">={lo}"


def _passage(record: Record, citation: Any) -> str | None:
    from kg_rageval.records.fields import contexts

    if not isinstance(citation, str):
        return None
    for doc, text in contexts(record) or []:
        if doc == citation:
            return text
    return None


def _select(judges: list[str], judge: str | None, second: str | None) -> tuple[str | None, str | None]:
    """The judge calibrated and the one it is compared with (see :func:`score_judges`)."""
    from kg_rageval.base.errors import ConfigError

    for name, value in (("judge", judge), ("second_judge", second)):
        if value is not None and value not in judges:
            raise ConfigError(
                f"judges: {name}={value!r} gave no verdict in the records; judges: "
                f"{', '.join(judges) or 'none'}"
            )
    if judge is None:
        if len(judges) > 1:
            raise ConfigError(
                f"judges: the records hold verdicts of {len(judges)} judges ({', '.join(judges)}); "
                "choose the one to calibrate with judge=<name> (second_judge=<name> for their "
                "agreement)"
            )
        judge = judges[0] if judges else None
    if second is None and judge is not None and len(judges) == 2:
        second = next(j for j in judges if j != judge)
    if second is not None and second == judge:
        raise ConfigError(f"judges: second_judge is the judge calibrated ({judge!r})")
    return judge, second


def score_judges(
    ontology: Any,
    records: Iterable[Record],
    *,
    level: float = 0.95,
    ppi_lambda: float | str = 1.0,
    length_bins: Iterable[int] = (50, 150),
    judge: str | None = None,
    second_judge: str | None = None,
    endpoint: str | None = None,
    model: str | None = None,
    rubrics: Iterable[str] = ("answer_correctness",),
    judge_name: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    cache_dir: str | None = None,
    concurrency: int = 4,
    timeout: float = 60.0,
    max_retries: int = 4,
    price_prompt: float = 0.0,
    price_completion: float = 0.0,
) -> EvaluationSet:
    """The ``judges`` sections scored: members ``judge_calibration`` (the judge ``judge`` against
    the human labels, every rubric), ``position_bias`` (its pairwise verdicts shown in both
    orders) and ``agreement`` (with ``second_judge`` on the same items).

    ``judge`` may be left out when one judge gave every verdict; ``second_judge`` when there
    are exactly two. ``ontology`` is not needed (rows carry ``gold_node`` for roll-ups).
    ``ppi_lambda``: a number (1 = PPI, 0 = human labels only) or ``"auto"`` (PPI++).

    With ``endpoint`` and ``model`` the records are first judged live for each of ``rubrics``
    (:func:`kg_rageval.families.judges.run.live_judge`; ``api_key_env``, ``cache_dir``, ``concurrency``,
    ``timeout``, ``max_retries`` and the prices in USD per million tokens go to the
    :class:`~kg_rageval.families.judges.client.ChatClient`); the client's settings (key redacted) and
    token / cost totals are in every member's ``meta["judge_usage"]``, which the audit
    manifest records."""
    from kg_rageval.base.errors import ConfigError

    lam = _ppi_lambda(ppi_lambda)
    bins = tuple(int(b) for b in length_bins)
    if not 0 < level < 1:
        raise ConfigError(f"judges: level must lie in (0, 1), not {level!r}")
    if any(b <= 0 for b in bins) or list(bins) != sorted(set(bins)):
        raise ConfigError(f"judges: length_bins must be increasing positive word counts, not {list(bins)!r}")
    usage = None
    if endpoint is not None or model is not None:
        from kg_rageval.families.judges.run import live_judge

        records, usage = live_judge(
            records,
            endpoint=endpoint,
            model=model,
            rubrics=rubrics,
            judge_name=judge_name,
            api_key_env=api_key_env,
            cache_dir=cache_dir,
            concurrency=concurrency,
            timeout=timeout,
            max_retries=max_retries,
            price_prompt=price_prompt,
            price_completion=price_completion,
        )
    parsed = _parse_all(list(records))
    chosen, second = _select(sorted({p["judge"] for _, _, p in parsed}), judge, second_judge)
    mine = [(rec, keys, p) for rec, keys, p in parsed if p["judge"] == chosen]
    cal = JudgeCalibrationFamily(_rubrics(), level=level, ppi_lambda=lam)
    rows = [calibration_row(rec, keys, p, _rubrics()[p["rubric"]], bins) for rec, keys, p in mine]
    meta = {
        "judge": chosen,
        "second_judge": second,
        "level": level,
        "ppi_lambda": lam,
        "judges_in_records": sorted({p["judge"] for _, _, p in parsed}),
    }
    out = EvaluationSet(
        "judge",
        {
            "judge_calibration": build_evaluation(
                cal,
                rows,
                keys=_key_names(rows) + ["length_bin"],
                details=["rubric", "judge", "item", "order", "status", "error", "label", "human"],
                meta=dict(meta),
            ),
            "position_bias": _position_bias(mine, meta),
            "agreement": _agreement(parsed, chosen, second, meta),
        },
    )
    if usage is not None:
        for ev in out.values():
            ev.meta["judge_usage"] = usage
    return out


def _ppi_lambda(value: Any) -> float | str:
    from kg_rageval.base.errors import ConfigError

    if value == "auto":
        return "auto"
    try:
        lam = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"judges: ppi_lambda must be a number or 'auto', not {value!r}") from None
    if not 0 <= lam <= 1:
        raise ConfigError(f"judges: ppi_lambda must lie in [0, 1], not {lam!r}")
    return lam


def _key_names(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")})


def _parse_all(records: list[Record]) -> list[tuple[Record, dict[str, Any], dict[str, Any]]]:
    parsed: list[tuple[Record, dict[str, Any], dict[str, Any]]] = []
    for rec in records:
        keys = _row_keys(rec)
        for i, e in _entries(rec):
            schema = _rubrics()[e["rubric"]]
            where = f"judges[{i}]"
            label, app = _human(rec, f"{where}.human", e.get("human"), schema)
            ctx: dict[str, Any] = {}
            if e.get("citation") is not None:
                ctx["citation"] = e["citation"]
                passage = _passage(rec, e["citation"])
                if passage is not None:
                    ctx["passage"] = passage
            if "output" in e and e["output"] is not None:
                outcome = _parse_verdict(schema, e["output"], context=ctx)
                status, error, jlabel = outcome.status, outcome.error, outcome.label
            else:
                status, error, jlabel = FAILED, str(e.get("error") or "no judge output"), None
            order = e.get("order", "AB")
            if schema.RUBRIC == "pairwise" and jlabel is not None and order == "BA":
                jlabel = _SWAP[jlabel]
            parsed.append(
                (
                    rec,
                    keys,
                    {
                        "rubric": schema.RUBRIC,
                        "judge": e.get("judge", "judge"),
                        "status": status,
                        "error": error,
                        "label": jlabel,
                        "human": label,
                        "human_approves": app,
                        "order": order,
                        "item": str(e.get("item", e.get("pair", e.get("citation", "")))),
                        "lengths": e.get("lengths"),
                        "where": where,
                    },
                )
            )
    return parsed


def calibration_row(
    rec: Record,
    keys: Mapping[str, Any],
    p: Mapping[str, Any],
    schema: type[RubricLabels],
    bins: tuple[int, ...],
) -> dict[str, Any]:
    """The calibration row of one parsed judge entry ``p`` (:func:`_parse_all`'s fields): its
    counts under ``<rubric>:<stat>`` (:class:`JudgeCalibrationFamily`), its keys and details,
    and its length bin (``bins``: word-count edges). The nuggets family builds its assignment
    calibration rows with it."""
    status, label, human, happ = p["status"], p["label"], p["human"], p["human_approves"]
    r = schema.RUBRIC
    stats: dict[str, Any] = {
        "n_outputs": 1,
        "n_scored": status == SCORED,
        "n_invalid": status == INVALID,
        "n_unscorable": status == UNSCORABLE,
        "n_failed": status == FAILED,
    }
    row: dict[str, Any] = {
        "record_id": rec["id"],
        **keys,
        "rubric": r,
        "judge": p["judge"],
        "item": p["item"],
        "order": p["order"],
        "status": status,
        "error": p["error"],
        "label": label,
        "human": human if human is not None else happ,
    }
    lengths = p["lengths"]
    if schema.RUBRIC == "pairwise":
        la = lb = None
        if isinstance(lengths, dict):
            la, lb = lengths.get("A"), lengths.get("B")
            for k, v in (("A", la), ("B", lb)):
                if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                    raise record_error(
                        rec, f"{p['where']}.lengths.{k}", f"expected a word count, found {v!r}"
                    )
        if la is not None and lb is not None and la != lb:
            longer = "A" if la > lb else "B"
            row["length_bin"] = "A longer" if longer == "A" else "B longer"
            if status == SCORED:
                stats[f"lc_n_{longer.lower()}_longer"] = 1
                stats[f"lc_a_wins_{longer.lower()}_longer"] = {"A": 1.0, "tie": 0.5}.get(label, 0.0)
            if status == SCORED and label in ("A", "B"):
                stats["len_decisive"], stats["judge_longer"] = 1, label == longer
            if human in ("A", "B"):
                stats["human_len_decisive"], stats["human_longer"] = 1, human == longer
        else:
            row["length_bin"] = None if la is None or lb is None else "equal"
    else:
        n = lengths if isinstance(lengths, int) and not isinstance(lengths, bool) else None
        if n is None:
            a = rec.get("answer")
            n = _words(a.get("text")) if isinstance(a, dict) else None
        row["length_bin"] = _length_bin(n, bins)
    if status == SCORED:
        _scored_stats(stats, label, human, happ, schema)
    row.update({f"{r}:{k}": float(v) for k, v in stats.items()})
    return row


def _scored_stats(
    stats: dict[str, Any], label: Any, human: Any, happ: bool | None, schema: type[RubricLabels]
) -> None:
    japp = label == schema.APPROVE
    stats["judge_approvals"] = japp
    if happ is None:
        stats.update(ppi_N=1, ppi_sum_yhat_u=float(japp), ppi_sum_yhat2_u=float(japp))
        return
    stats.update(
        n_labelled=1,
        approval_agree=japp == happ,
        false_approvals=japp and not happ,
        false_rejections=happ and not japp,
        human_approvals=happ,
        ppi_n=1,
        ppi_sum_y=float(happ),
        ppi_sum_y2=float(happ),
        ppi_sum_yhat_l=float(japp),
        ppi_sum_yhat2_l=float(japp),
        ppi_sum_y_yhat=float(happ and japp),
    )
    if human is not None:
        stats.update({"n_label_pairs": 1, "agree": label == human, f"judge:{label}": 1, f"human:{human}": 1})


def _position_bias(mine: list, meta: Mapping[str, Any]) -> Evaluation:
    """Pairs the calibrated judge saw in both orders (AB and BA)."""
    groups: dict[tuple[str, str], dict[str, tuple[Record, Mapping[str, Any], Mapping[str, Any]]]] = {}
    for rec, keys, p in mine:
        if p["rubric"] == "pairwise" and p["status"] == SCORED:
            groups.setdefault((str(rec["id"]), p["item"]), {}).setdefault(p["order"], (rec, keys, p))
    rows = []
    for (_, item), by_order in groups.items():
        if len(by_order) < 2:
            continue
        rec, keys, ab = by_order["AB"]
        ba = by_order["BA"][2]
        verdicts = [ab["label"], _SWAP[ba["label"]]]  # as shown: AB's label, BA's shown label
        decisive = [v != "tie" for v in verdicts]
        rows.append(
            {
                "record_id": rec["id"],
                **keys,
                "item": item,
                "n_pairs": 1,
                "consistent": ab["label"] == ba["label"],
                "n_verdicts": 2,
                "n_decisive": sum(decisive),
                "first_position_wins": sum(v == "A" for v in verdicts),  # "A" as shown = shown first
                "verdicts": f"AB:{ab['label']} BA:{ba['label']}",
            }
        )
    return build_evaluation(
        PositionBiasFamily(), rows, keys=_key_names(rows), details=["item", "verdicts"], meta=dict(meta)
    )


def _agreement(parsed: list, a: str | None, b: str | None, meta: Mapping[str, Any]) -> Evaluation:
    """Items both judges scored (same record, rubric, item and order)."""
    fam = JudgeAgreementFamily(_rubrics())
    by: dict[str, dict[tuple[str, str, str, str], tuple[Record, Mapping[str, Any], str]]] = {}
    for rec, keys, p in parsed:
        if p["status"] == SCORED and p["judge"] in (a, b):
            by.setdefault(p["judge"], {}).setdefault(
                (str(rec["id"]), p["rubric"], p["item"], p["order"]), (rec, keys, p["label"])
            )
    rows = []
    if a is not None and b is not None:
        for k, (rec, keys, la) in by.get(a, {}).items():
            if k not in by.get(b, {}):
                continue
            lb = by[b][k][2]
            rows.append(
                {
                    "record_id": rec["id"],
                    **keys,
                    "rubric": k[1],
                    "item": k[2],
                    "n": 1,
                    "agree": la == lb,
                    f"a:{k[1]}/{la}": 1,
                    f"b:{k[1]}/{lb}": 1,
                    "labels": f"{la}/{lb}",
                }
            )
    return build_evaluation(
        fam, rows, keys=_key_names(rows), details=["rubric", "item", "labels"], meta=dict(meta)
    )
