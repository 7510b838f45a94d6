"""The host applier of docs/algorithm.md §3.3, §3.6: one commit in O(n + m + b log b), never sorting
the m entries.

The old host apply keyed and sorted every entry per commit (0.5-0.9 s on roadNet-PA) and the
in-CSR was rebuilt by another argsort per version. Here a commit sorts only the ``b`` events of
the batch and moves the untouched rows by a constant shift per run of rows, so its cost is the
copy of the arrays plus work proportional to the touched rows.

The out side and the in side are edited by the same routine (:func:`_edit_side`): rows are the
sources and keys the destinations on the out side, the other way round on the in side. Both sides
walk each row's events in event order (deletions first, then insertions, batch order, which is
how :class:`engines.batch.BatchEvents` lists them), so the copies of a pair (u, v) keep the same
relative order in u's out-row and in v's in-row, and both sides remove or upsert the same
physical edges. That rule, applied from a fresh graph's canonical in-order
(:func:`canonical_in_csr`), *defines* the in-CSR order of every later version; the device
applier must reproduce it byte for byte.

Every function here is pure: inputs are read, new arrays are returned (read-only), so a failure
half-way leaves the previous state intact and a state can be shared by snapshots. The outputs may
be written into :class:`Spares`, buffers of a retired state that nothing references any more (the
graph proves that before it hands them over), so a commit does not pay first-touch page faults
on fresh memory for every entry it moves.

Cost, measured on a 2-core host with a roadNet-PA-sized graph (1.09 M vertices, 3.08 M arcs,
K = 3) and a 50k-change batch: about 30 ms for both sides (two threads; 40 ms on one), against
about 340 ms for the old sorting apply plus the old in-CSR argsort. What remains is memory
traffic: the block moves (7 ms for an empty batch) and scattered reads of the touched rows. The
kernels are written for that (unsigned indices, NumPy-allocated outputs, deferred gathers); see
the notes in each.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from ..batch import ApplySummary, BatchEvents
from ..errors import InvalidArgumentError
from ..jit import njit


@dataclass(frozen=True, eq=False)
class HostCsr:
    """One graph state as host arrays; never modified in place (states are shared by snapshots).

    ``weights`` and ``in_weights`` are ``(K, m)`` objective-major and C-contiguous
    (algorithm.md §3.1); ``in_weights[k, i]`` is column k of in-edge i.
    """

    row_ptr: np.ndarray     # int64 (n + 1)
    col_ind: np.ndarray     # int32 (m)
    weights: np.ndarray     # int32 (K, m)
    in_ptr: np.ndarray      # int64 (n + 1)
    in_src: np.ndarray      # int32 (m)
    in_weights: np.ndarray  # int32 (K, m)

    @property
    def num_vertices(self) -> int:
        return int(self.row_ptr.shape[0]) - 1

    @property
    def num_edges(self) -> int:
        return int(self.col_ind.shape[0])

    @property
    def num_weights(self) -> int:
        return int(self.weights.shape[0])


@dataclass(frozen=True)
class WeightScalars:
    """Per-column ``max_weight`` and exact ``weight_sum`` of one state (algorithm.md §3.5), as
    Python ints.

    Kept per state and carried from commit to commit so that algorithm.md §3.5's W and delta never
    need a full column scan per update (algorithm.md §3.6); only a removal or decrease of a maximum
    forces a rescan.
    """

    max_weight: tuple[int, ...]  # 0 for an empty column
    weight_sum: tuple[int, ...]


_U = numba.uint64


# -- helpers -------------------------------------------------------------------------------------

def _ro(a: np.ndarray) -> np.ndarray:
    """A read-only view (the caller's array keeps its flags).

    Numba compiles one specialization per (dtype, layout, readonly) combination; handing the
    kernels read-only C-contiguous views always means one compiled (and cached) version each.
    """
    v = a.view()
    v.setflags(write=False)
    return v


def _offsets(ptr, name: str) -> np.ndarray:
    """Offsets as they come, int32 or int64: the kernels are compiled for both, so a graph with
    int32 offsets pays no widening copy of its n + 1 offsets per side and commit."""
    ptr = np.asarray(ptr)
    if ptr.ndim != 1 or ptr.shape[0] < 1 or ptr.dtype not in (np.int32, np.int64):
        raise InvalidArgumentError(f"{name} must be a 1-D int32/int64 array of n + 1 offsets")
    return _ro(np.ascontiguousarray(ptr))


def _keys32(keys, name: str) -> np.ndarray:
    keys = np.asarray(keys)
    if keys.ndim != 1 or keys.dtype != np.int32:
        raise InvalidArgumentError(f"{name} must be a 1-D int32 array")
    return _ro(np.ascontiguousarray(keys))


def _weights32(w, m: int, name: str) -> np.ndarray:
    w = np.asarray(w)
    if w.ndim != 2 or w.dtype != np.int32 or w.shape[1] != m:
        raise InvalidArgumentError(f"{name} must be an int32 (K, {m}) array, got {w.dtype} {w.shape}")
    return _ro(np.ascontiguousarray(w))


def _finish(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for a in arrays:
        a.setflags(write=False)
    return arrays


# -- recycled output buffers ---------------------------------------------------------------------

class Spares:
    """Flat int32 buffers of retired states, reused for the next commit's entry arrays.

    Why: a commit writes every entry (the (K, m) weights stay C-contiguous, so a batch that
    changes m moves every column anyway), and on fresh memory each written page first faults in
    and is zeroed by the kernel: measured on roadNet-PA (3.1 M arcs, K = 3), a side's copy took
    11-24 ms into fresh arrays against 6-9 ms into reused ones, the worse figure with both
    sides faulting at once on two threads (they share the process's page tables).

    Only buffers this pool allocated are ever taken back (:meth:`retire`), and only when nothing
    but the retiring state refers to them (:func:`_sole_view`): a snapshot, a caller holding
    ``graph.col_ind`` or any view of it keeps the buffer out of the pool, so a published array is
    never written again. Buffers get some slack so that one retired state serves the next even
    if the batch grows m a little. The price is memory: a graph keeps one retired state's entry
    arrays (KEEP buffers) beside its current one. Thread-safe: the two sides take their buffers
    concurrently.

    A buffer also remembers what it holds (:meth:`mark`, :meth:`known_prefix`): the entries before
    a commit's first touched row are the old state's at the same places, so a buffer that holds a
    sibling of the new state (restore, commit, restore, commit: the benchmarks' loop) or the
    state the current one was made from (a chain of commits) already has a prefix of the output,
    and the copy starts after it (roadNet-PA's local10k touches rows from 75 % of the arrays on:
    the commit moved a quarter of the entries). What a buffer holds is known from this pool's
    own writes (a take count per buffer says it was not rewritten since); a state's arrays that
    this pool did not allocate are trusted unchanged, as the graph trusts them anyway.
    """

    KEEP = 4  # keys and weights of both sides: one retired state's worth

    def __init__(self):
        self._free: list[np.ndarray] = []
        self._made = weakref.WeakValueDictionary()  # id -> buffer, for those allocated here
        self._lock = threading.Lock()
        # What a buffer is known to hold (see :meth:`known_prefix`): id -> _Tag, for buffers
        # allocated here; and how many times each was taken (a retake rewrites it).
        self._tags: dict = {}
        self._taken: dict = {}
        self._gen: dict = {}

    def __reduce__(self):
        # A pickled or copied graph starts with an empty pool: the buffers are a cache, and
        # neither the lock nor the weak map can be pickled.
        return (Spares, ())

    def take(self, size: int, like: np.ndarray | None = None) -> np.ndarray:
        """A writable int32 array of ``size`` elements: a view of the smallest free buffer that
        holds it, else of a new one with slack. ``like``: the array the output is made from; a
        buffer known to hold part of it (:meth:`known_prefix`) is preferred."""
        related = set()
        if like is not None:
            key = self._key(like)
            sbuf = like.base
            with self._lock:
                for b in self._free:
                    tag = self._tags.get(id(b))
                    if tag is not None and self._same(tag.src, key):
                        related.add(id(b))
                stag = self._tags.get(id(sbuf)) if sbuf is not None else None
            if stag is not None and stag.src is not None:
                related.add(id(stag.src[0]()))
        with self._lock:
            fits = [i for i, b in enumerate(self._free) if b.shape[0] >= size]
            if fits:
                best = min(fits, key=lambda i: (id(self._free[i]) not in related, self._free[i].shape[0]))
                buf = self._free.pop(best)
                self._gen[id(buf)] = self._gen.get(id(buf), 0) + 1
                # the content's tag, readable by known_prefix until this take's mark; a take
                # that fails before its mark leaves no tag (the content is then unknown)
                self._taken[id(buf)] = self._tags.pop(id(buf), None)
                return buf[:size]
        buf = np.empty(size + size // 64 + 4096, dtype=np.int32)
        with self._lock:
            self._made[id(buf)] = buf
            for book in (self._tags, self._taken, self._gen):  # entries of buffers gone (rare)
                for key in [key for key in book if key not in self._made]:
                    del book[key]
            self._tags.pop(id(buf), None)
            self._taken.pop(id(buf), None)
            self._gen[id(buf)] = self._gen.get(id(buf), 0) + 1
        return buf[:size]

    def _key(self, arr: np.ndarray):
        """What identifies ``arr``'s bytes: a weak reference to the memory's owner, the address,
        the shape and the owner's generation (a pool buffer's take count, 0 for any other owner,
        which this module never writes); None when the owner cannot be referenced weakly."""
        root = arr.base if arr.base is not None else arr
        if not isinstance(root, np.ndarray):
            return None
        try:
            ref = weakref.ref(root)
        except TypeError:
            return None
        with self._lock:
            gen = self._gen.get(id(root), 0) if self._made.get(id(root)) is root else 0
        return (ref, arr.__array_interface__["data"][0], arr.shape, gen)

    @staticmethod
    def _same(key_a, key_b) -> bool:
        if key_a is None or key_b is None:
            return False
        root = key_a[0]()
        return root is not None and root is key_b[0]() and key_a[1:] == key_b[1:]

    def mark(self, out: np.ndarray, src: np.ndarray, prefix: int) -> None:
        """Record that ``out`` (a view at the start of a pool buffer, just written) begins with
        ``prefix`` entries per row equal to ``src``'s (both 1-D or both (K, m))."""
        buf = out.base
        if buf is None or self._made.get(id(buf)) is not buf:
            return
        tag = _Tag(self._key(src), out.shape, int(prefix))
        with self._lock:
            self._tags[id(buf)] = tag
            self._taken.pop(id(buf), None)

    def known_prefix(self, out: np.ndarray, src: np.ndarray) -> tuple[int, bool]:
        """How many leading entries per row of ``out`` (a view at the start of a buffer just
        taken, shaped like the array about to be written there) already equal ``src``'s, known
        without reading them: the buffer was written from ``src`` (a sibling state: a restore,
        then the same kind of commit again), or ``src`` was written from the buffer's content (a
        chain: the buffer holds the state before ``src``). Rows (weight columns) past the first
        count only where the buffer's layout is ``out``'s. Returns ``(prefix, every_row)``:
        ``every_row`` False means the first row only; (0, False) when nothing is known."""
        none = (0, False)
        buf = out.base
        if buf is None or self._made.get(id(buf)) is not buf:
            return none
        with self._lock:
            tag = self._taken.get(id(buf))
        if tag is not None and self._same(tag.src, self._key(src)):
            layout, prefix = tag.layout, tag.prefix  # the buffer holds a sibling of what comes
        else:
            sbuf = src.base
            with self._lock:
                stag = self._tags.get(id(sbuf)) if sbuf is not None and self._made.get(id(sbuf)) is sbuf else None
            if stag is None or stag.src is None:
                return none
            root = stag.src[0]()
            if root is not buf or stag.src[1] != out.__array_interface__["data"][0]:
                return none
            with self._lock:  # what src was written from is still there: taken once since, now
                if stag.src[3] != self._gen.get(id(buf), 0) - 1:
                    return none
            layout, prefix = stag.src[2], stag.prefix
        if len(layout) != out.ndim or (out.ndim == 2 and layout[0] != out.shape[0]):
            return none
        return min(prefix, layout[-1], out.shape[-1]), layout == out.shape

    def retire(self, arrays: list) -> None:
        """Offer the entry arrays of a state being replaced; ``arrays`` must be the only list
        holding them and the caller must hold no other reference (see :func:`_sole_view`)."""
        while arrays:
            view = arrays.pop()
            buf = _sole_view(view, self._made)
            del view
            if buf is not None:
                with self._lock:
                    self._free.append(buf)
                    if len(self._free) > self.KEEP:  # drop the smallest (by position: no ==)
                        self._free.pop(min(range(len(self._free)), key=lambda i: self._free[i].shape[0]))


@dataclass(frozen=True)
class _Tag:
    """A pool buffer's content: an array of shape ``layout`` at its start, whose first ``prefix``
    entries per row equal those of the array identified by ``src`` (a key of Spares._key)."""

    src: tuple | None
    layout: tuple
    prefix: int


def _sole_view(view: np.ndarray, made) -> np.ndarray | None:
    """The pool buffer under ``view`` when ``view`` is the only reference to it and nothing but
    the caller refers to ``view``; else None.

    NumPy points every view (of a view) at the buffer that owns the memory, so any slice, reshape
    or ``np.asarray`` someone made of a published array counts on the buffer, and a snapshot or a
    caller holding the published array itself counts on ``view``. The expected counts are those
    of this frame: ``view`` is held by the caller's variable, this argument and getrefcount's; the
    buffer by ``view.base``, the local ``buf`` and getrefcount's (the weak map holds no count).
    """
    buf = view.base
    if buf is None or made.get(id(buf)) is not buf:
        return None
    if sys.getrefcount(view) != 3 or sys.getrefcount(buf) != 3:
        return None
    return buf


# -- canonical in-order --------------------------------------------------------------------------

@njit(nogil=True)
def _transpose_kernel(row_ptr, col_ind, weights, in_ptr, in_src, in_w):
    # A stable counting sort by destination: visiting edges in out-index order and filling each
    # in-row from its cursor gives exactly np.argsort(col_ind, kind="stable") without an
    # O(m log m) sort. The permutation is built first (one scattered write per edge) and the
    # arrays are then gathered one at a time with sequential writes: scattering all K + 1 arrays
    # at once was three times slower. Outputs come from NumPy (huge pages; see _copy_kernel).
    m = col_ind.shape[0]
    n = in_ptr.shape[0] - 1
    k_cols = weights.shape[0]
    in_ptr[:] = 0
    for e in range(m):
        in_ptr[_U(col_ind[e]) + _U(1)] += 1
    for v in range(n):
        in_ptr[v + 1] += in_ptr[v]
    cursor = in_ptr[:n].copy()
    perm = np.empty(m, np.int64)
    for e in range(m):
        v = _U(col_ind[e])
        perm[_U(cursor[v])] = e
        cursor[v] += 1
    src_of = np.empty(m, np.int32)
    for u in range(row_ptr.shape[0] - 1):
        for e in range(_U(row_ptr[u]), _U(row_ptr[u + 1])):
            src_of[e] = u
    for i in range(m):
        in_src[i] = src_of[_U(perm[i])]
    for k in range(k_cols):
        for i in range(m):
            in_w[k, i] = weights[k, _U(perm[i])]


def canonical_in_csr(row_ptr, col_ind, weights_km, num_vertices: int):
    """The in-CSR of a fresh graph: in-edges of v ordered by out-edge index (O(n + m)).

    This is the starting order that every commit then edits (module docstring); it equals the
    order of ``np.argsort(col_ind, kind="stable")`` byte for byte. Returns ``(in_ptr int64,
    in_src int32, in_weights int32 (K, m))``, read-only.
    """
    ptr = _offsets(row_ptr, "row_ptr")
    col = _keys32(col_ind, "col_ind")
    w = _weights32(weights_km, col.shape[0], "weights")
    n = int(num_vertices)
    if ptr.shape[0] != n + 1 or int(ptr[-1]) != col.shape[0]:
        raise InvalidArgumentError("row_ptr does not describe num_vertices rows of col_ind")
    if col.shape[0] and (int(col.min()) < 0 or int(col.max()) >= n):
        raise InvalidArgumentError("col_ind holds a vertex id outside [0, num_vertices)")
    in_ptr = np.empty(n + 1, dtype=np.int64)
    in_src = np.empty(col.shape[0], dtype=np.int32)
    in_w = np.empty(w.shape, dtype=np.int32)
    _transpose_kernel(ptr, col, w, in_ptr, in_src, in_w)
    return _finish(in_ptr, in_src, in_w)


def scalars_of(weights_km) -> WeightScalars:
    """Full-scan scalars of a state; used once at construction, commits update them in O(b)."""
    w = np.asarray(weights_km)
    if w.ndim != 2:
        raise InvalidArgumentError("weights must be (K, m)")
    if w.shape[1] == 0:
        zeros = tuple(0 for _ in range(w.shape[0]))
        return WeightScalars(zeros, zeros)
    return WeightScalars(tuple(int(x) for x in w.max(axis=1)),
                         tuple(int(x) for x in w.sum(axis=1, dtype=np.int64)))


# -- one side ------------------------------------------------------------------------------------

@njit(nogil=True)
def _settle_ties(comp, order):
    """Turn an unstable argsort of ``comp`` into the stable one: each run of equal keys (one
    (row, key) pair) gets its event indices in ascending order. Runs are the copies of one pair
    in one batch, short in practice; the fast introsort plus this pass beats a stable sort of the
    b keys several times over."""
    num = order.shape[0]
    p = 0
    while p < num:
        q = p + 1
        c = comp[order[p]]
        while q < num and comp[order[q]] == c:
            q += 1
        if q - p > 1:
            order[p:q] = np.sort(order[p:q])
        p = q


@njit(nogil=True)
def _plan_kernel(ptr, keys, w, n_old, n_after, ev_row, ev_key, order, num_del, ev_w, max_w, extras,
                 new_ptr):
    """Resolve one side's events and fill ``new_ptr``; the entries are moved by :func:`_copy_kernel`.

    ``order`` groups the events by (row, key), event order inside each pair. Within a row, a
    deletion or insertion of key x only ever looks at entries with key x, and all deletions
    precede all insertions, so each (row, key) group can be resolved on its own: its d deletions
    remove the first d old copies, its insertions upsert the next old copy, or else one appended
    entry. Only the append order couples pairs of a row (batch order of each new pair's first
    insertion), restored by a small sort of the row's appends. Grouping by pair rather than by row
    alone keeps a row with many insertions linear: no search through the row's append list.

    Entry states live in a scratch array covering only the touched rows' old entries (offset
    ``t_scr[t]`` for touched row t): -1 kept, -2 removed, i >= 0 upserted with insertion i's
    weights. Nothing of size m is touched here.

    The weight reads of the scalars and of ``weight_increased`` (``extras``, out side only) are
    recorded in the main loop and done afterwards in tight loops: scattered reads there overlap
    in the memory system, inside the branchy main loop they were paid one after the other.
    """
    k_cols = w.shape[0]
    num_ev = order.shape[0]
    num_ins = ev_w.shape[0]

    # The events in group order, as contiguous arrays (the main loop reads them many times).
    rows = np.empty(num_ev, np.int64)
    kk = np.empty(num_ev, np.int64)
    for p in range(num_ev):
        rows[p] = ev_row[order[p]]
        kk[p] = ev_key[order[p]]
    # Scratch size: the old lengths of the distinct touched rows.
    scr_size = 0
    nt_max = 0
    for p in range(num_ev):
        r = rows[p]
        if p == 0 or r != rows[p - 1]:
            nt_max += 1
            if r < n_old:
                scr_size += ptr[r + 1] - ptr[r]
    state = np.empty(scr_size, np.int32)
    t_row = np.empty(nt_max, np.int64)
    t_removed = np.empty(nt_max, np.int64)
    t_app = np.empty(nt_max + 1, np.int64)   # the row's appends are app_*[t_app[t]:t_app[t+1]]
    t_scr = np.empty(nt_max + 1, np.int64)
    app_key = np.empty(num_ins, np.int32)
    app_first = np.empty(num_ins, np.int64)  # event index of the pair's first insertion
    app_from = np.empty(num_ins, np.int64)   # insertion index whose weights the entry ends with
    counts = np.zeros(4, np.int64)           # hits, missing, inserted, updated
    n_x = num_ins if extras else 0
    rm_idx = np.empty(num_del if extras else 0, np.int64)  # removed old entries
    up_tgt = np.empty(n_x, np.int64)         # upserted old entries ...
    up_from = np.empty(n_x, np.int64)        # ... and the insertion whose weights they take
    ins_old = np.empty(n_x, np.int64)        # first old copy of each insertion's pair, or -1
    ins_last = np.empty(n_x, np.int64)       # the pair's last insertion
    nrm = 0
    nup = 0

    nt = 0
    na = 0
    off = 0
    p = 0
    while p < num_ev:
        r = rows[p]
        s = 0
        e = 0
        if r < n_old:
            s = ptr[r]
            e = ptr[r + 1]
        base = off - s  # state index of old entry q is base + q
        for q in range(off, off + (e - s)):
            state[q] = -1
        t_row[nt] = r
        t_app[nt] = na
        t_scr[nt] = off
        off += e - s
        removed = 0
        while p < num_ev and rows[p] == r:
            x = kk[p]
            p2 = p
            d = 0
            while p2 < num_ev and rows[p2] == r and kk[p2] == x:
                if order[p2] < num_del:
                    d += 1
                p2 += 1
            c = p2 - p - d  # the pair's insertions are order[p + d : p2]
            first_old = -1
            target = -1
            gone = 0
            ubase = _U(base)  # unsigned indices: no wraparound checks (see _copy_kernel)
            for uq in range(_U(s), _U(e)):
                if keys[uq] == x:
                    q = np.int64(uq)
                    if first_old < 0:
                        first_old = q
                    if gone < d:
                        state[ubase + uq] = -2
                        gone += 1
                        if extras:
                            rm_idx[nrm] = q
                            nrm += 1
                    else:
                        target = q
                        break
                    if gone == d and c == 0:
                        break
            removed += gone
            counts[0] += gone
            counts[1] += d - gone
            if c > 0:
                i_last = order[p2 - 1] - num_del
                if target >= 0:
                    state[base + target] = i_last
                    counts[3] += c
                    if extras:
                        up_tgt[nup] = target
                        up_from[nup] = i_last
                        nup += 1
                else:
                    app_key[na] = x
                    app_first[na] = order[p + d]
                    app_from[na] = i_last
                    na += 1
                    counts[2] += 1
                    counts[3] += c - 1
                if extras:
                    for q2 in range(p + d, p2):
                        i = order[q2] - num_del
                        ins_old[i] = first_old
                        ins_last[i] = i_last
            p = p2
        lo = t_app[nt]
        if na - lo > 1:
            perm = np.argsort(app_first[lo:na]) + lo  # distinct values: stability is moot
            app_key[lo:na] = app_key[perm].copy()
            app_first[lo:na] = app_first[perm].copy()
            app_from[lo:na] = app_from[perm].copy()
        t_removed[nt] = removed
        nt += 1
    t_app[nt] = na
    t_scr[nt] = off

    # New offsets: old lengths, adjusted on the touched rows (met in increasing row order). The
    # untouched rows between two touched ones share one shift of their old end offsets, a loop
    # without branches (one over all rows testing for the next touched one did not vectorize).
    new_ptr[0] = 0
    shift = 0  # new minus old end offset of the rows since the last touched one
    prev = 0
    for t in range(nt + 1):
        r_end = n_after
        if t < nt:
            r_end = t_row[t]
        for r in range(prev, min(r_end, n_old)):
            new_ptr[r + 1] = ptr[r + 1] + shift
        for r in range(max(prev, n_old), r_end):  # new vertices' empty rows
            new_ptr[r + 1] = new_ptr[r]
        if t == nt:
            break
        r = t_row[t]
        ln = (t_app[t + 1] - t_app[t]) - t_removed[t]
        old_end = ptr[n_old]
        if r < n_old:
            ln += ptr[r + 1] - ptr[r]
            old_end = ptr[r + 1]
        end = np.int64(new_ptr[r]) + ln
        new_ptr[r + 1] = end
        shift = end - old_end
        prev = r + 1

    increased = np.zeros((n_x, k_cols), np.bool_)
    sum_delta = np.zeros(k_cols, np.int64)
    new_max = np.zeros(k_cols, np.int64)
    rescan = np.zeros(k_cols, np.bool_)
    if extras:
        for k in range(k_cols):
            mk = max_w[k]
            sd = 0
            nm = 0
            rs = False
            for t in range(nrm):
                wk = w[k, rm_idx[t]]
                sd -= wk
                rs |= wk == mk
            for t in range(nup):
                nw = ev_w[up_from[t], k]
                ow = w[k, up_tgt[t]]
                sd += nw - ow
                rs |= (nw < ow) & (ow == mk)
                nm = max(nm, nw)
            for a in range(na):
                nw = ev_w[app_from[a], k]
                sd += nw
                nm = max(nm, nw)
            # algorithm.md §3.3: the first copy of G_t (alive or not) against the first copy of
            # G_{t+1}, which always carries the pair's last insertion.
            for i in range(num_ins):
                f = ins_old[i]
                if f >= 0:
                    increased[i, k] = ev_w[ins_last[i], k] > w[k, f]
            sum_delta[k] = sd
            new_max[k] = nm
            rescan[k] = rs
    return (t_row[:nt], t_app[:nt + 1], t_scr[:nt + 1], state, app_key[:na], app_from[:na],
            counts, increased, sum_delta, new_max, rescan)


@njit(nogil=True)
def _copy_kernel(ptr, keys, w, n_old, n_after, new_ptr, t_row, t_app, t_scr, state, app_key,
                 app_from, ev_w, new_keys, new_w, skip_keys, skip_w):
    """Move the entries: the untouched rows between two touched rows share one shift, so each
    such run is one block move per array; touched rows are rebuilt entry by entry.

    Measured choices (roadNet-PA-sized, 50k touched rows): indices are unsigned, since Numba's
    negative-index wraparound on signed ones kept these loops from vectorizing (a slice
    assignment per run was no better: its view and overlap checks cost more than the short moves
    themselves); the outputs are allocated by NumPy, which asks for huge pages, as first-touch
    page faults on a fresh Numba allocation made the copy three times slower.

    ``skip_keys`` / ``skip_w[k]``: how many leading entries of the keys / of weight column k the
    outputs already hold (never past the first touched row's offset, where old and new agree).
    """
    k_cols = w.shape[0]
    nt = t_row.shape[0]
    prev = 0
    for t in range(nt + 1):
        r_end = n_after
        if t < nt:
            r_end = t_row[t]
        a = min(prev, n_old)
        b = min(r_end, n_old)
        if b > a:
            os_ = _U(ptr[a])
            ln = _U(ptr[b]) - os_
            ns = _U(new_ptr[prev])
            # entries the output buffer already holds (Spares.known_prefix) are not moved
            lo = _U(0)
            if _U(skip_keys) > ns:
                lo = min(_U(skip_keys) - ns, ln)
            for i in range(lo, ln):
                new_keys[ns + i] = keys[os_ + i]
            for k in range(k_cols):
                lo = _U(0)
                if _U(skip_w[k]) > ns:
                    lo = min(_U(skip_w[k]) - ns, ln)
                for i in range(lo, ln):
                    new_w[k, ns + i] = w[k, os_ + i]
        if t == nt:
            break
        r = t_row[t]
        pos = _U(new_ptr[r])
        if r < n_old:
            base = _U(t_scr[t] - ptr[r])
            for q in range(_U(ptr[r]), _U(ptr[r + 1])):
                st = state[base + q]
                if st == -2:
                    continue
                new_keys[pos] = keys[q]
                if st == -1:
                    for k in range(k_cols):
                        new_w[k, pos] = w[k, q]
                else:
                    for k in range(k_cols):
                        new_w[k, pos] = ev_w[st, k]
                pos += _U(1)
        for ai in range(t_app[t], t_app[t + 1]):
            new_keys[pos] = app_key[ai]
            for k in range(k_cols):
                new_w[k, pos] = ev_w[app_from[ai], k]
            pos += _U(1)
        prev = r + 1


_POOL = None
_POOL_LOCK = threading.Lock()
_THREAD_MIN_EDGES = 1 << 16  # below this a thread hand-off costs more than the side itself


def _pool() -> ThreadPoolExecutor:
    """One helper thread for the in side, created on first use (a pool per call costs more)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="apply_host")
        return _POOL


def _forget_pool_after_fork() -> None:
    # A forked child inherits the executor object but not its threads; submitting to it would
    # wait forever, so the child starts a pool of its own.
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _fresh(size: int) -> np.ndarray:
    return np.empty(size, dtype=np.int32)


def _edit_side(ptr, keys, weights, ev_row, ev_key, events: BatchEvents, max_w, extras: bool,
               spares: Spares | None = None, ptr_dtype=np.int64):
    """Edit one side (rows ``ev_row``, keys ``ev_key``): group the b events by (row, key), plan,
    take the outputs (from ``spares`` where given, else fresh), copy. Returns the new arrays and
    the plan's counters; the new offsets are ``ptr_dtype`` (int32 only when they fit)."""
    stride = np.int64(max(events.n_after, 1))
    comp = ev_row.astype(np.int64) * stride + ev_key.astype(np.int64)
    order = np.argsort(comp)
    _settle_ties(comp, order)
    ev_w = _ro(np.ascontiguousarray(events.weights, dtype=np.int32))
    n_old = np.int64(events.n_old)
    n_after = np.int64(events.n_after)
    new_ptr = np.empty(int(n_after) + 1, dtype=ptr_dtype)
    (t_row, t_app, t_scr, state, app_key, app_from, counts, increased, sum_delta, new_max,
     rescan) = _plan_kernel(ptr, keys, weights, n_old, n_after, _ro(ev_row), _ro(ev_key), order,
                            np.int64(events.num_deletions), ev_w, max_w, extras, new_ptr)
    m_new = int(new_ptr[-1])
    k_cols = weights.shape[0]
    if spares is None:
        new_keys = _fresh(m_new)
        new_w = _fresh(k_cols * m_new).reshape(k_cols, m_new)
    else:
        new_keys = spares.take(m_new, like=keys)
        new_w = spares.take(k_cols * m_new, like=weights).reshape(k_cols, m_new)
    # Entries before the first touched row are the old ones at the same places; an output buffer
    # that already holds some of them (Spares.known_prefix) keeps those.
    same = int(new_ptr[t_row[0]]) if t_row.shape[0] else m_new
    skip_keys = 0
    skip_w = np.zeros(k_cols, dtype=np.int64)
    if spares is not None:
        skip_keys = min(spares.known_prefix(new_keys, keys)[0], same)
        prefix, every_column = spares.known_prefix(new_w, weights)
        skip_w[:k_cols if every_column else 1] = min(prefix, same)
    _copy_kernel(ptr, keys, weights, n_old, n_after, new_ptr, t_row, t_app, t_scr, state, app_key,
                 app_from, ev_w, new_keys, new_w, np.int64(skip_keys), skip_w)
    if spares is not None:
        spares.mark(new_keys, keys, same)
        spares.mark(new_w, weights, same)
    return new_ptr, new_keys, new_w, counts, increased, sum_delta, new_max, rescan


@njit(nogil=True)
def _holds(column, value):
    """Whether ``value`` occurs in ``column``; stops at the first occurrence."""
    for i in range(column.shape[0]):
        if column[i] == value:
            return True
    return False


def _max_after_removal(column: np.ndarray, old_max: int, new_max: int) -> int:
    """``column.max()`` (0 when empty) of a column whose batch removed or lowered an entry equal to
    its old maximum ``old_max``; ``new_max``: the largest weight the batch wrote. Every other entry
    is an old one, at most ``old_max``, so the answer is ``new_max`` when that reaches ``old_max``,
    else ``old_max`` while one entry still holds it (usually found within a few entries: weights
    repeat), and only else the full scan (3 columns of 3 M entries took 2.5 ms per commit on
    roadNet-PA, where nearly every batch deletes some edge of the maximum weight)."""
    if column.shape[0] == 0:
        return 0
    if new_max >= old_max:
        return new_max
    if _holds(column, column.dtype.type(old_max)):
        return old_max
    return int(column.max())


#: The largest offset an int32 offset array holds (engines.graph.OFFSET32_MAX).
_INT32_MAX = (1 << 31) - 1


def apply_host(csr: HostCsr, events: BatchEvents, scalars: WeightScalars, spares: Spares | None = None,
               offset_dtype=np.int64):
    """Apply one validated batch to a host state; returns ``(new_csr, summary, weight_increased,
    new_scalars)``. The entry arrays are taken from ``spares`` where given (same bytes).

    ``offset_dtype``: the dtype the caller keeps offsets in. int32 is honoured when every offset
    of the new state fits whatever the batch does (m plus its insertions), else the offsets come
    back int64 as by default: a graph with int32 offsets then publishes the new ones without a
    narrowing copy of both sides' n + 1 offsets (1.6 ms a commit on roadNet-PA).

    Pure: ``csr``, ``events`` and ``scalars`` are untouched and the new arrays are read-only, so a
    failure at any point leaves the previous state as it was (algorithm.md §3.6, §3.3 step 6). The
    summary, ``weight_increased`` (``(I, K)`` bool) and the scalars come from the out side; the in
    side is edited by the same routine so that it stays the exact transpose with the order of
    algorithm.md §3.6.
    """
    n_old = int(events.n_old)
    row_ptr = _offsets(csr.row_ptr, "row_ptr")
    in_ptr = _offsets(csr.in_ptr, "in_ptr")
    col = _keys32(csr.col_ind, "col_ind")
    in_src = _keys32(csr.in_src, "in_src")
    m = col.shape[0]
    w = _weights32(csr.weights, m, "weights")
    in_w = _weights32(csr.in_weights, m, "in_weights")
    k_cols = w.shape[0]
    if row_ptr.shape[0] != n_old + 1 or in_ptr.shape[0] != n_old + 1:
        raise InvalidArgumentError(f"the state has {row_ptr.shape[0] - 1} vertices, the events expect {n_old}")
    if in_src.shape[0] != m or in_w.shape[0] != k_cols:
        raise InvalidArgumentError("the in-CSR does not match the out-CSR in size")
    if events.num_insertions and events.weights.shape[1] != k_cols:
        raise InvalidArgumentError(f"the events carry {events.weights.shape[1]} weight columns, the state {k_cols}")
    if len(scalars.max_weight) != k_cols or len(scalars.weight_sum) != k_cols:
        raise InvalidArgumentError("the scalars do not have one entry per weight column")
    max_w = np.array(scalars.max_weight, dtype=np.int64).reshape(k_cols)

    ev_w = events.weights
    if ev_w.shape[1] != k_cols:  # a batch without insertions may carry any K (algorithm.md §3.2)
        events = BatchEvents(src=events.src, dst=events.dst, weights=np.zeros((0, k_cols), np.int32),
                             num_deletions=events.num_deletions, num_insertions=0,
                             out_of_range=events.out_of_range, n_old=events.n_old, n_after=events.n_after)
    src = np.ascontiguousarray(events.src, dtype=np.int32)
    dst = np.ascontiguousarray(events.dst, dtype=np.int32)

    # The two sides are independent and the kernels release the GIL: on a large graph the in
    # side runs on a helper thread while this one does the out side (same bytes either way).
    narrow = np.dtype(offset_dtype) == np.int32 and m + int(events.num_insertions) <= _INT32_MAX
    ptr_dtype = np.int32 if narrow else np.int64
    in_args = (in_ptr, in_src, in_w, dst, src, events, max_w, False, spares, ptr_dtype)
    in_side = _pool().submit(_edit_side, *in_args) if m >= _THREAD_MIN_EDGES else None
    try:
        (new_ptr, new_col, new_w, counts, increased, sum_delta, new_max, rescan) = _edit_side(
            row_ptr, col, w, src, dst, events, max_w, True, spares, ptr_dtype)
    finally:
        if in_side is not None:
            new_in = in_side.result()
    if in_side is None:
        new_in = _edit_side(*in_args)
    new_in_ptr, new_in_src, new_in_w = new_in[:3]

    hits, missing, inserted, updated = (int(x) for x in counts)
    summary = ApplySummary(
        inserted_edges=inserted,
        updated_edges=updated,
        deleted_edges=hits,
        ignored_deletions=int(events.out_of_range) + missing,
        inserted_vertices=int(events.n_after) - n_old,
        num_vertices_after=int(events.n_after),
    )
    m_new = new_col.shape[0]
    max_weight = []
    weight_sum = []
    for k in range(k_cols):
        weight_sum.append(int(scalars.weight_sum[k]) + int(sum_delta[k]))
        if rescan[k]:
            max_weight.append(_max_after_removal(new_w[k], int(scalars.max_weight[k]), int(new_max[k])))
        else:
            max_weight.append(max(int(scalars.max_weight[k]), int(new_max[k])))
    new_csr = HostCsr(*_finish(new_ptr, new_col, new_w, new_in_ptr, new_in_src, new_in_w))
    (increased,) = _finish(increased)
    return new_csr, summary, increased, WeightScalars(tuple(max_weight), tuple(weight_sum))


__all__ = ["HostCsr", "Spares", "WeightScalars", "apply_host", "canonical_in_csr", "scalars_of"]
