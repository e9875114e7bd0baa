"""Escaping of input-derived names (audit name, node ids and labels, slice values, reasons) in
the Markdown, HTML and JUnit reports: no input can inject a heading, a table cell, a comment,
markup or a character that makes the XML invalid.

* control characters (newlines included) become a space; bidirectional-override characters are
  shown as ``(U+202E)`` so that a name cannot display as another ("Trojan Source");
* :func:`md` escapes Markdown punctuation (``\\ ` * _ [ ] < > # | ~ !``) with a backslash;
* :func:`md_code` wraps a name in a code span whose backtick fence is longer than any run of
  backticks inside it (and escapes ``|``, which GitHub tables split on even in code);
* :func:`xml_text` additionally drops what XML 1.0 cannot hold (surrogates, U+FFFE/U+FFFF).
"""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~!{}])")
_XML_BAD = re.compile("[\ud800-\udfff\ufffe\uffff]")


def plain(x: Any) -> str:
    """One line, no control characters, bidi controls made visible."""
    s = _CONTROL.sub(" ", str(x))
    return _BIDI.sub(lambda m: f"(U+{ord(m.group()):04X})", s)


def md(x: Any) -> str:
    """Markdown text (also a table cell)."""
    return _MD_SPECIAL.sub(r"\\\1", plain(x))


def md_code(x: Any) -> str:
    """A Markdown code span holding ``x`` verbatim (one line; ``|`` escaped for tables)."""
    s = plain(x).replace("|", "\\|")
    runs = [len(r) for r in re.findall(r"`+", s)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def xml_text(x: Any, *, multiline: bool = False) -> str:
    """Text that XML 1.0 can hold (ElementTree escapes ``& < > "`` itself)."""
    s = str(x)
    if multiline:
        s = "\n".join(plain(line) for line in s.split("\n"))
    else:
        s = plain(s)
    return _XML_BAD.sub("\ufffd", s)
