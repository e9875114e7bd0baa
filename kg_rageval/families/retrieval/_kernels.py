"""Optional numba kernels for :func:`kg_rageval.families.retrieval.metrics.evaluate_run`.

Parallel over run queries: look up every ranked document's grade by binary search in the
query's sorted judgements, then (one accumulation loop, :func:`grades_kernel`) accumulate hits
and DCG at every cut-off, the first relevant rank, the AP sum and the R-precision hits. The numpy path in
:mod:`.metrics` computes the same numbers; tests hold them equal. numba is optional: without
it (or for small inputs, where compiling would cost more than it saves) the numpy path runs.
"""

from __future__ import annotations

import importlib.util

import numpy as np

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
"""numba is imported only when a kernel is first used (importing it costs most of a second)."""

_lookup = None


def _build_lookup():
    global _lookup
    if _lookup is not None:
        return _lookup
    from numba import njit, prange

    @njit(parallel=True, cache=True, nogil=True)
    def kernel(
        rptr, rdocs, qrow_of_run, qptr, qdocs, qgrades, out_grades, out_R
    ):  # pragma: no cover - jitted
        for i in prange(qrow_of_run.shape[0]):
            r = qrow_of_run[i]
            if r < 0:
                continue  # grades stay 0: every accumulated number of the row is 0
            a = qptr[r]
            b = qptr[r + 1]
            R = 0
            for t in range(a, b):
                if qgrades[t] >= 1.0:
                    R += 1
            out_R[i] = R
            for j in range(rptr[i], rptr[i + 1]):
                d = rdocs[j]
                if d >= 0:
                    lo = a
                    hi = b
                    while lo < hi:
                        mid = (lo + hi) >> 1
                        if qdocs[mid] < d:
                            lo = mid + 1
                        else:
                            hi = mid
                    if lo < b and qdocs[lo] == d:
                        out_grades[j] = qgrades[lo]

    _lookup = kernel
    return kernel


def run_kernel(rptr, rdocs, qrow_of_run, qptr, qdocs, qgrades, ks, binary, disc):
    """Per run query: (hits[n, nk], dcg[n, nk], rank1[n], ap_sum[n], rprec_hits[n]).

    Two compiled passes: each ranked document's grade by binary search in its query's sorted
    judgements (and each query's relevant count R), then the one accumulation loop of
    :func:`grades_kernel`."""
    rptr = rptr.astype(np.int64, copy=False)
    grades = np.zeros(len(rdocs))
    R = np.zeros(len(qrow_of_run), dtype=np.int64)
    _build_lookup()(
        rptr,
        rdocs.astype(np.int64, copy=False),
        qrow_of_run.astype(np.int64, copy=False),
        qptr.astype(np.int64, copy=False),
        qdocs.astype(np.int64, copy=False),
        qgrades.astype(np.float64, copy=False),
        grades,
        R,
    )
    return grades_kernel(rptr, grades, R, ks, binary, disc)


_tokenizer = None


def _build_tokenizer():
    global _tokenizer
    if _tokenizer is not None:
        return _tokenizer
    from numba import njit

    @njit(cache=True, nogil=True)
    def tokenize(raw, ws_mode, ncol):  # pragma: no cover - jitted
        n = raw.shape[0]
        ntok = 0
        in_tok = False
        for i in range(n):
            c = raw[i]
            body = c > 32 if ws_mode else (c != 9 and c != 10 and c != 13)
            if body and not in_tok:
                ntok += 1
            in_tok = body
        starts = np.empty(ntok, np.int64)
        ends = np.empty(ntok, np.int64)
        rows_line = np.empty(ntok // max(ncol, 1) + 1, np.int64)
        t = 0
        r = 0
        line = 0
        cnt = 0
        in_tok = False
        for i in range(n):
            c = raw[i]
            body = c > 32 if ws_mode else (c != 9 and c != 10 and c != 13)
            if body and not in_tok:
                starts[t] = i
                cnt += 1
            elif in_tok and not body:
                ends[t] = i
                t += 1
            in_tok = body
            if c == 10:
                if cnt != 0:
                    if cnt != ncol:
                        return starts, ends, rows_line[:r], line, cnt
                    rows_line[r] = line
                    r += 1
                line += 1
                cnt = 0
        if in_tok:
            ends[t] = n
            t += 1
        if cnt != 0:
            if cnt != ncol:
                return starts, ends, rows_line[:r], line, cnt
            rows_line[r] = line
            r += 1
        return starts, ends, rows_line[:r], -1, 0

    _tokenizer = tokenize
    return tokenize


def tokenize(raw: np.ndarray, ws_mode: bool, ncol: int):
    """Token (starts, ends), the line index of each row, and (bad line, its field count) or
    (-1, 0): one compiled pass over the bytes (see :func:`kg_rageval.families.retrieval.trec._tokenize`)."""
    return _build_tokenizer()(raw, ws_mode, ncol)


_rowkeys = None


def _build_rowkeys():
    global _rowkeys
    if _rowkeys is not None:
        return _rowkeys
    from numba import njit

    @njit(cache=True, nogil=True)
    def row_keys(raw, q_s, q_e, d_s, d_e):  # pragma: no cover - jitted
        n = q_s.shape[0]
        dhash = np.empty(n, np.uint64)
        qnew = np.empty(n, np.bool_)
        prime = np.uint64(1099511628211)
        for i in range(n):
            h = np.uint64(14695981039346656037)
            for j in range(d_s[i], d_e[i]):
                h = (h ^ np.uint64(raw[j])) * prime
            dhash[i] = h
            if i == 0:
                qnew[i] = True
            else:
                a, b = q_s[i], q_e[i]
                pa, pb = q_s[i - 1], q_e[i - 1]
                same = (b - a) == (pb - pa)
                if same:
                    for t in range(b - a):
                        if raw[a + t] != raw[pa + t]:
                            same = False
                            break
                qnew[i] = not same
        return dhash, qnew

    @njit(cache=True, nogil=True)
    def same_as(raw, s, e, rep):  # pragma: no cover - jitted
        for i in range(s.shape[0]):
            r = rep[i]
            if r == i:
                continue
            if e[i] - s[i] != e[r] - s[r]:
                return False
            for t in range(e[i] - s[i]):
                if raw[s[i] + t] != raw[s[r] + t]:
                    return False
        return True

    _rowkeys = (row_keys, same_as)
    return _rowkeys


def row_keys(raw, q_s, q_e, d_s, d_e):
    """Per row: a 64-bit FNV-1a hash of the document token and whether the query token differs
    from the previous row's (one compiled pass, no Python objects)."""
    return _build_rowkeys()[0](raw, q_s, q_e, d_s, d_e)


def same_as(raw, s, e, rep) -> bool:
    """Whether every token ``i`` equals token ``rep[i]`` byte for byte (hash-collision check)."""
    return bool(_build_rowkeys()[1](raw, s, e, rep))


_intern = None


def _build_intern():
    global _intern
    if _intern is not None:
        return _intern
    from numba import njit

    @njit(cache=True, nogil=True)
    def intern_rows(raw, s, e, dhash):  # pragma: no cover - jitted
        n = s.shape[0]
        size = 1 << 12  # grows with the number of distinct ids (a small table stays in cache)
        mask = np.uint64(size - 1)
        table = np.full(size, -1, np.int64)  # slot -> code
        first = np.empty(n, np.int64)  # code -> first row
        codes = np.empty(n, np.int64)
        # distinct ids are copied into a compact arena, so byte comparisons stay in cache
        total = 0
        for i in range(n):
            total += e[i] - s[i]
        arena = np.empty(total + n, np.uint8)  # distinct ids, each followed by a newline
        a_start = np.empty(n + 1, np.int64)
        a_start[0] = 0
        chash = np.empty(n, np.uint64)  # code -> hash (compact)
        m = 0
        for i in range(n):
            if 2 * (m + 1) > size:
                size <<= 1
                mask = np.uint64(size - 1)
                table = np.full(size, -1, np.int64)
                for c in range(m):
                    sl = chash[c] & mask
                    while table[sl] >= 0:
                        sl = (sl + np.uint64(1)) & mask
                    table[sl] = c
            h = dhash[i]
            ln = e[i] - s[i]
            slot = h & mask
            while True:
                c = table[slot]
                if c < 0:
                    table[slot] = m
                    first[m] = i
                    chash[m] = h
                    codes[i] = m
                    base = a_start[m]
                    for t in range(ln):
                        arena[base + t] = raw[s[i] + t]
                    arena[base + ln] = 10
                    a_start[m + 1] = base + ln + 1
                    m += 1
                    break
                if chash[c] == h and a_start[c + 1] - a_start[c] == ln + 1:
                    base = a_start[c]
                    same = True
                    for t in range(ln):
                        if raw[s[i] + t] != arena[base + t]:
                            same = False
                            break
                    if same:
                        codes[i] = c
                        break
                slot = (slot + np.uint64(1)) & mask
        return codes, first[:m], arena[: a_start[m]]

    _intern = intern_rows
    return intern_rows


def intern_rows(raw, s, e, dhash):
    """Intern byte tokens in one compiled pass with an open-addressing table keyed by their
    hash, comparing bytes on every hash match (collisions are resolved, not assumed away):
    (code per row in first-seen order, first row of each code, the distinct ids as one
    newline-separated byte array)."""
    return _build_intern()(raw, s, e, dhash)


_dups = None


def later_duplicates(qcode, docs, n_docs):
    """Rows whose (query, doc) pair appeared on an earlier row of the same query, for rows
    grouped by query (one compiled pass with a last-seen-query table)."""
    global _dups
    if _dups is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def kernel(qcode, docs, n_docs):  # pragma: no cover - jitted
            last = np.full(n_docs, -1, np.int64)
            out = np.zeros(qcode.shape[0], np.bool_)
            for i in range(qcode.shape[0]):
                d = docs[i]
                if last[d] == qcode[i]:
                    out[i] = True
                last[d] = qcode[i]
            return out

        _dups = kernel
    return _dups(qcode, docs, n_docs)


_gk = None


def grades_kernel(rptr, grades, R, ks, binary, disc):
    """Like :func:`run_kernel` for runs whose grades are already looked up (ranked order) and
    whose relevant-document counts ``R`` are given per run query."""
    global _gk
    if _gk is None:
        from numba import njit, prange

        @njit(parallel=True, cache=True, nogil=True)
        def kernel(
            rptr, grades, R, ks, binary, disc, out_hits, out_dcg, out_rank1, out_ap, out_rprec
        ):  # pragma: no cover
            nk = ks.shape[0]
            for i in prange(R.shape[0]):
                s = rptr[i]
                e = rptr[i + 1]
                r_ = R[i]
                hits = 0
                dcg = 0.0
                ap = 0.0
                rank1 = 0
                kk = 0
                rprec = -1
                for j in range(s, e):
                    pos = j - s
                    g = grades[j]
                    if g >= 1.0:
                        hits += 1
                        if rank1 == 0:
                            rank1 = pos + 1
                        ap += hits / (pos + 1.0)
                        dcg += (1.0 if binary else g) * disc[pos]
                    elif g > 0.0 and not binary:
                        dcg += g * disc[pos]
                    while kk < nk and ks[kk] == pos + 1:
                        out_hits[i, kk] = hits
                        out_dcg[i, kk] = dcg
                        kk += 1
                    if pos + 1 == r_:
                        rprec = hits
                while kk < nk:
                    out_hits[i, kk] = hits
                    out_dcg[i, kk] = dcg
                    kk += 1
                if rprec < 0:
                    rprec = hits
                out_rank1[i] = rank1
                out_ap[i] = ap
                out_rprec[i] = rprec

        _gk = kernel
    n, nk = len(R), len(ks)
    hits = np.zeros((n, nk), dtype=np.int64)
    dcg = np.zeros((n, nk))
    rank1 = np.zeros(n, dtype=np.int64)
    ap = np.zeros(n)
    rprec = np.zeros(n, dtype=np.int64)
    _gk(
        rptr.astype(np.int64, copy=False),
        grades.astype(np.float64, copy=False),
        R.astype(np.int64, copy=False),
        np.asarray(ks, dtype=np.int64),
        bool(binary),
        disc,
        hits,
        dcg,
        rank1,
        ap,
        rprec,
    )
    return hits, dcg, rank1, ap, rprec


_floats = None


def parse_floats(raw, starts, ends):
    """Decimal tokens ``[+-]digits[.digits]`` → float64 in one compiled pass, exactly as
    ``strtod``: the digits form an integer m < 2^53 and the value is m / 10^k with k <= 22,
    both exact doubles, so the one IEEE division is correctly rounded (Clinger's fast path).
    Returns (values, ok); tokens outside the fast path (exponents, long mantissas, inf/nan)
    have ok = False and are parsed by numpy."""
    global _floats
    if _floats is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def kernel(raw, starts, ends):  # pragma: no cover - jitted
            n = starts.shape[0]
            out = np.empty(n, np.float64)
            ok = np.ones(n, np.bool_)
            pow10 = np.empty(23, np.float64)
            p = 1.0
            for i in range(23):
                pow10[i] = p
                p *= 10.0
            limit = 9007199254740992  # 2^53
            for i in range(n):
                j = starts[i]
                e = ends[i]
                neg = False
                if j < e and (raw[j] == 45 or raw[j] == 43):
                    neg = raw[j] == 45
                    j += 1
                m = 0
                k = 0
                nd = 0
                dot = False
                good = j < e
                while j < e:
                    c = raw[j]
                    if 48 <= c <= 57:
                        m = m * 10 + (c - 48)
                        nd += 1
                        if dot:
                            k += 1
                        if m >= limit:
                            good = False
                            break
                    elif c == 46 and not dot:
                        dot = True
                    else:
                        good = False
                        break
                    j += 1
                if not good or nd == 0 or k > 22:
                    ok[i] = False
                    out[i] = 0.0
                    continue
                v = m / pow10[k]
                out[i] = -v if neg else v
            return out, ok

        _floats = kernel
    return _floats(raw, starts.astype(np.int64, copy=False), ends.astype(np.int64, copy=False))


_comments = None


def blank_comments(raw: np.ndarray) -> np.ndarray:
    """A copy of ``raw`` with every comment line (first non-blank byte ``#``) overwritten by
    spaces, newlines kept, in one compiled pass (the numpy path of
    :func:`~kg_rageval.families.retrieval.trec._blank_comments` gives the same bytes)."""
    global _comments
    if _comments is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def kernel(raw):  # pragma: no cover - jitted
            out = raw.copy()
            n = raw.shape[0]
            i = 0
            while i < n:
                j = i
                while j < n and raw[j] != 10 and raw[j] <= 32:
                    j += 1
                e = j
                while e < n and raw[e] != 10:
                    e += 1
                if j < e and raw[j] == 35:
                    for t in range(i, e):
                        out[t] = 32
                i = e + 1
            return out

        _comments = kernel
    return _comments(raw)


_istr = None


def _build_intern_strings():
    global _istr
    if _istr is not None:
        return _istr
    from numba import njit

    @njit(cache=True, nogil=True)
    def kernel(raw, n, bits):  # pragma: no cover - jitted
        # 1. rows (split at newlines) and a 64-bit FNV-1a hash of each, one pass
        s = np.empty(n, np.int64)
        ln = np.empty(n, np.int32)
        h = np.empty(n, np.uint64)
        prime = np.uint64(1099511628211)
        basis = np.uint64(14695981039346656037)
        r = 0
        s[0] = 0
        hv = basis
        for j in range(raw.shape[0]):
            c = raw[j]
            if c == 10:
                if r + 1 >= n:  # more rows than ids: an id holds a newline
                    return np.empty(0, np.int64), np.empty(0, np.int64), False
                ln[r] = j - s[r]
                h[r] = hv
                r += 1
                s[r] = j + 1
                hv = basis
            else:
                hv = (hv ^ np.uint64(c)) * prime
        if r + 1 != n:
            return np.empty(0, np.int64), np.empty(0, np.int64), False
        ln[r] = raw.shape[0] - s[r]
        h[r] = hv
        # 2. radix partition by the hash's top bits: rows and their bytes copied bucket by
        # bucket (stable), so each bucket's table and bytes stay in cache
        nb = 1 << bits
        shift = np.uint64(64 - bits)
        rpos = np.zeros(nb + 1, np.int64)
        bpos = np.zeros(nb + 1, np.int64)
        for i in range(n):
            b = np.int64(h[i] >> shift) if bits else 0
            rpos[b + 1] += 1
            bpos[b + 1] += ln[i]
        for b in range(nb):
            rpos[b + 1] += rpos[b]
            bpos[b + 1] += bpos[b]
        rstart = rpos.copy()
        ph = np.empty(n, np.uint64)
        prow = np.empty(n, np.int64)
        pl = np.empty(n, np.int32)
        pb = np.empty(raw.shape[0] + 1, np.uint8)
        for i in range(n):
            b = np.int64(h[i] >> shift) if bits else 0
            k = rpos[b]
            rpos[b] = k + 1
            o = bpos[b]
            L = ln[i]
            ph[k] = h[i]
            prow[k] = i
            pl[k] = L
            a = s[i]
            for t in range(L):
                pb[o + t] = raw[a + t]
            bpos[b] = o + L
        ps = s  # where each partitioned row's bytes start (the rows' starts are done with)
        o = 0
        for k in range(n):
            ps[k] = o
            o += pl[k]
        # 3. per bucket: an open-addressing table keyed by the hash's low bits, bytes compared
        # on every hash match (collisions resolved, never assumed away)
        width = 16
        for b in range(nb):
            w = rstart[b + 1] - rstart[b]
            while width < 2 * w:
                width <<= 1
        table = np.full(width, -1, np.int64)
        rep = h.view(np.int64)  # the hashes are done with: each row's representative
        first_row = np.zeros(n, np.bool_)
        for b in range(nb):
            lo, hi = rstart[b], rstart[b + 1]
            if hi == lo:
                continue
            size = 16
            while size < 2 * (hi - lo):
                size <<= 1
            mask = np.uint64(size - 1)
            for t in range(size):
                table[t] = -1
            for k in range(lo, hi):
                hk = ph[k]
                slot = np.int64(hk & mask)
                while True:
                    q = table[slot]
                    if q < 0:
                        table[slot] = k
                        rep[k] = k
                        first_row[prow[k]] = True
                        break
                    if ph[q] == hk and pl[q] == pl[k]:
                        same = True
                        oq, ok_ = ps[q], ps[k]
                        for t in range(pl[k]):
                            if pb[oq + t] != pb[ok_ + t]:
                                same = False
                                break
                        if same:
                            rep[k] = q
                            break
                    slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)
        # 4. codes in first-seen order: a representative's code is the rank of its row among
        # the first rows
        rank = np.empty(n, np.int64)
        m = 0
        for i in range(n):
            rank[i] = m
            if first_row[i]:
                m += 1
        first = np.empty(m, np.int64)
        for i in range(n):
            if first_row[i]:
                first[rank[i]] = i
        repcode = ph.view(np.int64)  # the partitioned hashes are done with
        for k in range(n):
            if rep[k] == k:
                repcode[k] = rank[prow[k]]
        codes = np.empty(n, np.int64)
        for k in range(n):
            codes[prow[k]] = repcode[rep[k]]
        return codes, first, True

    _istr = kernel
    return kernel


def intern_strings(raw: np.ndarray, n: int):
    """Intern ``n`` ids given as their UTF-8 joined by newlines (``raw``): ``(codes, first)``,
    codes in first-seen order and the first row of each code, or ``None`` when ``raw`` does
    not split into exactly ``n`` rows (an id holds a newline). One compiled pass hashes the
    rows (64-bit FNV-1a); the rows are radix-partitioned by the hash's top bits (their bytes
    copied with them) and each partition interned by a small open-addressing table that
    compares bytes on every hash match, so the tables and bytes stay in cache at millions of
    distinct ids."""
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    bits = 0  # about 32,768 rows per partition, at most 256 partitions
    while bits < 8 and (n >> bits) > 32768:
        bits += 1
    codes, first, ok = _build_intern_strings()(raw, n, bits)
    return (codes, first) if ok else None


_rrows = None


def rank_rows(ptr: np.ndarray, scores: np.ndarray):
    """Per CSR row, the permutation sorting its scores descending (``ptr[r] +`` the row's
    ``argsort`` read backwards) and whether the row holds two equal scores (whose
    order trec_eval breaks by document id: the caller re-sorts those rows). Scores must not
    be NaN."""
    global _rrows
    if _rrows is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def kernel(ptr, scores):  # pragma: no cover - jitted
            n = ptr.shape[0] - 1
            perm = np.empty(scores.shape[0], np.int64)
            tied = np.zeros(n, np.bool_)
            for r in range(n):
                a, b = ptr[r], ptr[r + 1]
                if b - a == 0:
                    continue
                row = scores[a:b]
                o = np.argsort(row)  # ascending: read backwards (rows with ties are redone)
                m = b - a
                prev = row[o[m - 1]]
                perm[a] = a + o[m - 1]
                for t in range(1, m):
                    v = row[o[m - 1 - t]]
                    if v == prev:
                        tied[r] = True
                    prev = v
                    perm[a + t] = a + o[m - 1 - t]
            return perm, tied

        _rrows = kernel
    return _rrows(ptr, scores)
