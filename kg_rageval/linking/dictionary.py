"""Dictionary linker: exact lookup of normalised label and synonym token sequences.

**Normalisation** (:func:`tokenize`): text is split into maximal runs of letters and digits
(``[^\\W_]+``: punctuation, hyphens, underscores and spaces separate tokens), each token is
case-folded and stripped of diacritics (NFKD, combining marks dropped). So ``"LSASS-Memory"``,
``"lsass memory"`` and ``"LSASS Memory."`` all normalise to ``("lsass", "memory")``. Offsets
of every token in the original text are kept, so a match maps back to a character span.

**Surface forms** are every node's label and synonyms (``include_ids=True`` adds the ids,
e.g. ``T1003.001``). Forms that normalise to no token are skipped.

**Ambiguous surface forms** (one normalised form, several nodes) are resolved in order:

1. nodes whose *label* has the form beat nodes that only have it as a synonym;
2. active nodes beat deprecated ones, which beat revoked ones. With ``follow_replacements``
   (default) a deprecated or revoked node that names a replacement (``replaced_by``, followed
   up to 10 steps) stands for that replacement: its forms link to the current node;
3. if several nodes remain, ``ambiguous="abstain"`` (default) predicts NIL for the mention
   (a detected mention with no link, ``candidates`` listing the tie), ``"first"`` takes the
   lowest node index (topological order: ancestors first), ``"lca"`` takes their deepest
   common ancestor (:meth:`Ontology.lca`, over-generalising rather than guessing).

**Detection** (:meth:`DictionaryLinker.find`): every token sequence of the text that is a
surface form is found — by an Aho–Corasick automaton over the space-joined normalised tokens
(``backend="automaton"``, the default when ``pyahocorasick`` is installed; each form is a key
enclosed in a separator character no token holds, so only whole-token matches are reported), or by trying
every token position against a prefix set (``backend="python"``, the reference; both find
the same matches, tested). Overlapping matches are then resolved
longest first, ties to the earlier start — the rule of :func:`spacy.util.filter_spans`, so the
spaCy backend (:class:`SpacyDictionaryLinker`) agrees exactly. Text where nothing matches
yields no mention. :meth:`DictionaryLinker.link` links one given mention text: the whole text
must be a surface form, otherwise the answer is NIL (abstention).

**Scores**: 1.0 for a label match, 0.9 for a synonym match, ``1/k`` for an ambiguous form
resolved among ``k`` nodes by ``"first"``/``"lca"``; ``0.0`` for NIL.

The core needs only the standard library and the ontology; spaCy is optional.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import accumulate
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..errors import ConfigError

_TOKEN = re.compile(r"[^\W_]+")
_SEP = "\x1f"  # joins tokens for the automaton: a control character, never part of a token


def _fold(tok: str) -> str:
    t = tok.casefold()
    if t.isascii():
        return t
    return "".join(c for c in unicodedata.normalize("NFKD", t) if not unicodedata.combining(c))


def tokenize(text: str) -> tuple[list[str], list[int], list[int]]:
    """Normalised tokens with their character ``starts`` and (exclusive) ``ends``."""
    toks, starts, ends = [], [], []
    for m in _TOKEN.finditer(text):
        toks.append(_fold(m.group()))
        starts.append(m.start())
        ends.append(m.end())
    return toks, starts, ends


def normalize(text: str) -> tuple[str, ...]:
    """The normalised token tuple of ``text`` (see the module docstring)."""
    return tuple(_fold(t) for t in _TOKEN.findall(text))


@dataclass(frozen=True)
class Link:
    """A linked (or NIL) mention: character span, node id or ``None``, score, matched form."""

    start: int
    end: int
    id: str | None
    score: float
    form: str = ""
    candidates: tuple[str, ...] = field(default=())

    def to_mention(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "id": self.id, "score": round(self.score, 6)}


_STATUS_RANK = {0: 0, 1: 1, 2: 2}


class DictionaryLinker:
    """Exact normalised-form linker over an ontology's labels and synonyms (module docstring).

    Parameters
    ----------
    ontology : Ontology
    ambiguous : "abstain" | "first" | "lca"
        What to do when a form still names several nodes after the label/status preferences.
    include_ids : bool
        Also use node ids as surface forms.
    min_chars : int
        Skip surface forms shorter than this many characters once normalised (guards against
        one-letter synonyms matching everywhere).
    exclude : iterable of str
        Node ids left out of the dictionary (held-out concepts in an evaluation).
    follow_replacements : bool
        Map the forms of a deprecated/revoked node with a replacement to the replacement.
    backend : "auto" | "automaton" | "python"
        How :meth:`find` detects forms (module docstring): ``"auto"`` uses the Aho–Corasick
        automaton when ``pyahocorasick`` is importable, else the pure-Python scan; the links are
        identical either way.
    """

    name = "dictionary"

    def __init__(
        self,
        ontology,
        *,
        ambiguous: str = "abstain",
        include_ids: bool = False,
        min_chars: int = 2,
        exclude: Iterable[str] = (),
        follow_replacements: bool = True,
        backend: str = "auto",
    ):
        if backend not in ("auto", "automaton", "python"):
            raise ConfigError(f"backend must be 'auto', 'automaton' or 'python', not {backend!r}")
        if ambiguous not in ("abstain", "first", "lca"):
            raise ConfigError(f"ambiguous must be 'abstain', 'first' or 'lca', not {ambiguous!r}")
        self.ontology = ontology
        self.ambiguous = ambiguous
        skip = set(exclude)
        # form -> list of (kind rank, status rank, node index)
        raw: dict[tuple[str, ...], list[tuple[int, int, int]]] = {}
        ids, labels, syns, status = ontology.ids, ontology.labels, ontology.synonyms, ontology.status
        vroot = 0 if ontology.virtual_root else -1
        for i in range(len(ids)):
            if i == vroot or ids[i] in skip:
                continue
            target = self._replacement(i, skip) if follow_replacements else i
            st = _STATUS_RANK.get(int(status[target]), 2)
            names = []
            if labels[i]:
                names.append((0, labels[i]))
            names.extend((1, s) for s in syns[i])
            if include_ids:
                names.append((0, ids[i]))
            for kind, text in names:
                form = normalize(text)
                if not form or sum(map(len, form)) < min_chars:
                    continue
                raw.setdefault(form, []).append((kind, st, target))
        self._forms: dict[tuple[str, ...], tuple[int, float, tuple[int, ...]]] = {}
        for form, cands in raw.items():
            self._forms[form] = self._resolve(cands)
        self._prefixes: set[tuple[str, ...]] = set()
        self.max_len = 0
        for form in self._forms:
            self.max_len = max(self.max_len, len(form))
            for k in range(1, len(form)):
                self._prefixes.add(form[:k])
        self._made: dict[tuple[str, ...], tuple[str | None, float, tuple[str, ...]]] = {}
        self._automaton = self._build_automaton(backend)
        self.backend = "automaton" if self._automaton is not None else "python"

    def _build_automaton(self, backend: str):
        """An Aho–Corasick automaton whose keys are the form's tokens joined and enclosed by
        ``_SEP`` (a control character no token can hold, even after NFKD), and whose
        values are the form's number of tokens; ``None`` for the pure-Python backend."""
        if backend == "python":
            return None
        try:
            import ahocorasick
        except ImportError:
            if backend == "automaton":
                raise ImportError("backend='automaton' needs pyahocorasick: pip install pyahocorasick") from None
            return None
        automaton = ahocorasick.Automaton()
        for form in self._forms:
            automaton.add_word(_SEP + _SEP.join(form) + _SEP, len(form))
        if len(automaton) == 0:
            return None
        automaton.make_automaton()
        return automaton

    def _replacement(self, i: int, skip: set[str]) -> int:
        """``i``, or the end of its ``replaced_by`` chain when ``i`` is not active (stops at
        an active node, after 10 steps, on a cycle, or at an excluded node)."""
        onto = self.ontology
        seen = {i}
        j = i
        for _ in range(10):
            if int(onto.status[j]) == 0:
                break
            r = int(onto.replaced_by[j])
            if r < 0 or r in seen or onto.ids[r] in skip:
                break
            seen.add(r)
            j = r
        return j

    def _resolve(self, cands: list[tuple[int, int, int]]) -> tuple[int, float, tuple[int, ...]]:
        """(chosen node index or -1 for NIL, score, tied node indices)."""
        best = min((k, s) for k, s, _ in cands)
        tied = tuple(sorted({i for k, s, i in cands if (k, s) == best}))
        base = 1.0 if best[0] == 0 else 0.9
        if len(tied) == 1:
            return tied[0], base, tied
        if self.ambiguous == "abstain":
            return -1, 0.0, tied
        if self.ambiguous == "first":
            return tied[0], base / len(tied), tied
        onto = self.ontology
        lca = tied[0]
        for j in tied[1:]:
            lca = onto.lca_index(lca, j)
        if onto.virtual_root and lca == 0:
            return -1, 0.0, tied
        return lca, base / len(tied), tied

    def __len__(self) -> int:
        return len(self._forms)

    # ------------------------------------------------------------------ lookup
    def lookup(self, form: Sequence[str]) -> tuple[int, float, tuple[int, ...]] | None:
        """The resolution of a normalised form, or ``None`` when it is not a surface form."""
        return self._forms.get(tuple(form))

    def candidates(self, text: str) -> list[str]:
        """Node ids that have ``text`` as a surface form (all tied nodes of an ambiguous form)."""
        hit = self._forms.get(normalize(text))
        return [self.ontology.ids[i] for i in hit[2]] if hit else []

    def link(self, text: str, *, start: int = 0) -> Link:
        """Link one mention text as a whole; NIL with score 0 when it is not a surface form."""
        hit = self._forms.get(normalize(text))
        end = start + len(text)
        if hit is None:
            return Link(start, end, None, 0.0, text)
        return self._make(start, end, hit, text)

    def _make(self, s: int, e: int, hit, form: str) -> Link:
        node, score, tied = hit
        ids = self.ontology.ids
        return Link(s, e, ids[node] if node >= 0 else None, score, form,
                    tuple(ids[i] for i in tied))

    def _resolved(self, key: tuple[str, ...]) -> tuple[str | None, float, tuple[str, ...]]:
        """``(id or None, score, candidate ids)`` of a surface form, memoised per form."""
        got = self._made.get(key)
        if got is None:
            node, score, tied = self._forms[key]
            ids = self.ontology.ids
            got = self._made[key] = (ids[node] if node >= 0 else None, score, tuple(ids[i] for i in tied))
        return got

    def _all_matches(self, toks: list[str]) -> list[tuple[int, int]]:
        """Every (first token, last token + 1) whose tokens form a surface form."""
        forms, prefixes, maxlen = self._forms, self._prefixes, self.max_len
        out = []
        n = len(toks)
        for a in range(n):
            for b in range(a + 1, min(n, a + maxlen) + 1):
                key = tuple(toks[a:b])
                if key in forms:
                    out.append((a, b))
                if key not in prefixes:
                    break
        return out

    def _automaton_matches(self, toks: list[str]) -> list[tuple[int, int]]:
        """:meth:`_all_matches` through the automaton: the tokens joined and enclosed by
        ``_SEP`` are scanned once; a key ending at the separator after token ``i`` spans ``n``
        tokens ending at ``i``. No token holds ``_SEP``, so keys match whole tokens only."""
        if not toks:
            return []
        joined = _SEP + _SEP.join(toks) + _SEP
        # position of the separator that follows token i -> i
        token_at = dict(zip(accumulate(map(len, toks), lambda acc, n: acc + n + 1, initial=0), range(-1, len(toks))))
        return [(token_at[end] - n + 1, token_at[end] + 1) for end, n in self._automaton.iter(joined)]

    def find(self, text: str) -> list[Link]:
        """Detect and link every surface form in ``text`` (longest first, then earliest)."""
        toks, starts, ends = tokenize(text)
        matches = self._automaton_matches(toks) if self._automaton is not None else self._all_matches(toks)
        spans = filter_spans(matches)
        out = []
        for a, b in spans:
            s, e = starts[a], ends[b - 1]
            node, score, cands = self._resolved(tuple(toks[a:b]))
            out.append(Link(s, e, node, score, text[s:e], cands))
        return out

    def predict(self, text: str) -> list[dict[str, Any]]:
        """:meth:`find` as predicted mentions in the record format."""
        return [lk.to_mention() for lk in self.find(text)]


def filter_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Non-overlapping token spans, longest first, ties to the earlier start, returned in
    text order (the rule of ``spacy.util.filter_spans``)."""
    ordered = sorted(spans, key=lambda s: (s[1] - s[0], -s[0]), reverse=True)
    taken: set[int] = set()
    out = []
    for a, b in ordered:
        if a in taken or (b - 1) in taken:
            continue
        out.append((a, b))
        taken.update(range(a, b))
    out.sort()
    return out


class SpacyDictionaryLinker(DictionaryLinker):
    """The same dictionary matched with spaCy: a blank pipeline's ``PhraseMatcher`` over
    ``Doc`` objects built from the normalised tokens, resolved with
    ``spacy.util.filter_spans``. Needs the ``nlp`` extra (``pip install 'kg-rageval[nlp]'``).
    """

    name = "dictionary-spacy"

    def __init__(self, ontology, **kw: Any):
        try:
            import spacy
            from spacy.matcher import PhraseMatcher
            from spacy.tokens import Doc
        except ImportError as exc:
            raise ImportError(
                "the spaCy dictionary backend needs spaCy: pip install 'kg-rageval[nlp]'"
            ) from exc
        super().__init__(ontology, **kw)
        self._nlp = spacy.blank("xx")
        self._Doc = Doc
        self._matcher = PhraseMatcher(self._nlp.vocab)
        patterns = [Doc(self._nlp.vocab, words=list(f)) for f in self._forms]
        self._matcher.add("FORM", patterns)
        self._filter = spacy.util.filter_spans

    def find(self, text: str) -> list[Link]:
        toks, starts, ends = tokenize(text)
        if not toks:
            return []
        doc = self._Doc(self._nlp.vocab, words=toks)
        spans = self._filter(self._matcher(doc, as_spans=True))
        forms = self._forms
        out = []
        for sp in spans:
            a, b = sp.start, sp.end
            out.append(self._make(starts[a], ends[b - 1], forms[tuple(toks[a:b])],
                                  text[starts[a]:ends[b - 1]]))
        return out
