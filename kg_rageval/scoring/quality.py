"""Declarations of the judge, system and context families (``docs/judges.md``,
``docs/system.md``): parameters, inputs and metrics, like :mod:`.builtin`. Standard library only.

* ``judge`` declares its metrics: the calibration metrics pooled over rubrics (``<metric>``)
  and per rubric (``<rubric>.<metric>``), position bias and two-judge agreement.
* ``system`` declares templates with word placeholders: the stages, token kinds and cache
  layers are the ones the records name (``latency.{stage:word}_ms.p95`` matches
  ``latency.total_ms.p95``, ``cache.{layer:word}.hit_rate`` matches ``cache.llm.hit_rate``).
* ``context`` declares its fixed metrics.
"""

from __future__ import annotations

from kg_rageval.contract.metrics import MetricSpec, metric_specs
from kg_rageval.contract.params import Param
from kg_rageval.scoring.scorer import Scorer

RUBRIC_NAMES = ("pairwise", "citation_support", "refusal", "answer_correctness", "nugget_support")
"""The rubrics of :mod:`kg_rageval.families.judges.contracts` (checked equal by the tests)."""

CALIBRATION_METRICS: tuple[tuple[str, str, str], ...] = (
    (
        "invalid_output_rate",
        "lower",
        "judge outputs that are not JSON or break the rubric's contract / outputs",
    ),
    ("unscorable_rate", "lower", "outputs whose verdict is 'unscorable' / outputs"),
    ("failed_call_rate", "lower", "entries whose judge call failed (timeout, HTTP error) / outputs"),
    ("judge_approval_rate", "none", "scored verdicts that approve / scored verdicts"),
    ("human_approval_rate", "none", "human approvals / scored verdicts with a human label"),
    ("approval_accuracy", "higher", "judge and human agree on approve / not approve, over labelled verdicts"),
    (
        "accuracy",
        "higher",
        "judge label equals the human label / items with a human label from the rubric's labels",
    ),
    ("cohen_kappa", "higher", "Cohen's kappa (p_o - p_e) / (1 - p_e) over the rubric's labels"),
    ("approval_kappa", "higher", "Cohen's kappa on approve / not approve"),
    ("false_approval_rate", "lower", "judge approves, human rejects / items a human rejected (Wilson CI)"),
    ("false_approval_rate_wilson_low", "lower", "lower Wilson bound of false_approval_rate"),
    ("false_approval_rate_wilson_high", "lower", "upper Wilson bound of false_approval_rate"),
    ("false_rejection_rate", "lower", "judge rejects, human approves / items a human approved (Wilson CI)"),
    ("false_rejection_rate_wilson_low", "lower", "lower Wilson bound of false_rejection_rate"),
    ("false_rejection_rate_wilson_high", "lower", "upper Wilson bound of false_rejection_rate"),
    (
        "ppi_approval_rate",
        "none",
        "prediction-powered estimate of the approval rate: lam*mean_N(yhat) + mean_n(y - lam*yhat)",
    ),
    ("ppi_ci_low", "higher", "lower bound of the PPI interval"),
    ("ppi_ci_high", "none", "upper bound of the PPI interval"),
    (
        "judge_longer_win_rate",
        "none",
        "pairwise: the judge picks the longer answer / decisive verdicts on unequal lengths",
    ),
    (
        "human_longer_win_rate",
        "none",
        "pairwise: humans pick the longer answer / decisive human labels on unequal lengths",
    ),
    (
        "length_balanced_win_rate",
        "none",
        "pairwise: mean of A's win rate (ties 1/2) over pairs where A is longer "
        "and over pairs where B is longer (length-controlled)",
    ),
)


def _calibration_specs() -> tuple[MetricSpec, ...]:
    rows = list(CALIBRATION_METRICS)
    rows += [(f"{r}.{n}", d, f"{f} ({r} only)") for r in RUBRIC_NAMES for n, d, f in CALIBRATION_METRICS]
    return metric_specs("judge", "judge_calibration", rows)


def _p(name: str, kind: str, default, help: str, **kw) -> Param:  # type: ignore[no-untyped-def]
    return Param(name, kind, default, help, **kw)


JUDGE = Scorer(
    name="judge",
    target="kg_rageval.families.judges:score_judges",
    streamable=False,  # the judges are chosen from all records; PPI and kappa pool every item
    sections=("judges",),
    section_required=True,
    description="Judge calibration vs human labels (accuracy, Cohen's kappa, false approvals/rejections with "
    "Wilson CIs), PPI estimates, position bias, two-judge agreement.",
    members=("judge_calibration", "position_bias", "agreement"),
    params=(
        _p(
            "judge",
            "str",
            None,
            "The judge to calibrate (default: the only judge in the records).",
            nullable=True,
        ),
        _p(
            "second_judge",
            "str",
            None,
            "The judge compared with it (default: the other one of exactly two).",
            nullable=True,
        ),
        _p("level", "float", 0.95, "Confidence level of the Wilson and PPI intervals.", minimum=0.5),
        _p("ppi_lambda", "str", "1", "PPI power tuning: 1 = plain PPI, 0 = human labels only, auto = PPI++."),
        _p(
            "length_bins",
            "int_list",
            (50, 150),
            "Word-count edges of the length bins (length-controlled view).",
            minimum=1,
        ),
        _p(
            "endpoint",
            "str",
            None,
            "Judge live first: an OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.",
            nullable=True,
        ),
        _p("model", "str", None, "The live judge's model name.", nullable=True),
        _p(
            "rubrics",
            "str_list",
            ("answer_correctness",),
            "Rubrics to judge live.",
            choices=RUBRIC_NAMES,
            flags=("--rubric",),
        ),
        _p(
            "judge_name",
            "str",
            None,
            "Name of the live judge in the records (default: the model).",
            nullable=True,
        ),
        _p(
            "api_key_env",
            "str",
            "OPENAI_API_KEY",
            "Environment variable holding the API key (never printed or stored).",
        ),
        _p(
            "cache_dir",
            "str",
            None,
            "On-disk cache of judge calls (sha256 of model + prompt + schema).",
            nullable=True,
        ),
        _p("concurrency", "int", 4, "Judge calls at a time.", minimum=1),
        _p("timeout", "float", 60.0, "Seconds per judge call.", minimum=0.001),
        _p("max_retries", "int", 4, "Retries on 429 / 5xx / timeouts (exponential backoff).", minimum=0),
        _p("price_prompt", "float", 0.0, "USD per million prompt tokens (cost accounting).", minimum=0),
        _p("price_completion", "float", 0.0, "USD per million completion tokens.", minimum=0),
    ),
    metrics=_calibration_specs()
    + metric_specs(
        "judge",
        "position_bias",
        (
            (
                "position_consistency",
                "higher",
                "pairs whose two verdicts (AB, BA) agree after mapping back / pairs judged in both orders",
            ),
            (
                "first_position_win_rate",
                "none",
                "decisive verdicts naming the answer shown first / decisive verdicts (0.5 = unbiased)",
            ),
        ),
    )
    + metric_specs(
        "judge",
        "agreement",
        (
            ("judge_agreement", "higher", "items both judges labelled alike / items both scored"),
            ("judge_agreement_kappa", "higher", "Cohen's kappa between the two judges"),
        ),
    ),
)

SYSTEM = Scorer(
    name="system",
    target="kg_rageval.families.system:score_system",
    streamable=False,  # quantiles over all records
    sections=("system",),
    section_required=True,
    description="Latency p50/p95/p99 per stage (bootstrap CIs by record), $/query, tokens, cache hit rates "
    "(metric names follow the stages, token kinds and cache layers of the records).",
    metrics=metric_specs(
        "system",
        "system",
        [
            (f"latency.{{stage:word}}_ms.{q}", d, f)
            for q, d, f in (
                (
                    "p50",
                    "lower",
                    "median latency of the stage over the records that carry it (type-7 quantile)",
                ),
                (
                    "p95",
                    "lower",
                    "95th percentile latency of the stage (rows of the group, bootstrap CI by record)",
                ),
                ("p99", "lower", "99th percentile latency of the stage"),
                ("max", "lower", "largest latency of the stage"),
                ("mean", "lower", "mean latency of the stage"),
                ("n_missing", "none", "records with a system section but without this timing"),
                ("missing_rate", "lower", "n_missing / records with a system section"),
            )
        ]
        + [
            (f"cost.usd_per_query.{q}", d, f)
            for q, d, f in (
                ("mean", "lower", "mean cost per query (USD)"),
                ("p50", "lower", "median cost per query"),
                ("p95", "lower", "95th percentile cost per query"),
                ("p99", "lower", "99th percentile cost per query"),
                ("n_missing", "none", "records without cost_usd"),
                ("missing_rate", "lower", "n_missing / records"),
            )
        ]
        + [("cost.usd_total", "none", "Σ cost_usd")]
        + [
            (f"tokens.{{kind:word}}.{q}", d, f)
            for q, d, f in (
                ("mean", "none", "mean tokens per query"),
                ("p95", "none", "95th percentile tokens per query"),
                ("sum", "none", "Σ tokens"),
                ("n_missing", "none", "records without this token count"),
                ("missing_rate", "lower", "n_missing / records"),
            )
        ]
        + [("cache.{layer:word}.hit_rate", "higher", "cache hits / records reporting the layer")],
    ),
    params=(
        _p(
            "stages",
            "str_list",
            None,
            "Latency stages to report (default: retrieve, rerank, generate, total, "
            "ttft plus any stage a record names).",
            nullable=True,
            flags=("--stage",),
        ),
    ),
)

CONTEXT = Scorer(
    name="context",
    target="kg_rageval.families.system:score_context",
    sections=("context", "retrieval"),
    section_required=True,
    description="Context construction: citation coverage of the supplied chunks, lost in the middle, "
    "compression ratio beside correctness.",
    metrics=metric_specs(
        "context",
        "context",
        (
            ("citation_coverage", "higher", "Σ distinct cited supplied chunks / Σ distinct supplied chunks"),
            ("citation_coverage_macro", "higher", "mean over records of cited / supplied distinct chunks"),
            ("empty_context_rate", "lower", "records with an empty context / records with a context"),
            ("cited_outside_context_rate", "lower", "distinct cited ids never supplied / distinct cited ids"),
            ("accuracy", "higher", "correct answers / records with a correctness label"),
            ("compression_ratio", "none", "Σ context tokens / Σ original tokens"),
            ("accuracy_gold_first", "higher", "accuracy with the gold chunk first in the context"),
            ("accuracy_gold_middle", "higher", "accuracy with the gold chunk in the middle"),
            ("accuracy_gold_last", "higher", "accuracy with the gold chunk last"),
            ("middle_gap", "lower", "(first + last) / 2 - middle accuracy: lost in the middle when positive"),
        ),
    ),
)

QUALITY: tuple[Scorer, ...] = (JUDGE, SYSTEM, CONTEXT)
