"""The statuses of a faithfulness judgment and the semantic check of the judgment contract
(:func:`partition_error`), without pydantic: shared by the pydantic model
(:mod:`.judgment_model`) and the check of well-formed judgments (:mod:`.judgment`)."""

from __future__ import annotations

from collections.abc import Sequence

SCORED, NO_CLAIMS, INVALID = "scored", "no_claims", "invalid_judgment"


def partition_error(
    claims: Sequence[str], supported: Sequence[str], unsupported: Sequence[str]
) -> str | None:
    """Why three claim lists are not a valid judgment's (an empty claim, a repeated claim, not
    a complete, disjoint partition of ``claims``), ``None`` when they are: the semantic check
    of :class:`Judgment`, with its messages."""
    sets = []
    for name, items in (("claims", claims), ("supported", supported), ("unsupported", unsupported)):
        if not all(map(str.strip, items)):
            return f"{name} contains an empty claim"
        distinct = set(items)
        if len(distinct) != len(items):
            dup = sorted({c for c in items if items.count(c) > 1})
            return f"{name} repeats claim(s) {dup!r}; claims must be distinct"
        sets.append(distinct)
    all_claims, sup, uns = sets
    if not sup & uns and sup | uns == all_claims:  # a complete, disjoint partition
        return None
    both = sorted(sup & uns)
    if both:
        return f"claim(s) {both!r} are both supported and unsupported"
    extra = sorted((sup | uns) - all_claims)
    if extra:
        return f"claim(s) {extra!r} are judged but were not extracted"
    left = sorted(all_claims - sup - uns)
    return f"claim(s) {left!r} were extracted but not judged"
