"""The PROV-O trail's Turtle text as parts that join: the trails of consecutive partitions of
one run's records (streamed chunks, Dask partitions) combine into the trail of all of them,
byte for byte, with its triple count, violation count and first 50 messages.

What depends on more than one record, and how it combines (see
:func:`~kg_rageval.families.provenance.trail.build_trail`):

* the **run** block: the same in every partition (it comes from the manifest) except its
  ``prov:used`` documents, which are the documents of all partitions in first-cited order;
  it is written again with them;
* the **other subjects** (the model agent, the cited documents, an answer node merged from
  two records of one partition): a subject's block, triples and violations do not depend on
  the partition (a document's come from the corpus); the first partition that has it places
  it, as the first record citing a document places it in one call;
* the **answers**: each partition's answer blocks, in order. Their triples and violations
  add; their messages merge as the 50 smallest of the partitions' 50 smallest.

Partitions must hold distinct record ids (the records reader guarantees it): an answer node
that two partitions both have would be one merged node in a single call.

:class:`TrailText` is the text (a ``str``, so ``meta["turtle"]`` is written and compared as
text) carrying its :class:`TrailParts`; :func:`join_trails` joins them.

A streamed audit does not hold the answer blocks: as each partition's trail comes in,
:func:`spool_trail` appends its answer blocks to one temporary file
(:class:`~kg_rageval.base.spool.Spool`) and keeps a :class:`SpooledTrail` (its head in memory, its
answers a segment of the file). The partitions' segments follow one another in the file, so
their join is the joined head and one segment, written once into ``prov.ttl``
(:func:`~kg_rageval.base.spool.write_text`): the Turtle is never held, not even once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kg_rageval.base.spool import Spool, SpooledText
from kg_rageval.families.provenance.trail import (
    HEAD,
    PROV,
    Preds,
    Trail,
    _block,
    answer_blocks,
    subject_blocks,
)

USED = PROV + "used"
MESSAGES = 50
"""The messages a trail keeps (the smallest, sorted), as :func:`~kg_rageval.families.provenance.trail.check_trail`."""


@dataclass
class TrailParts:
    """What joining needs of one trail text (see the module docstring). Messages are the
    ``focus node: path: message`` strings of :func:`~kg_rageval.families.provenance.trail.check_trail`."""

    run: str
    run_preds: Preds
    """The run's predicates without ``prov:used``."""
    run_triples: int
    run_messages: tuple[str, ...]
    subjects: dict[str, tuple[str, int, tuple[str, ...]]]
    """Every subject but the run and the compact answers: ``IRI -> (block, triples, messages)``."""
    doc_prefix: str
    answers_at: int
    """Where the answer blocks start in the text (its length when there are none)."""
    answer_triples: int
    answer_violations: int
    answer_messages: list[str]
    """The :data:`MESSAGES` smallest messages on compact answers, sorted."""

    @property
    def documents(self) -> list[str]:
        return [s for s in self.subjects if s.startswith(self.doc_prefix)]

    @property
    def triples(self) -> int:
        return (
            self.run_triples
            + len(self.documents)
            + sum(t for _, t, _ in self.subjects.values())
            + self.answer_triples
        )

    @property
    def violations(self) -> int:
        return (
            len(self.run_messages)
            + sum(len(m) for _, _, m in self.subjects.values())
            + self.answer_violations
        )

    @property
    def messages(self) -> list[str]:
        every = [
            *self.run_messages,
            *(x for _, _, m in self.subjects.values() for x in m),
            *self.answer_messages,
        ]
        return sorted(every)[:MESSAGES]


class TrailText(str):
    """A trail's Turtle text with its :class:`TrailParts` (``parts``; ``None`` when unknown)."""

    parts: TrailParts | None = None

    def __new__(cls, text: str, parts: TrailParts | None = None) -> TrailText:
        obj = super().__new__(cls, text)
        obj.parts = parts
        return obj


class SpooledTrail(SpooledText):
    """A trail's Turtle text (:class:`TrailText`'s) as its head up to the answer blocks, held,
    and the answer blocks (each partition's preceded by a newline), spooled; with its
    :class:`TrailParts`. It pickles as the :class:`TrailText` it equals."""

    __slots__ = ("parts",)

    def __init__(self, head: str, spool: Spool, start: int, end: int, parts: TrailParts):
        super().__init__(head, spool, start, end)
        self.parts = parts

    def __reduce__(self):
        return (TrailText, (self.text(), self.parts))


def spool_trail(text: Any, spool: Spool | None) -> Any:
    """``text`` with its answer blocks appended to ``spool`` (a new one when ``None``) as a
    :class:`SpooledTrail` equal to it; ``text`` itself when it is not a :class:`TrailText`
    with parts and answers (nothing to spool)."""
    p = text.parts if isinstance(text, TrailText) else None
    if p is None or p.answers_at >= len(text):
        return text
    spool = spool if spool is not None else Spool()
    start, end = spool.append(text[p.answers_at - 1 :])
    return SpooledTrail(text[: p.answers_at - 1], spool, start, end, p)


def trail_text(trail: Trail, found: Sequence[tuple[str, str, str]]) -> TrailText:
    """The Turtle of ``trail`` (:func:`~kg_rageval.families.provenance.trail.trail_turtle`'s text)
    with its parts; ``found``: its violations
    (:func:`~kg_rageval.families.provenance.trail.trail_violations`)."""
    by_focus: dict[str, list[str]] = {}
    for f, p, m in found:
        by_focus.setdefault(f, []).append(f"{f}: {p}: {m}")
    subjects = list(trail.subjects.items())
    if not subjects or subjects[0][0] != trail.run:
        raise ValueError("a trail's first subject is its run")
    blocks = subject_blocks(trail)
    run_preds = {p: objs for p, objs in subjects[0][1].items() if p != USED}
    others = {
        s: (b, sum(map(len, preds.values())), tuple(by_focus.pop(s, ())))
        for (s, preds), b in zip(subjects[1:], blocks[1:])
    }
    run_messages = tuple(by_focus.pop(trail.run, ()))
    answers = answer_blocks(trail)
    head = HEAD + "\n".join(blocks)
    text = head + "\n" + "\n".join(answers) if answers else head
    rest = [m for ms in by_focus.values() for m in ms]  # the compact answers' violations
    n_subject = sum(t for _, t, _ in others.values())
    parts = TrailParts(
        run=trail.run,
        run_preds=run_preds,
        run_triples=sum(map(len, run_preds.values())),
        run_messages=run_messages,
        subjects=others,
        doc_prefix=trail.doc_prefix,
        answers_at=len(head) + 1 if answers else len(text),
        answer_triples=0,
        answer_violations=len(rest),
        answer_messages=sorted(rest)[:MESSAGES],
    )
    parts.answer_triples = len(trail) - (parts.run_triples + len(parts.documents) + n_subject)
    return TrailText(text, parts)


def join_trails(texts: Sequence[TrailText | SpooledTrail]) -> TrailText | SpooledTrail:
    """The trail of consecutive partitions of one run's records (see the module docstring)
    from theirs, in order. ``ValueError`` when a text has no parts or the runs differ.
    Spooled partitions that follow one another in one spool join into a
    :class:`SpooledTrail` of that spool (nothing read); any other mix into a
    :class:`TrailText`."""
    parts = [t.parts for t in texts]
    if not parts or any(p is None for p in parts):
        raise ValueError("a trail text without its parts cannot be joined")
    first = parts[0]
    assert first is not None
    for p in parts[1:]:
        assert p is not None
        if (p.run, p.run_preds, p.run_messages, p.doc_prefix) != (
            first.run,
            first.run_preds,
            first.run_messages,
            first.doc_prefix,
        ):
            raise ValueError("trails of different runs cannot be joined")
    subjects: dict[str, tuple[str, int, tuple[str, ...]]] = {}
    for p in parts:
        assert p is not None
        for s, blk in p.subjects.items():
            subjects.setdefault(s, blk)
    docs = [s for s in subjects if s.startswith(first.doc_prefix)]
    run_preds: Preds = {**first.run_preds, USED: dict.fromkeys(docs)} if docs else first.run_preds
    head = HEAD + "\n".join([_block(first.run, run_preds), *(b for b, _, _ in subjects.values())])
    with_answers = [t for t in texts if isinstance(t, SpooledTrail) or t.parts.answers_at < len(t)]  # type: ignore[union-attr]
    joined = TrailParts(
        run=first.run,
        run_preds=first.run_preds,
        run_triples=first.run_triples,
        run_messages=first.run_messages,
        subjects=subjects,
        doc_prefix=first.doc_prefix,
        answers_at=len(head) + 1 if with_answers else len(head),
        answer_triples=sum(p.answer_triples for p in parts if p is not None),
        answer_violations=sum(p.answer_violations for p in parts if p is not None),
        answer_messages=sorted(m for p in parts if p is not None for m in p.answer_messages)[:MESSAGES],
    )
    spooled = [t for t in with_answers if isinstance(t, SpooledTrail)]
    if (
        spooled
        and len(spooled) == len(with_answers)
        and all(a.spool is b.spool and a.end == b.start for a, b in zip(spooled, spooled[1:]))
    ):
        return SpooledTrail(head, spooled[0].spool, spooled[0].start, spooled[-1].end, joined)
    sections = [
        t.spool.read(t.start, t.end).decode("utf-8")
        if isinstance(t, SpooledTrail)
        else "\n" + t[t.parts.answers_at :]  # type: ignore[union-attr]
        for t in with_answers
    ]
    return TrailText(head + "".join(sections), joined)


def trail_meta(text: TrailText | SpooledTrail) -> dict[str, Any]:
    """The prov_trail family's ``meta`` of a trail text: ``turtle``, ``triples``,
    ``conforms``, ``violations``, ``messages``."""
    p = text.parts
    assert p is not None
    n = p.violations
    return {"turtle": text, "triples": p.triples, "conforms": n == 0, "violations": n, "messages": p.messages}
