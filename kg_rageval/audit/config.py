"""Audit configuration (TOML or YAML), validated with pydantic.

Paths are relative to the config file's directory. Unknown keys are errors (a typo such as
``gate:`` instead of ``gates:`` must not silently disable the release gate). Every error names
the file and the key path, e.g. ``audit.yaml: bootstrap.n_resamples: Input should be greater
than or equal to 1``. See ``docs/audit.md`` for the reference; a minimal config::

    ontology: attack.json.gz
    records: records.jsonl
    corpus: corpus.jsonl
    families: {retrieval: {k: [1, 5, 10]}, hierarchy: {}}
    gates: ["recall@10 >= 0.85", "ci_low(mrr) >= 0.6"]
    slice_gates: {"intent=lookup": ["mrr >= 0.7"]}
    node_gates: {"TA0006": ["hierarchical_f1 >= 0.7"]}
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kg_rageval.audit.gates import Gate, parse_gate
from kg_rageval.base.errors import ConfigError
from kg_rageval.base.validation import validation_lines


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class OntologyInput(_Strict):
    """``path`` is a file (relative to the config) or a graph database URI (``bolt://``,
    ``neo4j://``: ``format`` defaults to ``neo4j``); ``options`` are the loader options
    (:mod:`kg_rageval.ontology.loaders.options`: ``strict``, ``conflicts``, ``dangling``,
    ``follow_imports``, ``reasoner``, ``source_names``, ``mapping`` — a preset or a mapping
    file relative to the config —, ``database``, ...), checked against the loader."""

    path: str
    format: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("options")
    @classmethod
    def _no_secrets(cls, v: dict[str, Any]) -> dict[str, Any]:
        from kg_rageval.ontology.loaders.options import SECRET_OPTIONS

        bad = sorted(k for k in v if k in SECRET_OPTIONS)
        if bad:
            raise ValueError(
                f"{', '.join(bad)}: credentials come from the environment only "
                "(KG_RAGEVAL_NEO4J_USER / KG_RAGEVAL_NEO4J_PASSWORD), never from the config"
            )
        return v

    @field_validator("path")
    @classmethod
    def _no_uri_credentials(cls, v: str) -> str:
        _refuse_uri_credentials(v)
        return v


def _refuse_uri_credentials(uri: str | None) -> str | None:
    from kg_rageval.ontology.loaders.neo4j import redact_uri

    if uri and "://" in uri and redact_uri(uri) != uri:
        raise ValueError(
            "the URI holds credentials (user:password@); they come from the environment "
            "only (KG_RAGEVAL_NEO4J_USER / KG_RAGEVAL_NEO4J_PASSWORD)"
        )
    return uri


class BootstrapConfig(_Strict):
    """Percentile bootstrap over records (see :meth:`Evaluation.bootstrap`). ``always``
    computes intervals for every global metric, not only those a gate bounds."""

    n_resamples: int = Field(1000, ge=1, le=1_000_000)
    level: float = Field(0.95, gt=0.0, lt=1.0)
    seed: int = 0
    always: bool = False
    min_units: int = Field(30, ge=1)
    """Fewest resampling units (records; paired records for ``delta:``) a ``ci_low``/``ci_high``
    gate needs; below it the gate is missing evidence."""
    method: Literal["auto", "percentile", "clopper_pearson", "wilson"] = "auto"
    """How bounds are computed (``kg_rageval.audit.intervals``): ``auto`` widens the percentile
    bootstrap to the Clopper–Pearson interval for proportions of whole counts."""
    methods: dict[str, Literal["auto", "percentile", "clopper_pearson", "wilson"]] = Field(
        default_factory=dict
    )
    """Per-metric override of ``method`` (keys: ``metric`` or ``family.metric``)."""


MISSING_RUN_REASONS = (
    "missing run",
    "missing output",
    "missing in repeat",
    "no run",
    "no answer",
    "timeout",
    "timed out",
    "invalid",
    "invalid output",
    "error",
    "failed",
)
"""The families' unscored reasons that mean "the system produced nothing to score" (matched
exactly, case-insensitively; never as substrings: ``no answer`` must not match the
conformance family's ``correct refusal`` or a former ``no answer.output``)."""


MISSING_RUN_METRICS = (
    "missing_run_rate",
    "invalid_judgment_rate",
    "invalid_output_rate",
    "failed_call_rate",
    "unscorable_rate",
    "latency.total_ms.n_missing",
)
"""``latency.total_ms.n_missing``: a record with a system section but no total latency (a timed-out
or crashed run) is a missing run of the system family."""


class MissingRunsConfig(_Strict):
    """The completeness check every family that runs carries: the share of its records that
    are missing runs (a prediction absent, a timeout, an invalid output — decided by the
    family's reason codes) may be at most ``budget`` (default 0: none), or the family's entry
    in ``budgets``. Above it, every gate of that family is ``missing``."""

    budget: float = Field(0.0, ge=0.0, le=1.0)
    budgets: dict[str, float] = Field(default_factory=dict)
    """Per-family budgets (``{generation: 0.05}``); families not listed use ``budget``."""
    reasons: list[str] = Field(default_factory=lambda: list(MISSING_RUN_REASONS))
    """Only for unscored entries without a reason code (families written before codes): the
    reasons that make it a missing run, matched **exactly** (case-insensitive, surrounding
    whitespace ignored), never as substrings (``no answer`` is not ``no answer.output``)."""

    @field_validator("budgets")
    @classmethod
    def _fractions(cls, v: dict[str, float]) -> dict[str, float]:
        for k, b in v.items():
            if not 0.0 <= float(b) <= 1.0:
                raise ValueError(f"budget for family {k!r} must be between 0 and 1, got {b}")
        return v

    metrics: list[str] = Field(default_factory=lambda: list(MISSING_RUN_METRICS))
    """Family metrics whose *numerator* counts scored-but-missing outputs (a missing run scored
    as an empty run, an invalid judge output); they count as missing runs too."""


class NoGoldConfig(_Strict):
    """The scored-share check every family that runs carries: the share of its records left
    unscored because their section has no gold to score against (reason code ``no_gold``, e.g.
    ``labels: {}``) may be at most ``budget`` (default 0.25), or the family's entry in
    ``budgets``. Above it, every gate of that family is ``missing``: a gate decided on the few
    records that kept their gold speaks for a test set that mostly has none (issue #28:
    970 of 1,000 records with empty labels and a gate passing on the 30 left)."""

    budget: float = Field(0.25, ge=0.0, le=1.0)
    budgets: dict[str, float] = Field(default_factory=dict)
    """Per-family budgets (``{generation: 0.5}``); families not listed use ``budget``."""

    @field_validator("budgets")
    @classmethod
    def _fractions(cls, v: dict[str, float]) -> dict[str, float]:
        for k, b in v.items():
            if not 0.0 <= float(b) <= 1.0:
                raise ValueError(f"budget for family {k!r} must be between 0 and 1, got {b}")
        return v


class MinRowsConfig(_Strict):
    """The declared minimum of rows every gate needs (``kg_rageval.contract.gates``, *Minimum of
    rows*): below it the gate is missing evidence. ``default`` (30) applies to every gate, and a
    quantile ``pQ`` needs at least :func:`~kg_rageval.contract.gates.quantile_min_rows` (59 for
    p95, 299 for p99); ``metrics`` declares a gate's own minimum by its metric as written in the
    gate (``latency.total_ms.p95`` or ``p95(latency.total_ms)``, ``metric[scope]`` for one scope),
    which replaces both. ``min_rows: 50`` is short for ``min_rows: {default: 50}``."""

    default: int = Field(30, ge=1)
    metrics: dict[str, int] = Field(default_factory=dict)

    @field_validator("metrics")
    @classmethod
    def _positive(cls, v: dict[str, int]) -> dict[str, int]:
        for k, n in v.items():
            if n < 1:
                raise ValueError(f"minimum for {k!r} must be >= 1, got {n}")
        return v

    def rule(self) -> Any:
        """The :class:`~kg_rageval.contract.gates.RowMinimum` the gates are decided with."""
        from kg_rageval.contract.gates import RowMinimum

        return RowMinimum.of(self.default, self.metrics)


class BaselineConfig(_Strict):
    """Audit against a baseline run on the same records: paired deltas ``delta:<metric>`` =
    candidate − baseline with paired bootstrap intervals; each ``budgets`` entry adds the gate
    ``<use>(delta:<metric>) >= -budget`` (for lower-is-better metrics listed in
    ``lower_is_better``: ``<= +budget``)."""

    records: str
    budgets: dict[str, float] = Field(default_factory=dict)
    use: Literal["value", "ci_low", "ci_high"] = "value"
    lower_is_better: list[str] = Field(default_factory=list)
    min_paired_fraction: float = Field(0.95, ge=0.0, le=1.0)
    """Paired records (scored by both systems) over the records either scored, per evaluation;
    below it every delta of that evaluation is missing evidence."""
    max_dropped: int = Field(0, ge=0)
    """Baseline records the candidate's records file lacks that are tolerated (default none):
    a candidate must not drop the queries it is compared on."""
    # the baseline's ontology release (docs/drift.md): another release than the candidate's is
    # refused unless the records were re-based or the comparison is on the unchanged nodes
    ontology: OntologyInput | None = None
    """The release the baseline was audited on (CLI ``--baseline-ontology``): compare on the
    nodes unchanged between it and ``ontology``."""
    manifest: str | None = None
    """The baseline audit's ``manifest.json``: it names the baseline's release."""
    rebase_report: str | None = None
    """The ``kg-rageval records rebase`` report of the baseline records (default
    ``<records>.rebase.json``)."""

    @field_validator("ontology", mode="before")
    @classmethod
    def _ontology_str(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, str) else v

    @field_validator("budgets")
    @classmethod
    def _non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        for k, b in v.items():
            if b < 0:
                raise ValueError(f"budget for {k!r} must be >= 0, got {b}")
        return v


class CoverageConfig(_Strict):
    """Coverage matrix axes: intent and document type come from record slices (or, for the
    document type, the ``type_field`` of the first gold document in the corpus); the branch is
    the gold node's ancestor at ``branch_depth`` (1 = top-level branches), or — when
    ``branches`` lists node ids — the first listed branch whose subtree holds the gold node
    (``(other)`` for none)."""

    intent_slice: str = "intent"
    doc_type_slice: str = "doc_type"
    type_field: str = "type"
    branch_depth: int = Field(1, ge=1)
    branches: list[str] | None = None
    thin: int = Field(5, ge=1)


ReportFormat = Literal["json", "markdown", "html", "junit"]
REPORT_FORMATS: tuple[ReportFormat, ...] = ("json", "markdown", "html", "junit")


class WriteBackConfig(_Strict):
    """Write the per-node roll-up back into a graph database (``report.write_back``).

    ``uri`` defaults to the ontology's when it was loaded from a graph database, ``mapping``
    and ``database`` likewise; credentials come from ``KG_RAGEVAL_NEO4J_USER`` /
    ``KG_RAGEVAL_NEO4J_PASSWORD`` only (a URI with ``user:password@`` is refused). ``mode``:
    ``nodes`` (``(:EvalResult)-[:EVALUATES]->(concept)``) or ``properties`` (``<prefix><metric>``
    on the concept nodes); ``run_id`` defaults to ``<name>-<config hash prefix>``."""

    uri: str | None = None
    mapping: str | dict[str, Any] | None = None
    database: str | None = None
    mode: Literal["nodes", "properties"] = "nodes"
    run_id: str | None = None
    prefix: str = "kgr_"
    metrics: list[str] | None = None
    """``family.metric`` names to write (default: every metric of the roll-up)."""

    @field_validator("uri")
    @classmethod
    def _no_uri_credentials(cls, v: str | None) -> str | None:
        return _refuse_uri_credentials(v)


class ReportConfig(_Strict):
    formats: list[ReportFormat] = Field(default_factory=lambda: list(REPORT_FORMATS))
    top_branches: int = Field(10, ge=1)
    node_rollup: bool | Literal["all"] = True
    """Per-node section of the report: ``true`` = the nodes shown (``depth_min <= node_depth``),
    the nodes gated and the failure drivers; ``"all"`` = every node with rows; ``false`` = none."""
    node_depth: int = Field(3, ge=0)
    """Deepest level (root = 0) of the per-node section when ``node_rollup`` is ``true``."""
    failing_records: int = Field(10, ge=0, le=10_000)
    """Records listed per failing gate (worst first; 0 lists none; see ``audit/failing.py``)."""
    write_back: WriteBackConfig | None = None


class AuditConfig(_Strict):
    """The whole audit configuration; see ``docs/audit.md``."""

    name: str = "audit"
    ontology: OntologyInput
    records: str
    records_format: str | None = None
    """Import format of ``records`` (``records: {format: ragas, path: data.parquet}`` sets it;
    ``docs/interop.md``): the file is read by that reader instead of as records JSONL."""
    corpus: str | None = None
    spec: str | None = None
    judgments: str | None = None
    qrels: str | None = None
    """Qrels file of the ``trec`` family (TREC, BEIR TSV or JSON; docs/retrieval.md)."""
    run: str | None = None
    """Run file of the ``trec`` family (TREC or JSON)."""
    shapes: str | None = None
    """SHACL shapes file of the ``shacl`` family (docs/conformance.md)."""
    families: dict[str, dict[str, Any]] = Field(default_factory=dict)
    plugins: list[str] = Field(default_factory=list)
    """``module:attribute`` paths of plugin families (each a ``Scorer``), registered when the config
    is read, before ``families`` is checked (``docs/plugins.md``); the ``kg_rageval.families``
    entry points are loaded too."""
    slices: list[str] | None = None
    """Slice names broken down in the report (``None``: every slice the records use)."""
    gates: list[str] = Field(default_factory=list)
    slice_gates: dict[str, list[str]] = Field(default_factory=dict)
    node_gates: dict[str, list[str]] = Field(default_factory=dict)
    missing_runs: MissingRunsConfig = Field(default_factory=MissingRunsConfig)
    no_gold: NoGoldConfig = Field(default_factory=NoGoldConfig)
    min_rows: MinRowsConfig = Field(default_factory=MinRowsConfig)
    """Fewest rows a gate's number rests on (:class:`MinRowsConfig`); below it the gate is missing evidence."""
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    baseline: BaselineConfig | None = None
    coverage: CoverageConfig = Field(default_factory=CoverageConfig)
    report: ReportConfig = Field(default_factory=ReportConfig)
    seed: int = 0
    judge: dict[str, Any] = Field(default_factory=dict)
    testset_manifest: str | None = None
    """A test-set manifest (``kg-rageval testset check``): its file hash and stated ``hash`` are
    cited in the audit manifest."""
    limits: dict[str, int | str] = Field(default_factory=dict)
    """Input-cost limits in force while this audit reads its inputs (:mod:`kg_rageval.base.limits`)."""
    chunk_size: int | None = Field(None, ge=0)
    """Records per chunk when the audit streams its records file (every family it runs is
    streamable: :mod:`kg_rageval.audit.stream`); ``None``: :data:`~kg_rageval.audit.stream.AUDIT_CHUNK_SIZE`;
    ``0``: read the whole file at once (hold every record). The report is the same either way."""
    spill_rows: int | None = Field(None, ge=0)
    """Rows of a streamed family result held in memory before its numeric columns (stats, keys,
    details) go to a temporary file in the system's temporary directory, read back from it bit for
    bit (:mod:`kg_rageval.results.colstore`); ``None``: :data:`~kg_rageval.results.colstore.SPILL_ROWS` (65,536);
    ``0``: never. The report is the same either way."""

    @field_validator("limits")
    @classmethod
    def _limits(cls, v: dict[str, int | str]) -> dict[str, int | str]:
        from kg_rageval.base import limits as _lim

        for name, value in v.items():
            _lim._check_name(name)
            _lim.parse_value(name, value)
        return v

    @field_validator("min_rows", mode="before")
    @classmethod
    def _min_rows_int(cls, v: Any) -> Any:
        """``min_rows: 50`` is ``{default: 50}``."""
        return {"default": v} if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("families", mode="before")
    @classmethod
    def _families(cls, v: Any) -> Any:
        """``families: [hierarchy, retrieval]`` or ``{hierarchy: }`` (no options) are accepted."""
        if isinstance(v, list):
            return {name: {} for name in v}
        if isinstance(v, dict):
            return {k: ({} if opts is None else opts) for k, opts in v.items()}
        return v

    @field_validator("ontology", mode="before")
    @classmethod
    def _ontology_str(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, str) else v

    # filled by load_config
    _base_dir: Path = Path(".")
    _source: str = "<memory>"
    _raw_hash: str = ""

    # ---------------------------------------------------------------- helpers
    @overload
    def path(self, value: str) -> Path: ...

    @overload
    def path(self, value: None) -> None: ...

    def path(self, value: str | None) -> Path | None:
        """A config path resolved against the config file's directory."""
        if value is None:
            return None
        p = Path(value).expanduser()
        return p if p.is_absolute() else (self._base_dir / p)

    @property
    def source(self) -> str:
        return self._source

    @property
    def content_hash(self) -> str:
        """sha256 of the config file's bytes (or of its canonical JSON when built in memory,
        without ``chunk_size`` and ``spill_rows``: how the records are read and where the results
        are kept changes no number)."""
        if self._raw_hash:
            return self._raw_hash
        skip = (
            {"chunk_size", "spill_rows"}
            | (set() if self.plugins else {"plugins"})
            | (set() if self.min_rows != MinRowsConfig() else {"min_rows"})
        )  # hash as before without
        blob = json.dumps(self.model_dump(mode="json", exclude=skip), sort_keys=True).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()

    def check_families(self) -> None:
        """Register the ``plugins`` (and the entry point families); then each ``families.<name>``
        is a registered family and its options are declared
        parameters with valid values (:meth:`Scorer.validate`): an unknown key or a bad value
        is a :class:`ConfigError` naming ``families.<name>.<key>`` with a "did you mean"."""
        from kg_rageval.scoring import get_scorer, load_entry_points, load_family

        load_entry_points()
        for i, path in enumerate(self.plugins):
            try:
                load_family(path, where=f"plugins[{i}]")
            except ConfigError as exc:
                raise ConfigError(str(exc), source=self._source) from None
        errors: list[str] = []
        for name, opts in self.families.items():
            try:
                get_scorer(name).validate(opts)
            except ConfigError as exc:
                errors.append(f"families: {exc}" if "unknown family" in str(exc) else str(exc))
        if errors:
            raise ConfigError(
                f"{len(errors)} invalid famil{'ies' if len(errors) > 1 else 'y'} option"
                f"{'s' if len(errors) > 1 else ''}:\n  " + "\n  ".join(errors),
                source=self._source,
            )

    def all_gates(self) -> list[Gate]:
        """Global, slice and node gates as :class:`Gate` objects, all parse errors at once."""
        errors: list[str] = []
        gates: list[Gate] = []

        def add(text: str, where: str, scope: str | None) -> None:
            try:
                g = parse_gate(text)
                if scope is not None:
                    if g.scope is not None and g.scope != scope:
                        raise ConfigError(f"gate {text!r} has scope {g.scope!r} inside {scope!r}")
                    g = Gate(g.metric, g.op, g.threshold, scope, g.use)
                gates.append(g)
            except ConfigError as exc:
                errors.append(f"{where}: {exc}")

        for i, t in enumerate(self.gates):
            add(t, f"gates[{i}]", None)
        for sl, texts in self.slice_gates.items():
            name, eq, value = sl.partition("=")
            if not eq or not name or not value:
                errors.append(f"slice_gates.{sl}: key must look like '<slice name>=<value>'")
                continue
            for i, t in enumerate(texts):
                add(t, f"slice_gates.{sl}[{i}]", f"slice:{name.strip()}={value.strip()}")
        for node, texts in self.node_gates.items():
            for i, t in enumerate(texts):
                add(t, f"node_gates.{node}[{i}]", f"node:{node}")
        if self.baseline is not None:
            for metric, budget in self.baseline.budgets.items():
                lower = metric in self.baseline.lower_is_better
                op, thr = ("<=", budget) if lower else (">=", -budget)
                try:
                    gates.append(Gate(f"delta:{metric}", op, float(thr) + 0.0, None, self.baseline.use))
                except ConfigError as exc:
                    errors.append(f"baseline.budgets.{metric}: {exc}")
        if self.min_rows.metrics:  # a minimum on a metric no gate reads is a typo, not a rule
            from kg_rageval.contract.gates import RowMinimum

            read = {k for g in gates for k in (g.metric, g.key)}
            for key, _ in RowMinimum.of(1, self.min_rows.metrics).metrics:
                if key not in read:
                    errors.append(
                        f"min_rows.metrics.{key}: no gate reads this metric (gates read: "
                        + ", ".join(sorted({g.metric for g in gates})[:20])
                        + ")"
                    )
        if errors:
            raise ConfigError(
                f"{len(errors)} invalid gate{'s' if len(errors) > 1 else ''}:\n  " + "\n  ".join(errors),
                source=self._source,
            )
        return gates


def _read_mapping(path: Path) -> tuple[dict[str, Any], bytes]:
    from kg_rageval.records import read_structured

    data, raw = read_structured(path, what="config")
    if not isinstance(data, dict):
        raise ConfigError(
            f"config must be a mapping at the top level, got {type(data).__name__}", source=str(path)
        )
    return data, raw


def _records_import(data: dict[str, Any], source: str) -> dict[str, Any]:
    """``records: {format: ragas, path: data.parquet}`` -> ``records`` + ``records_format``;
    an unknown format or key is a :class:`ConfigError` naming ``records.<key>``."""
    spec = data.get("records")
    if not isinstance(spec, dict):
        if isinstance(data.get("records_format"), str):
            from kg_rageval.interop.formats import reader

            try:
                reader(data["records_format"])
            except ConfigError as exc:
                raise ConfigError(str(exc), source=source, location="records_format") from None
        return data
    extra = sorted(set(spec) - {"format", "path"})
    if extra:
        raise ConfigError(
            f"unknown key (records takes format and path): {extra[0]}",
            source=source,
            location=f"records.{extra[0]}",
        )
    if not isinstance(spec.get("path"), str) or not isinstance(spec.get("format"), str):
        raise ConfigError("records needs format and path, both strings", source=source, location="records")
    if "records_format" in data:
        raise ConfigError(
            "give the format in records.format or records_format, not both",
            source=source,
            location="records_format",
        )
    from kg_rageval.interop.formats import reader

    try:
        reader(spec["format"])
    except ConfigError as exc:
        raise ConfigError(str(exc), source=source, location="records.format") from None
    return {**data, "records": spec["path"], "records_format": spec["format"]}


def config_from_mapping(
    data: dict[str, Any], *, base_dir: str | Path = ".", source: str = "<memory>", raw: bytes | None = None
) -> AuditConfig:
    """Validate a config mapping; errors name ``source`` and each bad key path."""
    data = _records_import(data, source)
    try:
        cfg = AuditConfig.model_validate(data)
    except ValidationError as exc:
        lines = validation_lines(exc.errors(), unknown="unknown key (see docs/audit.md for the allowed keys)")
        raise ConfigError(
            f"{len(lines)} config error{'s' if len(lines) > 1 else ''}:\n  " + "\n  ".join(lines),
            source=source,
        ) from None
    cfg._base_dir = Path(base_dir)
    cfg._source = source
    if raw is not None:
        cfg._raw_hash = "sha256:" + hashlib.sha256(raw).hexdigest()
    cfg.all_gates()  # fail early on bad gates
    cfg.check_families()
    return cfg


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit config file (``.toml``, ``.yaml``/``.yml`` or ``.json``)."""
    p = Path(path)
    data, raw = _read_mapping(p)
    return config_from_mapping(data, base_dir=p.resolve().parent, source=str(p), raw=raw)
