"""TEDS / TEDS-S (kg_rageval.families.parsing.teds): hand-worked cases, and equality with
PubTabNet's reference metric (pubtabnet_reference.py, restated from ibm-aur-nlp/PubTabNet
src/metric.py) on PubTabNet-style tables and perturbations of them."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("apted")
pytest.importorskip("lxml")
pytest.importorskip("rapidfuzz")

from pubtabnet_reference import ReferenceTEDS

from kg_rageval.base.errors import InputError
from kg_rageval.families.parsing import score_parsing
from kg_rageval.families.parsing.teds import (
    TableError,
    levenshtein,
    teds,
    teds_scores,
)

# 2 header cells, 2 body rows of 2 cells: 9 elements under <table>
# (thead, tr, td, td, tbody, tr, td, td, tr, td, td = 11 with the second row)
SMALL = (
    "<table><thead><tr><td>Name</td><td>Dose</td></tr></thead>"
    "<tbody><tr><td>A</td><td>10</td></tr><tr><td>B</td><td>20</td></tr></tbody></table>"
)


def test_identical_is_one() -> None:
    assert teds_scores(SMALL, SMALL) == (1.0, 1.0)


def test_one_cell_text_changed() -> None:
    # "Dose" -> "Dase": one token of four substituted, rename cost 1/4; 11 nodes
    got = teds_scores(SMALL, SMALL.replace("Dose", "Dase"))
    assert got.teds == 1 - 0.25 / 11
    assert got.teds_s == 1.0  # content ignored
    # "10" -> "100": one insertion over max(2, 3) tokens
    assert teds(SMALL, SMALL.replace(">10<", ">100<")) == 1 - (1 / 3) / 11


def test_nested_tags_are_content_tokens() -> None:
    bold = SMALL.replace("<td>Name</td>", "<td><b>Name</b></td>")
    # the cell's tokens ['<b>', 'N', 'a', 'm', 'e', '</b>'] against ['N', 'a', 'm', 'e']: 2/6;
    # the <b> element counts as a node: max(12, 11) = 12
    assert teds_scores(SMALL, bold) == (1 - (2 / 6) / 12, 1.0)


def test_colspan_change() -> None:
    # the header row's two cells merged into one with colspan 2: the second header cell is
    # deleted (1) and the first renamed to a different colspan (1): 2 / 11
    merged = SMALL.replace("<td>Name</td><td>Dose</td>", '<td colspan="2">Name</td>')
    got = teds_scores(SMALL, merged)
    assert got.teds == 1 - 2 / 11
    assert got.teds_s == 1 - 2 / 11


def test_row_dropped() -> None:
    # the last body row gone: tr and its two td deleted, 3 / 11
    dropped = SMALL.replace("<tr><td>B</td><td>20</td></tr>", "")
    assert teds_scores(SMALL, dropped) == (1 - 3 / 11, 1 - 3 / 11)


@pytest.mark.parametrize(
    "extracted", [None, "", "   ", "no table here", "<tr><td>A</td></tr>", "<div></div>"]
)
def test_unrecognised_table_scores_zero(extracted: str | None) -> None:
    assert teds_scores(SMALL, extracted) == (0.0, 0.0)


def test_bad_span_in_extraction_scores_zero_in_reference_raises() -> None:
    bad = SMALL.replace("<td>A</td>", '<td colspan="two">A</td>')
    assert teds_scores(SMALL, bad) == (0.0, 0.0)
    with pytest.raises(TableError, match="reference table") as e:
        teds_scores(bad, SMALL)
    assert e.value.side == "reference"


def test_structure_only_ignores_content() -> None:
    other = SMALL.replace("Name", "Drug").replace(">10<", ">5 mg<").replace(">B<", "><i>B</i><")
    assert teds(SMALL, other, structure_only=True) == 1.0
    assert teds(SMALL, other) < 1.0


def test_th_is_not_a_cell_as_in_the_reference() -> None:
    # PubTabNet's rule: only td is a cell; a th's text is not compared, its elements are nodes
    a = "<table><tr><th>x</th><td>1</td></tr></table>"
    b = "<table><tr><th>yy</th><td>1</td></tr></table>"
    assert teds_scores(a, b) == (1.0, 1.0)


def test_reference_table_problems_are_errors() -> None:
    for bad in ("<p>no table</p>", "<table></table>", "   "):
        with pytest.raises(TableError):
            teds_scores(bad, SMALL)


def test_unrecognised_table_does_not_read_the_reference() -> None:
    assert teds_scores("<p>not a table</p>", None) == (0.0, 0.0)


def test_missing_libraries_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from kg_rageval.families.parsing import teds as mod

    mod._libs.cache_clear()
    monkeypatch.setitem(sys.modules, "apted", None)
    try:
        with pytest.raises(ImportError, match=r"kg-rageval\[ingestion\]"):
            teds_scores(SMALL, SMALL)
        assert teds_scores(SMALL, None) == (0.0, 0.0)
    finally:
        mod._libs.cache_clear()


def test_bounds() -> None:
    from kg_rageval.families.parsing import teds as mod

    with pytest.raises(TableError) as e:
        teds_scores(SMALL, "<table>" + " " * mod.MAX_HTML_CHARS + "</table>")
    assert e.value.side == "extracted"
    big = "<table>" + "<tr><td>1</td></tr>" * (mod.MAX_TABLE_NODES // 2 + 1) + "</table>"
    with pytest.raises(TableError, match="tree nodes"):
        teds_scores(big, SMALL)


def test_no_entity_or_network_fetch() -> None:
    # a DOCTYPE with an external entity: the HTML parser neither loads it nor expands it
    evil = '<!DOCTYPE html [<!ENTITY x SYSTEM "file:///etc/passwd">]><table><tr><td>&x;</td></tr></table>'
    s = teds_scores(evil, evil)
    assert s == (1.0, 1.0)
    plain = "<table><tr><td>root:x</td></tr></table>"
    assert teds(evil, plain) < 1.0


def test_levenshtein() -> None:
    assert levenshtein(list("kitten"), list("sitting")) == 3
    assert levenshtein([], ["a"]) == 1
    assert levenshtein(["<b>", "a", "</b>"], ["a"]) == 2


# --- equality with PubTabNet's reference -------------------------------------------------

_WORDS = "Age Sex BMI Dose Group Control Placebo Treated Total Mean SD p-value n Baseline Week".split()


def _cell_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.3:
        return f"{rng.uniform(0, 100):.{rng.randint(0, 2)}f}"
    if kind < 0.45:
        return f"{rng.randint(1, 99)} ± {rng.uniform(0, 9):.1f}"
    if kind < 0.55:
        return ""
    if kind < 0.65:
        return f"<b>{rng.choice(_WORDS)}</b>"
    if kind < 0.72:
        return f"{rng.choice(_WORDS)}<sup>{rng.choice('abc')}</sup>"
    if kind < 0.78:
        return f"<i>{rng.choice(_WORDS)}</i> (μg)"
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))


def _table(rng: random.Random) -> list[list[tuple[str, int, int]]]:
    """Rows of (text, colspan, rowspan); the first one or two rows are the header."""
    n_cols = rng.randint(2, 6)
    rows: list[list[tuple[str, int, int]]] = []
    # header: a spanning group cell over the value columns, or a plain row
    if rng.random() < 0.5 and n_cols >= 3:
        rows.append([(f"<b>{rng.choice(_WORDS)}</b>", 1, 2), (rng.choice(_WORDS), n_cols - 1, 1)])
        rows.append([(rng.choice(_WORDS), 1, 1) for _ in range(n_cols - 1)])
    else:
        rows.append([(f"<b>{rng.choice(_WORDS)}</b>", 1, 1) for _ in range(n_cols)])
    for _ in range(rng.randint(2, 8)):
        if rng.random() < 0.1:
            rows.append([(f"<i>{rng.choice(_WORDS)}</i>", n_cols, 1)])  # a section row
        else:
            rows.append([(_cell_text(rng), 1, 1) for _ in range(n_cols)])
    return rows


def _html(rows: list[list[tuple[str, int, int]]], n_head: int) -> str:
    def row(cells: list[tuple[str, int, int]]) -> str:
        out = []
        for text, cs, rs in cells:
            attrs = (f' colspan="{cs}"' if cs != 1 else "") + (f' rowspan="{rs}"' if rs != 1 else "")
            out.append(f"<td{attrs}>{text}</td>")
        return "<tr>" + "".join(out) + "</tr>"

    head = "".join(row(r) for r in rows[:n_head])
    body = "".join(row(r) for r in rows[n_head:])
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


def _perturb(rng: random.Random, rows: list[list[tuple[str, int, int]]], n_head: int) -> tuple[list, int]:
    rows = [list(r) for r in rows]
    kind = rng.choice(["drop_row", "merge", "text", "text", "span", "add_row", "tag", "head"])
    body = range(n_head, len(rows))
    if kind == "drop_row" and len(body) > 1:
        del rows[rng.choice(body)]
    elif kind == "merge" and len(body):  # a "head" perturbation can leave no body row
        r = rows[rng.choice(body)]
        if len(r) > 1:
            i = rng.randrange(len(r) - 1)
            (a, ca, ra), (b, cb, _) = r[i], r[i + 1]
            r[i : i + 2] = [(f"{a} {b}".strip(), ca + cb, ra)]
    elif kind == "text":
        for _ in range(rng.randint(1, 4)):
            r = rows[rng.randrange(len(rows))]
            j = rng.randrange(len(r))
            t, c, s = r[j]
            r[j] = (t.replace("1", "l").replace("0", "O") if rng.random() < 0.5 else t[:-1], c, s)
    elif kind == "span" and len(body):
        r = rows[rng.choice(body)]
        j = rng.randrange(len(r))
        t, c, s = r[j]
        r[j] = (t, c, s + 1)
    elif kind == "add_row":
        rows.insert(rng.randint(n_head, len(rows)), [(_cell_text(rng), 1, 1) for _ in rows[-1]])
    elif kind == "tag":
        r = rows[rng.randrange(len(rows))]
        j = rng.randrange(len(r))
        t, c, s = r[j]
        r[j] = (t.replace("<b>", "").replace("</b>", "") if "<b>" in t else f"<b>{t}</b>", c, s)
    elif kind == "head":
        n_head = max(0, n_head - 1) if rng.random() < 0.5 else n_head + 1
    return rows, n_head


def _cases(seed: int, n: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        rows = _table(rng)
        n_head = 2 if rows[0][0][2] == 2 else 1
        ref = _html(rows, n_head)
        p_rows, p_head = rows, n_head
        for _ in range(rng.randint(0, 3)):
            p_rows, p_head = _perturb(rng, p_rows, p_head)
        out.append((ref, _html(p_rows, p_head)))
    return out


def _doc(table: str) -> str:
    # the reference reads body/table of a full document (a bare fragment scores 0 there)
    return f"<html><body>{table}</body></html>"


CASES = _cases(seed=30, n=40)


def test_cases_are_varied() -> None:
    assert len(CASES) >= 20
    assert sum(r == p for r, p in CASES) >= 2  # some untouched
    assert any("colspan" in r for r, _ in CASES) and any("rowspan" in r for r, _ in CASES)
    assert sum(r != p for r, p in CASES) >= 20


@pytest.mark.parametrize("i", range(len(CASES)))
def test_equals_pubtabnet_reference(i: int) -> None:
    ref, pred = CASES[i]
    got = teds_scores(ref, pred)
    want = ReferenceTEDS().evaluate(_doc(pred), _doc(ref))
    want_s = ReferenceTEDS(structure_only=True).evaluate(_doc(pred), _doc(ref))
    assert abs(got.teds - want) <= 1e-12
    assert abs(got.teds_s - want_s) <= 1e-12
    # a full document, and text around the table, read the same
    assert teds_scores(_doc(ref), "Table 1. " + pred + " (continued)") == got


def test_equals_reference_on_hand_made_tables() -> None:
    pairs = [
        (SMALL, SMALL.replace("Dose", "Dase")),
        (SMALL, SMALL.replace("<thead>", "").replace("</thead>", "")),
        (
            "<table><tr><td>a<b>b</b>c<unk>d</unk>e</td></tr></table>",
            "<table><tr><td>abcde</td></tr></table>",
        ),
        (
            "<table><tr><td><table><tr><td>x</td></tr></table>tail</td></tr></table>",
            "<table><tr><td>x</td></tr></table>",
        ),
        (
            "<table><tr><th><b>H</b></th><td> 1 </td></tr></table>",
            "<table><tr><th>H</th><td>1</td></tr></table>",
        ),
        (
            '<table><tr><td colspan=" 2 ">&amp; &lt;x&gt;</td></tr></table>',
            "<table><tr><td>&amp;</td></tr></table>",
        ),
        (
            "<table><tbody><tr><td>1</td></tr></tbody></table>",
            "<table><tr><td>1</td><td>2</td><td>3</td></tr></table>",
        ),
    ]
    for ref, pred in pairs:
        for so in (False, True):
            want = ReferenceTEDS(structure_only=so).evaluate(_doc(pred), _doc(ref))
            assert abs(teds(ref, pred, structure_only=so) - want) <= 1e-12, (ref, pred, so)


# --- in the family ------------------------------------------------------------------------


def test_family_sums_tables() -> None:
    recs = [
        {
            "id": "p1",
            "slices": {"doc_class": "invoice"},
            "parsing": {
                "reference": "x",
                "extracted": "x",
                "tables": [
                    {"reference": SMALL, "extracted": SMALL},
                    {"reference": SMALL, "extracted": SMALL.replace("Dose", "Dase")},
                ],
            },
        },
        {"id": "p2", "parsing": {"tables": [{"reference": SMALL, "extracted": None}]}},
    ]
    ev = score_parsing(None, recs)
    m = ev.metrics()
    assert m["teds"].value == pytest.approx((1 + (1 - 0.25 / 11) + 0) / 3, abs=1e-15)
    assert m["teds_s"].value == pytest.approx(2 / 3, abs=1e-15)
    assert m["table_missing_rate"].value == pytest.approx(1 / 3)
    assert m["teds"].rows == 3
    # a class pools its tables
    by = ev.breakdown("slice:doc_class")
    assert by["invoice"]["metrics"]["teds"].value == pytest.approx(1 - 0.125 / 11, abs=1e-15)


def test_family_bad_reference_table_names_the_field() -> None:
    recs = [{"id": "p1", "parsing": {"tables": [{"reference": "<p>x</p>", "extracted": SMALL}]}}]
    with pytest.raises(InputError, match=r"parsing\.tables\[0\]\.reference"):
        score_parsing(None, recs)


def test_cli_scores_tables_and_names_a_bad_reference(tmp_path, capsys) -> None:
    import json

    from click.testing import CliRunner

    from kg_rageval.cli.main import cli, main

    good = {
        "id": "t1",
        "parsing": {
            "tables": [
                {
                    "reference": "<table><tr><td>21%</td></tr></table>",
                    "extracted": "<table><tr><td>2l%</td></tr></table>",
                }
            ]
        },
    }
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(good) + "\n")
    res = CliRunner().invoke(cli, ["score", "parsing", "--data", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)["metrics"]
    assert m["parsing.teds"]["value"] == 1 - (1 / 3) / 2  # tr, td; one of 3 characters
    assert m["parsing.teds_s"]["value"] == 1.0
    bad = {"id": "t2", "parsing": {"tables": [{"reference": "<p>x</p>", "extracted": "<table></table>"}]}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    assert main(["score", "parsing", "--data", str(path)]) == 2
    err = capsys.readouterr().err
    assert "record 't2' (line 2), field parsing.tables[0].reference" in err
