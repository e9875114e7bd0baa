"""The scorer protocol: how every metric family is declared and called.

A :class:`Scorer` is the one declaration of a family: its scoring function
(``"module:function"``, imported lazily), the record sections that are its evidence, its
extra inputs (corpus, spec, judgments: :class:`Input`, each with its own reader), its
parameters (:class:`~kg_rageval.contract.params.Param`) and its metrics
(:class:`~kg_rageval.contract.metrics.MetricSpec`). Every family is called the same way::

    result = scorer.score(ontology, records, corpus="corpus.jsonl", k=[1, 10])

and returns one :class:`~kg_rageval.results.evaluation_set.EvaluationSet` (one or several named
:class:`~kg_rageval.results.evaluation.Evaluation` objects). The scoring function behind it is called
as ``fn(ontology, records, **inputs, **params)`` with *every* declared parameter (declared
defaults filled in), so the declaration is the only place a default lives.

:meth:`Scorer.bind` validates the options and reads the inputs once, and returns a
:class:`BoundScorer` — a picklable ``records -> EvaluationSet`` callable used for partitions
(Dask) and for the baseline run of an audit.

The bound callable: :mod:`.bound`; the chunked stream it and the audit read files with:
:mod:`.stream`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.base.imports import import_target
from kg_rageval.contract.metrics import MetricSpec
from kg_rageval.contract.params import Param, did_you_mean, validate_options
from kg_rageval.scoring.bound import BoundScorer

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.results.evaluation_set import EvaluationSet


@dataclass(frozen=True)
class Input:
    """An extra input file of a family (``corpus``, ``spec``, ``judgments``).

    ``loader`` (``"module:function"``) reads it: called as ``loader(path, ontology, options)``
    with the family's validated options (so loader options such as retrieval's
    ``category_field`` are family parameters). An input passed as an already loaded object is
    used as it is. ``required``: without it the family cannot run (the audit reports it as
    ``missing_input``; a library call raises :class:`ConfigError`). On the command line the
    input is ``--<name>`` (plus ``flags``); in the audit config it is the top-level key
    ``<name>``."""

    name: str
    help: str
    loader: str | None = None
    required: bool = False
    flags: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def load(self, value: Any, ontology: Any, options: Mapping[str, Any]) -> Any:
        if self.loader is None or not isinstance(value, (str, Path)):
            return value
        return _import(self.loader)(value, ontology, options)


def _import(target: str) -> Callable[..., Any]:
    return import_target(target)


class FamilyUnavailable(Exception):
    """The family's module is not importable (not installed / not written yet)."""


@dataclass(frozen=True)
class Scorer:
    """One metric family's declaration (see the module docstring).

    ``members``: the names (``Family.name``) of the evaluations the function returns, in order;
    default ``(name,)``. ``template_values(options)`` gives, for each numeric placeholder of a
    metric template (``recall@{k}``), the values the configured options produce (so
    ``recall@20`` with ``k: [1, 10]`` is a configuration error, not missing evidence)."""

    name: str
    target: str
    sections: tuple[str, ...]
    params: tuple[Param, ...] = ()
    inputs: tuple[Input, ...] = ()
    metrics: tuple[MetricSpec, ...] = ()
    description: str = ""
    members: tuple[str, ...] = ()
    opt_in: bool = False
    """Run by the audit only when its config's ``families`` names it (not in "all families")."""
    section_required: bool = False
    """A record without the family's section is a *missing run* of the family (reason code
    ``missing_section``) whenever the family is in the audit — its config's ``families`` names
    it or a gate reads one of its metrics — instead of "not applicable": its gates are never
    decided on the subset of records that happen to carry the section (system timings, judge
    labels, contexts, relation answers). ``False``: the family decides per record why it did
    not score it (an absent ``answer`` of a record with a ``reference`` is a missing prediction)."""
    streamable: bool = True
    """The function's result on a list of records equals the concatenation of its results on
    consecutive chunks of it (each row depends on its own record; ``meta`` combines as
    :attr:`Family.additive_meta` says). ``False``: a JSONL path is read whole and scored in
    one call (results that compare or group records, or read extra inputs per run)."""
    chunk_size: int | None = None
    """Records per streamed chunk when the caller names none (``None``:
    :data:`~kg_rageval.records.DEFAULT_CHUNK_SIZE`). Memory, not the result, depends on it: a
    family whose records parse into large dicts holds fewer of them at a time."""
    row_slices: tuple[str, ...] = ()
    """Slice names the family's rows carry beyond the records' own (``slice:<name>`` keys it
    writes per row: extraction's ``entity_type`` and ``relation_type``). An audit gate may scope
    a metric of this family to them (``extraction.ner_f1[slice:entity_type=PER]``); their values
    are known only once scored, so a value no row has is missing evidence, not a config error."""
    reads: tuple[str, ...] | None = None
    """The record's top-level keys the family reads besides its ``sections`` and the keys every
    family's rows read (:data:`~kg_rageval.records.ROW_KEYS`: ``id``, ``gold_node``, ``labels``,
    ``slices``); ``None``: any key. When declared, a ``score`` command streaming the family
    alone keeps only those keys of each record as it is read (:attr:`record_keys`): the rest of
    a parsed record is freed at once instead of being held with its chunk (about a third of
    ``score hierarchy``'s CPU on records that carry every section). The streaming tests score
    every family both ways, and ``tests/scoring/test_record_keys.py`` traces each declared
    family's reads on the demo records."""
    template_values: Callable[[Mapping[str, Any]], Mapping[str, set[str]]] | None = field(
        default=None, compare=False
    )

    # ---------------------------------------------------------------- declaration
    @property
    def member_names(self) -> tuple[str, ...]:
        return self.members or (self.name,)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def input(self, name: str) -> Input:
        for i in self.inputs:
            if i.name == name:
                return i
        raise KeyError(name)

    @property
    def required_inputs(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs if i.required)

    def find_metric(self, metric: str) -> tuple[MetricSpec, dict[str, str]] | None:
        """The declared metric whose template matches ``metric`` and the placeholder values."""
        for spec in self.metrics:
            got = spec.match(metric)
            if got is not None:
                return spec, got
        return None

    def metric_names(self, options: Mapping[str, Any] | None = None) -> list[str]:
        """Concrete metric names under ``options`` (defaults when ``None``)."""
        opts = self.validate({} if options is None else options)
        values = self.template_values(opts) if self.template_values else {}
        out: list[str] = []
        for spec in self.metrics:
            if spec.applies(opts):
                out.extend(spec.expand(values))
        return out

    @property
    def record_keys(self) -> frozenset[str] | None:
        """The top-level record keys the family reads (:attr:`reads`), or ``None`` (any)."""
        if self.reads is None:
            return None
        from kg_rageval.records import ROW_KEYS

        return frozenset((*ROW_KEYS, *self.sections, *self.reads))

    def has_section(self, record: Mapping[str, Any]) -> bool:
        return any(record.get(s) is not None for s in self.sections)

    # ---------------------------------------------------------------- calling
    def validate(
        self, options: Mapping[str, Any], *, where: str | None = None, library: bool = False
    ) -> dict[str, Any]:
        """Every declared parameter's value (defaults filled in); an unknown option or bad
        value raises :class:`ConfigError` naming ``<where>.<key>`` (default
        ``families.<name>``)."""
        return validate_options(self.params, options, where=where or f"families.{self.name}", library=library)

    def load(self) -> Callable[..., Any]:
        try:
            return _import(self.target)
        except (ImportError, AttributeError) as exc:
            raise FamilyUnavailable(f"family {self.name!r} is not available ({self.target}: {exc})") from None

    def bind(self, ontology: Any, *, where: str | None = None, **kwargs: Any) -> BoundScorer:
        """Validate options, read inputs (paths through their loaders), return the callable."""
        inputs_given = {i.name: kwargs.pop(i.name) for i in self.inputs if i.name in kwargs}
        opts = self.validate(kwargs, where=where or self.name, library=True)
        for i in self.inputs:
            if i.required and inputs_given.get(i.name) is None:
                raise ConfigError(
                    f"{self.name}: needs the {i.name!r} input ({i.help})" + did_you_mean(i.name, kwargs)
                )
        loaded = {n: self.input(n).load(v, ontology, opts) for n, v in inputs_given.items() if v is not None}
        fn_opts = {
            p.name: opts[p.name]
            if p.loader is None or opts[p.name] is None
            else _import(p.loader)(opts[p.name], ontology, opts)
            for p in self.params
            if p.input is None
        }
        return BoundScorer(self, ontology, loaded, fn_opts)

    def score(
        self, ontology: Any, records: Any, *, chunk_size: int | None = None, **kwargs: Any
    ) -> EvaluationSet:
        """Score ``records`` (dicts, or a JSONL path, read in chunks of ``chunk_size``):
        ``bind(ontology, **kwargs)(records, chunk_size=chunk_size)``."""
        return self.bind(ontology, **kwargs)(records, chunk_size=chunk_size)
