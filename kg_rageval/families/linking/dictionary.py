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

**Detection** (:meth:`DictionaryLinker.find`, :meth:`~DictionaryLinker.find_many` for many
texts in one call): every token sequence of the text that is a surface form is found — by a
token trie (``backend="trie"``, the default; NumPy only): forms are sequences of vocabulary
ids, the trie's edges ``node * V + token`` sit in a hash table, and a batch of texts is
tokenised in one pass and walked from every token position at once, one token deeper per
step (a few texts take the same walk in plain Python); by an Aho–Corasick automaton over the
separator-joined normalised tokens (``backend="automaton"``, needs ``pyahocorasick``; each
form is a key enclosed in a separator character no token holds, so only whole-token
matches are reported); or by trying every token position against a prefix set
(``backend="python"``, the reference). All find the same matches (tested).
Overlapping matches are then resolved
longest first, ties to the earlier start — the rule of :func:`spacy.util.filter_spans`, so the
spaCy backend (:class:`SpacyDictionaryLinker`) agrees exactly. Text where nothing matches
yields no mention. :meth:`DictionaryLinker.link` links one given mention text: the whole text
must be a surface form, otherwise the answer is NIL (abstention).

**Scores**: 1.0 for a label match, 0.9 for a synonym match, ``1/k`` for an ambiguous form
resolved among ``k`` nodes by ``"first"``/``"lca"``; ``0.0`` for NIL.

The core needs only NumPy and the ontology; pyahocorasick and spaCy are optional.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from itertools import accumulate, compress, repeat
from typing import Any, NamedTuple, cast

import numpy as np

from kg_rageval.base.errors import ConfigError

_TOKEN = re.compile(r"[^\W_]+")
_NON_TOKEN = re.compile(r"[\W_]")  # one character that is not a token character
_SEP = "\x1f"  # joins tokens for the automaton: a control character, never part of a token


def _fold(tok: str) -> str:
    t = tok.casefold()
    if t.isascii():
        return t
    return "".join(c for c in unicodedata.normalize("NFKD", t) if not unicodedata.combining(c))


class _Memo(dict):
    """``memo[key]`` computes ``fn(key)`` once (a dict with ``__missing__``, so ``map(memo.
    __getitem__, keys)`` runs at C speed for keys already seen); cleared at ``limit`` entries."""

    def __init__(self, fn, limit: int = 1 << 18):
        super().__init__()
        self.fn, self.limit = fn, limit

    def __missing__(self, key):
        if len(self) >= self.limit:
            self.clear()
        v = self[key] = self.fn(key)
        return v


_FOLDED = _Memo(_fold)  # token -> folded token, for texts that are not pure ASCII
_IS_WORD = _Memo(lambda cp: _TOKEN.fullmatch(chr(cp)) is not None)  # non-ASCII code point -> token char?
_ASCII_WORD = np.array([_TOKEN.fullmatch(chr(c)) is not None for c in range(128)], dtype=bool)
_SMALL = 8  # batches of at most this many texts take the plain-Python walk
# byte table for ASCII text: a token character -> itself lower-cased (``casefold`` equals
# ``lower`` on ASCII), any other byte -> b" " (so ``split`` cuts tokens; lengths unchanged).
# ``bytes.translate`` is one C loop over a 256-byte table, several times faster than
# ``str.lower`` + ``str.translate`` with a mapping (which looks every character up in a dict).
_ASCII_FOLD = bytes(ord(chr(c).lower()) if c < 128 and _ASCII_WORD[c] else 32 for c in range(256))


class _HashTable:
    """An open-addressing hash table of non-negative int64 keys to int64 values, looked up
    for a whole array of keys at once (NumPy): Fibonacci hashing to a power-of-two table at
    most 2/3 full, linear probing; each probing round handles every key still unresolved."""

    _MUL = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self, keys: np.ndarray, values: np.ndarray):
        bits = max(4, (len(keys) * 3 // 2).bit_length())
        size = 1 << bits
        self._shift, self._mask = np.uint64(64 - bits), size - 1
        self._keys = np.full(size, -1, dtype=np.int64)
        self._values = np.full(size, -1, dtype=np.int64)
        slot = self._slot(keys)
        pending = np.arange(len(keys))
        while pending.size:
            at = slot[pending]
            free = self._keys[at] == -1
            won_slot, first = np.unique(at[free], return_index=True)
            won = pending[free][first]  # the first key claiming each free slot takes it
            self._keys[won_slot], self._values[won_slot] = keys[won], values[won]
            placed = np.zeros(len(keys), dtype=bool)
            placed[won] = True
            pending = pending[~placed[pending]]
            slot[pending] = (slot[pending] + 1) & self._mask

    def _slot(self, keys: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return ((keys.astype(np.uint64) * self._MUL) >> self._shift).astype(np.int64)

    def get(self, keys: np.ndarray) -> np.ndarray:
        """The value of every key, ``-1`` where a key is absent."""
        out = np.full(keys.size, -1, dtype=np.int64)
        slot = self._slot(keys)
        idx = np.arange(keys.size)
        while idx.size:
            found = self._keys[slot]
            hit = found == keys[idx]
            out[idx[hit]] = self._values[slot[hit]]
            more = ~hit & (found != -1)
            idx, slot = idx[more], (slot[more] + 1) & self._mask
        return out


def _per_text(flat: list, qs: list[int], n: int) -> list[list]:
    """``flat`` (in text order, item ``i`` from text ``qs[i]``) cut into one list per text."""
    if n <= _SMALL:
        out: list[list] = [[] for _ in range(n)]
        for q, x in zip(qs, flat):
            out[q].append(x)
        return out
    bounds = np.searchsorted(np.asarray(qs, dtype=np.int64), np.arange(n + 1)).tolist()
    return [flat[a:b] for a, b in zip(bounds, bounds[1:])]


def _no_gc(n: int) -> AbstractContextManager[None]:
    """The cyclic garbage collector paused (:func:`~kg_rageval.records.collector_paused`)
    while ``n`` (> 10,000) acyclic result objects are made: each collection would walk every
    live object (the ontology and the dictionary included), and none of these objects can
    form a cycle."""
    from kg_rageval.records import collector_paused

    return collector_paused() if n > 10_000 else nullcontext()


def _token_table(big: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Folded tokens of ``big`` with their character ``starts`` and ``ends`` (int64 arrays):
    the same as :func:`tokenize`, computed with C-level string methods and NumPy. Token
    characters are classified once per code point (``[^\\W_]`` is a per-character class), so
    token boundaries come from one boolean array; ASCII text is folded by one byte-table
    ``translate`` (``_ASCII_FOLD``), other text token by token through a memo."""
    if big.isascii():
        toks = big.encode("ascii").translate(_ASCII_FOLD).decode("ascii").split()
        word = _ASCII_WORD[np.frombuffer(big.encode("ascii"), dtype=np.uint8)]
    else:
        toks = list(map(_FOLDED.__getitem__, _TOKEN.findall(big)))
        cp = np.frombuffer(big.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        low = cp < 128
        word = np.zeros(cp.size, dtype=bool)
        word[low] = _ASCII_WORD[cp[low]]
        high = ~low
        if high.any():
            uniq, inv = np.unique(cp[high], return_inverse=True)
            word[high] = np.fromiter(map(_IS_WORD.__getitem__, uniq.tolist()), dtype=bool, count=uniq.size)[
                inv
            ]
    edge = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    if len(toks) != starts.size:  # pragma: no cover - the two tokenisations are one definition
        raise AssertionError("token table out of step with the token pattern")
    return toks, starts, ends


_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)  # mask of k low bytes
_CODE_BYTES = 16  # ASCII tokens of at most this many bytes are looked up by their byte code
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def _ascii_codes(
    fold: bytes,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, ends, lengths, hash, w0, w1)`` of the tokens of ``fold``, ASCII text already
    folded by ``_ASCII_FOLD`` (token bytes lower-cased, every other byte a space), with no
    Python string made per token. ``w0`` / ``w1`` are a token's first and next 8 bytes as
    little-endian integers, zero past its end (no token byte is zero, so for a token of at
    most ``_CODE_BYTES`` bytes the pair *is* the token); ``hash`` mixes them with the length
    into a non-negative int64 (a key of :class:`_HashTable`). Every token's 8-byte words are
    read at once through a view of the buffer with a stride of one byte."""
    n = len(fold)
    buf = np.frombuffer(fold + b" " * (2 * 8 + 1), dtype=np.uint8)
    word = buf != 32
    edge = np.flatnonzero(word[1:] != word[:-1]) + 1  # alternately a start and an end
    if n and word[0]:
        edge = np.concatenate(([0], edge))
    starts, ends = edge[0::2], edge[1::2]
    ln = ends - starts
    words = np.ndarray((n + 9,), dtype="<u8", buffer=buf, strides=(1,))
    w0 = words[starts] & _LOW_BYTES[np.minimum(ln, 8)]
    w1 = words[starts + 8] & _LOW_BYTES[np.clip(ln - 8, 0, 8)]
    with np.errstate(over="ignore"):
        h = ((w0 * _MIX[0]) ^ (w1 * _MIX[1]) ^ ln.astype(np.uint64)) >> np.uint64(1)
    return starts, ends, ln, h.view(np.int64), w0, w1


class _ByteVocab:
    """The vocabulary ids of ASCII tokens looked up by their bytes (:func:`_ascii_codes`), for
    a whole folded batch at once: a :class:`_HashTable` from a token's hash to its row,
    each hit checked against the row's bytes and length (so a hash shared with another
    token is no match). Holds the vocabulary's ASCII tokens of at most ``_CODE_BYTES``
    bytes; a longer text token is looked up in the vocabulary dict by its string. ``None``
    from :meth:`build` where two vocabulary tokens share a hash (then the string path is
    used for every batch)."""

    def __init__(self, table: _HashTable, w0: np.ndarray, w1: np.ndarray, ln: np.ndarray, vid: np.ndarray):
        self.table, self.w0, self.w1, self.ln, self.vid = table, w0, w1, ln, vid

    @classmethod
    def build(cls, vocab: dict[str, int]) -> _ByteVocab | None:
        short = [t for t in vocab if t.isascii() and len(t) <= _CODE_BYTES]
        fold = "\n".join(short).encode("ascii").translate(_ASCII_FOLD)
        starts, _, ln, h, w0, w1 = _ascii_codes(fold)
        if starts.size != len(short):  # pragma: no cover - vocabulary tokens are folded tokens
            raise AssertionError("a vocabulary token is not one ASCII token")
        if np.unique(h).size != h.size:
            return None
        vid = np.fromiter(map(vocab.__getitem__, short), dtype=np.int64, count=len(short))
        return cls(_HashTable(h, np.arange(h.size, dtype=np.int64)), w0, w1, ln, vid)

    def ids(self, fold: bytes, vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(starts, ends, ids)`` of the tokens of ``fold`` (folded ASCII), ``ids`` their
        vocabulary ids, ``-1`` for a token in no form."""
        starts, ends, ln, h, w0, w1 = _ascii_codes(fold)
        row = self.table.get(h)
        at = np.flatnonzero(row >= 0)
        r = row[at]
        same = (self.w0[r] == w0[at]) & (self.w1[r] == w1[at]) & (self.ln[r] == ln[at])
        ids = np.full(h.size, -1, dtype=np.int64)
        ids[at[same]] = self.vid[r[same]]
        long = np.flatnonzero(ln > _CODE_BYTES)
        if long.size:
            text = fold.decode("ascii")
            ids[long] = [vocab.get(text[a:b], -1) for a, b in zip(starts[long].tolist(), ends[long].tolist())]
        return starts, ends, ids


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


def _untracker() -> Callable[[object], None] | None:
    """CPython's ``PyObject_GC_UnTrack`` (a stable C-API function, through ``ctypes``), or
    ``None`` where there is none (another interpreter, no ``ctypes``). Looked up once.

    :meth:`DictionaryLinker.find` hands every :class:`Link` it makes to it (about 0.2 µs
    each). A ``Link`` is a named tuple, and CPython untracks a plain tuple of untracked items
    at its first collection but never a tuple subclass, so each ``Link`` a caller keeps
    would be walked again by every collection of its generation, its referents (id string,
    form, candidates tuple) read cold each time: with the results kept, that cost one
    ``find`` per query on 350,000 realistic labels about a quarter of its time. A ``Link``
    the linker makes holds only ints, a float, strings, ``None`` and a tuple of strings: it
    can never be part of a reference cycle (the condition under which CPython itself
    untracks tuples and dicts), so untracking it loses nothing the collector could reclaim;
    it is freed by reference counting as before. ``find_many`` makes its ``Link`` objects
    with the collector paused instead and leaves them tracked."""
    global _UNTRACK
    if _UNTRACK is False:
        try:
            import ctypes

            fn = ctypes.pythonapi.PyObject_GC_UnTrack
            fn.argtypes, fn.restype = (ctypes.py_object,), None
            _UNTRACK = fn
        except (ImportError, AttributeError, OSError):  # pragma: no cover - not CPython
            _UNTRACK = None
    return _UNTRACK


_UNTRACK: Any = False  # not looked up yet


class Link(NamedTuple):
    """A linked (or NIL) mention: character span, node id or ``None``, score, matched form,
    tied candidate ids. Immutable and hashable (a named tuple: cheap to make in bulk)."""

    start: int
    end: int
    id: str | None
    score: float
    form: str = ""
    candidates: tuple[str, ...] = ()

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
    backend : "auto" | "trie" | "automaton" | "python"
        How :meth:`find` detects forms (module docstring): ``"auto"`` is ``"trie"`` (NumPy,
        batched); ``"automaton"`` needs ``pyahocorasick``; ``"python"`` is the reference scan.
        The links are identical whichever is used.
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
        if backend not in ("auto", "trie", "automaton", "python"):
            raise ConfigError(f"backend must be 'auto', 'trie', 'automaton' or 'python', not {backend!r}")
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
        self.max_len = max(map(len, self._forms), default=0)
        self._made: dict[tuple[str, ...], tuple[str | None, float, tuple[str, ...]]] = {}
        self._automaton = self._build_automaton(backend) if backend == "automaton" else None
        self.backend = "trie" if backend == "auto" else backend
        self._prefixes: set[tuple[str, ...]] = set()
        if self.backend == "python":
            for form in self._forms:
                for k in range(1, len(form)):
                    self._prefixes.add(form[:k])
        self._build_trie()
        self._untrack = _untracker()  # every Link made is handed to it (see _untracker)

    def _build_trie(self) -> None:
        """The token trie of the ``trie`` backend. Every token of a surface form gets an id
        (``_vocab``, ``V`` ids); trie node ``0`` is the root; the edge from node ``u`` on
        token ``t`` has the key ``u * V + t``. For batches the edges sit in ``_table`` (a
        :class:`_HashTable`), ``_first[t]`` is the node after a first token ``t`` and
        ``_term[u]`` the index of the form (in ``_keys_of``) that ends at node ``u``, ``-1``
        if none. For one text (:meth:`_walk`) the same edges sit in a dict, ``_step[key] =
        (v * V << S) | (f + 1 << 1) | k`` (child ``v``, so ``code >> S`` plus the next
        token's id is the key of the next edge; ``f`` the form ending at ``v`` or ``-1``;
        ``k`` = 1 when ``v`` has children; ``S`` = ``_shift``: one look-up gives all three,
        unpacked by a shift and two masks), with ``_first_step[token]`` for the root's edges.

        Every large container here is a dict of ints, a tuple of untracked tuples or a NumPy
        array: none is traversed by the cyclic garbage collector, whose full collections a
        caller's retained :class:`Link` objects trigger (a list of 10⁶ items made each
        collection cost ~0.3 s in a ``find`` loop)."""
        self._keys_of = tuple(self._forms)
        self._resolution_lists()
        vocab: dict[str, int] = {}
        for form in self._keys_of:
            for tok in form:
                if tok not in vocab:
                    vocab[tok] = len(vocab)
        nv = max(len(vocab), 1)
        edge: dict[int, int] = {}
        term = [-1]
        for f, form in enumerate(self._keys_of):
            u = 0
            for tok in form:
                key = u * nv + vocab[tok]
                v = edge.get(key)
                if v is None:
                    v = edge[key] = len(term)
                    term.append(-1)
                u = v
            term[u] = f
        keys = np.fromiter(edge, dtype=np.int64, count=len(edge))
        child = np.fromiter(edge.values(), dtype=np.int64, count=len(edge))
        self._vocab, self._nv = vocab, nv
        shift = self._shift = (len(self._keys_of) + 1).bit_length() + 1
        self._form_bits = (1 << shift) - 2  # code & _form_bits == (f + 1) << 1
        inner = set((keys[keys >= nv] // nv).tolist())  # nodes with children
        self._step = {k: (v * nv << shift) | ((term[v] + 1) << 1) | (v in inner) for k, v in edge.items()}
        self._first_step = {tok: self._step[t] for tok, t in vocab.items() if t in edge}
        self._first = np.full(nv, -1, dtype=np.int64)
        root = keys < nv
        self._first[keys[root]] = child[root]
        self._table = _HashTable(keys, child)
        self._bytes = _ByteVocab.build(vocab)  # ASCII batches: vocabulary ids from token bytes
        self._term = np.asarray(term, dtype=np.int64)
        # form index -> _resolution(f), filled as forms are found: a plain dict (not a
        # _Memo, a dict subclass, which the garbage collector would traverse at every full
        # collection however long it grows), so it is untracked once its tuples are
        self._res: dict[int, tuple[str | None, float, tuple[str, ...], float]] = {}
        # the same resolutions keyed by the trie code objects themselves (:meth:`_walk`'s
        # matches carry them): a look-up finds its key by identity, never comparing ints
        self._res_code: dict[int, tuple[str | None, float, tuple[str, ...], float]] = {}

    def _resolution_lists(self) -> None:
        """Every form's resolution by form index (``_keys_of`` order), for the batches:
        ``_form_id[f]`` (node id or ``None``), ``_score_code[f]`` (an index into ``_scores``
        and ``_rounded``: the score, and rounded to 6 places as :meth:`Link.to_mention`; the
        few distinct values are one float object each, so a batch gathers small ints) and
        ``_form_tied[f]`` (the tied candidate ids) for the forms whose candidates are not
        just ``(id,)``."""
        ids = self.ontology.ids
        rs = list(self._forms.values())
        code: dict[float, int] = {}
        self._form_id = [ids[node] if node >= 0 else None for node, _, _ in rs]
        self._form_score = [code.setdefault(score, len(code)) for _, score, _ in rs]
        self._score_code = np.asarray(self._form_score, dtype=np.int64)  # form -> score code
        self._scores = list(code)  # score code -> score
        self._rounded = [round(x, 6) for x in code]  # score code -> score rounded
        self._form_tied = {
            f: tuple(ids[i] for i in tied)
            for f, (node, _, tied) in enumerate(rs)
            if len(tied) != 1 or tied[0] != node
        }

    def _resolution(self, f: int) -> tuple[str | None, float, tuple[str, ...], float]:
        """``(id or None, score, candidate ids, score rounded to 6 places)`` of form ``f``,
        remembered in ``_res``."""
        i, c = self._form_id[f], self._form_score[f]
        got = self._res[f] = (i, self._scores[c], self._form_tied.get(f) or (i,), self._rounded[c])
        return got

    def _batch_fields(self, fs: list[int]) -> tuple[list[str | None], Iterable[float], Iterable[float]]:
        """``(ids, scores, rounded scores)`` of the forms ``fs`` of a batch's matches: the
        scores gathered as codes (NumPy) and mapped through the short value lists."""
        codes = self._score_code[np.asarray(fs, dtype=np.int64)].tolist()
        return (
            list(map(self._form_id.__getitem__, fs)),
            map(self._scores.__getitem__, codes),
            map(self._rounded.__getitem__, codes),
        )

    def _code_resolution(self, code: int) -> tuple[str | None, float, tuple[str, ...], float]:
        """:meth:`_resolution` of the form a trie code ends, remembered in ``_res_code``."""
        f = ((code & self._form_bits) >> 1) - 1
        got = self._res_code[code] = self._res.get(f) or self._resolution(f)
        return got

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
                raise ImportError(
                    "backend='automaton' needs pyahocorasick: pip install pyahocorasick"
                ) from None
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
        return Link(s, e, ids[node] if node >= 0 else None, score, form, tuple(ids[i] for i in tied))

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
        if not toks or self._automaton is None:
            return []
        joined = _SEP + _SEP.join(toks) + _SEP
        # position of the separator that follows token i -> i
        token_at = dict(
            zip(accumulate(map(len, toks), lambda acc, n: acc + n + 1, initial=0), range(-1, len(toks)))
        )
        return [(token_at[end] - n + 1, token_at[end] + 1) for end, n in self._automaton.iter(joined)]

    def _trie_spans(self, texts: Sequence[str]):
        """The kept spans of every text at once (the ``trie`` backend).

        The texts are joined by ``"\\n"`` (never a token character) and tokenised in one pass
        (:func:`_token_table`); tokens become vocabulary ids (``-1``: in no form). The trie is
        walked from every token position at once, one token deeper per step, NumPy over all
        live positions (a step looks the edges up with ``searchsorted``); a walk stops at an
        unknown token, at the end of its text or when no form continues. Overlaps are then
        resolved per length, longest first (:func:`_greedy_same_length`). Returns, in text
        order, ``(text index, char start, char end, form index)`` as lists."""
        offsets = list(accumulate((len(t) + 1 for t in texts), initial=0))
        big = "\n".join(texts)
        empty: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
        if not self._keys_of:
            return empty
        if self._bytes is not None and big.isascii():
            starts, ends, ids = self._bytes.ids(big.encode("ascii").translate(_ASCII_FOLD), self._vocab)
        else:
            toks, starts, ends = _token_table(big)
            ids = np.fromiter(map(self._vocab.get, toks, repeat(-1)), dtype=np.int64, count=len(toks))
        n = ids.size
        if n == 0:
            return empty
        offs = np.asarray(offsets, dtype=np.int64)
        # token j continues the text of token j - 1 and is in the vocabulary: not the first
        # token of a text (the first at or after each text's offset)
        cont = np.zeros(n + 1, dtype=bool)
        cont[:n] = ids >= 0
        cont[np.searchsorted(starts, offs[:-1])] = False
        term, nv = self._term, self._nv
        pos = np.flatnonzero(ids >= 0)
        state = self._first[ids[pos]]
        live = state >= 0
        pos, state = pos[live], state[live]
        found: list[tuple[int, np.ndarray, np.ndarray]] = []
        length = 1
        while pos.size:
            f = term[state]
            hit = f >= 0
            if hit.any():
                found.append((length, pos[hit], f[hit]))
            if length == self.max_len:
                break
            nxt = pos + length
            live = cont[nxt]
            pos, state, nxt = pos[live], state[live], nxt[live]
            state = self._table.get(state * nv + ids[nxt])
            live = state >= 0
            pos, state = pos[live], state[live]
            length += 1
        if not found:
            return empty
        taken = np.zeros(n, dtype=bool)
        kept_a, kept_l, kept_f = [], [], []
        for length, a, f in reversed(found):  # longest first
            free = ~(taken[a] | taken[a + length - 1])
            a, f = a[free], f[free]
            if a.size == 0:
                continue
            keep = _greedy_same_length(a, length)
            a, f = a[keep], f[keep]
            for d in range(length):
                taken[a + d] = True
            kept_a.append(a)
            kept_l.append(np.full(a.size, length, dtype=np.int64))
            kept_f.append(f)
        a = np.concatenate(kept_a)
        order = np.argsort(a, kind="stable")
        a, ln, f = a[order], np.concatenate(kept_l)[order], np.concatenate(kept_f)[order]
        q = np.searchsorted(offs, starts[a], side="right") - 1
        base = offs[q]
        return q.tolist(), (starts[a] - base).tolist(), (ends[a + ln - 1] - base).tolist(), f.tolist()

    def _walk(self, text: str) -> tuple[list[tuple[int, int, int]], list[int]]:
        """The kept spans of one text: :meth:`_trie_spans`'s walk and overlap rule in plain
        Python (no NumPy call overhead). Returns ``(kept, cl)``: ``kept`` holds ``(x, y,
        code)`` in text order, where span characters run from ``cl[x] + x`` to
        ``cl[y] + y - 1`` (``cl`` is empty when nothing matched) and ``code`` is the trie
        code object of the node the form ends at (``_step``'s value: its form is
        ``((code & _form_bits) >> 1) - 1``; :meth:`_code_resolution` resolves it).

        Pieces: every separator character becomes one space (ASCII text: one byte-table
        ``translate`` that also lower-cases; other text: one regular-expression
        substitution, tokens then folded through a memo), trailing spaces are dropped and the
        rest cut at each space, so piece ``x`` starts at ``cl[x] + x`` (``cl``: the running
        sum of piece lengths) and ends one character before piece ``x + 1``; the non-empty
        pieces are the tokens (those of :func:`tokenize`). Without runs of separators (the
        usual case) piece and token indices coincide; otherwise kept token spans are mapped
        to piece indices at the end. Offsets are taken only when something matched. The walk
        itself is :meth:`_walk_matches`, or every match of it + :func:`filter_spans`
        when longer matches overlap."""
        if text.isascii():
            low = text.encode("ascii").translate(_ASCII_FOLD).decode("ascii").rstrip(" ")
            parts = low.split(" ")
            toks = list(filter(None, parts)) if "  " in low or low.startswith(" ") else parts
        else:
            parts = _NON_TOKEN.sub(" ", text).rstrip(" ").split(" ")
            toks = list(map(_FOLDED.__getitem__, filter(None, parts)))
        # None where no form starts (compress skips those: codes are > 0)
        firsts: list[int] = list(map(self._first_step.get, toks))  # type: ignore[arg-type]
        pieces = toks is parts  # token and piece indices coincide
        toks.append("")  # sentinel: in no form, so every walk stops at the end (no piece: cl ignores it)
        kept = self._walk_matches(toks, firsts)
        if kept is None:  # longer matches overlap: the general rule over every match
            every = cast("list[tuple[int, int, int]]", self._walk_matches(toks, firsts, every=True))
            hits = {(a, b): code for a, b, code in every}
            kept = [(a, b, hits[a, b]) for a, b in filter_spans(hits)]
        if not kept:
            return kept, []
        if not pieces:  # token index -> piece index
            at = list(compress(range(len(parts)), parts))
            kept = [(at[a], at[b - 1] + 1, f) for a, b, f in kept]
        return kept, list(accumulate(map(len, parts), initial=0))

    def _walk_matches(
        self, toks: list[str], firsts: list[int], every: bool = False
    ) -> list[tuple[int, int, int]] | None:
        """The kept ``(first token, last token + 1, code)`` in text order when no two
        matches of two or more tokens overlap (the usual case), else ``None``; with
        ``every``, every match (in walk order, nothing dropped).

        A walk starts at each token that begins a form (``firsts[a]``, the code of its
        ``_first_step``) and follows ``_step`` while the next token continues a form
        (``toks`` ends with a sentinel in no form). Walks go in text order, so with
        disjoint longer matches the overlap rule reduces to: every longer match is kept
        (none is longer than another that overlaps it), and a one-token match is kept
        where no longer match covers its token — one reaching past it (``reach``) is
        already known when its walk ends. A longer match that starts before ``reach`` is an
        overlap: ``None``."""
        vocab, step, shift, fb = self._vocab, self._step, self._shift, self._form_bits
        kept: list[tuple[int, int, int]] = []
        reach = 0  # end of the last longer match
        for a, one in compress(enumerate(firsts), firsts):
            code = one
            b = a + 1
            while code & 1:  # the node has children
                t = vocab.get(toks[b])
                if t is None:
                    break
                code = step.get((code >> shift) + t)  # type: ignore[assignment]  # None: checked next
                if code is None:
                    break
                b += 1
                if code & fb:
                    if a < reach and not every:
                        return None
                    kept.append((a, b, code))
                    reach = b
            if one & fb and (a >= reach or every):
                kept.append((a, a + 1, one))
        return kept

    def _small_spans(self, texts: Sequence[str]):
        """:meth:`_trie_spans` for a few texts, one :meth:`_walk` each."""
        qs: list[int] = []
        ss: list[int] = []
        es: list[int] = []
        fs: list[int] = []
        for q, text in enumerate(texts):
            kept, cl = self._walk(text)
            for a, b, code in kept:
                qs.append(q)
                ss.append(cl[a] + a)
                es.append(cl[b] + b - 1)
                fs.append(((code & self._form_bits) >> 1) - 1)
        return qs, ss, es, fs

    def _spans(self, texts: Sequence[str]):
        return self._trie_spans(texts) if len(texts) > _SMALL else self._small_spans(texts)

    def find_many(self, texts: Iterable[str]) -> list[list[Link]]:
        """:meth:`find` of every text, as one batched call (the same links as one
        :meth:`find` per text; faster, since the ``trie`` backend scans all texts at once)."""
        texts = list(texts)
        if self.backend != "trie":
            return [self._find_one(t) for t in texts]
        qs, ss, es, fs = self._spans(texts)
        with _no_gc(len(qs)):
            ids, scores, _ = self._batch_fields(fs)
            forms = map(str.__getitem__, map(texts.__getitem__, qs), map(slice, ss, es))
            tied = self._form_tied
            if tied and not tied.keys().isdisjoint(fs):
                cands: Iterable[tuple[str | None, ...]] = [tied.get(f) or (i,) for f, i in zip(fs, ids)]
            else:  # every form names one node: its candidates are (id,), one fresh 1-tuple each
                cands = zip(ids)
            # each Link made from zip's tuple at C level (tuple.__new__ copies it)
            fields = zip(ss, es, ids, scores, forms, cands)
            flat = list(map(tuple.__new__, repeat(Link), fields))
            return _per_text(flat, qs, len(texts))

    def predict_many(self, texts: Iterable[str]) -> list[list[dict[str, Any]]]:
        """:meth:`predict` of every text in one batched call (mention dicts without
        :class:`Link` objects in between)."""
        texts = list(texts)
        if self.backend != "trie":
            return [self.predict(t) for t in texts]
        qs, ss, es, fs = self._spans(texts)
        with _no_gc(len(qs)):
            ids, _, rounded = self._batch_fields(fs)
            flat = [{"start": s, "end": e, "id": i, "score": r} for s, e, i, r in zip(ss, es, ids, rounded)]
            return _per_text(flat, qs, len(texts))

    def find(self, text: str) -> list[Link]:
        """Detect and link every surface form in ``text`` (longest first, then earliest)."""
        if self.backend != "trie":
            return self._find_one(text)
        kept, cl = self._walk(text)
        res, resolve, new = self._res_code, self._code_resolution, tuple.__new__
        links = [
            new(
                Link,
                (
                    (s := cl[a] + a),
                    (e := cl[b] + b - 1),
                    (r := res.get(f) or resolve(f))[0],
                    r[1],
                    text[s:e],
                    r[2],
                ),
            )
            for a, b, f in kept
        ]
        if self._untrack:
            any(map(self._untrack, links))  # each call returns None: any() runs them all
        return links

    def _find_one(self, text: str) -> list[Link]:
        """:meth:`find` through the ``automaton`` or ``python`` backend."""
        toks, starts, ends = tokenize(text)
        matches = self._automaton_matches(toks) if self.backend == "automaton" else self._all_matches(toks)
        spans = filter_spans(matches)
        out = []
        for a, b in spans:
            s, e = starts[a], ends[b - 1]
            node, score, cands = self._resolved(tuple(toks[a:b]))
            out.append(Link(s, e, node, score, text[s:e], cands))
        return out

    def predict(self, text: str) -> list[dict[str, Any]]:
        """:meth:`find` as predicted mentions in the record format (``Link.to_mention``)."""
        if self.backend != "trie":
            return [lk.to_mention() for lk in self._find_one(text)]
        kept, cl = self._walk(text)
        res, resolve = self._res_code, self._code_resolution
        return [
            {
                "start": cl[a] + a,
                "end": cl[b] + b - 1,
                "id": (r := res.get(f) or resolve(f))[0],
                "score": r[3],
            }
            for a, b, f in kept
        ]


def _greedy_same_length(a: np.ndarray, length: int) -> np.ndarray:
    """Which of the sorted starts ``a`` of spans of one ``length`` a left-to-right greedy
    pass keeps (a span is kept unless it overlaps a kept span on its left). Vectorised in
    rounds: a span that does not overlap its live left neighbour is kept (nothing earlier
    can overlap it); spans overlapping the kept span on their left are dropped; the rest
    go to the next round."""
    keep = np.zeros(a.size, dtype=bool)
    idx = np.arange(a.size)
    while idx.size:
        s = a[idx]
        head = np.ones(idx.size, dtype=bool)
        head[1:] = s[1:] - s[:-1] >= length
        keep[idx[head]] = True
        if head.all():
            break
        last = np.maximum.accumulate(np.where(head, np.arange(idx.size), 0))
        rest = ~head & (s >= s[last] + length)
        idx = idx[rest]
    return keep


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

    def find_many(self, texts: Iterable[str]) -> list[list[Link]]:
        return [self.find(t) for t in texts]

    def predict_many(self, texts: Iterable[str]) -> list[list[dict[str, Any]]]:
        return [self.predict(t) for t in texts]

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
            out.append(
                self._make(starts[a], ends[b - 1], forms[tuple(toks[a:b])], text[starts[a] : ends[b - 1]])
            )
        return out
