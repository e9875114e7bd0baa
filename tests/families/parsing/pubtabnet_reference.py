"""PubTabNet's reference TEDS, restated for the tests (not part of the package).

Source: ibm-aur-nlp/PubTabNet, ``src/metric.py`` (classes ``TableTree``, ``CustomConfig``,
``TEDS``), Copyright 2020 IBM, Apache License 2.0 (the same licence as this project). This
file follows that algorithm step by step, without its batch / multiprocessing parts and with
``rapidfuzz.distance.Levenshtein`` standing in for the ``distance`` package's ``levenshtein``
(both the unit-cost edit distance of two token lists). What it keeps, on purpose, as the
reference has it: ``lxml.html.fromstring`` with ``HTMLParser(remove_comments=True,
encoding='utf-8')`` — passed as ``parser=``: the reference passes it positionally, where
``fromstring``'s second parameter is ``base_url``, which lxml 6 refuses (``TypeError: Argument
must be string or unicode``); copies of the metric in use pass it by keyword; the table is ``body/table`` of the parsed document (a bare fragment that
``fromstring`` returns as its own element scores 0, so the tests pass full documents); node
count ``len(table.xpath('.//*'))``; only ``td`` is a cell, tokenised as ``<td>`` + text +
children's tokens (``</unk>`` never closed, a nested ``td``'s tail dropped) with the outer
``<td>`` ``</td>`` cut off; ``APTED(pred, true)``. It is deliberately plain — no caching, the
apted ``Tree`` helper class and the default ``Config.children`` — so that it shares nothing
with :mod:`kg_rageval.families.parsing.teds` but the apted and lxml libraries.
"""

from __future__ import annotations

from typing import Any

from apted import APTED, Config
from apted.helpers import Tree
from lxml import html
from rapidfuzz.distance import Levenshtein


class TableTree(Tree):  # type: ignore[misc]
    def __init__(
        self, tag: Any, colspan: int | None = None, rowspan: int | None = None, content: Any = None
    ) -> None:
        self.tag = tag
        self.colspan = colspan
        self.rowspan = rowspan
        self.content = content
        self.children: list[TableTree] = []


class CustomConfig(Config):  # type: ignore[misc]
    def rename(self, node1: TableTree, node2: TableTree) -> float:
        if node1.tag != node2.tag or node1.colspan != node2.colspan or node1.rowspan != node2.rowspan:
            return 1.0
        if node1.tag == "td" and (node1.content or node2.content):
            longest = max(len(node1.content), len(node2.content))
            return float(Levenshtein.distance(node1.content, node2.content)) / longest
        return 0.0


class ReferenceTEDS:
    def __init__(self, structure_only: bool = False) -> None:
        self.structure_only = structure_only

    def _tokenize(self, node: Any, tokens: list[str]) -> None:
        tokens.append(f"<{node.tag}>")
        if node.text is not None:
            tokens += list(node.text)
        for n in node.getchildren():
            self._tokenize(n, tokens)
        if node.tag != "unk":
            tokens.append(f"</{node.tag}>")
        if node.tag != "td" and node.tail is not None:
            tokens += list(node.tail)

    def _tree(self, node: Any) -> TableTree:
        if node.tag == "td":
            cell: list[str] = []
            if not self.structure_only:
                tokens: list[str] = []
                self._tokenize(node, tokens)
                cell = tokens[1:-1]
            return TableTree(
                "td", int(node.attrib.get("colspan", "1")), int(node.attrib.get("rowspan", "1")), cell
            )
        new = TableTree(node.tag)
        for n in node.getchildren():
            new.children.append(self._tree(n))
        return new

    def evaluate(self, pred: str, true: str) -> float:
        if not pred or not true:
            return 0.0
        parser = html.HTMLParser(remove_comments=True, encoding="utf-8")
        pred_doc = html.fromstring(pred, parser=parser)
        true_doc = html.fromstring(true, parser=parser)
        if pred_doc.xpath("body/table") and true_doc.xpath("body/table"):
            p = pred_doc.xpath("body/table")[0]
            t = true_doc.xpath("body/table")[0]
            n_nodes = max(len(p.xpath(".//*")), len(t.xpath(".//*")))
            d = APTED(self._tree(p), self._tree(t), CustomConfig()).compute_edit_distance()
            return 1.0 - float(d) / n_nodes
        return 0.0
