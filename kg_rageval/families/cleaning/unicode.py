"""Unicode health of a cleaned text, standard library only (:mod:`unicodedata`).

* **NFC = NFKC**: whether ``unicodedata.normalize("NFC", t) == unicodedata.normalize("NFKC",
  t)``. A text that differs holds compatibility characters (ligatures, full-width forms,
  superscripts, non-breaking spaces...) that a search index or a tokenizer folds differently.
* **Invisible code points**: the code points of general category ``Cf`` (format:
  ``unicodedata.category(c) == "Cf"``) united with the Unicode ``Default_Ignorable_Code_Point``
  property, embedded here as :data:`DEFAULT_IGNORABLE` (``DerivedCoreProperties.txt``,
  unchanged from Unicode 14 to 16: soft hyphen, combining grapheme joiner, zero-width space /
  joiners, bidi controls, word joiner, variation selectors, BOM, Hangul fillers, tag
  characters...). Each occurrence counts.
* **Mixed-script confusable tokens**, counted separately: a *token* is a maximal run of word
  characters (``re`` ``\\w+``); it is *mixed-script* when its letters (category ``L*``) come
  from two or more of the scripts whose letters are homoglyphs of one another — Latin,
  Cyrillic and Greek (UTS #39's classic confusables: Latin ``a`` vs Cyrillic ``а``). A
  letter's script is read from its Unicode name (a ``LATIN`` / ``CYRILLIC`` / ``GREEK`` word
  among the first two, so ``FULLWIDTH LATIN ...`` is Latin); letters of other scripts are
  left out, so Japanese mixing kanji and kana is not counted.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # SOFT HYPHEN
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x115F, 0x1160),  # HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ..KHMER VOWEL INHERENT AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    (0x200B, 0x200F),  # ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
    (0x2060, 0x206F),  # WORD JOINER..NOMINAL DIGIT SHAPES (2065 reserved)
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTOR-1..16
    (0xFEFF, 0xFEFF),  # ZERO WIDTH NO-BREAK SPACE (BOM)
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # reserved
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT LETTER OVERLAP..STEP UP
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM..END PHRASE
    (0xE0000, 0xE0FFF),  # tags, VARIATION SELECTOR-17..256, reserved
)
"""Unicode ``Default_Ignorable_Code_Point`` as inclusive code point ranges."""

CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")
_TOKEN = re.compile(r"\w+")


def is_default_ignorable(cp: int) -> bool:
    return any(a <= cp <= b for a, b in DEFAULT_IGNORABLE)


@lru_cache(maxsize=4096)
def is_invisible(ch: str) -> bool:
    """``Cf`` or ``Default_Ignorable_Code_Point`` (the module docstring's set)."""
    return unicodedata.category(ch) == "Cf" or is_default_ignorable(ord(ch))


@lru_cache(maxsize=8192)
def letter_script(ch: str) -> str | None:
    """``LATIN``, ``CYRILLIC`` or ``GREEK`` for a letter of that script, else ``None``."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    words = unicodedata.name(ch, "").split()[:2]
    for w in words:
        if w in CONFUSABLE_SCRIPTS:
            return w
    return None


def is_mixed_script(token: str) -> bool:
    scripts = {s for s in map(letter_script, token) if s is not None}
    return len(scripts) >= 2


@dataclass(frozen=True)
class UnicodeHealth:
    chars: int
    nfc_equals_nfkc: bool
    invisible: int
    tokens: int
    mixed_script_tokens: int


def unicode_health(text: str) -> UnicodeHealth:
    """The counts of the module docstring for one text."""
    tokens = _TOKEN.findall(text)
    return UnicodeHealth(
        chars=len(text),
        nfc_equals_nfkc=unicodedata.normalize("NFC", text) == unicodedata.normalize("NFKC", text),
        invisible=sum(map(is_invisible, text)),
        tokens=len(tokens),
        mixed_script_tokens=sum(map(is_mixed_script, tokens)),
    )


__all__ = [
    "CONFUSABLE_SCRIPTS",
    "DEFAULT_IGNORABLE",
    "UnicodeHealth",
    "is_default_ignorable",
    "is_invisible",
    "is_mixed_script",
    "letter_script",
    "unicode_health",
]
