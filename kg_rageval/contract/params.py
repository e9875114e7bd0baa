"""Declared parameters of a metric family: one declaration, every surface derived from it.

A :class:`Param` says a family option's name, type, default, allowed values and help. The
CLI flag of ``kg-rageval score <family>`` (``--<name with dashes>``), the key of the audit
config (``families.<family>.<name>``), the library keyword (``score(ontology, records,
<name>=...)``) and the validation of all three come from it:

* an unknown option is a :class:`~kg_rageval.base.errors.ConfigError` naming the key, with a
  "did you mean" and the list of known options;
* a value of the wrong type or outside ``choices`` / ``minimum`` is a ``ConfigError`` naming
  the key, the value and what was expected.

Types (``kind``): ``bool``, ``int``, ``float``, ``str``, ``int_list``, ``str_list``,
``mapping`` (a JSON object; on the command line as JSON text), ``path`` and ``path_list``
(file paths; the audit resolves them against the config file's directory) and ``object``
(library only: a Python object such as a judge; no flag, no config key).

This module imports only the standard library (the CLI and the pytest plugin load it early).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kg_rageval.base.errors import ConfigError

KINDS = ("bool", "int", "float", "str", "int_list", "str_list", "mapping", "path", "path_list", "object")


def did_you_mean(word: str, options: Iterable[str], *, n: int = 3) -> str:
    """``" (did you mean 'a', 'b'?)"`` for the close matches of ``word``, else ``""``."""
    import difflib  # only for an error message

    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=n, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


@dataclass(frozen=True)
class Param:
    """One declared family option (see the module docstring).

    ``choices``: the allowed values (strings), or ``None``. ``minimum``: the smallest allowed
    number (for ``int``/``float`` and each element of ``int_list``). ``nullable``: ``None`` is
    allowed (the default may be ``None`` only then). ``flags``: extra CLI spellings kept for
    compatibility (the canonical flag is always :attr:`flag`). ``input``: the name of the
    family input whose loader consumes this option (e.g. retrieval's ``category_field`` is
    read by the corpus loader), else ``None`` (passed to the scoring function, through
    ``loader`` when it has one).
    """

    name: str
    kind: str
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    nullable: bool = False
    flags: tuple[str, ...] = ()
    input: str | None = None
    accepts_object: bool = False
    """A library call may pass a callable instead of one of the ``choices`` (e.g. a judge)."""
    pattern: str | None = None
    """A ``str`` value matching this regular expression is allowed besides the ``choices``
    (e.g. a judge plugin ``"module:callable"``); ``pattern_text`` names it in messages."""
    pattern_text: str = ""
    loader: str | None = None
    """``"module:function"`` that reads the option's value once, when the family is bound
    (:meth:`~kg_rageval.scoring.Scorer.bind`): called as ``loader(value, ontology, options)``
    like an input's loader, and the scoring function gets what it returns (so a file the
    option names is read once, not once per streamed chunk: provenance's ``repeats``)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"param {self.name!r}: unknown kind {self.kind!r}")
        if self.default is None and not self.nullable and self.kind != "object":
            raise ValueError(f"param {self.name!r}: default None needs nullable=True")

    # ---------------------------------------------------------------- surfaces
    @property
    def flag(self) -> str:
        """The canonical CLI flag: ``--`` + the name with ``_`` as ``-``."""
        return "--" + self.name.replace("_", "-")

    @property
    def exposed(self) -> bool:
        """Whether the option has a CLI flag and a config key (``object`` options do not)."""
        return self.kind != "object"

    @property
    def type_text(self) -> str:
        if self.choices:
            return " | ".join(self.choices) + (
                f" | {self.pattern_text or self.pattern}" if self.pattern else ""
            )
        return {"int_list": "list of int", "str_list": "list of str", "path_list": "list of paths"}.get(
            self.kind, self.kind
        )

    def describe(self) -> dict[str, Any]:
        """JSON-safe description (``kg-rageval metrics --format json``, docs)."""
        default = list(self.default) if isinstance(self.default, tuple) else self.default
        return {
            "name": self.name,
            "type": self.type_text,
            "default": default,
            "choices": self.choices,
            "minimum": self.minimum,
            "nullable": self.nullable,
            "flag": self.flag,
            "help": self.help,
        }

    # ---------------------------------------------------------------- validation
    def coerce(self, value: Any, where: str) -> Any:
        """``value`` checked (and normalised: lists become tuples) or a :class:`ConfigError`
        naming ``where`` (the config key or CLI flag)."""
        if value is None:
            if self.nullable or self.kind == "object":
                return None
            raise ConfigError(f"{where}: must not be null (expected {self.type_text})")
        k = self.kind
        if k == "object" or (self.accepts_object and callable(value)):
            return value
        if k == "bool":
            if isinstance(value, bool):
                return value
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        if k in ("int", "float"):
            return self._number(value, where)
        if k in ("str", "path"):
            if not isinstance(value, str) or (k == "path" and not value):
                raise ConfigError(f"{where}: expected a {'path' if k == 'path' else 'string'}, got {value!r}")
            if self.choices is not None and value not in self.choices:
                if self.pattern is not None and re.fullmatch(self.pattern, value):
                    return value
                extra = f" or {self.pattern_text or self.pattern}" if self.pattern else ""
                raise ConfigError(
                    f"{where}: {value!r} is not one of {', '.join(self.choices)}{extra}"
                    + did_you_mean(value, self.choices)
                )
            return value
        if k in ("int_list", "str_list", "path_list"):
            items = [value] if isinstance(value, (int, str)) and not isinstance(value, bool) else value
            if not isinstance(items, (list, tuple)) or (not items and k != "path_list"):
                raise ConfigError(f"{where}: expected a non-empty list, got {value!r}")
            elem = Param(
                self.name,
                {"int_list": "int", "str_list": "str"}.get(k, "path"),
                None,
                "",
                self.choices,
                self.minimum,
                nullable=True,
            )
            return tuple(elem.coerce(x, f"{where}[{i}]") for i, x in enumerate(items))
        if k == "mapping":
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{where}: not a JSON object ({exc.msg})") from None
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}: expected a mapping, got {value!r}")
            return dict(value)
        raise AssertionError(k)  # pragma: no cover

    def _number(self, value: Any, where: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(
                f"{where}: expected {'an integer' if self.kind == 'int' else 'a number'}, got {value!r}"
            )
        if self.kind == "int" and not float(value).is_integer():
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        if not math.isfinite(float(value)):
            raise ConfigError(f"{where}: expected a finite number, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{where}: must be >= {self.minimum:g}, got {value!r}")
        return int(value) if self.kind == "int" else float(value)


def validate_options(
    params: Iterable[Param], options: Mapping[str, Any], *, where: str, library: bool = False
) -> dict[str, Any]:
    """Every declared option with its value (the given one, checked, else the default).

    ``where`` prefixes each key in errors (``"families.retrieval"`` → ``families.retrieval.k``).
    An option that is not declared (or, unless ``library``, an ``object`` option, which has no
    config key) raises :class:`ConfigError` with a "did you mean"."""
    declared = {p.name: p for p in params}
    usable = [n for n, p in declared.items() if library or p.exposed]
    out: dict[str, Any] = {}
    for key, value in options.items():
        p = declared.get(key)
        if p is None or not (library or p.exposed):
            known = ", ".join(sorted(usable)) or "none"
            raise ConfigError(f"{where}: unknown option {key!r}{did_you_mean(key, usable)}; options: {known}")
        out[key] = p.coerce(value, f"{where}.{key}")
    for name, p in declared.items():
        if name not in out:
            out[name] = p.default
    return out
