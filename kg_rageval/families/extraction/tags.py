"""Entities from BIO / IOB2 / IOBES tag sequences, exactly as seqeval finds them.

Two modes, both equal to seqeval 1.2 (``tests/families/extraction`` compares them on a CoNLL
sample and on random, also malformed, sequences):

* ``default`` — seqeval's default (conlleval-compatible) mode, :func:`entities_default`: a
  chunk starts at ``B-``/``S-``, at an ``I-``/``E-`` after ``O``/``E-``/``S-``, or wherever the
  type changes; it ends before ``B-``/``S-``/``O``, after ``E-``/``S-``, or where the type
  changes. So a malformed ``I-`` without a ``B-`` still opens an entity (lenient).
* ``strict`` with a ``scheme`` (``IOB2`` or ``IOBES``), :func:`entities_strict`: seqeval's
  ``mode="strict"``: an entity is a run that starts with the scheme's start prefix (``B-``, and
  ``S-`` for IOBES), continues with same-type ``I-`` (and ends with ``E-`` for IOBES), and is
  closed by a token the scheme allows after it; anything else (an ``I-`` without a ``B-``, an
  IOBES ``B-`` never closed by ``E-``) is no entity. A prefix the scheme does not allow
  (``S-`` under IOB2) raises :class:`ValueError`, as seqeval does; the caller names the record.

An entity is ``(type, start, end)`` with ``end`` the index of its last token (inclusive, as
seqeval's ``get_entities``). A tag is ``O`` or ``<prefix>-<type>``; a type-less prefix (``B``)
gets the type ``_``, as in seqeval. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence

Entity = tuple[str, int, int]
SCHEMES = ("IOB2", "IOBES")
MODES = ("default", "strict")


def _split(tag: str) -> tuple[str, str]:
    return tag[0], (tag[1:].split("-", maxsplit=1)[-1] or "_")


def _end_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != type_


def _start_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != type_


def entities_default(tags: Sequence[str]) -> list[Entity]:
    """seqeval's ``get_entities`` of one sequence (default mode; see the module docstring)."""
    prev_tag, prev_type, begin = "O", "", 0
    out: list[Entity] = []
    for i, chunk in enumerate([*tags, "O"]):
        tag, type_ = _split(chunk) if chunk else ("O", "_")
        if _end_of_chunk(prev_tag, tag, prev_type, type_):
            out.append((prev_type, begin, i - 1))
        if _start_of_chunk(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return out


# seqeval.scheme patterns: (previous prefixes, current prefixes, type condition)
_ANY = frozenset("IOBES")
_PATTERNS: dict[str, dict[str, tuple[tuple[frozenset[str], frozenset[str], str], ...]]] = {
    "IOB2": {
        "allowed": ((frozenset("IOB"), frozenset(), ""),),
        "start": ((_ANY, frozenset("B"), "any"),),
        "inside": ((frozenset("B"), frozenset("I"), "same"), (frozenset("I"), frozenset("I"), "same")),
        "end": (
            (frozenset("I"), frozenset("O"), "any"),
            (frozenset("I"), frozenset("I"), "diff"),
            (frozenset("I"), frozenset("B"), "any"),
            (frozenset("B"), frozenset("O"), "any"),
            (frozenset("B"), frozenset("I"), "diff"),
            (frozenset("B"), frozenset("B"), "any"),
        ),
    },
    "IOBES": {
        "allowed": ((frozenset("IOBES"), frozenset(), ""),),
        "start": ((_ANY, frozenset("B"), "any"), (_ANY, frozenset("S"), "any")),
        "inside": (
            (frozenset("B"), frozenset("I"), "same"),
            (frozenset("B"), frozenset("E"), "same"),
            (frozenset("I"), frozenset("I"), "same"),
            (frozenset("I"), frozenset("E"), "same"),
        ),
        "end": ((frozenset("S"), _ANY, "any"), (frozenset("E"), _ANY, "any")),
    },
}


def _strict_token(tag: str) -> tuple[str, str]:
    prefix = tag[0] if tag else "O"
    return prefix, (tag[1:].strip("-") or "_")


def _match(pats, prev: tuple[str, str], cur: tuple[str, str]) -> bool:
    for pp, cp, cond in pats:
        if prev[0] in pp and cur[0] in cp:
            if cond == "any" or (cond == "same") == (prev[1] == cur[1]):
                return True
    return False


def entities_strict(tags: Sequence[str], scheme: str) -> list[Entity]:
    """seqeval's ``Tokens(tags, scheme).entities`` (``mode="strict"``), as ``(type, start,
    end)`` with ``end`` inclusive. ``ValueError`` for a prefix the scheme does not allow."""
    if scheme not in _PATTERNS:
        raise ValueError(f"unknown tagging scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    pat = _PATTERNS[scheme]
    allowed = pat["allowed"][0][0]
    toks = [_strict_token(t) for t in tags]
    for t, tok in zip(tags, toks):
        if tok[0] not in allowed:
            raise ValueError(
                f"tag {t!r} is not allowed by the {scheme} scheme (prefixes {''.join(sorted(allowed))})"
            )
    ext = [*toks, ("O", "_")]
    out: list[Entity] = []
    i, prev = 0, ("O", "_")
    while i < len(ext):
        tok = ext[i]
        if _match(pat["start"], prev, tok):
            end, p = len(toks) - 1, tok
            for j in range(i + 1, len(ext)):
                if _match(pat["inside"], p, ext[j]):
                    p = ext[j]
                else:
                    end = j
                    break
            if _match(pat["end"], ext[end - 1], ext[end]):
                out.append((tok[1], i, end - 1))
            i = end
        else:
            i += 1
        prev = ext[i - 1]
    return out


def entities(tags: Sequence[str], mode: str = "default", scheme: str = "IOB2") -> list[Entity]:
    """The entities of one tag sequence in ``mode`` (``default`` or ``strict`` with ``scheme``)."""
    if mode == "default":
        return entities_default(tags)
    if mode == "strict":
        return entities_strict(tags, scheme)
    raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")


__all__ = ["MODES", "SCHEMES", "Entity", "entities", "entities_default", "entities_strict"]
