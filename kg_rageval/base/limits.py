"""Input-cost limits: every bound kg-rageval puts on what an input may make it do.

A hostile or broken input must not exhaust memory or time: each reader checks its input
against one named limit *before* allocating, and refuses with a one-line
:class:`~kg_rageval.base.errors.LimitExceeded` (exit code 2) that names the file, the limit, its
value and how to raise it. Limits are read, most specific first, from

1. :func:`set_limits` / :func:`limits` (the CLI's ``kg-rageval --limit NAME=N``, an audit
   config's ``limits:`` mapping),
2. the environment variable ``KG_RAGEVAL_<NAME>`` (e.g. ``KG_RAGEVAL_MAX_GZ_BYTES=8GiB``),
3. the default below.

Values are integers; sizes accept the suffixes ``KiB``, ``MiB``, ``GiB`` (``KB``/``MB``/``GB``
are decimal). ``docs/ontology.md`` and ``docs/audit.md`` list the limits.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kg_rageval.base.errors import LimitExceeded


@dataclass(frozen=True)
class Limit:
    name: str
    default: int
    what: str


LIMITS: dict[str, Limit] = {
    lim.name: lim
    for lim in (
        Limit("max_gz_bytes", 2 << 30, "decompressed size of a .gz input, in bytes"),
        Limit(
            "max_gz_memory_bytes",
            512 << 20,
            "memory a .gz input kept whole may take, in bytes: its decompressed size (a STIX "
            "bundle, a JSON document) or, for TREC/BEIR qrels and runs, also its rows (48 bytes "
            "each); streamed inputs (JSONL) are bounded by max_gz_bytes",
        ),
        Limit("max_json_depth", 200, "nesting depth of a JSON/YAML document (objects and arrays)"),
        Limit("max_line_bytes", 64 << 20, "length of one line of a JSONL/TREC/OBO file, in bytes"),
        Limit(
            "max_closure_entries", 200_000_000, "(node, ancestor) pairs of the compiled transitive closure"
        ),
        Limit("max_config_nodes", 200_000, "values of a config/spec after YAML alias expansion"),
        Limit(
            "max_xml_expansion", 10 << 20, "characters that XML entity and character references may expand to"
        ),
        Limit(
            "max_doc_bytes",
            1 << 31,
            "size of a JSON document read whole (JSON runs/qrels, traces, manifests), in bytes",
        ),
    )
}

_SUFFIX = {
    "": 1,
    "k": 1000,
    "kb": 1000,
    "mb": 10**6,
    "gb": 10**9,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}
_overrides: dict[str, int] = {}


def parse_value(name: str, text: str | int) -> int:
    """``"8GiB"`` → 8589934592; a limit must be a positive integer."""
    from kg_rageval.base.errors import ConfigError

    if isinstance(text, bool):
        raise ConfigError(f"limit {name}: expected a positive integer, got {text!r}")
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*(\d[\d_]*)\s*([A-Za-z]*)\s*", str(text))
        if not m or m.group(2).lower() not in _SUFFIX:
            raise ConfigError(
                f"limit {name}: expected a positive integer (optionally with KiB/MiB/GiB), got {text!r}"
            )
        value = int(m.group(1).replace("_", "")) * _SUFFIX[m.group(2).lower()]
    if value < 1:
        raise ConfigError(f"limit {name}: must be at least 1, got {value}")
    return value


def _check_name(name: str) -> None:
    from kg_rageval.base.errors import ConfigError

    if name not in LIMITS:
        raise ConfigError(f"unknown limit {name!r}; known: {', '.join(sorted(LIMITS))}")


def env_name(name: str) -> str:
    return "KG_RAGEVAL_" + name.upper()


def get(name: str) -> int:
    """The limit in force (override, environment, default)."""
    _check_name(name)
    if name in _overrides:
        return _overrides[name]
    env = os.environ.get(env_name(name))
    if env:
        return parse_value(name, env)
    return LIMITS[name].default


def set_limits(values: Mapping[str, str | int]) -> None:
    """Override limits for the rest of the process (the CLI's ``--limit``)."""
    for name, v in values.items():
        _check_name(name)
        _overrides[name] = parse_value(name, v)


@contextlib.contextmanager
def limits(values: Mapping[str, str | int]) -> Iterator[None]:
    """Override limits inside a ``with`` block (an audit config's ``limits:``)."""
    saved = dict(_overrides)
    try:
        set_limits(values)
        yield
    finally:
        _overrides.clear()
        _overrides.update(saved)


def exceeded(
    name: str, found: str, *, source: str | None = None, location: str | None = None
) -> LimitExceeded:
    """The error for an input beyond limit ``name``: what was found, the limit and how to raise it."""
    value = get(name)
    return LimitExceeded(
        f"{found}: beyond the limit {name} = {value} ({LIMITS[name].what}); refused. Raise it with `kg-rageval --limit {name}=N ...`, the audit config's "
        f"`limits: {{{name}: N}}` or {env_name(name)}=N",
        source=source,
        location=location,
        limit=name,
    )


def check(name: str, amount: int, found: str, **where: str | None) -> None:
    """Raise :func:`exceeded` when ``amount`` is above limit ``name``."""
    if amount > get(name):
        raise exceeded(name, found, **where)
