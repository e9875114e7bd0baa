"""The scorer protocol: how every metric family is declared and called.

A :class:`Scorer` is the one declaration of a family: its scoring function
(``"module:function"``, imported lazily), the record sections that are its evidence, its
extra inputs (corpus, spec, judgments: :class:`Input`, each with its own reader), its
parameters (:class:`~kg_rageval.contract.params.Param`) and its metrics
(:class:`~kg_rageval.contract.metrics.MetricSpec`). Every family is called the same way::

    result = scorer.score(ontology, records, corpus="corpus.jsonl", k=[1, 10])

and returns one :class:`~kg_rageval.evaluation.EvaluationSet` (one or several named
:class:`~kg_rageval.evaluation.Evaluation` objects). The scoring function behind it is called
as ``fn(ontology, records, **inputs, **params)`` with *every* declared parameter (declared
defaults filled in), so the declaration is the only place a default lives.

:meth:`Scorer.bind` validates the options and reads the inputs once, and returns a
:class:`BoundScorer` — a picklable ``records -> EvaluationSet`` callable used for partitions
(Dask) and for the baseline run of an audit.

**Streaming.** Given a JSONL path, a :class:`BoundScorer` reads it in chunks
(:func:`kg_rageval.records.iter_record_chunks`), scores each chunk and concatenates the chunk
results (:func:`kg_rageval.evaluation.concat_sets`), so one chunk of record dicts is held at a
time, not the file. The result equals scoring the whole list at once (rows, stats, keys,
unscored records, meta, errors): every family's rows depend only on their own record, and
what depends on all of them is set again on the concatenation (``meta`` order and
:attr:`~kg_rageval.evaluation.Family.additive_meta`, :meth:`~kg_rageval.evaluation.Family.complete`).
A family whose result depends on several records at once in another way declares
``streamable=False`` and gets the whole list.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import ConfigError
from .metrics import MetricSpec
from .params import Param, did_you_mean, validate_options

if TYPE_CHECKING:  # pragma: no cover
    from ..evaluation import EvaluationSet


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
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)


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
    streamable: bool = True
    """The function's result on a list of records equals the concatenation of its results on
    consecutive chunks of it (each row depends on its own record; ``meta`` combines as
    :attr:`Family.additive_meta` says). ``False``: a JSONL path is read whole and scored in
    one call (results that compare or group records, or read extra inputs per run)."""
    chunk_size: int | None = None
    """Records per streamed chunk when the caller names none (``None``:
    :data:`~kg_rageval.records.DEFAULT_CHUNK_SIZE`). Memory, not the result, depends on it: a
    family whose records parse into large dicts holds fewer of them at a time."""
    template_values: Callable[[Mapping[str, Any]], Mapping[str, set[str]]] | None = field(
        default=None, compare=False)

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

    def has_section(self, record: Mapping[str, Any]) -> bool:
        return any(record.get(s) is not None for s in self.sections)

    # ---------------------------------------------------------------- calling
    def validate(self, options: Mapping[str, Any], *, where: str | None = None,
                 library: bool = False) -> dict[str, Any]:
        """Every declared parameter's value (defaults filled in); an unknown option or bad
        value raises :class:`ConfigError` naming ``<where>.<key>`` (default
        ``families.<name>``)."""
        return validate_options(self.params, options, where=where or f"families.{self.name}", library=library)

    def load(self) -> Callable[..., Any]:
        try:
            return _import(self.target)
        except (ImportError, AttributeError) as exc:
            raise FamilyUnavailable(f"family {self.name!r} is not available ({self.target}: {exc})") from None

    def bind(self, ontology: Any, *, where: str | None = None, **kwargs: Any) -> "BoundScorer":
        """Validate options, read inputs (paths through their loaders), return the callable."""
        inputs_given = {i.name: kwargs.pop(i.name) for i in self.inputs if i.name in kwargs}
        opts = self.validate(kwargs, where=where or self.name, library=True)
        for i in self.inputs:
            if i.required and inputs_given.get(i.name) is None:
                raise ConfigError(f"{self.name}: needs the {i.name!r} input ({i.help})"
                                  + did_you_mean(i.name, kwargs))
        loaded = {n: self.input(n).load(v, ontology, opts) for n, v in inputs_given.items() if v is not None}
        fn_opts = {p.name: opts[p.name] if p.loader is None or opts[p.name] is None
                   else _import(p.loader)(opts[p.name], ontology, opts)
                   for p in self.params if p.input is None}
        return BoundScorer(self, ontology, loaded, fn_opts)

    def score(self, ontology: Any, records: Any, *, chunk_size: int | None = None,
              **kwargs: Any) -> "EvaluationSet":
        """Score ``records`` (dicts, or a JSONL path, read in chunks of ``chunk_size``):
        ``bind(ontology, **kwargs)(records, chunk_size=chunk_size)``."""
        return self.bind(ontology, **kwargs)(records, chunk_size=chunk_size)


@dataclass
class BoundScorer:
    """A family with validated options and loaded inputs: ``bound(records) -> EvaluationSet``.
    Picklable (Dask sends it to the workers).

    ``records``: a list of record dicts (scored in one call) or a JSONL path, streamed in
    chunks of ``chunk_size`` records (default: the family's :attr:`Scorer.chunk_size`, else
    :data:`~kg_rageval.records.DEFAULT_CHUNK_SIZE`) when the family is ``streamable``
    (see :meth:`score_path`)."""

    scorer: Scorer
    ontology: Any
    inputs: dict[str, Any]
    options: dict[str, Any]

    def __call__(self, records: Any, ontology: Any = None, *,
                 chunk_size: int | None = None) -> "EvaluationSet":
        if isinstance(records, (str, Path)):
            return self.score_path(records, ontology, chunk_size=chunk_size)
        return self._call(records, ontology)

    def _call(self, records: Any, ontology: Any) -> "EvaluationSet":
        from ..evaluation import as_evaluation_set

        fn = self.scorer.load()
        onto = self.ontology if ontology is None else ontology
        result = fn(onto, records, **self.inputs, **self.options)
        return as_evaluation_set(self.scorer.name, result)

    def score_whole(self, path: str | Path, ontology: Any = None) -> "EvaluationSet":
        """Read every record of ``path`` (:func:`~kg_rageval.records.read_records`) and score
        them in one call; an empty file raises :class:`InputError` ("no records to score")."""
        from ..errors import InputError
        from ..records import read_records

        records = read_records(path)
        if not records:
            raise InputError("no records to score", source=str(path))
        return self._call(records, ontology)

    def score_path(self, path: str | Path, ontology: Any = None, *,
                   chunk_size: int | None = None) -> "EvaluationSet":
        """Score a JSONL file chunk by chunk; the result equals :meth:`score_whole`'s.

        Each chunk of ``chunk_size`` records is scored on its own and its result appended to
        growing columns (:class:`~kg_rageval.evaluation.Concatenation`, equal to
        :func:`~kg_rageval.evaluation.concat_evaluations` of the chunk results), so the record
        dicts of one chunk and the columns of the result are held, not the file. Equality with
        the whole-file call:

        * reading errors (bad JSON, missing or duplicate ids) are raised as the whole-file
          reader raises them (:func:`~kg_rageval.records.iter_record_chunks`);
        * a chunk without evidence (the family raises
          :class:`~kg_rageval.errors.MissingEvidence`, e.g. no record has the section) is
          scored together with the next chunk, or at the end of the file with the last scored
          one (read again); a file without evidence raises the whole-file error;
        * any other input error of a family (an unknown id, a malformed section) makes the
          whole file be scored at once, so the error is the one the whole-file call raises
          (families check all records in phases: the first malformed record in the file,
          then ids, counting every place);
        * a family that is not ``streamable`` is scored with :meth:`score_whole`.

        The cyclic garbage collector is paused meanwhile (restored afterwards, also on an
        error), as :func:`~kg_rageval.records.iter_record_chunks` pauses it while reading.
        """
        from ..records import DEFAULT_CHUNK_SIZE

        size = (self.scorer.chunk_size or DEFAULT_CHUNK_SIZE) if chunk_size is None else chunk_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"chunk_size must be a positive integer, not {chunk_size!r}")
        if not self.scorer.streamable:
            return self.score_whole(path, ontology)
        import gc

        paused = gc.isenabled()
        if paused:  # as while reading: record dicts hold no cycles, and the collector's passes
            gc.disable()  # over each fresh chunk cost as much as scoring it
        try:
            return self._stream(path, ontology, size)
        finally:
            if paused:
                gc.enable()

    def _stream(self, path: str | Path, ontology: Any, size: int) -> "EvaluationSet":
        from ..errors import InputError, KgRagevalError, MissingEvidence
        from ..records import iter_record_chunks

        out = _SetConcatenation()
        last: tuple[Any, int, int] | None = None  # (result, first chunk, last chunk), not yet added
        pending: list[Any] = []  # records of chunks without evidence, scored with the next one
        start = 0
        for k, chunk in enumerate(iter_record_chunks(path, size)):  # reading errors propagate
            if not pending:
                start = k
            batch = pending + chunk if pending else chunk
            del chunk
            try:
                res = self._call(batch, ontology)
            except MissingEvidence:
                pending = batch
                continue
            except KgRagevalError:
                out = last = batch = pending = None  # type: ignore[assignment]  # freed first
                return self.score_whole(path, ontology)  # the whole-file error
            if last is not None:
                out.add(last[0])
            last, pending = (res, start, k), []
            del batch, res
            _trim_heap()
        if pending:
            if last is None:  # no chunk had evidence: ``pending`` is the whole file
                return self._call(pending, ontology)
            # an evidence-less tail joins the last scored records (read again: not held meanwhile)
            _, first, end = last
            again = [r for ch in itertools.islice(iter_record_chunks(path, size), first, end + 1) for r in ch]
            try:
                last = (self._call(again + pending, ontology), first, end)
            except KgRagevalError:
                out = last = again = pending = None  # type: ignore[assignment]
                return self.score_whole(path, ontology)
            del again, pending
        if last is None:
            raise InputError("no records to score", source=str(path))
        out.add(last[0])
        del last
        return out.result(self.scorer.name)


def _trim_heap() -> None:
    """Give the memory freed with a chunk back to the system (:func:`kg_rageval.memory.trim_heap`).
    Without it a chunk's freed record dicts and arrays stay in the heap, and the result's
    columns come on top: peak memory would be about the result twice over instead of once."""
    from ..memory import trim_heap

    trim_heap()


class _SetConcatenation:
    """Member-wise :class:`~kg_rageval.evaluation.Concatenation` of chunk results."""

    def __init__(self) -> None:
        self.members: dict[str, Any] | None = None
        self.family = ""

    def add(self, result: "EvaluationSet") -> None:
        from ..evaluation import Concatenation

        if self.members is None:
            self.members = {m: Concatenation() for m in result}
        elif set(result) != set(self.members):
            raise ValueError(f"{result.family}: cannot merge results with members {sorted(self.members)} "
                             f"and {sorted(result)}")
        for m, ev in result.items():
            self.members[m].add(ev)

    def result(self, family: str) -> "EvaluationSet":
        from ..evaluation import EvaluationSet

        assert self.members is not None
        return EvaluationSet(family, {m: c.result() for m, c in self.members.items()})
