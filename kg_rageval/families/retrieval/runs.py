"""Array forms of qrels and runs: the integer-id input of the retrieval kernels.

Conventions (also in ``docs/retrieval.md``):

* **Document ids** are interned into a :class:`Vocab` (string → int code). Qrels and runs that
  were built against different vocabularies are remapped when they meet.
* **Qrels** are CSR by query: ``ptr`` (n_queries + 1), ``docs`` (codes, ascending within a
  query) and ``grades`` (float relevance levels). A document is *relevant* when its grade is
  ``>= 1`` (trec_eval's default ``relevance_level``); grade 0 and negative grades are judged
  non-relevant, and negative grades give gain 0 in nDCG.
* **Runs** are CSR by query in *ranked order*: position 0 is rank 1. When a run comes with
  scores, the ranked order is trec_eval's: score descending, then document id descending (string
  comparison), whatever order the input listed. Without scores the given order is the ranking.
* **Duplicates**: k counts unique document ids, so a query whose run repeats an id is rejected
  with an :class:`~kg_rageval.base.errors.InputError` naming the query, unless ``dedupe=True``,
  which keeps the first occurrence (in the input order) and counts what it removed
  (``Run.n_duplicates_removed``, per query in ``Run.duplicates``).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from kg_rageval.base.errors import InputError


class Vocab:
    """Document id interning: ``index[id]`` gives a stable int code (first seen, first
    numbered), ``strings[code]`` the id.

    Ids added by the compiled interning (:meth:`codes` of a large input) are known to be new
    and distinct; they wait in a tail with the next codes and enter the ``index`` dict only
    when something reads it (``strings`` and ``len`` do not), so scoring a run whose millions
    of unjudged ids nothing looks up does not build their dict entries."""

    def __init__(self, strings: Iterable[str] = ()):
        self._index: dict[str, int] = {}
        self._tail: list[str] = []  # ids coded len(_index), len(_index) + 1, ...: not in _index
        self._strings: list[str] = []
        self._rank_key: np.ndarray | None = None
        self._grow(strings)

    @property
    def index(self) -> dict[str, int]:
        if self._tail:
            tail, self._tail = self._tail, []
            self._index.update(zip(tail, itertools.count(len(self._index))))
        return self._index

    @index.setter
    def index(self, value: dict[str, int]) -> None:
        self._index, self._tail = value, []

    def __len__(self) -> int:
        return len(self._index) + len(self._tail)

    @property
    def strings(self) -> list[str]:
        if len(self._strings) != len(self):
            self._strings = list(self._index) + self._tail if self._tail else list(self._index)
        return self._strings

    def _extend(self, fresh: list[str]) -> None:
        """Add ids known to be new and distinct, coded from ``len(self)`` on."""
        known = self._strings if len(self._strings) == len(self) else None
        self._tail.extend(fresh)
        if known is not None:
            self._strings = known + fresh

    def _grow(self, ids: Iterable[str]) -> None:
        idx = self.index
        new = list(itertools.filterfalse(idx.__contains__, dict.fromkeys(ids)))
        if new:
            idx.update(zip(new, itertools.count(len(idx))))

    def add(self, s: str) -> int:
        return self.index.setdefault(s, len(self.index))

    def codes(self, ids: Sequence[str] | np.ndarray) -> np.ndarray:
        """Codes of many ids, adding unseen ones in first-seen order (int64 array).

        Large inputs are factorised first (:func:`factorize`: a C-level hash table), so the
        dictionary sees each distinct id once; the codes are the same as one
        ``setdefault`` per id in input order."""
        if len(ids) >= FACTORIZE_MIN:
            if len(self) <= len(ids) and _compiled_ok(len(ids), COMPILED_INTERN_MIN):
                got = self._codes_compiled(ids)
                if got is not None:
                    return got
            f = factorize(ids)
            if f is not None:
                local, distinct = f
                return self.codes_distinct(distinct)[local]
        self._grow(ids)
        return np.fromiter(map(self.index.__getitem__, ids), dtype=np.int64, count=len(ids))

    def _codes_compiled(self, ids: Sequence[str] | np.ndarray) -> np.ndarray | None:
        """:meth:`codes` by the compiled kernel: this vocabulary's ids (in code order, so
        they keep their codes) followed by the new ones, interned in one pass; the ids first
        seen among the new ones are added in that order. ``None`` (the caller falls back)
        for ids the kernel cannot take (see :func:`_factorize_compiled`)."""
        if isinstance(ids, np.ndarray) and ids.ndim != 1:
            return None
        seq = ids.tolist() if isinstance(ids, np.ndarray) else ids
        known = self.strings
        n0 = len(known)
        got = _intern_joined(seq, known)
        if got is None:
            return None
        codes, first = got
        if n0 and not np.array_equal(first[:n0], np.arange(n0)):  # pragma: no cover - ids repeated
            return None
        fresh = list(map(seq.__getitem__, (first[n0:] - n0).tolist()))
        if not set(map(type, fresh)) <= {str}:  # a str subclass: the dictionary decides
            return None
        self._extend(fresh)
        return codes[n0:] if n0 else codes

    def codes_array(self, arr: np.ndarray) -> np.ndarray:
        """Codes of a numpy string array, adding unseen ids (first-seen order among the new).

        Vectorised for large inputs: a 64-bit FNV-style hash over the fixed-width characters,
        one ``np.unique`` over the hashes, then dictionary work only for the distinct ids. A
        hash collision (two different ids, one hash) is detected and falls back to
        :meth:`codes`."""
        n = len(arr)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        arr = np.ascontiguousarray(arr)
        if arr.dtype.kind not in "US":
            arr = arr.astype(str)
        if arr.dtype.kind == "U":
            width = arr.dtype.itemsize // 4
            chars: np.ndarray = arr.view(np.uint32).reshape(n, width)
        else:  # UTF-8 bytes
            width = arr.dtype.itemsize
            chars = arr.view(np.uint8).reshape(n, width)
        h = np.full(n, 1469598103934665603, dtype=np.uint64)
        prime = np.uint64(1099511628211)
        with np.errstate(over="ignore"):
            for j in range(width):
                h ^= chars[:, j].astype(np.uint64)
                h *= prime
        uh, first, inv = np.unique(h, return_index=True, return_inverse=True)
        # collision check: every row must equal the representative of its hash
        if not np.array_equal(arr, arr[first][inv]):
            return self.codes(_texts(arr.tolist()))
        order = np.argsort(first, kind="stable")  # distinct ids in first-seen order
        ucodes = np.empty(len(uh), dtype=np.int64)
        ucodes[order] = self.codes(_texts(arr[first[order]].tolist()))
        return ucodes[inv]

    def codes_distinct(self, ids: list[str]) -> np.ndarray:
        """:meth:`codes` for ids known to be distinct (e.g. one block's interned ids): one
        C-level lookup per id, and the unseen ones added in order without a dedupe pass."""
        idx = self.index
        n0 = len(idx)
        if n0 == 0:  # an empty vocabulary: every id is new
            idx.update(zip(ids, itertools.count()))
            return np.arange(len(ids), dtype=np.int64)
        codes = np.fromiter(map(idx.get, ids, itertools.repeat(-1)), dtype=np.int64, count=len(ids))
        new = codes < 0
        if new.any():
            fresh = list(itertools.compress(ids, new.tolist()))
            idx.update(zip(fresh, itertools.count(n0)))
            codes[new] = np.arange(n0, n0 + len(fresh), dtype=np.int64)
        return codes

    def rank_key_of(self, codes: np.ndarray) -> np.ndarray:
        """For the given codes, their positions in the string order of the ids *among
        themselves* (same order as :attr:`rank_key` restricted to them): sorts only these."""
        if self._rank_key is not None and len(self._rank_key) == len(self):
            return self._rank_key[codes]
        uniq, inv = np.unique(codes, return_inverse=True)
        if len(uniq) * 4 >= len(self):
            return self.rank_key[codes]
        s = self.strings
        order = np.argsort(np.asarray([s[c] for c in uniq.tolist()], dtype=str), kind="stable")
        key = np.empty(len(uniq), dtype=np.int64)
        key[order] = np.arange(len(uniq))
        return key[inv.reshape(-1)]

    def lookup(self, ids: Sequence[str]) -> np.ndarray:
        """Codes of many ids without adding: unknown ids get -1."""
        get = self.index.get
        return np.fromiter((get(s, -1) for s in ids), dtype=np.int64, count=len(ids))

    def remap_from(self, other: Vocab) -> np.ndarray:
        """Array mapping ``other``'s codes to this vocabulary's codes (-1 when absent).

        From a :class:`LazyVocab` with its byte arena (a run file's ids) and numba: a hash
        join — 64-bit FNV-1a hashes of both sides, one ``searchsorted``, and a string
        comparison only for the hash matches (collisions cannot map wrongly)."""
        arena = getattr(other, "arena", None)
        if arena is not None and len(other) > 4 * len(self) + 10_000:
            from kg_rageval.families.retrieval import _kernels

            if _kernels.HAVE_NUMBA:
                return self._hash_join(other, arena)
        return self.lookup(other.strings)

    def _hash_join(self, other: Vocab, arena: np.ndarray) -> np.ndarray:
        from kg_rageval.families.retrieval import _kernels

        def hashes(buf: np.ndarray) -> np.ndarray:
            nl = np.flatnonzero(buf == 10)
            s = np.concatenate(([0], nl[:-1] + 1)).astype(np.int64)
            return _kernels.row_keys(buf, s, nl.astype(np.int64), s, nl.astype(np.int64))[0]

        out = np.full(len(other), -1, dtype=np.int64)
        mine = self.strings
        if not mine or not len(other):
            return out
        own = np.frombuffer(("\n".join(mine) + "\n").encode("utf-8"), dtype=np.uint8)
        h_self, h_other = hashes(own), hashes(arena)
        order = np.argsort(h_self, kind="stable")
        hs = h_self[order]
        pos = np.minimum(np.searchsorted(hs, h_other), len(hs) - 1)
        cand = np.flatnonzero(hs[pos] == h_other)
        theirs = other.strings
        for i, j in zip(cand.tolist(), order[pos[cand]].tolist()):
            if theirs[i] == mine[j]:
                out[i] = j
            else:  # a hash collision: resolve by the dictionary
                out[i] = self.index.get(theirs[i], -1)
        return out

    @property
    def rank_key(self) -> np.ndarray:
        """Position of each code in the sorted order of the id strings (code-point order, as
        trec_eval's ``strcmp`` on UTF-8); cached until the vocabulary grows."""
        cached = self._rank_key
        if cached is not None and len(cached) == len(self):
            return cached
        order = np.argsort(np.asarray(self.strings, dtype=str), kind="stable")
        key = np.empty(len(order), dtype=np.int64)
        key[order] = np.arange(len(order))
        self._rank_key = key
        return key


class LazyVocab(Vocab):
    """A :class:`Vocab` whose ids are already distinct and numbered (ids interned by the
    compiled TREC reader): the id → code dict is built only if something needs it (``index``,
    :meth:`codes`, :meth:`lookup`), and the ids become Python strings only when ``strings`` is
    read; ``len`` and the tie-break order (bytes of the arena) work without either.

    ``table``: the compiled reader's document table (open-addressing slots, the ids' bytes each
    followed by a newline in ``arena``, their offsets ``a_start``), kept so that a later file
    continues it: a run read with ``vocab=qrels.vocab`` codes its documents in the qrels' code
    space (first seen, first numbered; the qrels' ids keep their codes) and nothing is remapped.
    The table is given up (the vocabulary then works as a plain :class:`Vocab`) as soon as the
    ``index`` dict is built, since ids added through it are not in the table. Without a table
    (``arena`` only), scoring against another vocabulary maps these codes once
    (:meth:`Vocab.remap_from`)."""

    def __init__(
        self, strings: list[str] | None = None, arena: np.ndarray | None = None, table: dict | None = None
    ):
        self._lazy_strings = strings
        self._arena = arena  # the ids as UTF-8, each followed by a newline (hash join)
        self.table = table
        self._lazy_index: dict[str, int] | None = None
        self._tail: list[str] = []
        self._strings: list[str] = strings if strings is not None else []
        self._rank_key = None

    @property
    def arena(self) -> np.ndarray | None:
        t = self.table
        if t is not None:
            return t["arena"][: int(t["a_start"][t["m"]])]
        return self._arena

    @property
    def a_start(self) -> np.ndarray | None:
        """Offsets of the ids in :attr:`arena` (``len + 1`` of them), with a table only."""
        t = self.table
        return t["a_start"][: int(t["m"]) + 1] if t is not None else None

    def _detach(self) -> None:
        """Stop growing with the table: the arena and the strings as they are now."""
        if self.table is not None:
            self._lazy_strings = self.strings
            self._arena = self.arena.copy()  # type: ignore[union-attr]
            self.table = None

    @property  # type: ignore[override]
    def index(self) -> dict[str, int]:
        if self._lazy_index is None:
            self._detach()
            self._lazy_index = dict(zip(self.strings, itertools.count()))
        return self._lazy_index

    @index.setter
    def index(self, value: dict[str, int]) -> None:
        self._detach()
        self._lazy_index = value

    def __len__(self) -> int:
        if self._lazy_index is not None:
            return len(self._lazy_index)
        if self.table is not None:
            return int(self.table["m"])
        return len(self._lazy_strings or ())

    @property
    def strings(self) -> list[str]:
        if self._lazy_index is not None:
            if len(self._strings) != len(self._lazy_index):
                self._strings = list(self._lazy_index)
            return self._strings
        have = self._lazy_strings if self._lazy_strings is not None else []
        n = len(self)
        if len(have) < n:  # decode only the ids added since (the table grew)
            a_start = self.a_start
            assert a_start is not None
            lo, hi = int(a_start[len(have)]), int(a_start[n])
            have = have + self.table["arena"][lo:hi].tobytes().decode("utf-8").split("\n")[: n - len(have)]  # type: ignore[index]
            self._lazy_strings = have
        return have

    def _extend(self, fresh: list[str]) -> None:
        self.index.update(zip(fresh, itertools.count(len(self))))


class KeyVocab(LazyVocab):
    """A :class:`Vocab` of the ids read by the numpy TREC reader, held as sort keys in code order
    (:func:`id_keys`: ids of at most 8 bytes as 64-bit integers, else as fixed-width bytes) and
    coded by :func:`code_ids` without a dict and without a Python string per id; ``strings``
    decodes them when read, and the tie-break order compares the keys (their order is the ids'
    byte order; UTF-8 byte order is code-point order, as ``strcmp``). Building the ``index``
    dict turns it into a plain vocabulary (ids added through it are not among the keys)."""

    def __init__(self, keys: np.ndarray | None = None):
        super().__init__()
        self._keys = keys if keys is not None else np.zeros(0, dtype=np.uint64)

    @property
    def keys(self) -> np.ndarray:
        """The ids' sort keys, in code order (until the ``index`` dict is built)."""
        return self._keys

    def __len__(self) -> int:
        if self._lazy_index is not None:
            return len(self._lazy_index)
        return len(self._keys)

    @property
    def strings(self) -> list[str]:
        if self._lazy_index is not None:
            return super().strings
        have = self._lazy_strings if self._lazy_strings is not None else []
        if len(have) < len(self._keys):  # decode only the ids added since
            have = have + [x.decode("utf-8") for x in key_bytes(self._keys[len(have) :]).tolist()]
            self._lazy_strings = have
        return have

    def _order(self, codes: np.ndarray | None = None) -> np.ndarray:
        return np.argsort(self._keys if codes is None else self._keys[codes], kind="stable")

    def rank_key_of(self, codes: np.ndarray) -> np.ndarray:
        if self._lazy_index is not None or (self._rank_key is not None and len(self._rank_key) == len(self)):
            return super().rank_key_of(codes)
        uniq, inv = np.unique(codes, return_inverse=True)
        key = np.empty(len(uniq), dtype=np.int64)
        key[self._order(uniq)] = np.arange(len(uniq))
        return key[inv.reshape(-1)]

    @property
    def rank_key(self) -> np.ndarray:
        if self._lazy_index is not None:
            return super().rank_key
        cached = self._rank_key
        if cached is None or len(cached) != len(self):
            cached = np.empty(len(self), dtype=np.int64)
            cached[self._order()] = np.arange(len(self))
            self._rank_key = cached
        return cached


def id_keys(ids: np.ndarray) -> np.ndarray:
    """Sort keys of fixed-width byte ids (``S<w>``) in their byte order: ids of at most 8 bytes
    as big-endian 64-bit integers (zero-padded: a prefix sorts first, as in ``strcmp``; integers
    sort several times faster than bytes), longer ones as they are. :func:`key_bytes` inverts
    it."""
    w = ids.dtype.itemsize
    if w > 8:
        return ids
    if w == 8:
        return ids.view(">u8").astype(np.uint64)
    m = np.zeros((len(ids), 8), dtype=np.uint8)
    m[:, :w] = ids.view(np.uint8).reshape(len(ids), w)
    return m.view(">u8").reshape(-1).astype(np.uint64)


def key_bytes(keys: np.ndarray) -> np.ndarray:
    """The ids (``S<w>``) of keys made by :func:`id_keys` (the zero padding is no part of a
    ``bytes`` element)."""
    if keys.dtype.kind == "S":
        return keys
    return keys.astype(">u8").view("S8")


def _joined_keys(parts: list[np.ndarray]) -> np.ndarray:
    """One key array of several (integers where every part is, else bytes of the widest)."""
    if all(p.dtype.kind == "u" for p in parts):
        return np.concatenate(parts) if len(parts) != 1 else parts[0]
    return np.concatenate([key_bytes(p) for p in parts])


def code_ids(parts: list[np.ndarray], vocab: Vocab | None = None) -> tuple[np.ndarray, Vocab]:
    """Codes of ids given as :func:`id_keys` arrays (one per block of a file, in order) in
    ``vocab``, adding the unseen ones in first-seen order: the codes :meth:`Vocab.codes` gives.
    No vocabulary or a :class:`KeyVocab`: by numpy alone (one sort of the known and the new keys
    together, no dict, no string per id); any other vocabulary: :meth:`Vocab.codes_array`.
    ``parts`` is emptied as it is read. Returns (codes, the vocabulary)."""
    if vocab is None:
        vocab = KeyVocab()
    if not isinstance(vocab, KeyVocab) or vocab._lazy_index is not None:
        ids = key_bytes(_joined_keys(parts)) if parts else np.zeros(0, dtype="S1")
        parts.clear()
        return vocab.codes_array(ids), vocab
    n0 = len(vocab.keys)
    n1 = sum(len(p) for p in parts)
    if n1 == 0:
        parts.clear()
        return np.zeros(0, dtype=np.int64), vocab
    keys = _joined_keys([vocab.keys, *parts] if n0 else list(parts))
    parts.clear()
    o = np.argsort(keys)  # equal ids in any order: the first row of each is taken below
    sk = keys[o]
    head = np.empty(n0 + n1, dtype=bool)
    head[0] = True
    np.not_equal(sk[1:], sk[:-1], out=head[1:])
    del sk
    starts = np.flatnonzero(head)
    first = np.minimum.reduceat(o, starts)  # each distinct id's first row (a known id: its code)
    del starts
    fresh = np.flatnonzero(first >= n0)
    isfirst = np.zeros(n0 + n1, dtype=bool)  # the rows where a new id is first seen
    isfirst[first[fresh]] = True
    rows = np.flatnonzero(isfirst)  # ascending: the new ids in first-seen order
    new_keys = keys[rows]
    del keys, rows
    order = np.cumsum(isfirst, dtype=np.int64)
    del isfirst
    gcode = first  # a known id keeps its code, a new one is numbered on in first-seen order
    gcode[fresh] = n0 - 1 + order[first[fresh]]
    del order, fresh
    gid = np.cumsum(head, dtype=np.int32 if len(gcode) < 2**31 else np.int64)
    gid -= 1
    del head
    full = np.empty(n0 + n1, dtype=np.int64)
    full[o] = gcode[gid]  # sorted rows -> rows
    del o, gid, gcode
    vocab._keys = _joined_keys([vocab.keys, new_keys]) if n0 else new_keys
    vocab._rank_key = None
    return full[n0:], vocab


def trec_order(
    ptr: np.ndarray,
    scores: np.ndarray,
    docs: np.ndarray | None,
    vocab: Vocab | None,
    *,
    row_ids=None,
    compiled: bool = True,
) -> np.ndarray | None:
    """Permutation sorting each CSR row by score descending, then document id descending
    (string order of ``vocab.strings[docs]``, or of ``row_ids(row)``, the ids of one row in
    input order, when no vocabulary is given; rows needing a sort are then sorted in Python).

    Rows already strictly decreasing in score keep their order (checked in one pass; the
    result is then ``None``, the identity). Rows of
    similar length are sorted as one padded 2-D array (one ``argsort`` per row); rows
    with tied scores are re-sorted with the id tie-break; very uneven rows fall back to one
    ``lexsort`` over (row, -score, -id). With numba, from :data:`COMPILED_RANK_MIN` entries
    (``compiled``), one compiled pass sorts every row by score and flags the rows holding equal
    scores, and only those take the id tie-break here: the same permutation (the order is
    total: ids are distinct within a row)."""
    n = len(ptr) - 1
    lens = np.diff(ptr)
    N = int(ptr[-1])
    if N == 0:
        return np.zeros(0, dtype=np.int64)
    width = int(lens.max())
    viol = np.flatnonzero(scores[1:] >= scores[:-1]) + 1
    if viol.size:
        boundary = np.zeros(N + 1, dtype=bool)
        boundary[ptr] = True
        viol = viol[~boundary[viol]]
    if not viol.size:  # every row already strictly decreasing: the identity
        return None
    if compiled and row_ids is None and _compiled_ok(N, COMPILED_RANK_MIN) and not np.isnan(scores).any():
        from kg_rageval.families.retrieval import _kernels

        perm, tied = _kernels.rank_rows(ptr, scores)  # rows without equal scores: final
        tied_rows = np.flatnonzero(tied)
        if tied_rows.size:  # the id tie-break for the rows with equal scores, as below
            blens = lens[tied_rows]
            bptr = _csr(blens)
            idx = np.repeat(ptr[:-1][tied_rows] - bptr[:-1], blens) + np.arange(int(bptr[-1]), dtype=np.int64)
            sub = trec_order(
                bptr, scores[idx], docs[idx] if docs is not None else None, vocab, compiled=False
            )
            perm[idx] = idx if sub is None else idx[sub]
        return perm
    row = np.repeat(np.arange(n, dtype=np.int64), lens)
    if row_ids is None and n > 64:
        bad = np.unique(row[viol])
        if len(bad) * 4 < n:  # most rows already ranked: sort only the others
            blens = lens[bad]
            bptr = np.zeros(len(bad) + 1, dtype=np.int64)
            np.cumsum(blens, out=bptr[1:])
            idx = np.repeat(ptr[:-1][bad] - bptr[:-1], blens) + np.arange(int(bptr[-1]), dtype=np.int64)
            sub = trec_order(
                bptr, scores[idx], docs[idx] if docs is not None else None, vocab, compiled=compiled
            )
            out = np.arange(N, dtype=np.int64)
            if sub is not None:
                out[idx] = idx[sub]
            return out

    def by_ids(r: int) -> np.ndarray:
        a, b = int(ptr[r]), int(ptr[r + 1])
        ids = row_ids(r)
        sc = scores[a:b].tolist()
        return np.asarray(sorted(range(b - a), key=lambda i: (sc[i], ids[i]), reverse=True), dtype=np.int64)

    if n * width > 2 * N + 4096:
        if row_ids is None:
            assert vocab is not None and docs is not None  # the string order needs them
            return np.lexsort((-vocab.rank_key[docs], -scores, row))
        out = np.arange(N, dtype=np.int64)
        for r in np.unique(row[viol]).tolist():
            out[ptr[r] : ptr[r + 1]] = ptr[r] + by_ids(r)
        return out
    square = bool((lens == width).all())
    if square:  # every row equally long: a reshape, no padding
        col = None
        grid = (-scores).reshape(n, width)
    else:
        col = np.arange(N, dtype=np.int64) - np.repeat(ptr[:-1], lens)
        grid = np.full((n, width), np.inf)
        grid[row, col] = -scores
    o = np.argsort(grid, axis=1)  # ties are re-sorted below, so stability is not needed
    srt = np.take_along_axis(grid, o, axis=1)
    tie = (srt[:, 1:] == srt[:, :-1]) & np.isfinite(srt[:, 1:])
    tied_rows = np.flatnonzero(tie.any(axis=1))
    if tied_rows.size:
        if row_ids is None:
            # string order of the ids in the tied rows only (not the whole vocabulary)
            assert vocab is not None and docs is not None  # the string order needs them
            in_tied = np.zeros(n, dtype=bool)
            in_tied[tied_rows] = True
            sel = in_tied[row]
            rk = np.full((n, width), np.iinfo(np.int64).max)
            if square:
                rk.reshape(-1)[sel] = -vocab.rank_key_of(docs[sel])
            else:
                assert col is not None  # set for rows of uneven length
                rk[row[sel], col[sel]] = -vocab.rank_key_of(docs[sel])
            o[tied_rows] = np.lexsort((rk[tied_rows], grid[tied_rows]), axis=1)
        else:
            for r in tied_rows.tolist():
                o[r, : lens[r]] = by_ids(r)
    if square:
        return (ptr[:-1, None] + o).ravel()
    valid = np.arange(width)[None, :] < lens[:, None]
    return (ptr[:-1, None] + o)[valid]


FACTORIZE_MIN = 50_000
"""From this many ids on, :meth:`Vocab.codes` factorises them (:func:`factorize`) before
touching the dictionary."""

COMPILED_RANK_MIN = 1_000_000
"""From this many run entries on (or from 50,000 once numba is imported), :func:`trec_order`
sorts the rows by the compiled kernel when numba is installed."""

COMPILED_INTERN_MIN = 1_000_000
"""From this many ids on (or from :data:`FACTORIZE_MIN` once numba is imported),
:func:`factorize` interns them with the compiled kernel when numba is installed: below, the
kernel would not repay importing numba."""


def factorize(ids: Sequence[str] | np.ndarray) -> tuple[np.ndarray, list[str]] | None:
    """``(codes, distinct)`` of a sequence of string ids: ``distinct`` in first-seen order and
    ``distinct[codes[i]] == ids[i]``.

    With numba (from :data:`COMPILED_INTERN_MIN` ids): the ids' UTF-8 joined by newlines,
    interned by :func:`~kg_rageval.families.retrieval._kernels.intern_strings` (hash-partitioned
    tables, bytes compared on every hash match: exact); UTF-8 bytes are equal exactly when the
    strings are. Otherwise (or when an id holds a newline or cannot be encoded) pandas' C string
    hash table (one pass over the UTF-8 of each id; about 7x faster than a dict ``setdefault``
    per id, but its one table of millions of ids misses the cache on every id).

    Returns ``None`` when neither is importable or an id is not a ``str``; callers then use the
    dictionary path.
    Two equal ids with different codes (which neither table produces) would only repeat
    an entry of ``distinct``, which :meth:`Vocab.codes_distinct` maps to one code."""
    n = len(ids)
    if _compiled_ok(n, COMPILED_INTERN_MIN):
        got = _factorize_compiled(ids)
        if got is not None:
            return got
    try:
        from pandas._libs import hashtable as _ht
    except ImportError:  # pragma: no cover - pandas is in the [fast] extra
        return None
    arr = (
        ids
        if isinstance(ids, np.ndarray) and ids.dtype == object
        else np.fromiter(ids, dtype=object, count=n)
    )
    if arr.ndim != 1 or n == 0:
        return None
    try:
        uniq, codes = _ht.StringHashTable(max(n // 4, 16)).factorize(arr)
    except (TypeError, ValueError):  # pragma: no cover - a pandas without this table signature
        return None
    if codes.min() < 0 or not set(map(type, uniq)) <= {str}:  # a non-string id
        return None
    probe = np.linspace(0, n - 1, min(n, 4096)).astype(np.int64)  # a cheap sanity check of the table
    if not bool((arr[probe] == uniq[codes[probe]]).all()):  # pragma: no cover - a broken pandas
        return None
    return codes.astype(np.int64, copy=False), uniq.tolist()


def _compiled_ok(n: int, minimum: int) -> bool:
    """Whether a compiled kernel pays for ``n`` items: numba installed and ``n`` at least
    ``minimum``, or at least :data:`FACTORIZE_MIN` once numba is imported anyway."""
    if n < FACTORIZE_MIN:
        return False
    from kg_rageval.families.retrieval import _kernels

    return _kernels.HAVE_NUMBA and (n >= minimum or "numba" in sys.modules)


def _factorize_compiled(ids: Sequence[str] | np.ndarray) -> tuple[np.ndarray, list[str]] | None:
    """:func:`factorize` by the compiled kernel; ``None`` for ids it cannot take (not all
    ``str``, a newline in an id, a lone surrogate)."""

    if isinstance(ids, np.ndarray) and ids.ndim != 1:
        return None
    seq = ids.tolist() if isinstance(ids, np.ndarray) else ids
    got = _intern_joined(seq)
    if got is None:
        return None
    codes, first = got
    distinct = list(map(seq.__getitem__, first.tolist()))
    if not set(map(type, distinct)) <= {str}:  # a str subclass: the dictionary decides
        return None
    return codes, distinct


def _intern_joined(seq: Sequence[str], known: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray] | None:
    """(codes, first row of each code) of the ids ``known`` followed by ``seq``, by the compiled
    kernel over their UTF-8 joined by newlines; ``None`` when an id is not a ``str``, holds a
    newline or a lone surrogate."""
    from kg_rageval.families.retrieval import _kernels

    try:
        raw = "\n".join(seq).encode("utf-8")
        if known:
            raw = "\n".join(known).encode("utf-8") + b"\n" + raw
    except (TypeError, UnicodeEncodeError):
        return None
    return _kernels.intern_strings(np.frombuffer(raw, dtype=np.uint8), len(known) + len(seq))


def _texts(items: list) -> list[str]:
    return [x.decode("utf-8") for x in items] if items and isinstance(items[0], bytes) else items


def _csr(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=ptr[1:])
    return ptr


@dataclass
class Qrels:
    """Relevance judgements per query (see the module docstring)."""

    qids: list[str]
    ptr: np.ndarray
    docs: np.ndarray
    grades: np.ndarray
    vocab: Vocab = field(default_factory=Vocab)

    def __post_init__(self) -> None:
        self.qindex = dict(zip(self.qids, range(len(self.qids))))

    def __len__(self) -> int:
        return len(self.qids)

    @classmethod
    def from_dict(
        cls, qrels: Mapping[str, Mapping[str, float] | Iterable[str]], *, vocab: Vocab | None = None
    ) -> Qrels:
        """From ``{qid: {doc: grade}}`` (or ``{qid: [doc, ...]}`` for binary judgements)."""
        vocab = vocab if vocab is not None else Vocab()
        vals = list(qrels.values())
        if set(map(type, vals)) <= {dict}:  # the common shape: one C-level pass over all judgements
            dicts = cast("list[dict[str, float]]", vals)
            lens_a = np.fromiter(map(len, dicts), dtype=np.int64, count=len(dicts))
            total = int(lens_a.sum())
            codes = vocab.codes(list(itertools.chain.from_iterable(dicts)))
            g = np.fromiter(
                itertools.chain.from_iterable(map(dict.values, dicts)), dtype=np.float64, count=total
            )
            row = np.repeat(np.arange(len(vals), dtype=np.int64), lens_a)
            span = max(len(vocab), 1)
            if len(vals) * span < 2**62:  # (row, code) pairs are distinct: one key, one sort
                order = np.argsort(row * span + codes)
            else:  # pragma: no cover - more queries x documents than an int64 key holds
                order = np.lexsort((codes, row))
            return cls(list(map(str, qrels)), _csr(lens_a), codes[order], g[order], vocab)
        qids: list[str] = []
        lens: list[int] = []
        ids: list[str] = []
        grades: list[float] = []
        for q, judged in qrels.items():
            if isinstance(judged, Mapping):
                ids.extend(judged.keys())
                grades.extend(judged.values())
                lens.append(len(judged))
            else:
                uniq = list(dict.fromkeys(judged))
                ids.extend(uniq)
                grades.extend([1.0] * len(uniq))
                lens.append(len(uniq))
            qids.append(str(q))
        codes = vocab.codes(ids)
        g = np.asarray(grades, dtype=np.float64) if grades else np.zeros(0)
        row = np.repeat(np.arange(len(qids), dtype=np.int64), lens)
        order = np.lexsort((codes, row))
        return cls(qids, _csr(lens), codes[order], g[order], vocab)

    def to_dict(self) -> dict[str, dict[str, float]]:
        s = self.vocab.strings
        out: dict[str, dict[str, float]] = {}
        for i, q in enumerate(self.qids):
            a, b = self.ptr[i], self.ptr[i + 1]
            out[q] = {s[d]: float(g) for d, g in zip(self.docs[a:b].tolist(), self.grades[a:b].tolist())}
        return out

    @property
    def n_relevant(self) -> np.ndarray:
        """Relevant documents (grade >= 1) per query."""
        rel = (self.grades >= 1).astype(np.int64)
        return (
            np.add.reduceat(rel, self.ptr[:-1]) * (np.diff(self.ptr) > 0)
            if len(rel)
            else np.zeros(len(self), np.int64)
        )


@dataclass
class Run:
    """Ranked documents per query (see the module docstring). ``scores`` is ``None`` for runs
    given as ranked lists only. ``duplicates`` holds the removed-duplicate count per query."""

    qids: list[str]
    ptr: np.ndarray
    docs: np.ndarray
    scores: np.ndarray | None = None
    vocab: Vocab = field(default_factory=Vocab)
    duplicates: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.qindex = dict(zip(self.qids, range(len(self.qids))))
        if self.duplicates is None:
            self.duplicates = np.zeros(len(self.qids), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.qids)

    @property
    def n_duplicates_removed(self) -> int:
        return int(self.duplicates.sum()) if self.duplicates is not None else 0

    def ranked(self, qid: str) -> list[str]:
        i = self.qindex[qid]
        s = self.vocab.strings
        return [s[d] for d in self.docs[self.ptr[i] : self.ptr[i + 1]].tolist()]

    @classmethod
    def from_lists(
        cls, run: Mapping[str, Sequence[str]], *, vocab: Vocab | None = None, dedupe: bool = False
    ) -> Run:
        """From ``{qid: [doc, ...]}`` in ranked order."""
        vocab = vocab if vocab is not None else Vocab()
        qids, lens, parts, dups = [], [], [], []
        for q, ranked in run.items():
            ids = ranked if isinstance(ranked, list) else list(ranked)
            if len(set(ids)) != len(ids):
                if not dedupe:
                    raise InputError(_dup_message(q, ids))
                uniq = list(dict.fromkeys(ids))
            else:
                uniq = ids
            qids.append(str(q))
            lens.append(len(uniq))
            dups.append(len(ids) - len(uniq))
            parts.append(uniq)
        codes = vocab.codes(list(itertools.chain.from_iterable(parts)))
        return cls(qids, _csr(lens), codes, None, vocab, np.asarray(dups, dtype=np.int64))

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], *, vocab: Vocab | None = None) -> Run:
        """From ``{qid: {doc: score}}`` (pytrec_eval's run shape); ranked by trec_eval's order."""
        vocab = vocab if vocab is not None else Vocab()
        qids = [str(q) for q in run]
        vals = list(run.values())
        lens = np.fromiter(map(len, vals), dtype=np.int64, count=len(vals))
        total = int(lens.sum())
        flat = list(itertools.chain.from_iterable(vals))
        values = (
            map(dict.values, cast("list[dict[str, float]]", vals))
            if set(map(type, vals)) <= {dict}
            else (d.values() for d in vals)
        )
        scores = np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64, count=total)
        return cls.from_columns(qids, _csr(lens), vocab.codes(flat), scores, vocab, check_duplicates=False)

    @classmethod
    def from_columns(
        cls,
        qids: list[str],
        ptr: np.ndarray,
        docs: np.ndarray,
        scores: np.ndarray,
        vocab: Vocab,
        *,
        dedupe: bool = False,
        check_duplicates: bool = True,
    ) -> Run:
        """Sort each query's (doc, score) rows into trec_eval's order: score descending, then
        document id descending (:func:`trec_order`). ``check_duplicates=False`` skips the
        duplicate check for inputs that cannot repeat an id (dict keys)."""
        n = len(qids)
        lens = np.diff(ptr)
        qrow = np.repeat(np.arange(n, dtype=np.int64), lens)
        dup = np.zeros(n, dtype=np.int64)
        if len(docs) and check_duplicates:
            # duplicates: same (query, doc) twice
            key = qrow * max(len(vocab), 1) + docs
            order = np.argsort(key, kind="stable")
            sk = key[order]
            same = np.flatnonzero(sk[1:] == sk[:-1]) + 1
            if same.size:
                bad_rows = order[same]
                if not dedupe:
                    q = qids[int(qrow[bad_rows[0]])]
                    d = vocab.strings[int(docs[bad_rows[0]])]
                    raise InputError(
                        f"query {q!r}: run lists document {d!r} more than once; k counts unique "
                        "document ids (pass dedupe=True to keep the first occurrence)"
                    )
                keep = np.ones(len(docs), dtype=bool)
                keep[bad_rows] = False
                dup = np.bincount(qrow[bad_rows], minlength=n).astype(np.int64)
                qrow, docs, scores = qrow[keep], docs[keep], scores[keep]
                ptr = _csr(np.bincount(qrow, minlength=n))
        if len(docs):
            perm = trec_order(ptr, scores, docs, vocab)
            if perm is not None:
                docs, scores = docs[perm], scores[perm]
        return cls(list(qids), ptr, docs, scores, vocab, dup)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {doc: score}}``; a run without scores gets scores n, n-1, ..., 1 so that
        trec_eval's ordering reproduces the ranking."""
        s = self.vocab.strings
        out: dict[str, dict[str, float]] = {}
        for i, q in enumerate(self.qids):
            a, b = int(self.ptr[i]), int(self.ptr[i + 1])
            docs = self.docs[a:b].tolist()
            sc = self.scores[a:b].tolist() if self.scores is not None else list(range(b - a, 0, -1))
            out[q] = {s[d]: float(v) for d, v in zip(docs, sc)}
        return out


def _cat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


def _dup_message(q: Any, ids: Sequence[str]) -> str:
    seen: set[str] = set()
    for d in ids:
        if d in seen:
            break
        seen.add(d)
    return (
        f"query {q!r}: run lists document {d!r} more than once; k counts unique document ids "
        "(pass dedupe=True to keep the first occurrence)"
    )
