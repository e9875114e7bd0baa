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

import itertools
from typing import Any, Iterable, Mapping

from ..errors import InputError
from ..evaluation import Evaluation, Family, Metric, build_evaluation, empty_evaluation
from ..records import Record, record_error
from .calibration import JudgeAgreementFamily, JudgeCalibrationFamily, PositionBiasFamily
from .contracts import INVALID, SCORED, UNSCORABLE, RUBRICS, Verdict, parse_verdict

FAILED = "failed"


class NoJudgeOutputs(Family):
    """What ``score_judges`` returns when the ``judges`` sections hold no entry: every gate on
    a judge metric is then missing evidence."""

    name = "judges"
    version = "1"
    stats = ("n_outputs",)

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        return {"n_judge_outputs": Metric("n_judge_outputs", None, missing="no judge entries in the records")}
_SWAP = {"A": "B", "B": "A", "tie": "tie"}


def _row_keys(record: Record) -> dict[str, Any]:
    from ..system.fields import row_keys

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
        if rub not in RUBRICS:
            raise record_error(record, f"{where}.rubric", f"{rub!r} is not a rubric; known: {', '.join(RUBRICS)}")
        if not isinstance(e.get("judge", "judge"), str) or not e.get("judge", "judge"):
            raise record_error(record, f"{where}.judge", "expected a non-empty string")
        if "output" not in e and "error" not in e:
            raise record_error(record, where, "needs 'output' (the judge's verdict) or 'error' (why the call failed)")
        order = e.get("order", "AB")
        if order not in ("AB", "BA"):
            raise record_error(record, f"{where}.order", f"expected 'AB' or 'BA', found {order!r}")
        out.append((i, e))
    return out


def _human(record: Record, where: str, value: Any, schema: type[Verdict]) -> tuple[str | None, bool | None]:
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
    from ..generation.fields import contexts

    if not isinstance(citation, str):
        return None
    for doc, text in contexts(record) or []:
        if doc == citation:
            return text
    return None


def _family_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """``rubric`` when one judge gave that rubric's verdicts, else ``rubric@judge``."""
    by_rubric: dict[str, list[str]] = {}
    for rub, judge in pairs:
        by_rubric.setdefault(rub, [])
        if judge not in by_rubric[rub]:
            by_rubric[rub].append(judge)
    return {(r, j): (r if len(js) == 1 else f"{r}@{j}") for r, js in by_rubric.items() for j in js}


def score_judges(records: Iterable[Record], ontology: Any = None, *, level: float = 0.95,
                 ppi_lambda: float | str = 1.0, length_bins: tuple[int, ...] = (50, 150),
                 endpoint: str | None = None, model: str | None = None, rubrics: Iterable[str] = (),
                 judge_name: str | None = None, client_options: Mapping[str, Any] | None = None
                 ) -> dict[str, Evaluation]:
    """Every evaluation the ``judges`` sections support, by name: one calibration evaluation
    per rubric (``rubric`` or ``rubric@judge`` when several judges gave it),
    ``position_bias`` (per judge: ``position_bias@judge`` when several pairwise judges) and
    ``<rubric>_agreement@<a>/<b>`` for each two judges of one rubric. ``ontology`` is not
    needed (the rows carry ``gold_node`` for roll-ups).

    With ``endpoint`` and ``model`` the records are first judged live for each of ``rubrics``
    (:func:`kg_rageval.judges.run.judge_records`; ``client_options`` go to
    :class:`~kg_rageval.judges.client.ChatClient`, e.g. ``api_key_env``, ``cache_dir``,
    ``prices``); the client's settings (key redacted) and token/cost totals are in each
    evaluation's ``meta["judge_usage"]``, which the audit manifest records."""
    usage = None
    if endpoint is not None or model is not None:
        from .run import live_judge

        records, usage = live_judge(records, endpoint=endpoint, model=model, rubrics=rubrics,
                                    judge_name=judge_name, client_options=client_options)
    if not 0 < level < 1:
        raise InputError(f"judges: level must lie in (0, 1), not {level!r}")
    if any(b <= 0 for b in length_bins) or list(length_bins) != sorted(set(length_bins)):
        raise InputError(f"judges: length_bins must be increasing positive word counts, not {length_bins!r}")
    records = list(records)
    parsed: list[tuple[Record, dict[str, Any], dict[str, Any]]] = []
    for rec in records:
        keys = _row_keys(rec)
        for i, e in _entries(rec):
            schema = RUBRICS[e["rubric"]]
            where = f"judges[{i}]"
            label, app = _human(rec, f"{where}.human", e.get("human"), schema)
            ctx: dict[str, Any] = {}
            if e.get("citation") is not None:
                ctx["citation"] = e["citation"]
                passage = _passage(rec, e["citation"])
                if passage is not None:
                    ctx["passage"] = passage
            if "output" in e and e["output"] is not None:
                outcome = parse_verdict(schema, e["output"], context=ctx)
                status, error, jlabel = outcome.status, outcome.error, outcome.label
            else:
                status, error, jlabel = FAILED, str(e.get("error") or "no judge output"), None
            order = e.get("order", "AB")
            if schema.RUBRIC == "pairwise" and jlabel is not None and order == "BA":
                jlabel = _SWAP[jlabel]
            parsed.append((rec, keys, {
                "rubric": schema.RUBRIC, "judge": e.get("judge", "judge"), "status": status, "error": error,
                "label": jlabel, "human": label, "human_approves": app, "order": order,
                "item": str(e.get("item", e.get("pair", e.get("citation", "")))),
                "lengths": e.get("lengths"), "where": where}))
    names = _family_names((p["rubric"], p["judge"]) for _, _, p in parsed)
    out: dict[str, Evaluation] = {}
    for (rub, judge), name in names.items():
        schema = RUBRICS[rub]
        fam = JudgeCalibrationFamily(schema, name=name, level=level, ppi_lambda=ppi_lambda)
        rows = [_calibration_row(rec, keys, p, schema, length_bins)
                for rec, keys, p in parsed if p["rubric"] == rub and p["judge"] == judge]
        key_names = sorted({k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")}) + ["length_bin"]
        out[name] = build_evaluation(fam, rows, keys=key_names, details=["judge", "item", "order", "status", "error",
                                                                        "label", "human"],
                                     meta={"rubric": rub, "judge": judge, "level": level, "ppi_lambda": ppi_lambda})
    out.update(_position_bias(parsed))
    out.update(_agreement(parsed))
    if not out:
        out["judges"] = empty_evaluation(NoJudgeOutputs())
    if usage is not None:
        for ev in out.values():
            ev.meta["judge_usage"] = usage
    return out


def _calibration_row(rec: Record, keys: Mapping[str, Any], p: Mapping[str, Any], schema: type[Verdict],
                     bins: tuple[int, ...]) -> dict[str, Any]:
    status, label, human, happ = p["status"], p["label"], p["human"], p["human_approves"]
    row: dict[str, Any] = {"record_id": rec["id"], **keys, "judge": p["judge"], "item": p["item"],
                           "order": p["order"], "status": status, "error": p["error"], "label": label,
                           "human": human if human is not None else happ,
                           "n_outputs": 1, "n_scored": status == SCORED, "n_invalid": status == INVALID,
                           "n_unscorable": status == UNSCORABLE, "n_failed": status == FAILED}
    lengths = p["lengths"]
    if schema.RUBRIC == "pairwise":
        la = lb = None
        if isinstance(lengths, dict):
            la, lb = lengths.get("A"), lengths.get("B")
            for k, v in (("A", la), ("B", lb)):
                if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                    raise record_error(rec, f"{p['where']}.lengths.{k}", f"expected a word count, found {v!r}")
        if la is not None and lb is not None and la != lb:
            longer = "A" if la > lb else "B"
            row["length_bin"] = "A longer" if longer == "A" else "B longer"
            if status == SCORED and label in ("A", "B"):
                row["len_decisive"], row["judge_longer"] = 1, label == longer
            if human in ("A", "B"):
                row["human_len_decisive"], row["human_longer"] = 1, human == longer
        else:
            row["length_bin"] = None if la is None or lb is None else "equal"
    else:
        n = lengths if isinstance(lengths, int) and not isinstance(lengths, bool) else None
        if n is None:
            a = rec.get("answer")
            n = _words(a.get("text")) if isinstance(a, dict) else None
        row["length_bin"] = _length_bin(n, bins)
    if status != SCORED:
        return row
    japp = label == schema.APPROVE
    row["judge_approvals"] = japp
    if happ is None:
        row.update(ppi_N=1, ppi_sum_yhat_u=float(japp), ppi_sum_yhat2_u=float(japp))
        return row
    row.update(n_labelled=1, approval_agree=japp == happ, false_approvals=japp and not happ,
               false_rejections=happ and not japp, human_approvals=happ,
               ppi_n=1, ppi_sum_y=float(happ), ppi_sum_y2=float(happ), ppi_sum_yhat_l=float(japp),
               ppi_sum_yhat2_l=float(japp), ppi_sum_y_yhat=float(happ and japp))
    if human is not None:
        row.update({"n_label_pairs": 1, "agree": label == human, f"judge:{label}": 1, f"human:{human}": 1})
    return row


def _position_bias(parsed: list) -> dict[str, Evaluation]:
    groups: dict[tuple[str, str, str], dict[str, tuple[Record, Mapping[str, Any], Mapping[str, Any]]]] = {}
    for rec, keys, p in parsed:
        if p["rubric"] == "pairwise" and p["status"] == SCORED:
            groups.setdefault((p["judge"], str(rec["id"]), p["item"]), {}).setdefault(p["order"], (rec, keys, p))
    judges = sorted({j for j, _, _ in groups})
    out = {}
    for judge in judges:
        rows = []
        for (j, _, item), by_order in groups.items():
            if j != judge or len(by_order) < 2:
                continue
            rec, keys, ab = by_order["AB"]
            ba = by_order["BA"][2]
            verdicts = [ab["label"], _SWAP[ba["label"]]]  # as shown: AB's label, BA's shown label
            first = [v == "A" for v in verdicts]  # shown first won: "A" as shown in both orders
            decisive = [v != "tie" for v in verdicts]
            rows.append({"record_id": rec["id"], **keys, "judge": judge, "item": item, "n_pairs": 1,
                         "consistent": ab["label"] == ba["label"], "n_verdicts": 2, "n_decisive": sum(decisive),
                         "first_position_wins": sum(f and d for f, d in zip(first, decisive)),
                         "verdicts": f"AB:{ab['label']} BA:{ba['label']}"})
        if not rows:
            continue
        name = "position_bias" if len(judges) == 1 else f"position_bias@{judge}"
        fam = PositionBiasFamily()
        fam.name = name
        key_names = sorted({k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")})
        out[name] = build_evaluation(fam, rows, keys=key_names, details=["judge", "item", "verdicts"],
                                     meta={"judge": judge})
    return out


def _agreement(parsed: list) -> dict[str, Evaluation]:
    by: dict[str, dict[str, dict[tuple[str, str, str], tuple[Record, Mapping[str, Any], str]]]] = {}
    for rec, keys, p in parsed:
        if p["status"] == SCORED:
            by.setdefault(p["rubric"], {}).setdefault(p["judge"], {}).setdefault(
                (str(rec["id"]), p["item"], p["order"]), (rec, keys, p["label"]))
    out = {}
    for rub, judges in by.items():
        schema = RUBRICS[rub]
        for a, b in itertools.combinations(sorted(judges), 2):
            rows = []
            for k, (rec, keys, la) in judges[a].items():
                if k not in judges[b]:
                    continue
                lb = judges[b][k][2]
                rows.append({"record_id": rec["id"], **keys, "item": k[1], "n": 1, "agree": la == lb,
                             f"a:{la}": 1, f"b:{lb}": 1, "labels": f"{la}/{lb}"})
            if not rows:
                continue
            name = f"{rub}_agreement@{a}/{b}"
            key_names = sorted({k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")})
            out[name] = build_evaluation(JudgeAgreementFamily(schema, name), rows, keys=key_names,
                                         details=["item", "labels"], meta={"judges": [a, b], "rubric": rub})
    return out
