"""Checks that run *before* a parser sees a file, so that loading never reaches the network
and never expands an entity bomb.

Rules (also in ``docs/ontology.md``):

* **XML** (RDF/XML, OWL files, TriX): the ``<!DOCTYPE ...>`` internal subset is read without an
  XML parser. Refused with :class:`~kg_rageval.base.errors.UnsafeInputError`:

  - external entities (``<!ENTITY x SYSTEM "file:///etc/passwd">``, ``PUBLIC``) and an external
    DTD subset (``<!DOCTYPE rdf:RDF SYSTEM "http://...">``);
  - parameter entities (``<!ENTITY % x ...>``);
  - internal entities whose value references another entity (``&a;`` inside a value): the
    building block of "billion laughs" expansion bombs;
  - the same written with character references (``<!ENTITY b "&#38;a;&#38;a;">`` declares
    ``&a;&a;``): values are checked after character references are decoded;
  - more than :data:`MAX_ENTITIES` entities or a value longer than :data:`MAX_ENTITY_VALUE`
    characters;
  - an ``<!ATTLIST>`` default value that references an entity or is longer than
    :data:`MAX_ATTLIST_DEFAULT` characters (it is copied into every element);
  - quadratic blow-up within those limits: the references to internal entities in the whole
    document may add at most the ``max_xml_expansion`` limit of characters
    (:mod:`kg_rageval.base.limits`, default 10 MiB).

  Plain internal entities as Protégé writes them (``<!ENTITY owl
  "http://www.w3.org/2002/07/owl#">``) are allowed.
* **JSON-LD**: a ``@context`` (or ``@import``) given by URL, anywhere in the document, is
  refused: resolving it would fetch a remote document.
* ``owl:imports`` are never followed by the parsers themselves; the RDF loader counts and lists
  them and follows them only when asked (``follow_imports=True``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError, UnsafeInputError

MAX_ENTITIES = 256
"""Most entity declarations accepted in one DOCTYPE."""
MAX_ENTITY_VALUE = 4096
"""Longest accepted internal entity value (characters)."""
MAX_ATTLIST_DEFAULT = 256
"""Longest accepted default value of an ``<!ATTLIST>`` declaration (copied into every element)."""
_HEAD_LIMIT = 1 << 20  # the DOCTYPE must close within the first MiB
_ATTLIST = re.compile(r"<!ATTLIST\s(?:\"[^\"]*\"|'[^']*'|[^>\"'])*>", re.S)

_ENTITY = re.compile(
    r"<!ENTITY\s+(?P<pe>%\s+)?(?P<name>[^\s\"']+)\s+(?P<rest>(?:\"[^\"]*\"|'[^']*'|[^>\"'])*)>",
    re.S,
)
_REF = re.compile(r"[&%][A-Za-z_:][\w.:-]*;")
_CHARREF = re.compile(r"&#([0-9]+|[xX][0-9A-Fa-f]+);")


def _line_of(text: str, pos: int) -> str:
    return f"line {text.count(chr(10), 0, pos) + 1}"


def read_head(path: Path, limit: int = _HEAD_LIMIT) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(limit)


def _doctype_span(text: str) -> tuple[int, int] | None:
    """Start and end (after its ``>``) of the ``<!DOCTYPE`` declaration, found by scanning the
    prolog (XML declaration, comments, processing instructions) up to the root element.

    ``None`` when the root element comes first; ``(start, -1)`` when the prolog or the
    declaration does not end within ``text``.
    """
    i = 0
    n = len(text)
    while True:
        while i < n and text[i] in " \t\r\n\ufeff":
            i += 1
        if i >= n:
            return (i, -1)
        if text.startswith("<?", i):
            end = text.find("?>", i + 2)
            if end < 0:
                return (i, -1)
            i = end + 2
        elif text.startswith("<!--", i):
            end = text.find("-->", i + 4)
            if end < 0:
                return (i, -1)
            i = end + 3
        elif text.startswith("<!DOCTYPE", i):
            break
        else:
            return None  # the root element (or text that the parser will reject)
    start = i
    depth, quote, i = 0, "", start + 9
    while i < n:
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif text.startswith("<!--", i):
            end = text.find("-->", i + 4)
            if end < 0:
                break
            i = end + 3
            continue
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == ">" and depth <= 0:
            return start, i + 1
        i += 1
    return start, -1


def check_xml(path: str | Path, data: bytes | None = None) -> dict[str, int]:
    """Refuse unsafe DTD constructs in an XML file (see the module docstring).

    Returns counts (``xml_entities``) for the loader's diagnostics.
    """
    p = Path(path)
    head = data[:_HEAD_LIMIT] if data is not None else read_head(p)
    text = head.decode("utf-8", errors="replace")
    span = _doctype_span(text)
    if span is None:
        return {}
    start, end = span
    if end < 0:
        raise UnsafeInputError(
            "the XML prolog or its <!DOCTYPE declaration does not end within the first MiB; "
            "refusing to parse",
            source=str(p),
            location=_line_of(text, start),
        )
    decl = text[start:end]
    bracket = decl.find("[")
    outer = decl if bracket < 0 else decl[:bracket]
    if re.search(r"\b(SYSTEM|PUBLIC)\b", outer):
        raise UnsafeInputError(
            "the document type names an external DTD (SYSTEM/PUBLIC); loading it could read "
            "local files or reach the network, so it is refused",
            source=str(p),
            location=_line_of(text, start),
        )
    for att in _ATTLIST.finditer(decl):
        for default in re.findall(r"\"([^\"]*)\"|'([^']*)'", att.group(0)):
            value = default[0] or default[1]
            if "&" in value or len(value) > MAX_ATTLIST_DEFAULT:
                raise UnsafeInputError(
                    "an <!ATTLIST> default value that references an entity or is longer than "
                    f"{MAX_ATTLIST_DEFAULT} characters is refused: it is copied into every element "
                    "(another expansion bomb)",
                    source=str(p),
                    location=_line_of(text, start + att.start()),
                )
    entities = list(_ENTITY.finditer(decl))
    if len(entities) != decl.count("<!ENTITY"):
        raise UnsafeInputError(
            "an entity declaration could not be read; refusing to parse (only plain internal "
            'entities such as <!ENTITY owl "http://www.w3.org/2002/07/owl#"> are allowed)',
            source=str(p),
            location=_line_of(text, start),
        )
    if len(entities) > MAX_ENTITIES:
        raise UnsafeInputError(
            f"{len(entities)} entity declarations (at most {MAX_ENTITIES} are accepted)",
            source=str(p),
            location=_line_of(text, start),
        )
    for m in entities:
        where = _line_of(text, start + m.start())
        name, rest = m.group("name"), m.group("rest").strip()
        if m.group("pe"):
            raise UnsafeInputError(
                f"parameter entity %{name}; is refused (only plain internal entities such as "
                f'<!ENTITY owl "http://www.w3.org/2002/07/owl#"> are allowed)',
                source=str(p),
                location=where,
            )
        if re.match(r"(SYSTEM|PUBLIC)\b", rest):
            raise UnsafeInputError(
                f"external entity &{name}; ({rest[:80]}) is refused: expanding it would read a "
                "file or fetch a URL",
                source=str(p),
                location=where,
            )
        value = rest[1:-1] if rest[:1] in "\"'" and rest[-1:] == rest[:1] else None
        if value is None:
            raise UnsafeInputError(
                f"entity &{name}; has an unexpected declaration {rest[:80]!r}; expected a quoted value",
                source=str(p),
                location=where,
            )
        decoded = _CHARREF.sub(_decode_charref, value)
        nested = _REF.search(decoded)
        if nested:
            raise UnsafeInputError(
                f"entity &{name}; references another entity ({nested.group(0)}"
                f"{', written with character references' if not _REF.search(value) else ''}): "
                "nested entities are how expansion bombs ('billion laughs') are built, so they "
                "are refused",
                source=str(p),
                location=where,
            )
        if len(value) > MAX_ENTITY_VALUE:
            raise UnsafeInputError(
                f"entity &{name}; is {len(value)} characters long (at most {MAX_ENTITY_VALUE})",
                source=str(p),
                location=where,
            )
    if entities:
        _check_expansion(p, data if data is not None else None, entities)
    return {"xml_entities": len(entities)} if entities else {}


def _decode_charref(m: re.Match) -> str:
    body = m.group(1)
    try:
        code = int(body[1:], 16) if body[:1] in "xX" else int(body)
        return chr(code)
    except (ValueError, OverflowError):
        return m.group(0)


def _check_expansion(p: Path, data: bytes | None, entities: list[re.Match]) -> None:
    """Quadratic blow-up within the per-entity limits: the references to internal entities in
    the whole document may add at most ``max_xml_expansion`` characters to it."""
    from kg_rageval.base import limits

    if data is None:
        data = p.read_bytes()
    lengths = {}
    for m in entities:
        rest = m.group("rest").strip()
        lengths[m.group("name")] = len(rest) - 2
    names = "|".join(re.escape(n) for n in lengths)
    counts: dict[str, int] = {}
    for ref in re.finditer(rb"&(" + names.encode() + rb");", data):
        k = ref.group(1).decode()
        counts[k] = counts.get(k, 0) + 1
    extra = sum(c * max(0, lengths[k] - len(k) - 2) for k, c in counts.items())
    limits.check(
        "max_xml_expansion",
        extra,
        f"entity references would add {extra} characters to the document",
        source=str(p),
    )


def _remote_context(node: Any, trail: str) -> str | None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("@context", "@import"):
                values = value if isinstance(value, list) else [value]
                for v in values:
                    if isinstance(v, str):
                        return f"{trail}/{key} = {v!r}"
            found = _remote_context(value, f"{trail}/{key}")
            if found:
                return found
    elif isinstance(node, list):
        for k, item in enumerate(node):
            found = _remote_context(item, f"{trail}[{k}]")
            if found:
                return found
    return None


def decode_json(raw: bytes | bytearray | str, source: str | Path, expected: str) -> Any:
    """``json.loads(raw)`` with the file, line and column of a syntax error and a clear
    message for bytes that are not UTF-8; ``expected`` names what the file should hold
    ("a STIX 2.x bundle"). Shared by the JSON-LD and STIX loaders."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg}; expected {expected}",
            source=str(source),
            location=f"line {exc.lineno}, column {exc.colno}",
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc}", source=str(source)) from None
    except RecursionError:
        from kg_rageval.base import limits

        raise limits.exceeded("max_json_depth", "JSON nested too deeply", source=str(source)) from None


def check_jsonld(path: str | Path, data: bytes | None = None) -> Any:
    """Refuse JSON-LD whose ``@context`` / ``@import`` is a URL (resolving it would fetch it).

    Returns the decoded JSON document so the caller need not decode it twice.
    """
    p = Path(path)
    raw = data if data is not None else p.read_bytes()
    doc = decode_json(raw, p, "a JSON-LD document")
    try:
        found = _remote_context(doc, "")
    except RecursionError:
        from kg_rageval.base import limits

        raise limits.exceeded("max_json_depth", "JSON-LD nested too deeply", source=str(p)) from None
    if found:
        raise UnsafeInputError(
            f"remote JSON-LD context {found}: resolving it would fetch a URL, which loading "
            "never does; inline the context instead",
            source=str(p),
        )
    return doc
