"""Judge calibration families: agreement with human labels, false approvals and rejections,
PPI estimates, position bias, length view and agreement between two judges.

All metrics are functions of additive counts (``docs/judges.md`` gives every formula), so they
break down by slice, judge and length bin and roll up along the ontology like any metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kg_rageval.families.judges.ppi import PPI_STATS, ppi_from_sums
from kg_rageval.families.judges.stats import cohen_kappa, rate_with_wilson
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, ratio

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.judges.labels import RubricLabels

COUNT_STATS = ("n_outputs", "n_scored", "n_invalid", "n_unscorable", "n_failed")


def _label_stats(labels: tuple[str, ...], a: str, b: str) -> tuple[str, ...]:
    return tuple(f"{a}:{x}" for x in labels) + tuple(f"{b}:{x}" for x in labels)


BASE_STATS = (
    COUNT_STATS
    + (
        "judge_approvals",
        "n_labelled",
        "approval_agree",
        "false_approvals",
        "false_rejections",
        "human_approvals",
        "n_label_pairs",
        "agree",
    )
    + PPI_STATS
    + (
        "len_decisive",
        "judge_longer",
        "human_len_decisive",
        "human_longer",
        "lc_n_a_longer",
        "lc_a_wins_a_longer",
        "lc_n_b_longer",
        "lc_a_wins_b_longer",
    )
)


class JudgeCalibrationFamily(Family):
    """One judge against human labels, every rubric at once (member ``judge_calibration``).

    Stats are kept per rubric (``<rubric>:<stat>``). Counts: ``n_outputs`` judge entries, of
    which ``n_scored`` valid verdicts, ``n_invalid`` (not JSON / breaks the contract),
    ``n_unscorable`` (the judge declined) and ``n_failed`` (the call failed: timeout, HTTP
    error). Among the scored ones with a human label: ``n_labelled``, ``approval_agree``,
    ``false_approvals`` (judge approves, human does not), ``false_rejections`` (human
    approves, judge does not), ``human_approvals``; with a human label from the rubric's label
    set also ``n_label_pairs``, ``agree`` and per-label counts ``judge:<label>`` /
    ``human:<label>`` (for Cohen's κ).

    Metrics: ``<rubric>.<metric>`` per rubric, and ``<metric>`` pooled over the rubrics
    present (approval-based metrics add up across rubrics; ``accuracy`` and ``cohen_kappa``,
    whose label sets differ, are pooled only when one rubric is present)."""

    name = "judge_calibration"
    version = "2"

    def __init__(
        self, rubrics: Mapping[str, type[RubricLabels]], *, level: float = 0.95, ppi_lambda: float | str = 1.0
    ):
        self.rubrics = dict(rubrics)
        self.level = level
        self.ppi_lambda = ppi_lambda
        self.stats = tuple(
            f"{r}:{x}"
            for r, sc in self.rubrics.items()
            for x in BASE_STATS + _label_stats(sc.LABELS, "judge", "human")
        )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        per = {
            r: {x: s[f"{r}:{x}"] for x in BASE_STATS + _label_stats(sc.LABELS, "judge", "human")}
            for r, sc in self.rubrics.items()
        }
        used = [r for r in self.rubrics if per[r]["n_outputs"] > 0]
        pooled = {x: sum(per[r][x] for r in self.rubrics) for x in BASE_STATS}
        if len(used) == 1:
            labels: tuple[str, ...] | str = self.rubrics[used[0]].LABELS
            pooled.update({k: v for k, v in per[used[0]].items() if k not in pooled})
        else:
            labels = (
                f"pools the rubrics {', '.join(used)} (their labels differ): use judge.<rubric>.<metric>"
                if used
                else "no judge outputs"
            )
        out = self._metrics(pooled, labels)
        for r, sc in self.rubrics.items():
            for k, m in self._metrics(per[r], sc.LABELS).items():
                key = f"{r}.{k}"
                out[key] = Metric(key, m.value, m.numerator, m.denominator, m.missing, m.ci)
        return out

    def _metrics(self, s: Mapping[str, float], labels: tuple[str, ...] | str) -> dict[str, Metric]:
        """The metrics of one rubric's (or the pooled) sums; ``labels`` is the label set for
        accuracy and κ, or the reason they are missing."""
        out: dict[str, Metric] = {}
        n_out = s["n_outputs"]
        for stat, metric in (
            ("n_invalid", "invalid_output_rate"),
            ("n_unscorable", "unscorable_rate"),
            ("n_failed", "failed_call_rate"),
        ):
            out[metric] = ratio(metric, s[stat], n_out, missing="no judge outputs")
        out["judge_approval_rate"] = ratio(
            "judge_approval_rate", s["judge_approvals"], s["n_scored"], missing="no scored judge verdicts"
        )
        nl = s["n_labelled"]
        out["human_approval_rate"] = ratio(
            "human_approval_rate", s["human_approvals"], nl, missing="no scored verdicts with a human label"
        )
        out["approval_accuracy"] = ratio(
            "approval_accuracy", s["approval_agree"], nl, missing="no scored verdicts with a human label"
        )
        if isinstance(labels, str):
            out["accuracy"] = Metric("accuracy", None, missing=labels)
            out["cohen_kappa"] = Metric("cohen_kappa", None, missing=labels)
        else:
            npair = s["n_label_pairs"]
            out["accuracy"] = ratio(
                "accuracy",
                s["agree"],
                npair,
                missing="no scored verdicts with a human label from the rubric's labels",
            )
            out["cohen_kappa"] = cohen_kappa(
                "cohen_kappa",
                npair,
                s["agree"],
                [s[f"judge:{x}"] for x in labels],
                [s[f"human:{x}"] for x in labels],
            )
        # binary κ on approve / not approve
        both_approve = s["approval_agree"] - (nl - s["human_approvals"] - s["false_approvals"])
        j_app = both_approve + s["false_approvals"]
        out["approval_kappa"] = cohen_kappa(
            "approval_kappa",
            nl,
            s["approval_agree"],
            [j_app, nl - j_app],
            [s["human_approvals"], nl - s["human_approvals"]],
        )
        n_rej = nl - s["human_approvals"]
        for name, k, n, why in (
            ("false_approval_rate", s["false_approvals"], n_rej, "no item a human rejected"),
            ("false_rejection_rate", s["false_rejections"], s["human_approvals"], "no item a human approved"),
        ):
            m, lo, hi = rate_with_wilson(name, k, n, missing=why, level=self.level)
            out[name], out[lo.name], out[hi.name] = m, lo, hi
        p = ppi_from_sums(s, level=self.level, lam=self.ppi_lambda)
        if p.estimate is None or p.low is None or p.high is None:
            for name in ("ppi_approval_rate", "ppi_ci_low", "ppi_ci_high"):
                out[name] = Metric(name, None, missing=p.missing)
        else:
            out["ppi_approval_rate"] = Metric("ppi_approval_rate", p.estimate, ci=(p.low, p.high))
            out["ppi_ci_low"] = Metric("ppi_ci_low", p.low)
            out["ppi_ci_high"] = Metric("ppi_ci_high", p.high)
        out["judge_longer_win_rate"] = ratio(
            "judge_longer_win_rate",
            s["judge_longer"],
            s["len_decisive"],
            missing="no decisive pairwise verdict on answers of unequal length",
        )
        out["human_longer_win_rate"] = ratio(
            "human_longer_win_rate",
            s["human_longer"],
            s["human_len_decisive"],
            missing="no decisive human preference on answers of unequal length",
        )
        wa = ratio("w", s["lc_a_wins_a_longer"], s["lc_n_a_longer"], missing="no pair where A is longer")
        wb = ratio("w", s["lc_a_wins_b_longer"], s["lc_n_b_longer"], missing="no pair where B is longer")
        if wa.value is None or wb.value is None:
            out["length_balanced_win_rate"] = Metric(
                "length_balanced_win_rate", None, missing=wa.missing or wb.missing
            )
        else:
            out["length_balanced_win_rate"] = Metric("length_balanced_win_rate", (wa.value + wb.value) / 2)
        return out


class PositionBiasFamily(Family):
    """Pairwise judges shown both orders (AB and BA) of the same pair.

    Per pair: ``n_pairs`` = 1, ``consistent`` = 1 when both verdicts, mapped back to the
    original answers, agree; per verdict: ``n_verdicts``, ``n_decisive`` (not a tie),
    ``first_position_wins`` (the answer shown first won). ``position_consistency =
    consistent / n_pairs``; ``first_position_win_rate = first_position_wins / n_decisive``
    (0.5 is unbiased)."""

    name = "position_bias"
    version = "1"
    stats = ("n_pairs", "consistent", "n_verdicts", "n_decisive", "first_position_wins")

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        return {
            "position_consistency": ratio(
                "position_consistency", s["consistent"], s["n_pairs"], missing="no pair judged in both orders"
            ),
            "first_position_win_rate": ratio(
                "first_position_win_rate",
                s["first_position_wins"],
                s["n_decisive"],
                missing="no decisive verdict on a swapped pair",
            ),
        }


class JudgeAgreementFamily(Family):
    """Two judges on the same items (same record, item and order), over every rubric:
    ``judge_agreement = agree / n`` and ``judge_agreement_kappa``, Cohen's κ over the labels
    (``a:<label>`` / ``b:<label>`` counts; label texts of different rubrics do not mix:
    ``<rubric>/<label>``)."""

    name = "agreement"
    version = "2"

    def __init__(self, rubrics: Mapping[str, type[RubricLabels]]):
        self.labels = tuple(f"{r}/{x}" for r, sc in rubrics.items() for x in sc.LABELS)
        self.stats = ("n", "agree") + _label_stats(self.labels, "a", "b")

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        why = "no item both judges scored (set second_judge, or give the records two judges' verdicts)"
        return {
            "judge_agreement": ratio("judge_agreement", s["agree"], s["n"], missing=why),
            "judge_agreement_kappa": cohen_kappa(
                "judge_agreement_kappa",
                s["n"],
                s["agree"],
                [s[f"a:{x}"] for x in self.labels],
                [s[f"b:{x}"] for x in self.labels],
                missing=why,
            ),
        }
