"""Loader options: one declaration shared by :func:`load_ontology`, the CLI and the audit config.

Each :class:`LoaderOption` names a keyword of the loader functions, the CLI flag that sets it
and what it does. :func:`check_loader_options` is the single check of an options dict against
the loader that will receive it: an option the loader does not take is an
:class:`~kg_rageval.base.errors.InputError` listing the options it does take (never a
``TypeError`` deep inside a loader, never silently ignored). ``None`` means "not given" and is
dropped, so callers may pass every option they know.

``ontology_option_kwargs(pairs)`` parses the CLI's generic ``--ontology-option KEY=VALUE``
(values are JSON when they parse as JSON — ``true``, ``3``, ``["a", "b"]`` — else strings),
which reaches the options without a dedicated flag (``lang``, ``matrix_root``, a graph
mapping field such as ``node_label``).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.contract.params import Param


@dataclass(frozen=True)
class LoaderOption:
    """A loader keyword with its CLI flag. ``kind``: ``"flag"`` (boolean), ``"choice"``
    (one of ``choices``), ``"multi"`` (repeatable flag, a tuple), ``"str"``; ``"any"`` (a
    value the loader checks itself, e.g. a graph mapping: a preset, a file or a dict)."""

    name: str
    flag: str
    kind: str
    help: str
    choices: tuple[str, ...] = ()

    @property
    def param(self) -> Param | None:
        """The value check, as a :class:`~kg_rageval.contract.params.Param` (the contract's
        one validation of option values); ``None`` for ``"any"``."""
        if self.kind == "any":
            return None
        kind = {"flag": "bool", "choice": "str", "multi": "str_list", "str": "str"}[self.kind]
        default = False if kind == "bool" else None
        return Param(
            self.name, kind, default, self.help, choices=self.choices or None, nullable=default is None
        )


LOADER_OPTIONS: tuple[LoaderOption, ...] = (
    LoaderOption(
        "strict",
        "--strict-ontology",
        "flag",
        "Refuse upstream data errors that otherwise load as counted warnings (an alt_id "
        "that is also a term id or names two terms, several replacements).",
    ),
    LoaderOption(
        "conflicts",
        "--conflicts",
        "choice",
        "One id with two different labels: refuse (error) or keep the first, counted "
        "(keep-first). Default: the loader's.",
        ("error", "keep-first"),
    ),
    LoaderOption(
        "dangling",
        "--dangling",
        "choice",
        "Edges to undeclared concepts: refuse, drop (counted) or declare the parent "
        "(RDF, tables). Default: the loader's.",
        ("error", "drop", "declare"),
    ),
    LoaderOption(
        "follow_imports",
        "--follow-imports",
        "flag",
        "RDF/OWL: follow owl:imports, confined to files under the ontology's folder (or an "
        "--import-path); URLs only with --allow-network.",
    ),
    LoaderOption(
        "allow_network",
        "--allow-network",
        "flag",
        "RDF/OWL with --follow-imports: let http(s) imports be fetched (never otherwise).",
    ),
    LoaderOption(
        "import_paths",
        "--import-path",
        "multi",
        "RDF/OWL with --follow-imports: a further folder imports may be read from (repeatable).",
    ),
    LoaderOption(
        "reasoner",
        "--reasoner",
        "choice",
        "OWL only: infer the class hierarchy with owlready2 + HermiT (needs Java).",
        ("none", "hermit"),
    ),
    LoaderOption(
        "source_names",
        "--source-name",
        "multi",
        "STIX: external_references source_name holding the ATT&CK ids, in order of "
        "preference (repeatable; default mitre-attack, mitre-ics-attack, "
        "mitre-mobile-attack).",
    ),
    LoaderOption(
        "mapping",
        "--mapping",
        "any",
        "Graph database: a mapping preset (n10s-owl, n10s-skos, ...) or a mapping file "
        "(YAML/JSON/TOML: node_label, id_property, label_properties, relationships, ...).",
    ),
    LoaderOption(
        "database",
        "--database",
        "str",
        "Graph database: the database name (default KG_RAGEVAL_NEO4J_DATABASE or the server's default).",
    ),
)
"""Options with a CLI flag of their own (the rest through ``--ontology-option KEY=VALUE``)."""

SECRET_OPTIONS = ("auth", "password", "user", "driver")
"""Never taken from a config file or the command line: credentials come from the environment."""


def accepted_options(loader: Callable[..., Any]) -> tuple[set[str], bool]:
    """Keyword names ``loader`` takes (after the path) and whether it takes ``**kwargs``."""
    params = list(inspect.signature(loader).parameters.values())[1:]
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return names, any(p.kind is p.VAR_KEYWORD for p in params)


_BY_NAME = {o.name: o for o in LOADER_OPTIONS}


def check_option_values(options: Mapping[str, Any], *, where: str = "option") -> dict[str, Any]:
    """``options`` without ``None`` values, the declared ones checked and normalised by their
    :class:`~kg_rageval.contract.params.Param` (errors name ``<where>.<option>``)."""
    given = {k: v for k, v in options.items() if v is not None}
    for k, v in list(given.items()):
        decl = _BY_NAME.get(k)
        param = decl.param if decl is not None else None
        if param is not None:
            given[k] = param.coerce(v, f"{where}.{k}")
    return given


def check_loader_options(
    fmt: str,
    loader: Callable[..., Any],
    options: Mapping[str, Any],
    *,
    source: str | None = None,
    where: str = "option",
) -> dict[str, Any]:
    """``options`` without ``None`` values, checked against what ``loader`` takes; values of
    the declared options are checked too (``strict: "yes"`` is a
    :class:`~kg_rageval.base.errors.ConfigError` naming ``<where>.strict``, never truthy)."""
    given = check_option_values(options, where=where)
    names, var_kw = accepted_options(loader)
    unknown = sorted(k for k in given if k not in names)
    if unknown and not var_kw:
        shown = ", ".join(sorted(names)) or "none"
        raise InputError(
            f"the {fmt} loader does not take {', '.join(repr(u) for u in unknown)}; its options: {shown}",
            source=source,
        )
    return given


def ontology_option_kwargs(pairs: Iterable[str]) -> dict[str, Any]:
    """``["lang=de", "matrix_root=false"]`` → ``{"lang": "de", "matrix_root": False}``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key.isidentifier():
            raise InputError(f"--ontology-option expects KEY=VALUE, got {pair!r}")
        if key in SECRET_OPTIONS:
            raise InputError(
                f"--ontology-option {key}=...: credentials come from the environment only "
                "(KG_RAGEVAL_NEO4J_USER / KG_RAGEVAL_NEO4J_PASSWORD)"
            )
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        out[key] = value
    return out
