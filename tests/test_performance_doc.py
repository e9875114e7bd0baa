"""docs/performance.md: the summary table equals its sections (issue #20).

Every row of "Summary against the targets" names a section (its last cell) that exists — a
heading of the page equal to the name or starting with it — and every figure the row's
"measured" cell quotes (a number with a unit or a ×: ``4.0 s``, ``137 MB``, ``30.7×``,
``41,117 q/s``; each end of a range ``1.79–1.91 s``) appears in that section's text (the
heading down to the next heading of the same or a higher level, subsections included): a
number with the same unit after it (``4.03 / 4.03 s`` and ``| 4.03 s |`` both state 4.03 s)
that equals the quoted figure at the precision quoted (``4.0 s`` quotes 4.03 s; ``4.1 s``
does not). A figure measured once and quoted twice can then only change in both places.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "performance.md"

UNIT = r"(?:queries/s|q/s|ms|µs|min|GiB|MiB|KiB|GB|MB|KB|kB|s|%|×|x)(?![\w/])"
NUM = r"\d[\d,]*(?:\.\d+)?"
# in the summary: a number, or a range of two, right before a unit
QUOTED = re.compile(rf"(?<![\w.]){NUM}(?:\s*[–-]\s*{NUM})?\s*{UNIT}")
# in a section: a number and the first unit after it, with only numbers, spaces, "/", "–",
# "→", "(", ")" between (``4.03 / 4.03 s``, ``1.8–2.0 s``, ``1.67 → 1.12 GB``); and a factor
# written before its number (``×1.90``)
STATED = re.compile(rf"(?<![\w.])({NUM})((?:[ /–→()-]|{NUM})*?)\s?({UNIT})")
FACTOR = re.compile(rf"×\s?({NUM})")
HEADING = re.compile(r"^(#{2,6})\s+(.*?)\s*$")


def _unit(u: str) -> str:
    return {"x": "×", "queries/s": "q/s"}.get(u, u)


def _value(num: str) -> tuple[float, int]:
    """The number and its decimals (``1,234.50`` -> (1234.5, 2))."""
    num = num.replace(",", "")
    return float(num), len(num.partition(".")[2])


def figures(cell: str) -> list[tuple[float, int, str]]:
    """The figures a summary cell quotes: (value, decimals, unit), each end of a range apart."""
    out = []
    for m in QUOTED.finditer(cell):
        unit = _unit(re.search(UNIT + "$", m.group(0)).group(0))
        for num in re.findall(NUM, m.group(0)):
            out.append((*_value(num), unit))
    return out


def stated(text: str) -> set[tuple[float, str]]:
    """Every (number, unit) a section states (a unit applies to the numbers just before it)."""
    out = set()
    for m in STATED.finditer(text):
        unit = _unit(m.group(3))
        for num in [m.group(1), *re.findall(NUM, m.group(2))]:
            out.add((_value(num)[0], unit))
    out.update((_value(m.group(1))[0], "×") for m in FACTOR.finditer(text))
    return out


def found(figure: tuple[float, int, str], facts: set[tuple[float, str]]) -> bool:
    """Some stated number with the unit rounds (half up, as written by hand) to the figure."""
    value, decimals, unit = figure
    step = Decimal(1).scaleb(-decimals)
    return any(
        u == unit and Decimal(repr(v)).quantize(step, ROUND_HALF_UP) == Decimal(repr(value)).quantize(step)
        for v, u in facts
    )


def _sections(lines: list[str]) -> dict[str, str]:
    """Heading text -> the section's text (down to the next heading of the same or a higher
    level). Lines inside fenced code blocks are not headings."""
    heads, fenced = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2)))
    out = {}
    for k, (i, level, title) in enumerate(heads):
        end = next((j for j, lv, _ in heads[k + 1 :] if lv <= level), len(lines))
        out[title] = "\n".join(lines[i:end])
    return out


def _summary(lines: list[str]) -> list[tuple[int, list[str]]]:
    start = next(i for i, line in enumerate(lines) if line.startswith("## Summary against the targets"))
    rows = []
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith("## "):
            break
        if line.startswith("|") and not re.match(r"^\|\s*-", line) and "target (issue)" not in line:
            rows.append((i + 1, [c.strip() for c in line.strip().strip("|").split(" | ")]))
    return rows


LINES = PAGE.read_text(encoding="utf-8").splitlines()
SECTIONS = _sections(LINES)
ROWS = _summary(LINES)


def test_figure_extraction():
    cell = (
        "0.47 s / 0.85 s; 135–564× networkx, 41,117 q/s; 1.79–1.91 s CPU; 137 MB; 2.15 GB (was 4.44 GB); 3.8x"
    )
    assert figures(cell) == [
        (0.47, 2, "s"),
        (0.85, 2, "s"),
        (135, 0, "×"),
        (564, 0, "×"),
        (41117, 0, "q/s"),
        (1.79, 2, "s"),
        (1.91, 2, "s"),
        (137, 0, "MB"),
        (2.15, 2, "GB"),
        (4.44, 2, "GB"),
        (3.8, 1, "×"),
    ]
    assert figures("10,000 queries × 1,000 docs, issue #20, 350,000 concepts, 2 shared cores") == []


def test_section_facts_and_rounding():
    facts = stated(
        "| reload | 4.03 / 4.20 s | 137 / 132 MB | 1.8–2.0 s, 30.7× pytrec_eval; 12 files, "
        "41,117 queries/s | **×1.90** | 1.67 → 1.12 GB | 0.575 s"
    )
    assert {
        (4.03, "s"),
        (4.2, "s"),
        (137, "MB"),
        (132, "MB"),
        (1.8, "s"),
        (2.0, "s"),
        (30.7, "×"),
        (41117, "q/s"),
        (1.9, "×"),
        (1.67, "GB"),
        (1.12, "GB"),
    } <= facts
    assert not any(v == 12 for v, _ in facts)
    assert found((4.0, 1, "s"), facts) and found((4.2, 1, "s"), facts)
    assert not found((4.1, 1, "s"), facts) and not found((4.03, 2, "MB"), facts)
    assert found((0.58, 2, "s"), facts) and not found((0.57, 2, "s"), facts)  # half up


def test_the_summary_has_rows_and_the_page_sections():
    assert len(ROWS) >= 10
    assert "Ontology model" in SECTIONS and "Audit" in SECTIONS


@pytest.mark.parametrize("line,cells", ROWS, ids=[f"line{n}" for n, _ in ROWS])
def test_summary_row_equals_its_section(line, cells):
    assert len(cells) == 3, f"docs/performance.md:{line}: a summary row has 3 cells, got {len(cells)}"
    target, measured, name = cells
    titles = [t for t in SECTIONS if t == name or t.startswith(name)]
    assert titles, f"docs/performance.md:{line}: no section named {name!r}"
    facts = stated("\n".join(SECTIONS[t] for t in titles))
    missing = [f"{v:.{d}f} {u}" for v, d, u in figures(measured) if not found((v, d, u), facts)]
    assert not missing, (
        f"docs/performance.md:{line}: {missing} quoted in the summary but not in section {name!r}"
    )
