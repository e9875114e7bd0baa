"""The generation families as they were before batching (issue #20), kept as the reference of
the equality tests: the SQuAD v1.1 script's functions verbatim, one
``hierarchical_counts`` call per record, every text linked on every use, EM recomputed per
pair. Only the parts the batched code replaced are here; the shared record readers
(:mod:`kg_rageval.records.fields`), the id resolver and ``build_evaluation`` are used as
they are.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from kg_rageval.families.generation.calibration import CalibrationFamily
from kg_rageval.families.generation.concepts import dictionary_linker, linker_name
from kg_rageval.families.generation.correctness import CorrectnessFamily, _references
from kg_rageval.families.generation.faithfulness import score_faithfulness
from kg_rageval.families.generation.refusal import score_refusal
from kg_rageval.families.generation.unseen import UnseenConceptFamily
from kg_rageval.records import absent_answer_code, located, record_error
from kg_rageval.records.fields import (
    all_slice_keys,
    answer_text,
    contexts,
    flag,
    id_list,
    row_keys,
    section,
    strip_citation_markers,
)
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation_set import EvaluationSet


# ------------------------------------------------------------ SQuAD v1.1 (evaluate-v1.1.py)
def normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    return max(metric_fn(prediction, gt) for gt in ground_truths)


# ------------------------------------------------------------ concepts, one text at a time
def concepts_in(texts, linker):
    out: set[str] = set()
    for t in texts:
        out |= linker(t)
    return frozenset(out)


def _concepts(record, sec, texts, resolver, linker):
    given = id_list(record, sec, "concepts")
    if given is None:
        return sorted(concepts_in(texts, linker)), 0
    role = "gold" if sec == "reference" else "pred"
    res = resolver.resolve(given, role, lambda j: located(record, f"{sec}.concepts[{j}]"))
    ids = resolver.ontology.ids
    known = list(dict.fromkeys(ids[i] for i in res.idx.tolist() if i >= 0))
    return known, int(res.unknown.sum())


def _concept_counts(ontology, gold, pred, *, where):
    from kg_rageval.families.hierarchy import hierarchical_counts

    gi = [ontology.indices(gold, where=where).tolist()]
    pi = [ontology.indices(pred, where=where).tolist()]
    inter, n_pred, n_gold = hierarchical_counts(ontology, gi, pi)
    return int(inter[0]), int(n_pred[0]), int(n_gold[0])


def score_correctness(records, ontology, *, linker, ids, strip_citations=True):
    from kg_rageval.ontology import IdOptions, IdResolver

    resolver = IdResolver(ontology, ids or IdOptions())
    rows, unscored = [], []
    for r in records:
        refs = _references(r)
        if flag(r, "reference", "answerable") is False:
            unscored.append({"record_id": r["id"], "reason": "unanswerable", "code": "not_applicable"})
            continue
        if refs is None:
            unscored.append({"record_id": r["id"], "reason": "no reference answer", "code": "no_gold"})
            continue
        refused = flag(r, "answer", "refused") is True
        text = answer_text(r)
        missing = text is None and not refused
        pred = "" if refused or missing or text is None else text
        if strip_citations and pred:
            pred = strip_citation_markers(pred)
        em = float(metric_max_over_ground_truths(exact_match_score, pred, refs))
        f1 = float(metric_max_over_ground_truths(f1_score, pred, refs))
        row: dict[str, Any] = {
            "record_id": r["id"],
            **row_keys(r),
            "qa_scored": 1,
            "em_sum": em,
            "f1_sum": f1,
            "exact_match": em,
            "token_f1": f1,
            "refused": refused,
            "n_missing_run": float(missing),
        }
        gold, g_unknown = _concepts(r, "reference", refs, resolver, linker)
        if gold or g_unknown:
            pred_c, p_unknown = ([], 0) if refused else _concepts(r, "answer", [pred], resolver, linker)
            inter, np_, ng = _concept_counts(ontology, gold, pred_c, where=located(r, "concepts"))
            row.update(
                concept_scored=1,
                h_inter=inter,
                h_pred=np_ + p_unknown,
                h_gold=ng + g_unknown,
                concepts_not_in_ontology=p_unknown + g_unknown,
                answer_concepts=" ".join(pred_c),
                reference_concepts=" ".join(gold),
            )
        rows.append(row)
    return build_evaluation(
        CorrectnessFamily(),
        rows,
        keys=all_slice_keys(records),
        details=("exact_match", "token_f1", "refused", "answer_concepts", "reference_concepts"),
        unscored=unscored,
        meta={"linker": linker_name(linker), "strip_citations": strip_citations},
    )


def score_unseen(records, ontology, *, linker, ids):
    from kg_rageval.ontology import IdOptions, IdResolver

    resolver = IdResolver(ontology, ids or IdOptions())
    rows, unscored = [], []
    for r in records:
        text = answer_text(r)
        if text is None:
            unscored.append(
                {"record_id": r["id"], "reason": "no answer", "code": absent_answer_code(r).value}
            )
            continue
        ctx = contexts(r)
        if ctx is None:
            unscored.append({"record_id": r["id"], "reason": "no context", "code": "missing_input"})
            continue
        flagged = linker(text) - concepts_in([t for _, t in ctx], linker)
        row: dict[str, Any] = {
            "record_id": r["id"],
            **row_keys(r),
            "checked": 1,
            "flagged_record": int(bool(flagged)),
            "flagged": len(flagged),
            "unseen": " ".join(sorted(flagged)),
        }
        gold = id_list(r, "reference", "unseen_concepts")
        if gold is not None:
            res = resolver.resolve(gold, "gold", lambda j: located(r, f"reference.unseen_concepts[{j}]"))  # noqa: B023 - called now
            g = {ontology.ids[i] if i >= 0 else gold[j] for j, i in enumerate(res.idx.tolist())}
            row.update(labelled=1, tp=len(flagged & g), flagged_labelled=len(flagged), gold=len(g))
        rows.append(row)
    return build_evaluation(
        UnseenConceptFamily(),
        rows,
        keys=all_slice_keys(records),
        details=("unseen",),
        unscored=unscored,
        meta={"linker": linker_name(linker)},
    )


def _correct(record):
    label = flag(record, "reference", "correct")
    if label is not None:
        return label
    ref = section(record, "reference") or {}
    refs = ref.get("answer")
    if refs is None or ref.get("answerable") is False:
        return None
    refs = [refs] if isinstance(refs, str) else refs
    if not isinstance(refs, list) or not refs or not all(isinstance(x, str) for x in refs):
        raise record_error(record, "reference.answer", "bad reference")
    pred = "" if flag(record, "answer", "refused") else (answer_text(record) or "")
    return bool(metric_max_over_ground_truths(exact_match_score, pred, refs))


def score_calibration(records, *, n_bins=10):
    from kg_rageval.families.generation.calibration import bin_index

    fam = CalibrationFamily(n_bins)
    rows, unscored = [], []
    for r in records:
        ans = section(r, "answer")
        conf = None if ans is None else ans.get("confidence")
        if conf is None:
            unscored.append({"record_id": r["id"], "reason": "no confidence", "code": "missing_input"})
            continue
        ok = _correct(r)
        if ok is None:
            unscored.append({"record_id": r["id"], "reason": "no correctness label", "code": "no_gold"})
            continue
        m = bin_index(float(conf), n_bins)
        acc = float(ok)
        rows.append(
            {
                "record_id": r["id"],
                **row_keys(r),
                "n": 1,
                "correct": acc,
                "conf_sum": conf,
                "brier_sum": (conf - acc) ** 2,
                f"bin{m}_n": 1,
                f"bin{m}_conf": conf,
                f"bin{m}_acc": acc,
                "confidence": float(conf),
                "is_correct": bool(ok),
                "bin": m + 1,
            }
        )
    ev = build_evaluation(
        fam,
        rows,
        keys=all_slice_keys(records),
        details=("confidence", "is_correct", "bin"),
        unscored=unscored,
    )
    ev.meta["reliability"] = fam.reliability_table(ev.totals())
    ev.meta["n_bins"] = n_bins
    ev.meta["bin_convention"] = "equal-width, right-closed ((m-1)/M, m/M], 0 in the first bin"
    return ev


def score_generation(
    ontology, records, *, judgments=None, linker=None, ids=None, n_bins=10, strip_citations=True
) -> EvaluationSet:
    """The family call with recorded judgments only (``judge="none"``)."""
    records = list(records)
    linker = linker or dictionary_linker(ontology)
    return EvaluationSet(
        "generation",
        {
            "faithfulness": score_faithfulness(records, judgments=judgments, judge=None),
            "correctness": score_correctness(
                records, ontology, linker=linker, ids=ids, strip_citations=strip_citations
            ),
            "refusal": score_refusal(records),
            "unseen_concepts": score_unseen(records, ontology, linker=linker, ids=ids),
            "calibration": score_calibration(records, n_bins=n_bins),
        },
    )
