"""OBO 1.4 flat files (our own parser: no dependency, line numbers in every error).

Read from each ``[Term]`` stanza: ``id``, ``name`` (label), ``is_a`` (edges; trailing
``{qualifiers}`` and ``! comment`` stripped), ``synonym: "text" SCOPE [TYPE] [xrefs]`` (scope
``EXACT``/``BROAD``/``NARROW``/``RELATED``), ``def: "text" [xrefs]``, ``is_obsolete: true``
(deprecated), ``replaced_by`` (the replacement; several are flagged, not resolved), ``consider`` (kept as a warning, not a
replacement: the spec says "may be appropriate"), ``namespace`` and ``alt_id`` (an alias of
the term, :meth:`~kg_rageval.ontology.Ontology.canonical`; also counted as ``alt_ids``).
``[Typedef]`` stanzas become :class:`~kg_rageval.ontology.Property` (``domain``/``range``);
``[Instance]`` stanzas are skipped and counted. ``relationship:`` lines are counted
(``relationship_lines_ignored``) unless ``relationships="relation"`` (triples of the knowledge
graph) or ``"hierarchy"`` (``part_of`` — or the ``hierarchy_relations`` given — as hierarchy
edges, the others triples); ``intersection_of:`` lines are not hierarchy edges and are counted
(``intersection_of_lines_ignored``).

Header tags: ``ontology:``, ``idspace: PREFIX URI`` (kept in ``Ontology.prefixes``) and
``data-version:`` (``Ontology.version``; ``date:`` when there is no data-version). Every
other prefix used in an id maps to the OBO PURL ``http://purl.obolibrary.org/obo/PREFIX_``, so
an OBO file and its OWL release produce the same ids and prefix map.

Escapes (``\\n``, ``\\t``, ``\\W``, ``\\"``, ``\\:``, ``\\\\`` ...) are decoded; a line ending
in an unescaped backslash continues on the next. ``!`` starts a comment outside quotes.
Malformed input raises :class:`~kg_rageval.base.errors.InputError` naming the file, the line and
what was expected; ``is_a`` to an id no stanza declares follows ``dangling`` (``"error"`` by
default, ``"drop"`` counts and drops it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, overload

from kg_rageval.base.errors import InputError
from kg_rageval.base.redact import excerpt
from kg_rageval.ontology.builder import OntologyBuilder
from kg_rageval.ontology.model import Ontology, Property

OBO_PURL = "http://purl.obolibrary.org/obo/"
SYNONYM_SCOPES = ("EXACT", "BROAD", "NARROW", "RELATED")
_ESCAPES = {"n": "\n", "t": "\t", "W": " "}
_ID_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9_.\-]*):\S")


class _Stanza:
    __slots__ = ("kind", "line", "tags")

    def __init__(self, kind: str, line: int):
        self.kind = kind
        self.line = line
        self.tags: list[tuple[str, str, int]] = []

    def get(self, tag: str) -> list[tuple[str, int]]:
        return [(v, ln) for t, v, ln in self.tags if t == tag]


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _strip_comment_and_qualifiers(value: str) -> str:
    """Drop a trailing ``! comment`` and ``{qualifiers}`` found outside quotes."""
    quote = False
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            quote = not quote
        elif not quote and ch == "!" and (i == 0 or value[i - 1].isspace()):
            value = value[:i]
            break
        i += 1
    value = value.rstrip()
    if value.endswith("}"):
        # trailing qualifier block {a="b", c="d"} outside quotes
        depth, quote, start = 0, False, -1
        for k, ch in enumerate(value):
            if ch == '"' and (k == 0 or value[k - 1] != "\\"):
                quote = not quote
            elif not quote and ch == "{":
                if depth == 0:
                    start = k
                depth += 1
            elif not quote and ch == "}":
                depth -= 1
        if start > 0 and depth == 0:
            value = value[:start].rstrip()
    return value


def _quoted(value: str, src: str, lineno: int, tag: str) -> tuple[str, str]:
    """Split ``"text" rest`` into (unescaped text, rest)."""
    v = value.lstrip()
    if not v.startswith('"'):
        raise InputError(
            f'{tag}: expected a quoted string ("..."), found {excerpt(value)}',
            source=src,
            location=f"line {lineno}",
        )
    i = 1
    while i < len(v):
        if v[i] == "\\":
            i += 2
            continue
        if v[i] == '"':
            return _unescape(v[1:i]), v[i + 1 :].strip()
        i += 1
    raise InputError(
        f'{tag}: unterminated quoted string (no closing ")', source=src, location=f"line {lineno}"
    )


def read_obo(path: str | Path) -> tuple[list[tuple[str, str, int]], list[_Stanza]]:
    """Header tags and stanzas of an OBO file, with line numbers."""
    p = Path(path)
    src = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc}", source=src) from None
    header: list[tuple[str, str, int]] = []
    stanzas: list[_Stanza] = []
    current: _Stanza | None = None
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        lineno = k + 1
        line = lines[k]
        k += 1
        while line.endswith("\\") and not line.endswith("\\\\") and k < len(lines):
            line = line[:-1] + lines[k]
            k += 1
        s = line.strip()
        if not s or s.startswith("!"):
            continue
        if s.startswith("["):
            if not s.endswith("]") or len(s) < 3:
                raise InputError(
                    f"malformed stanza header {excerpt(s)}; expected [Term], [Typedef] or [Instance]",
                    source=src,
                    location=f"line {lineno}",
                )
            current = _Stanza(s[1:-1].strip(), lineno)
            stanzas.append(current)
            continue
        tag, sep, value = s.partition(":")
        if not sep or not tag or " " in tag.strip():
            raise InputError(
                f"expected 'tag: value', found {s[:60]!r}", source=src, location=f"line {lineno}"
            )
        entry = (tag.strip(), value.strip(), lineno)
        if current is None:
            header.append(entry)
        else:
            current.tags.append(entry)
    return header, stanzas


@overload
def _one(stanza: _Stanza, tag: str, src: str, *, required: Literal[True]) -> tuple[str, int]: ...


@overload
def _one(stanza: _Stanza, tag: str, src: str, *, required: bool = False) -> tuple[str, int] | None: ...


def _one(stanza: _Stanza, tag: str, src: str, *, required: bool = False) -> tuple[str, int] | None:
    vals = stanza.get(tag)
    if not vals:
        if required:
            raise InputError(
                f"[{stanza.kind}] stanza has no '{tag}:' line", source=src, location=f"line {stanza.line}"
            )
        return None
    return vals[0]


def load_obo(
    path: str | Path,
    *,
    dangling: str = "error",
    conflicts: str = "error",
    strict: bool = False,
    relationships: str = "ignore",
    hierarchy_relations: tuple[str, ...] | list[str] | str = ("part_of",),
) -> Ontology:
    """Load an OBO 1.4 file (see the module docstring). ``strict=True`` refuses upstream data
    errors that otherwise load as counted warnings (an ``alt_id`` that is also a term id or
    names two terms, several ``replaced_by``; see :meth:`OntologyBuilder.build`).

    ``relationships``: what ``relationship: TYPE TARGET`` lines become — ``"ignore"`` (the
    default: counted ``relationship_lines_ignored``, so the hierarchy and content hash equal
    the OWL release's), ``"relation"`` (a triple ``(term, TYPE, TARGET)`` of the knowledge
    graph) or ``"hierarchy"`` (a hierarchy edge for the types in ``hierarchy_relations``,
    default ``part_of``; other types become triples)."""
    if relationships not in ("ignore", "relation", "hierarchy"):
        raise InputError(
            f"relationships must be 'ignore', 'relation' or 'hierarchy', not {relationships!r}",
            source=str(path),
        )
    as_edges = {hierarchy_relations} if isinstance(hierarchy_relations, str) else set(hierarchy_relations)
    p = Path(path)
    src = str(p)
    header, stanzas = read_obo(p)
    b = OntologyBuilder(src)
    prefixes: dict[str, str] = {}
    for tag, value, lineno in header:
        if tag == "idspace":
            parts = value.split()
            if len(parts) < 2:
                raise InputError(
                    f"idspace: expected 'PREFIX URI [\"description\"]', found {excerpt(value)}",
                    source=src,
                    location=f"line {lineno}",
                )
            prefixes[parts[0]] = parts[1]
        elif tag == "data-version" or (tag == "date" and b.version is None):
            b.version = value.strip() or b.version
    used: set[str] = set()

    def clean_id(value: str, lineno: int, tag: str, *, record_prefix: bool = True) -> str:
        v = _unescape(_strip_comment_and_qualifiers(value)).strip()
        if not v or any(c.isspace() for c in v):
            raise InputError(
                f"{tag}: expected one identifier, found {value[:60]!r}", source=src, location=f"line {lineno}"
            )
        m = _ID_PREFIX.match(v) if record_prefix else None
        if m:
            used.add(m.group(1))
        return v

    counts: dict[str, int] = {}
    seen_terms: set[str] = set()
    for st in stanzas:
        if st.kind == "Instance":
            counts["instances_skipped"] = counts.get("instances_skipped", 0) + 1
            continue
        if st.kind not in ("Term", "Typedef"):
            raise InputError(
                f"unknown stanza [{st.kind}]; expected [Term], [Typedef] or [Instance]",
                source=src,
                location=f"line {st.line}",
            )
        raw_id, id_line = _one(st, "id", src, required=True)
        node_id = clean_id(raw_id, id_line, "id")
        name = _one(st, "name", src)
        label = _unescape(_strip_comment_and_qualifiers(name[0])).strip() if name else None
        if st.kind == "Typedef":
            dom = _one(st, "domain", src)
            rng = _one(st, "range", src)
            b.add_property(
                Property(
                    id=node_id,
                    label=label,
                    domain=(clean_id(*dom, "domain"),) if dom else (),
                    range=(clean_id(*rng, "range"),) if rng else (),
                )
            )
            continue
        where = f"line {st.line}"
        if node_id in seen_terms:
            counts["repeated_stanzas_merged"] = counts.get("repeated_stanzas_merged", 0) + 1
        seen_terms.add(node_id)
        synonyms: list[str] = []
        for value, lineno in st.get("synonym"):
            text, rest = _quoted(value, src, lineno, "synonym")
            scope = rest.split()[0] if rest.split() else ""
            if scope not in SYNONYM_SCOPES:
                raise InputError(
                    f"synonym: expected a scope ({', '.join(SYNONYM_SCOPES)}) after the quoted "
                    f"text, found {scope or '(nothing)'!r}",
                    source=src,
                    location=f"line {lineno}",
                )
            if text.strip():
                synonyms.append(text.strip())
        for value, lineno in st.get("exact_synonym") + st.get("related_synonym"):  # OBO 1.0
            text, _ = _quoted(value, src, lineno, "synonym")
            synonyms.append(text.strip())
        definition = None
        d = _one(st, "def", src)
        if d:
            definition = _quoted(d[0], src, d[1], "def")[0].strip() or None
        status = "active"
        obs = _one(st, "is_obsolete", src)
        if obs:
            flag = _strip_comment_and_qualifiers(obs[0]).strip().lower()
            if flag not in ("true", "false"):
                raise InputError(
                    f"is_obsolete: expected true or false, found {obs[0]!r}",
                    source=src,
                    location=f"line {obs[1]}",
                )
            if flag == "true":
                status = "deprecated"
        # several replaced_by lines are ambiguous: the builder flags them (never the first wins)
        replaced_ids = [clean_id(v, ln, "replaced_by") for v, ln in st.get("replaced_by")]
        replaced_id = replaced_ids[0] if replaced_ids else None
        consider = [clean_id(v, ln, "consider") for v, ln in st.get("consider")]
        if status == "deprecated" and not replaced_id and consider:
            b.warn(
                "obsolete_with_consider_only",
                f"{node_id!r} is obsolete; consider {', '.join(consider)} (no replaced_by)",
            )
        alt_ids = st.get("alt_id")
        counts["alt_ids"] = counts.get("alt_ids", 0) + len(alt_ids)
        for value, lineno in alt_ids:
            # the prefix of an alt_id is not recorded: prefixes stay those of the OWL release
            b.add_alias(
                clean_id(value, lineno, "alt_id", record_prefix=False), node_id, where=f"line {lineno}"
            )
        for value, lineno in st.get("relationship") if relationships != "ignore" else ():
            rtype, _, rest = value.strip().partition(" ")
            target = clean_id(rest, lineno, "relationship")
            if relationships == "hierarchy" and rtype in as_edges:
                b.add_edge(node_id, target, where=f"line {lineno}")
            else:
                b.add_triple(node_id, rtype, target, where=f"line {lineno}")
        for tag in ("relationship", "intersection_of", "union_of"):
            if tag == "relationship" and relationships != "ignore":
                continue
            n = len(st.get(tag))
            if n:
                counts[f"{tag}_lines_ignored"] = counts.get(f"{tag}_lines_ignored", 0) + n
        ns = _one(st, "namespace", src)
        b.add_node(
            node_id,
            label=label,
            synonyms=synonyms,
            definition=definition,
            status=status,
            replaced_by=replaced_ids,
            node_type=ns[0] if ns else None,
            where=where,
        )
        for value, lineno in st.get("is_a"):
            parent = clean_id(value, lineno, "is_a")
            b.add_edge(node_id, parent, where=f"line {lineno}")
    for kind, n in counts.items():
        if n:
            b.warn(kind, count=n)
    b.prefixes = {pre: prefixes.get(pre, f"{OBO_PURL}{pre}_") for pre in sorted(used)}
    return b.build(dangling=dangling, conflicts=conflicts, strict=strict)
