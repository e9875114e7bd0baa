"""One wording for the errors of a validated config: a pydantic ``ValidationError``'s entries
as ``"key.path: message"`` lines (unknown keys with an optional "did you mean", missing keys
as "required key is missing"). The audit config and the monitor's alert config read the same.
Duck-typed on ``exc.errors()`` and ``model_fields``: no pydantic import here."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def fields_at(model: Any, loc: Sequence[Any]) -> list[str]:
    """The field names of the (nested) model that holds the key at ``loc`` (its last part),
    following each field's annotation (``X | None`` included); ``[]`` when it is not a model."""
    for part in loc[:-1]:
        f = getattr(model, "model_fields", {}).get(part)
        if f is None:
            return []
        ann = f.annotation
        model = next((a for a in getattr(ann, "__args__", (ann,)) if hasattr(a, "model_fields")), None)
        if model is None:
            return []
    return list(getattr(model, "model_fields", {}))


def validation_lines(
    errors: Iterable[Mapping[str, Any]], *, model: Any = None, unknown: str = "unknown key"
) -> list[str]:
    """``"loc: message"`` per entry of ``ValidationError.errors()``. An unknown key reads
    ``unknown`` plus, with ``model``, ``(did you mean 'x'?)`` for the nearest allowed key."""
    lines = []
    for err in errors:
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            near = (
                difflib.get_close_matches(str(err["loc"][-1]), fields_at(model, err["loc"]), n=1)
                if model is not None and err["loc"]
                else []
            )
            msg = unknown + (f" (did you mean {near[0]!r}?)" if near else "")
        elif err["type"] == "missing":
            msg = "required key is missing"
        lines.append(f"{loc}: {msg}")
    return lines
