"""Every exception kg-rageval raises on purpose.

All of them derive from :class:`KgRagevalError`, so callers (and the CLI, which maps them to
exit code 2) can catch one type. Messages name the file, line or record and the field, the bad
value and what was expected.
"""

from __future__ import annotations


class KgRagevalError(Exception):
    """Base class of all kg-rageval errors."""


class InputError(KgRagevalError, ValueError):
    """Bad user input: a malformed file, record, option or config.

    ``source`` names the file (or ``<memory>``), ``location`` the line/record/field where known.
    """

    def __init__(self, message: str, *, source: str | None = None, location: str | None = None):
        self.source = source
        self.location = location
        where = ", ".join(p for p in (source, location) if p)
        super().__init__(f"{where}: {message}" if where else message)


class OntologyError(InputError):
    """An ontology cannot be compiled (empty, dangling parents, conflicting duplicates, ...)."""


class HierarchyCycleError(OntologyError):
    """The hierarchy contains a cycle; ``cycle`` lists the ids along it (first id repeated last)."""

    def __init__(self, cycle: list[str], *, source: str | None = None):
        self.cycle = cycle
        super().__init__("hierarchy cycle: " + " -> ".join(cycle), source=source)


class UnknownIdError(InputError, KeyError):
    """An id that the ontology does not contain."""

    def __init__(self, ids: list[str] | str, *, where: str | None = None, hint: str | None = None):
        self.ids = [ids] if isinstance(ids, str) else list(ids)
        shown = ", ".join(repr(i) for i in self.ids[:10])
        more = f" (and {len(self.ids) - 10} more)" if len(self.ids) > 10 else ""
        msg = f"unknown ontology id{'s' if len(self.ids) > 1 else ''} {shown}{more}"
        if hint:
            msg += f"; {hint}"
        InputError.__init__(self, msg, location=where)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.args[0]


class UnsafeInputError(InputError):
    """The input asks for something we refuse to do unasked: fetch a URL, expand external entities."""


class LimitExceeded(UnsafeInputError):
    """An input beyond one of the configured cost limits (:mod:`kg_rageval.base.limits`); ``limit``
    names it."""

    def __init__(
        self, message: str, *, source: str | None = None, location: str | None = None, limit: str = ""
    ):
        self.limit = limit
        super().__init__(message, source=source, location=location)


class MissingEvidence(KgRagevalError):
    """A metric cannot be computed because its denominator is empty.

    Never replaced by a reassuring 0 or 1: callers either propagate it or report the metric as
    missing with this reason.
    """


class ConfigError(InputError):
    """An invalid audit or schema configuration."""
