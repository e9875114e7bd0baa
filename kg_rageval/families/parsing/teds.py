"""TEDS and TEDS-S of HTML tables: tree-edit-distance similarity, equal to PubTabNet's
reference metric (ibm-aur-nlp/PubTabNet, ``src/metric.py``, class ``TEDS``; Zhong et al. 2020,
*Image-based table recognition*), checked against it in ``tests/families/parsing/test_teds.py``.

``TEDS(ref, pred) = 1 - EditDist(T_ref, T_pred) / max(n_ref, n_pred)``

* **Parsing**: lxml's HTML parser (comments and processing instructions dropped, no network,
  no huge trees; the HTML parser never loads a DTD or an external entity), the input at most
  :data:`MAX_HTML_CHARS` characters; the first ``<table>`` element in document order is the
  table (the reference takes the first ``<table>`` child of ``<body>``: the same element for a
  fragment or document whose table is at the top level).
* **Tree**: the ``<table>`` element and every element under it, except that a ``<td>`` is a
  leaf holding its content: the characters of its text and, for each element nested in it, the
  tokens ``<tag>``, its text's characters, its children's tokens, ``</tag>`` and its tail's
  characters (``<td><b>Ex</b></td>`` -> ``['<b>', 'E', 'x', '</b>']``). As in the reference
  only ``td`` is a cell: a ``<th>`` is an inner node whose text is not compared (PubTabNet
  writes header cells as ``<td>`` in ``<thead>``).
* **Costs**: insert and delete 1; rename 1 when the tags, ``colspan`` or ``rowspan`` (integers,
  default 1; ``td`` only) differ, else for two ``td`` the normalised Levenshtein distance of
  their token lists (``distance / max(len)``; 0 when both are empty), else 0. Tree edit
  distance by APTED (the ``apted`` package, as the reference).
* **n**: the number of elements under ``<table>`` (the table itself not counted, elements
  nested in cells counted), the larger of the two tables'.
* **TEDS-S**: the same with every cell's content empty (structure only).

An extracted table that is empty, unparsable or has no ``<table>`` element (or a ``colspan``
/ ``rowspan`` that is not an integer) scores 0 for both, as in the reference. A reference
table with any of those problems, or with no element under ``<table>`` (the reference would
divide by zero), is bad gold: :class:`TableError`. The value is the reference's, not clipped:
a prediction of a wildly different shape can score below 0.

Needs ``apted`` and ``lxml`` (``pip install 'kg-rageval[ingestion]'``), imported on first use.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

MAX_HTML_CHARS = 2_000_000
"""The longest table HTML read (characters); a longer one is refused (:class:`TableError`)."""

MAX_TABLE_NODES = 5_000
"""The most tree nodes of one table; APTED's time and memory grow with the product of the two
trees' sizes, so a larger table is refused (:class:`TableError`) rather than left running."""

_EXTRA = "TEDS needs apted and lxml: pip install 'kg-rageval[ingestion]'"


class TableError(ValueError):
    """A table that cannot be scored: a bad reference table, or input over the bounds.
    ``side`` says which of the pair: ``"reference"`` or ``"extracted"``."""

    def __init__(self, message: str, side: str = "reference") -> None:
        super().__init__(message)
        self.side = side


class TedsScores(NamedTuple):
    teds: float
    teds_s: float


class _Node:
    """One tree node in the form APTED reads (``children``); ``content`` is ``None`` except for
    ``td``. ``key`` = (tag, colspan, rowspan): two nodes of different keys rename at cost 1."""

    __slots__ = ("children", "colspan", "content", "key", "rowspan", "tag")

    def __init__(self, tag: str, colspan: int | None, rowspan: int | None, content: tuple[str, ...] | None):
        self.tag = tag
        self.colspan = colspan
        self.rowspan = rowspan
        self.content = content
        self.key = (tag, colspan, rowspan)
        self.children: list[_Node] = []

    def same(self, other: _Node) -> bool:
        """The two subtrees are equal (keys, contents, children), so their distance is 0."""
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a.key != b.key or a.content != b.content or len(a.children) != len(b.children):
                return False
            stack.extend(zip(a.children, b.children))
        return True


class _Table(NamedTuple):
    tree: _Node  # with cell content
    shape: _Node  # the same tree, every cell empty
    n_nodes: int  # elements under <table>


@functools.lru_cache(maxsize=1)
def _libs() -> tuple[Any, Any, Any]:
    try:
        from apted import APTED, Config
        from lxml import etree
    except ImportError as exc:
        raise ImportError(_EXTRA) from exc
    parser = etree.HTMLParser(
        remove_comments=True, remove_pis=True, no_network=True, huge_tree=False, encoding="utf-8"
    )
    return APTED, _config_class(Config), (etree, parser)


def _config_class(base: type) -> type:
    class _Costs(base):  # type: ignore[misc, valid-type]
        """PubTabNet's ``CustomConfig`` rename rule, each pair's cost computed once."""

        def __init__(self) -> None:
            self._cache: dict[tuple[int, int], float] = {}

        def children(self, node: _Node) -> list[_Node]:
            return node.children

        def rename(self, a: _Node, b: _Node) -> float:
            if a.key != b.key:
                return 1.0
            if not (a.content or b.content):  # not cells, or two empty cells
                return 0.0
            key = (id(a), id(b))  # both trees live while APTED runs
            c = self._cache.get(key)
            if c is None:
                c = self._cache[key] = _rename(a, b)
            return c

    return _Costs


def _rename(a: _Node, b: _Node) -> float:
    # PubTabNet's CustomConfig.rename
    if a.tag != b.tag or a.colspan != b.colspan or a.rowspan != b.rowspan:
        return 1.0
    if a.tag == "td" and (a.content or b.content):
        x, y = a.content or (), b.content or ()
        return float(levenshtein(x, y)) / max(len(x), len(y))
    return 0.0


def levenshtein(a: tuple[str, ...] | list[str], b: tuple[str, ...] | list[str]) -> int:
    """Edit distance of two token sequences (unit costs), standard library only."""
    lo = 0
    n, m = len(a), len(b)
    while lo < n and lo < m and a[lo] == b[lo]:
        lo += 1
    while n > lo and m > lo and a[n - 1] == b[m - 1]:
        n -= 1
        m -= 1
    a, b = a[lo:n], b[lo:m]
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def _tokens(el: Any, out: list[str]) -> None:
    # the reference's TEDS.tokenize for an element nested in a cell
    out.append(f"<{el.tag}>")
    if el.text is not None:
        out.extend(el.text)
    for ch in el:
        _tokens(ch, out)
    if el.tag != "unk":
        out.append(f"</{el.tag}>")
    if el.tag != "td" and el.tail is not None:
        out.extend(el.tail)


def _span(el: Any, name: str) -> int:
    return int(el.attrib.get(name, "1"))  # ValueError: not an integer, as int() reads it


def _build(el: Any, counter: list[int]) -> tuple[_Node, _Node]:
    counter[0] += 1
    if counter[0] > MAX_TABLE_NODES:
        raise TableError(f"a table of more than {MAX_TABLE_NODES} tree nodes is not scored (TEDS bound)")
    if el.tag == "td":
        cs, rs = _span(el, "colspan"), _span(el, "rowspan")
        toks: list[str] = []
        if el.text is not None:
            toks.extend(el.text)
        for ch in el:
            _tokens(ch, toks)
        node, shape = _Node("td", cs, rs, tuple(toks)), _Node("td", cs, rs, ())
    else:
        node, shape = _Node(el.tag, None, None, None), _Node(el.tag, None, None, None)
        for ch in el:
            c, s = _build(ch, counter)
            node.children.append(c)
            shape.children.append(s)
    return node, shape


def _load(html: str) -> _Table:
    """The table of ``html``; ``ValueError`` (or :class:`TableError`) when there is none."""
    if len(html) > MAX_HTML_CHARS:
        raise TableError(f"table HTML longer than {MAX_HTML_CHARS} characters is not read (TEDS bound)")
    if not html.strip():
        raise ValueError("empty table HTML")
    _, _, (etree, parser) = _libs()
    try:
        root = etree.fromstring(html.encode("utf-8", "surrogatepass"), parser)
    except etree.LxmlError as exc:
        raise ValueError(f"unparsable table HTML: {exc}") from None
    table = None if root is None else next(root.iter("table"), None)
    if table is None:
        raise ValueError("no <table> element")
    n_nodes = sum(1 for _ in table.iterdescendants())
    tree, shape = _build(table, [0])
    return _Table(tree, shape, n_nodes)


def _similarity(a: _Node, b: _Node, n_nodes: int) -> float:
    if a.same(b):
        return 1.0  # distance 0: APTED would find 1 - 0 / n as well
    apted_cls, config_cls, _ = _libs()
    d = apted_cls(a, b, config_cls()).compute_edit_distance()
    return 1.0 - float(d) / n_nodes


def teds_scores(reference: str, extracted: str | None) -> TedsScores:
    """TEDS and TEDS-S of one extracted table against its reference (both HTML). ``extracted``
    ``None`` (the reference is then not read), empty, unparsable or without a ``<table>``:
    ``(0.0, 0.0)``. A reference that is not a table with at least one element under
    ``<table>``: :class:`TableError`."""
    if extracted is None:
        return TedsScores(0.0, 0.0)  # nothing to compare: the reference is not read (no apted/lxml needed)
    try:
        ref = _load(reference)
    except TableError:
        raise
    except ValueError as exc:
        raise TableError(f"reference table: {exc}") from None
    if ref.n_nodes == 0:
        raise TableError("reference table: no element under <table> (no node to score against)")
    try:
        ext = _load(extracted)
    except TableError as exc:
        raise TableError(str(exc), "extracted") from None
    except ValueError:
        return TedsScores(0.0, 0.0)
    n = max(ref.n_nodes, ext.n_nodes)
    # the reference calls APTED(pred, true): the prediction's tree first
    return TedsScores(_similarity(ext.tree, ref.tree, n), _similarity(ext.shape, ref.shape, n))


def teds(reference: str, extracted: str | None, *, structure_only: bool = False) -> float:
    """TEDS (``structure_only``: TEDS-S) of one table pair; see :func:`teds_scores`."""
    s = teds_scores(reference, extracted)
    return s.teds_s if structure_only else s.teds


__all__ = [
    "MAX_HTML_CHARS",
    "MAX_TABLE_NODES",
    "TableError",
    "TedsScores",
    "levenshtein",
    "teds",
    "teds_scores",
]
