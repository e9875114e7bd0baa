"""Compiled kernels of the TREC run reader and of the judgement lookup (numba, optional; imported
only when a kernel is first used): :func:`read_run_block` reads a run file's block in one fused
pass, :func:`trec_rank` puts its rows in trec_eval's order in place, :func:`judge_rows` looks up
the judgements of a ranked run. The numpy paths in :mod:`.trec` and :mod:`.measures` give the
same results (tested)."""

from __future__ import annotations

import numpy as np

_runreader = None


def _build_run_reader():
    global _runreader
    if _runreader is not None:
        return _runreader
    from numba import njit

    @njit(cache=True, nogil=True)
    def read_block(
        raw, codes, vals, r, tab, size, m, a_start, arena, ncol, q_i, d_i, v_i, exact
    ):  # pragma: no cover
        """One block of whole lines: the TREC run reader's tokenizer, float parser, query
        change detection and document interning fused into one pass (no token offset arrays).

        Fields are separated by bytes <= 32; lines with no field are skipped; a line with
        fewer than ``ncol`` fields (or another number than ``ncol`` when ``exact``: qrels) stops
        the pass (returned as ``bad_line``, ``bad_count``).
        Rows are written into ``codes`` and ``values`` (the file's columns) from row ``r`` on.
        Returns (rows so far, head rows, their query offsets, bad-float rows/lines/starts/ends,
        the table, its size, m, a_start, arena, bad_line, bad_count)."""
        n = raw.shape[0]
        heads = np.empty(256, np.int64)
        hq_s = np.empty(256, np.int64)
        hq_e = np.empty(256, np.int64)
        bf_row = np.empty(16, np.int64)
        bf_line = np.empty(16, np.int64)
        bf_s = np.empty(16, np.int64)
        bf_e = np.empty(16, np.int64)
        nbf = 0
        nh = 0
        line = 0
        pq_s = -1
        pq_e = -1
        mask = np.uint64(size - 1)
        prime = np.uint64(1099511628211)
        pow10 = np.empty(23, np.float64)
        p = 1.0
        for k in range(23):
            pow10[k] = p
            p *= 10.0
        limit = 9007199254740992  # 2^53
        i = 0
        while i < n:
            # one line: the fields' offsets of interest, the field count
            cnt = 0
            q_s = q_e = d_s = d_e = v_s = v_e = 0
            while i < n and raw[i] != 10:
                c = raw[i]
                if c > 32:
                    s = i
                    while i < n and raw[i] > 32:
                        i += 1
                    if cnt == q_i:
                        q_s, q_e = s, i
                    if cnt == d_i:
                        d_s, d_e = s, i
                    if cnt == v_i:
                        v_s, v_e = s, i
                    cnt += 1
                else:
                    i += 1
            i += 1  # past the newline
            if cnt == 0:
                line += 1
                continue
            if cnt < ncol or (exact and cnt > ncol):
                return (
                    r,
                    heads[:nh],
                    hq_s[:nh],
                    hq_e[:nh],
                    bf_row[:nbf],
                    bf_line[:nbf],
                    bf_s[:nbf],
                    bf_e[:nbf],
                    tab,
                    size,
                    m,
                    a_start,
                    arena,
                    line,
                    cnt,
                )
            # query change
            new_q = pq_s < 0 or (q_e - q_s) != (pq_e - pq_s)
            if not new_q:
                for t in range(q_e - q_s):
                    if raw[q_s + t] != raw[pq_s + t]:
                        new_q = True
                        break
            if new_q:
                if nh == heads.shape[0]:
                    heads = np.concatenate((heads, np.empty(nh, np.int64)))
                    hq_s = np.concatenate((hq_s, np.empty(nh, np.int64)))
                    hq_e = np.concatenate((hq_e, np.empty(nh, np.int64)))
                heads[nh] = r
                hq_s[nh] = q_s
                hq_e[nh] = q_e
                nh += 1
            pq_s, pq_e = q_s, q_e
            # the value: [+-]digits[.digits] exactly (Clinger's fast path), else left to numpy
            j = v_s
            neg = False
            if j < v_e and (raw[j] == 45 or raw[j] == 43):
                neg = raw[j] == 45
                j += 1
            mm = 0
            kk = 0
            nd = 0
            dot = False
            good = j < v_e
            while j < v_e:
                c = raw[j]
                if 48 <= c <= 57:
                    mm = mm * 10 + (c - 48)
                    nd += 1
                    if dot:
                        kk += 1
                    if mm >= limit:
                        good = False
                        break
                elif c == 46 and not dot:
                    dot = True
                else:
                    good = False
                    break
                j += 1
            if not good or nd == 0 or kk > 22:
                if nbf == bf_row.shape[0]:
                    bf_row = np.concatenate((bf_row, np.empty(nbf, np.int64)))
                    bf_line = np.concatenate((bf_line, np.empty(nbf, np.int64)))
                    bf_s = np.concatenate((bf_s, np.empty(nbf, np.int64)))
                    bf_e = np.concatenate((bf_e, np.empty(nbf, np.int64)))
                bf_row[nbf] = r
                bf_line[nbf] = line
                bf_s[nbf] = v_s
                bf_e[nbf] = v_e
                nbf += 1
                vals[r] = 0.0
            else:
                v = mm / pow10[kk]
                vals[r] = -v if neg else v
            # the document in the table. Slots are two words: (code + 1) | (length, at most
            # 255) << 40, and the key: for an id of at most 8 bytes the bytes themselves (placed
            # by a 64-bit mix of them, matched without reading the arena: ids hold no byte <= 32,
            # so bytes and length decide), for a longer one its FNV-1a hash (placed by it, the
            # arena's bytes compared on every match)
            ln = d_e - d_s
            if ln <= 8:
                h = np.uint64(0)
                for t in range(ln):
                    h |= np.uint64(raw[d_s + t]) << np.uint64(8 * t)
                pl = h ^ (h >> np.uint64(33))
                pl *= np.uint64(0xFF51AFD7ED558CCD)
                pl ^= pl >> np.uint64(33)
                pl *= np.uint64(0xC4CEB9FE1A85EC53)
                pl ^= pl >> np.uint64(33)
            else:
                h = np.uint64(14695981039346656037)
                for t in range(d_s, d_e):
                    h = (h ^ np.uint64(raw[t])) * prime
                pl = h
            lw = np.uint64(min(ln, 255)) << np.uint64(40)
            if 2 * (m + 1) > size:  # the table at twice the size (no call: numba's cache)
                new = np.zeros(4 * size, np.uint64)
                mask = np.uint64(2 * size - 1)
                for sl in range(size):
                    c1 = tab[2 * sl]
                    if c1 != 0:
                        hh = tab[2 * sl + 1]
                        if (c1 >> np.uint64(40)) <= np.uint64(8):
                            t = hh ^ (hh >> np.uint64(33))
                            t *= np.uint64(0xFF51AFD7ED558CCD)
                            t ^= t >> np.uint64(33)
                            t *= np.uint64(0xC4CEB9FE1A85EC53)
                            t ^= t >> np.uint64(33)
                            t &= mask
                        else:
                            t = hh & mask
                        while new[2 * t] != 0:
                            t = (t + np.uint64(1)) & mask
                        new[2 * t] = c1
                        new[2 * t + 1] = hh
                tab = new
                size *= 2
            slot = pl & mask
            while True:
                c1 = tab[2 * slot]
                if c1 == 0:
                    if m + 1 >= a_start.shape[0]:
                        a_start = np.concatenate((a_start, np.empty(a_start.shape[0], np.int64)))
                    base = a_start[m]
                    if base + ln + 1 > arena.shape[0]:
                        arena = np.concatenate((arena, np.empty(max(arena.shape[0], ln + 1), np.uint8)))
                    for t in range(ln):
                        arena[base + t] = raw[d_s + t]
                    arena[base + ln] = 10
                    a_start[m + 1] = base + ln + 1
                    tab[2 * slot] = np.uint64(m + 1) | lw
                    tab[2 * slot + 1] = h
                    codes[r] = m
                    m += 1
                    break
                if tab[2 * slot + 1] == h and (c1 >> np.uint64(40)) == (lw >> np.uint64(40)):
                    c = np.int64(c1 & np.uint64(0xFFFFFFFFFF)) - 1
                    if ln <= 8:
                        codes[r] = c
                        break
                    base = a_start[c]
                    if a_start[c + 1] - base == ln + 1:
                        same = True
                        for t in range(ln):
                            if raw[d_s + t] != arena[base + t]:
                                same = False
                                break
                        if same:
                            codes[r] = c
                            break
                slot = (slot + np.uint64(1)) & mask
            r += 1
            line += 1
        return (
            r,
            heads[:nh],
            hq_s[:nh],
            hq_e[:nh],
            bf_row[:nbf],
            bf_line[:nbf],
            bf_s[:nbf],
            bf_e[:nbf],
            tab,
            size,
            m,
            a_start,
            arena,
            -1,
            0,
        )

    @njit(cache=True, nogil=True)
    def trec_rank(ptr, scores, docs, a_start, arena):  # pragma: no cover - jitted
        """trec_eval's order within every CSR row (score descending, then document id
        descending), in place: whether any row moved. Rows already strictly decreasing are
        left as they are; the others are merge-sorted with that comparison (buffers of one
        row, so no permutation of the whole run is built)."""
        width = 0
        for q in range(ptr.shape[0] - 1):
            width = max(width, ptr[q + 1] - ptr[q])
        src = np.empty(width, np.int64)
        dst = np.empty(width, np.int64)
        d_buf = np.empty(width, np.int64)
        s_buf = np.empty(width, np.float64)
        moved = False
        for q in range(ptr.shape[0] - 1):
            a, b = ptr[q], ptr[q + 1]
            ok = True
            for j in range(a + 1, b):
                if not scores[j] < scores[j - 1]:
                    ok = False
                    break
            if ok:
                continue
            moved = True
            n = b - a
            for j in range(n):
                src[j] = a + j
            w = 1
            while w < n:  # bottom-up merge sort of the row's indices (stable)
                lo = 0
                while lo < n:
                    mid = min(lo + w, n)
                    hi = min(lo + 2 * w, n)
                    x, y, o = lo, mid, lo
                    while x < mid and y < hi:
                        # src[y] before src[x]: a higher score, or the larger id (bytes, strcmp)
                        i, j = src[y], src[x]
                        if scores[i] != scores[j]:
                            first = scores[i] > scores[j]
                        else:
                            da, db = docs[i], docs[j]
                            sa, la = a_start[da], a_start[da + 1] - a_start[da] - 1
                            sb, lb = a_start[db], a_start[db + 1] - a_start[db] - 1
                            first = la > lb
                            for t in range(min(la, lb)):
                                if arena[sa + t] != arena[sb + t]:
                                    first = arena[sa + t] > arena[sb + t]
                                    break
                        if first:
                            dst[o] = src[y]
                            y += 1
                        else:
                            dst[o] = src[x]
                            x += 1
                        o += 1
                    while x < mid:
                        dst[o] = src[x]
                        x += 1
                        o += 1
                    while y < hi:
                        dst[o] = src[y]
                        y += 1
                        o += 1
                    lo = hi
                src, dst = dst, src
                w *= 2
            for j in range(n):
                d_buf[j] = docs[src[j]]
                s_buf[j] = scores[src[j]]
            for j in range(n):
                docs[a + j] = d_buf[j]
                scores[a + j] = s_buf[j]
        return moved

    _runreader = (read_block, trec_rank)
    return _runreader


def read_run_block(raw, nlines, state, ncol=6, q_i=0, d_i=2, v_i=4, exact=False):
    """:func:`_build_run_reader`'s fused block reader (a run: ``ncol=6``, at least six fields;
    qrels: ``ncol=4, v_i=3, exact=True``); ``state`` (:func:`new_run_state`: the file's code and
    value columns, and ``state["table"]``, the document table shared by the blocks of one file
    and by the files read into one vocabulary) is updated in place. Returns (head rows, their
    query offsets, bad-float rows, lines, starts and ends, bad line, its field count); the
    columns are ``state["codes"][:state["rows"]]`` and ``state["vals"][...]``."""
    r0 = state["rows"]
    if len(state["codes"]) < r0 + nlines:  # grow (np.empty: pages are touched only as rows land)
        cap = max(r0 + nlines, 2 * len(state["codes"]), state.get("expect", 0))
        for k in ("codes", "vals"):
            old = state[k]
            state[k] = np.empty(cap, dtype=old.dtype)
            state[k][:r0] = old[:r0]
    t = state["table"]
    out = _build_run_reader()[0](
        raw,
        state["codes"],
        state["vals"],
        r0,
        t["tab"],
        t["size"],
        t["m"],
        t["a_start"],
        t["arena"],
        ncol,
        q_i,
        d_i,
        v_i,
        exact,
    )
    (r, heads, hq_s, hq_e, bf_row, bf_line, bf_s, bf_e, tab, size, m, a_start, arena, bad, cnt) = out
    state["rows"] = r
    t.update(tab=tab, size=size, m=m, a_start=a_start, arena=arena)
    return heads, hq_s, hq_e, bf_row, bf_line, bf_s, bf_e, bad, cnt


def new_table() -> dict:
    """An empty document table (see :func:`read_run_block`)."""
    size = 1 << 12
    return {
        "tab": np.zeros(2 * size, np.uint64),
        "size": size,
        "m": 0,
        "a_start": np.zeros(1 << 12, np.int64),
        "arena": np.empty(1 << 16, np.uint8),
    }


def new_run_state(expect_rows: int = 0, table: dict | None = None) -> dict:
    """Empty columns and the document ``table`` (a new one by default); ``expect_rows``: a
    generous guess of the file's rows (its size over the first block's bytes per line),
    reserved but not touched."""
    return {
        "codes": np.empty(0, np.int64),
        "vals": np.empty(0, np.float64),
        "rows": 0,
        "expect": expect_rows,
        "table": table if table is not None else new_table(),
    }


def trec_rank(ptr, scores, docs, a_start, arena) -> bool:
    """Sorts a run read by :func:`read_run_block` into trec_eval's order in place (``docs``
    int64 and ``scores`` float64, owned by the caller; ids compared as bytes in the reader's
    arena); whether any row moved."""
    return bool(_build_run_reader()[1](ptr.astype(np.int64, copy=False), scores, docs, a_start, arena))


_judge = None


def judge_rows(src, run_ptr, ptr, run_docs, remap, qptr, qdocs, qgrades):
    """For :func:`~kg_rageval.families.retrieval.measures.rank`: the grade of every ranked
    document and whether the query's qrels list it (any grade), by binary search in each
    query's ascending judged codes; qrels query ``i`` takes the first ``ptr[i+1] - ptr[i]``
    documents of run row ``src[i]`` (``remap``: run codes -> qrels codes, -1 unknown; empty:
    the codes are the qrels'). One compiled pass, no per-entry temporaries."""
    global _judge
    if _judge is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def kernel(
            src, run_ptr, ptr, run_docs, remap, use_map, qptr, qdocs, qgrades, grade, inq
        ):  # pragma: no cover
            for i in range(src.shape[0]):
                r = src[i]
                if r < 0:
                    continue
                a, b = qptr[i], qptr[i + 1]
                base = run_ptr[r]
                for j in range(ptr[i], ptr[i + 1]):
                    d = run_docs[base + j - ptr[i]]
                    if use_map:
                        d = remap[d]
                    if d < 0 or a == b:
                        continue
                    lo = a
                    hi = b
                    while lo < hi:
                        mid = (lo + hi) >> 1
                        if qdocs[mid] < d:
                            lo = mid + 1
                        else:
                            hi = mid
                    if lo < b and qdocs[lo] == d:
                        inq[j] = True
                        grade[j] = qgrades[lo]

        _judge = kernel
    total = int(ptr[-1])
    grade = np.zeros(total)
    inq = np.zeros(total, dtype=bool)
    use_map = remap is not None
    _judge(
        src.astype(np.int64, copy=False),
        run_ptr.astype(np.int64, copy=False),
        ptr.astype(np.int64, copy=False),
        run_docs.astype(np.int64, copy=False),
        remap.astype(np.int64, copy=False) if use_map else np.zeros(0, np.int64),
        use_map,
        qptr.astype(np.int64, copy=False),
        qdocs.astype(np.int64, copy=False),
        qgrades.astype(np.float64, copy=False),
        grade,
        inq,
    )
    return grade, inq
