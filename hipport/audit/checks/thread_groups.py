"""Kernels whose "warps" of 32 are only groups of 32 threads.

A lane or warp id of 32 (`tid % 32`, `tid / WARP_SIZE` with a `WARP_SIZE` of 32, `lane == 31`) is wrong on a
64-lane wavefront only where something counts the hardware's lanes: a shuffle, vote or ballot (its lanes run to
63), a cooperative-groups tile, hipCUB's warp primitives, or the hardware width itself (`warpSize`, `__lane_id()`)
next to the ids of 32. Without any of those, the code shares out work or shared memory in groups of 32 threads,
and each such group stays in lockstep inside a wavefront of 64 just as it does as a warp of 32 (a wavefront holds
two of them): the same threads meet the same data on AMD. HeCBench's slu, graphB+, radixsort and fpdc kernels
are of this kind.

A function is taken as such a group only with its whole call neighbourhood in the file (what it calls and what
calls it), and only where that neighbourhood holds a kernel: a header's helper (`laneId()`) with no caller in
the file may be used beside a shuffle anywhere, so it is not judged here."""

from __future__ import annotations

import re

from hipport.audit.checks.common import WARP_OPS
from hipport.audit.checks.context import IDENT, Context
from hipport.audit.checks.reductions import called_at, confined_index_shuffle

# Wavefront-wide operations and the types and calls that hold them (cooperative groups, hipCUB).
_WAVE_WIDE = WARP_OPS | {b"__shfl", b"__shfl_up", b"__shfl_down", b"__shfl_xor", b"shfl", b"shfl_up", b"shfl_down",
                         b"shfl_xor", b"ballot", b"any", b"all", b"match_any", b"match_all", b"tiled_partition",
                         b"thread_block_tile", b"coalesced_threads", b"coalesced_group", b"__ballot_sync",
                         b"__reduce_add_sync", b"__reduce_min_sync", b"__reduce_max_sync", b"__reduce_and_sync",
                         b"__reduce_or_sync", b"__reduce_xor_sync", b"__match_any", b"__match_all"}
# The hardware's width read on the device: ids of 32 beside it are two widths mixed.
_HARDWARE_WIDTH = {b"__AMDGCN_WAVEFRONT_SIZE", b"__AMDGCN_WAVEFRONT_SIZE__", b"__lane_id",
                   b"__builtin_amdgcn_wavefrontsize", b"__builtin_amdgcn_mbcnt_lo", b"__builtin_amdgcn_mbcnt_hi"}
# A call of a function this file does not define, whose name says it works on a warp (`warpReduceSum`,
# `WarpScan`, `shuffle_down`): its body is out of sight, so it counts as wave-wide.
_WARP_NAMED = re.compile(rb"(?i)warp|wave|shfl|shuffle|ballot|vote|lane")
# Barriers count no lanes: `__syncwarp()` waits for the whole wavefront on AMD, both groups of 32 in it.
_BARRIERS = {b"__syncwarp", b"__syncthreads", b"__syncthreads_count", b"__threadfence_block"}


def group_only(ctx: Context) -> frozenset[int]:
    """Body starts of the device functions whose ids of 32 are groups of 32 threads (see the module's text)."""
    found = getattr(ctx, "_group_only", None)
    if found is None:
        found = ctx._group_only = _group_only(ctx)
    return found


def _group_only(ctx: Context) -> frozenset[int]:
    device = [fn for fn in ctx.functions if fn.device]
    if not device:
        return frozenset()
    defined = {ctx.text[fn.name_index]: fn for fn in ctx.functions}
    wide_words = (_WAVE_WIDE | _HARDWARE_WIDTH) & ctx.words
    if b"warpSize" in ctx.words and b"warpSize" not in ctx.macros and not any(
            ctx.is_decl_name(k) for k in ctx.positions(b"warpSize")):
        wide_words.add(b"warpSize")  # HIP's own, not a project's `#define warpSize 32`
    wide_words |= {w for w in ctx.words if w not in defined and w not in _BARRIERS and _WARP_NAMED.search(w)
                   and w.isascii()
                   and (w[:1].isalpha() or w[:1] == b"_") and any(ctx.is_call(k) for k in ctx.positions(w))}

    def bodies(k: int) -> list[int]:
        return [fn.body[0] for fn in ctx.functions_holding(k) if fn.body[0] <= k < fn.body[1]]

    wide: set[int] = set()
    for w in wide_words:
        for k in ctx.positions(w):
            if ctx.kinds[k] == IDENT and not ctx.in_directive[k] and not _within_half(ctx, k):
                wide.update(bodies(k))
    # Functions joined by a call, either way, share one verdict.
    parent = {fn.body[0]: fn.body[0] for fn in ctx.functions}

    def root(b: int) -> int:
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        return b

    for name, callee in defined.items():
        for k in ctx.positions(name):
            if k != callee.name_index and called_at(ctx, k):
                for b in bodies(k):
                    parent[root(b)] = root(callee.body[0])
    wide_roots = {root(b) for b in wide}
    rooted = {root(fn.body[0]) for fn in ctx.functions if fn.kernel}
    return frozenset(fn.body[0] for fn in device
                     if root(fn.body[0]) not in wide_roots and root(fn.body[0]) in rooted)


def _within_half(ctx: Context, k: int) -> bool:
    """An index shuffle at ``k`` that reads inside its own 32-lane half or as if it did: a `width` of 32 or less,
    or a value that lanes k and k + 32 hold alike (`__shfl(v, 0)` with `v` from `tid & 31` and parameters). It
    counts no lanes beyond a group of 32."""
    if ctx.text[k] not in (b"__shfl", b"__shfl_sync") or not ctx.is_call(k):
        return False
    fn = ctx.function_at(k)
    return fn is not None and confined_index_shuffle(ctx, fn, k)


__all__ = ["group_only"]
