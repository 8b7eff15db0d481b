"""Check 8: cooperative groups.

- `cg-tile-size`: tiles larger than a target's wavefront, or of 32 on wave64 targets; the size may be a literal,
  a macro or constant, or a template parameter (resolved through the instantiations in the file).
- `cg-api-unavailable`: cooperative-groups API that HIP lacks, judged against the targeted ROCm release.
- `cg-grid-sync`: a grid-wide `sync()` in a kernel that is not launched cooperatively.
"""

from __future__ import annotations

from dataclasses import dataclass

from hipport import directives as dirs
from hipport.audit.checks.common import split_template_args, statement_start, user_defined
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context, Function, int_value
from hipport.audit.hazards import wave_size
from hipport.model import Edit
from hipport.releases import release_data
from hipport.semantic import load_semantic

RULE = "cg-tile-size"
API = "cg-api-unavailable"
GRID = "cg-grid-sync"
_TILES = {b"tiled_partition", b"thread_block_tile"}
_CG = b"cooperative_groups"

# What hipport can prove about each API. rules/rocm/releases.toml's [cooperative_groups] says which names the
# cooperative-groups headers of each release read declare (5.2, 6.2.2, 6.4.3, 7.2.4; tools/gen_releases.py): a
# name the targeted release declares is not reported (`meta_group_rank` from 6.2, `binary_partition` from 6.4).
# HIP 5.2 declares none of the names below. For a release between those read, `later` marks names that a later
# HIP declares; the others are, as far as hipport knows, in no release up to the newest it targets.
_HIP_READ = (5, 2)


@dataclass(frozen=True)
class _Api:
    what: str        # how the message names it
    instead: str     # what to write instead
    later: bool = False


_APIS = {
    b"reduce": _Api("`{ns}::reduce`", "a shuffle loop over the tile (the result lands in every lane): "
                    "`for (int o = tile.size() / 2; o > 0; o /= 2) v += tile.shfl_xor(v, o);` (or `min`/`max`/"
                    "`&`/`|`/`^`)"),
    b"inclusive_scan": _Api("`{ns}::inclusive_scan`", "a shuffle scan over the tile: `for (int o = 1; o < tile.size(); "
                            "o *= 2) { auto u = tile.shfl_up(v, o); if (tile.thread_rank() >= o) v += u; }`"),
    b"exclusive_scan": _Api("`{ns}::exclusive_scan`", "the inclusive shuffle scan (`tile.shfl_up` in a doubling loop) "
                            "followed by one more `tile.shfl_up(v, 1)`, lane 0 taking the identity"),
    b"plus": _Api("`{ns}::plus`", "the operator itself (`a + b`) in a shuffle loop over `tile.shfl_xor`"),
    b"less": _Api("`{ns}::less`", "`min(a, b)` in a shuffle loop over `tile.shfl_xor`"),
    b"greater": _Api("`{ns}::greater`", "`max(a, b)` in a shuffle loop over `tile.shfl_xor`"),
    b"bit_and": _Api("`{ns}::bit_and`", "`a & b` in a shuffle loop over `tile.shfl_xor`"),
    b"bit_or": _Api("`{ns}::bit_or`", "`a | b` in a shuffle loop over `tile.shfl_xor`"),
    b"bit_xor": _Api("`{ns}::bit_xor`", "`a ^ b` in a shuffle loop over `tile.shfl_xor`"),
    b"block_tile_memory": _Api("`{ns}::block_tile_memory`", "`{ns}::this_thread_block()` without a scratch, and "
                               "tiles of at most one wavefront whose results are combined through `__shared__` "
                               "memory"),
    b"this_thread_block": _Api("`{ns}::this_thread_block(scratch)`", "`{ns}::this_thread_block()` without the "
                               "scratch argument"),
    b"labeled_partition": _Api("`{ns}::labeled_partition`", "a ballot per label: `auto m = __ballot(label == l);` "
                               "gives the members, `__popcll(m & lanes_below)` a lane's rank (or handle each label "
                               "in a separate pass)"),
    b"binary_partition": _Api("`{ns}::binary_partition`", "`__ballot(pred)` and its complement as the two member "
                              "masks, `__popcll(mask & lanes_below)` as a lane's rank", later=True),
    b"meta_group_rank": _Api("`meta_group_rank()`", "`parent.thread_rank() / N` for a tile of N threads "
                             "partitioned from `parent`", later=True),
    b"meta_group_size": _Api("`meta_group_size()`", "`(parent.size() + N - 1) / N` for tiles of N threads "
                             "partitioned from `parent`", later=True),
    b"memcpy_async": _Api("`{ns}::memcpy_async`", "a plain copy loop (`for (i = g.thread_rank(); i < n; i += "
                          "g.size()) dst[i] = src[i];`) followed by `g.sync()`"),
    b"wait": _Api("`{ns}::wait`", "`g.sync()` after plain copies"),
    b"wait_prior": _Api("`{ns}::wait_prior`", "`g.sync()` after plain copies"),
}
_FUNCTORS = {b"plus", b"less", b"greater", b"bit_and", b"bit_or", b"bit_xor"}
_REDUCE_STEP = {b"plus": "{v} += {g}.shfl_xor({v}, {o})", b"less": "{v} = min({v}, {g}.shfl_xor({v}, {o}))",
                b"greater": "{v} = max({v}, {g}.shfl_xor({v}, {o}))", b"bit_and": "{v} &= {g}.shfl_xor({v}, {o})",
                b"bit_or": "{v} |= {g}.shfl_xor({v}, {o})", b"bit_xor": "{v} ^= {g}.shfl_xor({v}, {o})"}
_HEADERS = {b"cooperative_groups/reduce.h": "reduce", b"cooperative_groups/scan.h": "scan",
            b"cooperative_groups/memcpy_async.h": "memcpy_async"}


def _v(t: tuple[int, ...]) -> str:
    return ".".join(map(str, t))


def check(ctx: Context) -> None:
    words = ctx.words
    if RULE in ctx.hazards and words & _TILES:
        _tile_sizes(ctx)
    if API in ctx.hazards and _CG in ctx.src:
        _api(ctx)
    if GRID in ctx.hazards and (b"this_grid" in words or b"grid_group" in words):
        _grid_sync(ctx)


# -- cg-tile-size -----------------------------------------------------------------------------------------------
def _tile_sizes(ctx: Context) -> None:
    archs = tuple(ctx.options.offload_arch)
    for i in range(ctx.n - 3):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in _TILES or ctx.t(ctx.next_code(i)) != b"<":
            continue
        k = ctx.next_code(ctx.next_code(i))
        if ctx.t(ctx.next_code(k)) not in (b">", b","):
            continue
        name = ctx.text[i].decode()
        if ctx.kinds[k] == LITERAL:
            n = int_value(ctx.text[k])
            if n is not None:
                _judge_tile(ctx, k, name, n, archs, "")
            continue
        if ctx.kinds[k] != IDENT:
            continue
        arg = ctx.text[k]
        values = _constant(ctx, arg)
        if values:
            for n in sorted(values):
                _judge_tile(ctx, k, name, n, archs, f" (`{arg.decode()}` is {n})")
            continue
        fn = _template_owner(ctx, k, arg)
        if fn is None:
            continue
        found, unresolved = _instantiations(ctx, fn, arg.decode("latin-1"))
        for n in sorted(found):
            _judge_tile(ctx, k, name, n, archs, f" (`{fn.name}` is instantiated with `{arg.decode()}` = {n})")
        if not found and not unresolved:
            ctx.report(RULE, k, f"`{name}<{arg.decode()}>`: the tile size is a template parameter; every "
                       f"instantiation must be a power of two no larger than the wavefront (32 on RDNA, 64 on "
                       f"CDNA), and none is visible in this file", severity="info", confidence="low",
                       subject=arg.decode())


# What HIP's cooperative groups accept as a tile size (`is_valid_wavefront` in
# hip/amd_detail/hip_cooperative_groups_helper.h): up to the target's wavefront (`__AMDGCN_WAVEFRONT_SIZE`) in ROCm
# 6.4.3, up to 64 on every target in ROCm 7.2.4, so a 64-tile compiles for a 32-lane RDNA target from 7.0 (answered
# by 7.2, as rules/rocm/releases.toml answers 7.x) and runs wrong there. tests/test_audit_false_alarms.py compiles it
# with both releases for gfx1100.
_TILE_LIMIT = 64
_TILE_UP_TO_64_FROM = (7, 0)


def _judge_tile(ctx: Context, k: int, name: str, n: int, archs: tuple[str, ...], how: str) -> None:
    shown = ctx.text[k].decode()
    if n <= 0 or n & (n - 1):
        ctx.report(RULE, k, f"`{name}<{shown}>`{how} is not a power of two: tiles must be 1, 2, 4, ... up to the "
                   f"wavefront; it does not compile", severity="error", subject=str(n))
        return
    too_small = [a for a in archs if wave_size(a) < n]
    if too_small and n > _TILE_LIMIT:
        ctx.report(RULE, k, f"`{name}<{shown}>`{how} is larger than any wavefront ({_TILE_LIMIT} lanes): it does "
                   f"not compile; use tiles of at most {min(wave_size(a) for a in archs)} threads and combine them "
                   f"through `__shared__` memory", severity="error", subject=f"{n}")
    elif too_small:
        largest = max((wave_size(a) for a in archs if wave_size(a) >= n), default=None)
        lanes = " or ".join(str(w) for w in sorted({wave_size(a) for a in too_small}))
        compiles = tuple(ctx.rocm[:2]) >= _TILE_UP_TO_64_FROM
        why = (f"from ROCm {_v(_TILE_UP_TO_64_FROM)} it builds, but its threads span "
               f"{n // min(wave_size(a) for a in too_small)} wavefronts, which its shuffles and `sync()` do not "
               f"cross" if compiles else f"ROCm before {_v(_TILE_UP_TO_64_FROM)} rejects it there")
        ctx.report(RULE, k, f"`{name}<{shown}>`{how} is larger than the {lanes}-lane wavefront of "
                   f"{', '.join(too_small)}: {why}; use tiles of at most "
                   f"{min(wave_size(a) for a in archs)} threads joined in `__shared__` memory"
                   + (f" (or drop {', '.join(too_small)})"
                      if largest else ""),
                   severity="warning" if compiles else "error", subject=f"{n}")
    elif n == 32 and any(wave_size(a) == 64 for a in archs):
        ctx.report(RULE, k, f"`{name}<{shown}>`{how} is half of a 64-lane wavefront on "
                   f"{', '.join(a for a in archs if wave_size(a) == 64)}; fine as a 32-thread group, "
                   f"wrong if it stands for the hardware warp", confidence="medium", subject="32")


def _constant(ctx: Context, name: bytes) -> set[int]:
    """Values of a macro (every `#define` of it in the file) or of a `const`/`constexpr` integer of that name."""
    values: set[int] = set()
    for d in ctx.structure.directives:
        if d.name == b"define" and d.first + 2 < d.last and ctx.text[d.first + 2] == name:
            body = [j for j in range(d.first + 3, d.last) if ctx.kinds[j] != 4]
            v = int_value(ctx.text[body[0]]) if len(body) == 1 else None
            if v is None:
                return set()
            values.add(v)
    if values:
        return values if len(values) == 1 else set()  # defined per branch (per architecture): not one value
    for j in range(ctx.n - 2):
        if ctx.text[j] == name and ctx.kinds[j] == IDENT and ctx.t(ctx.next_code(j)) == b"=":
            words = ctx.decl_type_words(j)
            lit = ctx.next_code(ctx.next_code(j))
            if (b"constexpr" in words or b"const" in words) and ctx.kinds[lit] == LITERAL \
                    and ctx.t(ctx.next_code(lit)) == b";":
                v = int_value(ctx.text[lit])
                if v is not None:
                    values.add(v)
    return values if len(values) == 1 else set()


def _template_owner(ctx: Context, k: int, name: bytes) -> Function | None:
    """The function template whose parameter ``name`` is, used at ``k`` (in its body or parameter list)."""
    fn = ctx.function_at(k) or next((f for f in ctx.functions if f.params[0] < k < f.params[1]), None)
    if fn is not None and name.decode("latin-1") in fn.template_params:
        return fn
    return None


def _instantiations(ctx: Context, fn: Function, param: str) -> tuple[set[int], int]:
    """Values given to one template parameter of ``fn`` where the file names `fn<...>`, and how many
    instantiations give a value hipport cannot resolve (another parameter, a macro defined per architecture)."""
    pos = fn.template_params.index(param)
    name = ctx.text[fn.name_index]
    out: set[int] = set()
    unresolved = 0
    for j in range(ctx.n - 2):
        if ctx.text[j] != name or j == fn.name_index or ctx.t(ctx.next_code(j)) != b"<":
            continue
        split = split_template_args(ctx, ctx.next_code(j))
        if split is None:
            continue
        args = [[k for k in range(a, b) if ctx.kinds[k] != COMMENT] for a, b in split[0]]
        if len(args) > pos and len(args[pos]) == 1:
            tok = args[pos][0]
            v = int_value(ctx.text[tok]) if ctx.kinds[tok] == LITERAL else None
            if v is None and ctx.kinds[tok] == IDENT:
                values = _constant(ctx, ctx.text[tok])
                v = values.pop() if len(values) == 1 else None
            if v is not None:
                out.add(v)
            else:
                unresolved += 1
        elif len(args) > pos:
            unresolved += 1
    return out, unresolved


# -- cg-api-unavailable -----------------------------------------------------------------------------------------
def _namespaces(ctx: Context) -> tuple[set[bytes], bool]:
    """Names that mean `cooperative_groups` here (the namespace and its aliases), and whether a
    `using namespace cooperative_groups;` lets the names appear unqualified."""
    names = {_CG}
    using = False
    for i in range(ctx.n - 3):
        if ctx.text[i] == b"namespace" and ctx.t(ctx.next_code(ctx.next_code(i))) == b"=":
            alias = ctx.next_code(i)
            target = ctx.next_code(ctx.next_code(alias))
            if ctx.t(target) == b"::":
                target = ctx.next_code(target)
            if ctx.t(target) == _CG:
                names.add(ctx.text[alias])
        elif ctx.text[i] == b"using" and ctx.t(ctx.next_code(i)) == b"namespace" \
                and ctx.t(ctx.next_code(ctx.next_code(i))) == _CG:
            using = True
    return names, using


def _availability(ctx: Context, api: _Api, declared: bool | None = None) -> tuple[str, str, str]:
    """(how the message states it, severity, confidence) for the targeted release; ``declared`` is False where
    the release data read the targeted release's own headers and found no such name."""
    rocm = ctx.rocm
    if rocm <= _HIP_READ:
        return (f"is not declared by HIP {_v(_HIP_READ)}'s cooperative-groups headers, so it does not compile for "
                f"ROCm {_v(rocm)}"), "error", "high"
    if declared is False and release_data().data_release(rocm) == tuple(rocm[:2]):
        return f"is not declared by the cooperative-groups headers of ROCm {_v(tuple(rocm[:2]))}", "error", "high"
    if api.later:
        return (f"is not in HIP {_v(_HIP_READ)}; a later HIP declares it, in a release hipport cannot name: check "
                f"`hip/amd_detail/amd_hip_cooperative_groups.h` of ROCm {_v(rocm)}"), "warning", "medium"
    return f"is not in HIP <= {_v(rocm)} as far as hipport knows", "error", "high"


def _stand_in(ctx: Context) -> bool:
    """Whether `cg::reduce` on a tile and its operators build here: the file holds hipport's stand-in for
    `<cooperative_groups/reduce.h>` (rules/shims.toml), or includes the header, which convert replaces by it."""
    shim = next((s for s in (load_semantic().shims or {}).values() if s.include == "cooperative_groups/reduce.h"),
                None)
    if shim is None:
        return False
    if f"HIPPORT_SHIM_{shim.name}".encode() in ctx.macros:
        return True
    return any((t := dirs.include_target(ctx.tokens, d)) and t[2] == b"cooperative_groups/reduce.h"
               for d in ctx.structure.directives)


def _on_tile(ctx: Context, i: int) -> bool:
    """Whether the group of the `reduce(` call at ``i`` is declared as a `thread_block_tile<N>`."""
    args = ctx.call_args(i)
    g = [k for k in range(*args[0]) if ctx.kinds[k] != 4] if args else []
    return len(g) == 1 and ctx.kinds[g[0]] == IDENT and _is_tile(ctx, ctx.text[g[0]], i)


def _api(ctx: Context) -> None:
    names, using = _namespaces(ctx)
    stand_in = _stand_in(ctx)
    shim_defined = stand_in and not any(
        (t := dirs.include_target(ctx.tokens, d)) and t[2] == b"cooperative_groups/reduce.h"
        for d in ctx.structure.directives)
    seen_lines: set[tuple[int, bytes]] = set()
    covered: set[int] = set()   # tokens inside a reported reduce/scan call
    fixable = {"reduce": True, "scan": True, "memcpy_async": False}
    used = {"reduce": False, "scan": False, "memcpy_async": False}
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT or ctx.in_directive[i] or i in covered:
            continue
        word = ctx.text[i]
        api = _APIS.get(word)
        if api is None:
            continue
        before = ctx.prev_code(i)
        qualified = ctx.t(before) == b"::" and ctx.t(ctx.prev_code(before)) in names
        member = ctx.t(before) in (b".", b"->")
        ns = ctx.t(ctx.prev_code(before)).decode("latin-1") if qualified else "cg"
        nxt = ctx.t(ctx.next_code(i))
        if word in (b"meta_group_rank", b"meta_group_size"):
            if not member or nxt != b"(" or not _cg_receiver(ctx, ctx.prev_code(before), i, names, word):
                continue
        elif not qualified and not (using and ctx.device[i] and ctx.t(before) not in (b"::", b".", b"->")
                                    and not user_defined(ctx, word)):
            continue
        if word in _FUNCTORS and nxt != b"<":
            continue
        if word == b"this_thread_block":
            args = ctx.call_args(i)
            if not args or not any(ctx.kinds[k] != 4 for k in range(*args[0])):
                continue
        elif word in (b"reduce", b"inclusive_scan", b"exclusive_scan", b"labeled_partition", b"binary_partition",
                      b"memcpy_async", b"wait") and nxt != b"(":
            continue
        family = "reduce" if word in _FUNCTORS or word == b"reduce" else \
            "scan" if word.endswith(b"_scan") else "memcpy_async" if word in (b"memcpy_async", b"wait",
                                                                                b"wait_prior") else None
        # what the targeted release's cooperative-groups headers declare (rules/rocm/releases.toml); the scratch
        # overload of `this_thread_block` is not told apart from the plain one there
        declared = None if word == b"this_thread_block" else release_data().cg_declares(word.decode(), ctx.rocm)
        if declared:
            continue
        line = ctx.lines.line_col(ctx.starts[i])[0]
        if (line, word) in seen_lines:
            continue
        seen_lines.add((line, word))
        first = ctx.prev_code(before) if qualified else i
        edits = _api_edits(ctx, i, word, first, names)
        if family:
            used[family] = True
            fixable[family] = fixable[family] and bool(edits)
        if word in (b"reduce", b"inclusive_scan", b"exclusive_scan") and nxt == b"(":
            p = ctx.next_code(i)
            covered.update(range(p, ctx.match(p) + 1))
        state, severity, confidence = _availability(ctx, api, declared)
        what, instead = api.what.format(ns=ns), api.instead.format(ns=ns)
        subject = word.decode()
        if stand_in and family == "reduce":
            # Covered uses are not reported where the stand-in is written; from the CUDA source they are, under
            # the subjects the convert pass answers (audit/engine.py drops them as converted work).
            covered_use = word != b"reduce" or _on_tile(ctx, i)
            if covered_use and shim_defined:
                continue
            if not covered_use:
                subject = "reduce (group not a tile)"
                what += " on a group not declared a `thread_block_tile<N>` (all hipport's stand-in takes)"
                state = "has no HIP form"
                instead = ("it on a `tiled_partition<N>` tile, or a `g.shfl_down(v, o)` loop combining only where "
                           "`g.thread_rank() + o < g.size()` (the result in lane 0)")
        if not qualified:  # written unqualified under `using namespace cooperative_groups`
            what, instead = what.replace("`cg::", "`"), instead.replace("`cg::", "`")
        ctx.report(API, i, f"{what} {state}; write {instead}",
                   severity=severity, confidence=confidence, edits=edits, subject=subject)
    _headers(ctx, used, fixable)


def _headers(ctx: Context, used: dict[str, bool], fixable: dict[str, bool]) -> None:
    api = _Api("", "")
    state, severity, confidence = _availability(ctx, api)
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if not target or target[2] not in _HEADERS:
            continue
        family = _HEADERS[target[2]]
        # The line is emptied, not removed, so the lines of the other findings stay where they are.
        end = ctx.src.rfind(b"\n", d.start, d.end)
        edits = [Edit(d.start, end if end >= 0 else d.end, b"")] \
            if family in fixable and fixable[family] and used.get(family) else []
        what = {"reduce": "`reduce` and its operators", "scan": "`inclusive_scan`/`exclusive_scan`",
                "memcpy_async": "`memcpy_async` and `wait`"}[family]
        ctx.report(API, d.first, f"`<{target[2].decode()}>` ({what}) {state}; write the shuffle or copy loops the "
                   f"uses below are flagged with, and drop the include", severity=severity,
                   confidence=confidence, edits=edits, subject=target[2].decode(), offset=target[0])


def _api_edits(ctx: Context, i: int, word: bytes, first: int, names: set[bytes]) -> list[Edit]:
    if word == b"reduce":
        return _reduce_edit(ctx, i, first, names)
    if word in (b"inclusive_scan", b"exclusive_scan"):
        return _scan_edit(ctx, i, word, first, names)
    if word in _FUNCTORS:
        return _functor_edit(ctx, i, first)
    if word == b"this_thread_block":
        p = ctx.next_code(i)
        return [Edit(ctx.ends[p], ctx.starts[ctx.match(p)], b"")]
    if word in (b"meta_group_rank", b"meta_group_size"):
        return _meta_group_edit(ctx, i, word)
    if word == b"block_tile_memory":
        return _scratch_edit(ctx, i)
    return []


def _group_decl(ctx: Context, name: bytes, at: int) -> int | None:
    """Where a group variable is declared: `auto g = ...`, `cg::thread_block b = ...`, or with a template type,
    `cg::thread_block_tile<32> t = ...` (the parameters of the function included)."""
    fn = ctx.function_at(at)
    lo = fn.params[0] if fn else 0
    for k in range(at - 1, lo - 1, -1):
        if ctx.text[k] != name or ctx.kinds[k] != IDENT:
            continue
        if ctx.is_decl_name(k):
            return k
        p = ctx.prev_code(k)
        while ctx.t(p) in (b"&", b"*", b"const"):
            p = ctx.prev_code(p)
        if ctx.t(p) == b">" and ctx.t(ctx.next_code(k)) in (b"=", b";", b",", b")", b"{"):
            depth = 0
            while p >= 0:
                if ctx.text[p] == b">":
                    depth += 1
                elif ctx.text[p] == b"<":
                    depth -= 1
                    if depth == 0:
                        break
                p -= 1
            if p > 0 and ctx.kinds[ctx.prev_code(p)] == IDENT:
                return k
    return None


_GROUP_MARKS = {b"thread_block_tile", b"tiled_partition", b"coalesced_group", b"coalesced_threads", b"thread_group",
                b"thread_block", b"this_thread_block", b"grid_group", b"this_grid"}


def _cg_receiver(ctx: Context, obj: int, at: int, names: set[bytes], word: bytes) -> bool:
    """Is `obj.meta_group_rank()` called on a cooperative group? Its declaration says; when it cannot be found,
    yes unless the file defines a function of that name itself."""
    if ctx.kinds[obj] != IDENT:
        return not user_defined(ctx, word)
    decl = _group_decl(ctx, ctx.text[obj], at)
    if decl is None:
        return not user_defined(ctx, word)
    s = statement_start(ctx, decl)
    if ctx.function_at(decl) is not None and ctx.function_at(decl).params[0] < decl < ctx.function_at(decl).params[1]:
        s = decl
        while s > 0 and ctx.text[s - 1] not in (b",", b"("):
            s -= 1
    end = decl
    if ctx.t(ctx.next_code(decl)) == b"=":
        end = decl
        while end < ctx.n and ctx.text[end] not in (b";", b"{"):
            end += 1
    return any(ctx.text[j] in _GROUP_MARKS or ctx.text[j] in names for j in range(s, end))


def _tile_of(ctx: Context, name: bytes, at: int) -> tuple[str, str] | None:
    """For a tile declared `... name = ns::tiled_partition<N>(parent);`: (N, parent) as written."""
    decl = _group_decl(ctx, name, at)
    if decl is None or ctx.t(ctx.next_code(decl)) != b"=":
        return None
    k = ctx.next_code(ctx.next_code(decl))
    while ctx.t(ctx.next_code(k)) == b"::":
        k = ctx.next_code(ctx.next_code(k))
    if ctx.t(k) != b"tiled_partition" or ctx.t(ctx.next_code(k)) != b"<":
        return None
    size = ctx.next_code(ctx.next_code(k))
    close = ctx.next_code(size)
    if ctx.t(close) != b">" or ctx.t(ctx.next_code(close)) != b"(":
        return None
    args = ctx.call_args(close)
    if not args or len(args) != 1:
        return None
    return ctx.text[size].decode("latin-1"), ctx.span_text(*args[0]).decode("latin-1")


def _is_tile(ctx: Context, name: bytes, at: int) -> bool:
    """Declared as a `thread_block_tile<N>` (by type, or from `tiled_partition<N>`): it has `shfl_xor`."""
    decl = _group_decl(ctx, name, at)
    if decl is None:
        return False
    s = statement_start(ctx, decl)
    end = decl
    if ctx.t(ctx.next_code(decl)) == b"=":
        end = ctx.next_code(decl)
        while end < ctx.n and ctx.text[end] not in (b";", b"("):
            end += 1
    texts = [ctx.text[j] for j in range(s, end)]
    for j, t in enumerate(texts[:-1]):
        if t in _TILES and texts[j + 1] == b"<":
            return True
    return False


def _reduce_edit(ctx: Context, i: int, first: int, names: set[bytes]) -> list[Edit]:
    """`cg::reduce(tile, v, cg::plus<T>())` -> an immediately called lambda with the shuffle loop."""
    args = ctx.call_args(i)
    if not args or len(args) != 3:
        return []
    g = [k for k in range(*args[0]) if ctx.kinds[k] != 4]
    if len(g) != 1 or ctx.kinds[g[0]] != IDENT or not _is_tile(ctx, ctx.text[g[0]], i):
        return []
    op = [k for k in range(*args[2]) if ctx.kinds[k] != 4]
    # ns :: functor < T > ( ) | { }
    if len(op) < 7 or ctx.text[op[0]] not in names or ctx.text[op[1]] != b"::" or ctx.text[op[2]] not in _FUNCTORS \
            or ctx.text[op[3]] != b"<":
        return []
    close_t = op[3] + 1
    while close_t < op[-1] and ctx.text[close_t] != b">":
        close_t += 1
    tail = [ctx.text[k] for k in op if k > close_t]
    if tail not in ([b"(", b")"], [b"{", b"}"]):
        return []
    type_text = ctx.span_text(op[3] + 1, close_t).decode("latin-1").strip() or "auto"
    group = ctx.text[g[0]].decode("latin-1")
    value = ctx.span_text(*args[1]).decode("latin-1").strip()
    step = _REDUCE_STEP[ctx.text[op[2]]].format(v="v_", g=group, o="o_")
    new = (f"[&] {{ {type_text} v_ = {value}; for (int o_ = {group}.size() / 2; o_ > 0; o_ /= 2) {step}; "
           f"return v_; }}()")
    p = ctx.next_code(i)
    return [Edit(ctx.starts[first], ctx.ends[ctx.match(p)], new.encode())]


_INTEGERS = {b"int", b"unsigned", b"long", b"short", b"char", b"signed", b"size_t", b"int32_t", b"uint32_t",
             b"int64_t", b"uint64_t", b"uint", b"const"}
_FUNCTOR_BODY = {b"plus": "a + b", b"less": "a < b ? a : b", b"greater": "a > b ? a : b", b"bit_and": "a & b",
                 b"bit_or": "a | b", b"bit_xor": "a ^ b"}


def _scan_edit(ctx: Context, i: int, word: bytes, first: int, names: set[bytes]) -> list[Edit]:
    """`cg::inclusive_scan(tile, v)` -> a `shfl_up` doubling loop; `exclusive_scan` subtracts the lane's own value,
    which is exact for integers only, so it is patched only when `v` is declared as an integer."""
    args = ctx.call_args(i)
    if not args or len(args) not in (2, 3):
        return []
    g = [k for k in range(*args[0]) if ctx.kinds[k] != 4]
    v = [k for k in range(*args[1]) if ctx.kinds[k] != 4]
    if len(g) != 1 or not _is_tile(ctx, ctx.text[g[0]], i) or len(v) != 1 or ctx.kinds[v[0]] != IDENT:
        return []
    if len(args) == 3:  # only the default operator, plus, spelt out
        op = [ctx.text[k] for k in range(*args[2]) if ctx.kinds[k] != 4]
        if len(op) < 4 or op[0] not in names or op[1:3] != [b"::", b"plus"]:
            return []
    decl = _group_decl(ctx, ctx.text[v[0]], i)
    words = [w for w in ctx.decl_type_words(decl) if w not in (b"const", b"volatile")] if decl is not None else []
    integer = bool(words) and all(w in _INTEGERS for w in words)
    if word == b"exclusive_scan" and not integer:
        return []
    type_text = " ".join(w.decode("latin-1") for w in words) if words and (integer or len(words) == 1) else "auto"
    group, value = ctx.text[g[0]].decode("latin-1"), ctx.text[v[0]].decode("latin-1")
    result = f"v_ - {value}" if word == b"exclusive_scan" else "v_"
    new = (f"[&] {{ {type_text} v_ = {value}; for (int o_ = 1; o_ < static_cast<int>({group}.size()); o_ *= 2) "
           f"{{ {type_text} u_ = {group}.shfl_up(v_, o_); if (static_cast<int>({group}.thread_rank()) >= o_) "
           f"v_ += u_; }} return {result}; }}()")
    return [Edit(ctx.starts[first], ctx.ends[ctx.match(ctx.next_code(i))], new.encode())]


def _functor_edit(ctx: Context, i: int, first: int) -> list[Edit]:
    """`cg::greater<float>()` as an object of its own -> a lambda doing what the operator does: it returns the
    greater value (`less` the smaller), as CUDA's operators do, not a comparison."""
    open_ = ctx.next_code(i)
    k, depth = open_, 0
    while k < ctx.n:
        if ctx.text[k] == b"<":
            depth += 1
        elif ctx.text[k] == b">":
            depth -= 1
            if depth == 0:
                break
        k += 1
    if k >= ctx.n:
        return []
    p = ctx.next_code(k)
    if ctx.t(p) not in (b"(", b"{") or ctx.match(p) != ctx.next_code(p):
        return []
    type_text = ctx.span_text(open_ + 1, k).decode("latin-1").strip()
    if not type_text:
        return []
    new = f"[]({type_text} a, {type_text} b) {{ return {_FUNCTOR_BODY[ctx.text[i]]}; }}"
    return [Edit(ctx.starts[first], ctx.ends[ctx.match(p)], new.encode())]


def _meta_group_edit(ctx: Context, i: int, word: bytes) -> list[Edit]:
    dot = ctx.prev_code(i)
    obj = ctx.prev_code(dot)
    p = ctx.next_code(i)
    if ctx.kinds[obj] != IDENT or ctx.t(ctx.prev_code(obj)) in (b".", b"->", b"::") or ctx.match(p) != ctx.next_code(p):
        return []
    tile = _tile_of(ctx, ctx.text[obj], i)
    if tile is None:
        return []
    n, parent = tile
    new = f"({parent}.thread_rank() / {n})" if word == b"meta_group_rank" else f"(({parent}.size() + {n} - 1) / {n})"
    return [Edit(ctx.starts[obj], ctx.ends[ctx.match(p)], new.encode())]


def _scratch_edit(ctx: Context, i: int) -> list[Edit]:
    """`__shared__ cg::block_tile_memory<...> scratch;` on a line of its own, used only as
    `this_thread_block(scratch)`: the line is emptied (the call loses its argument in its own finding)."""
    s = statement_start(ctx, i)
    k = i
    while k < ctx.n and ctx.text[k] not in (b";", b"{", b"}", b"("):
        k += 1
    if ctx.t(k) != b";":
        return []
    name = ctx.prev_code(k)
    if ctx.kinds[name] != IDENT:
        return []
    fn = ctx.function_at(i)
    lo, hi = (fn.body[0], fn.body[1]) if fn else (0, ctx.n)
    for j in range(lo, hi):
        if j != name and ctx.text[j] == ctx.text[name] and ctx.kinds[j] == IDENT:
            call = ctx.prev_code(ctx.prev_code(j))
            if ctx.t(ctx.prev_code(j)) != b"(" or ctx.t(call) != b"this_thread_block" \
                    or ctx.t(ctx.next_code(j)) != b")":
                return []
    src = ctx.src
    line_start = src.rfind(b"\n", 0, ctx.starts[s]) + 1
    line_end = src.find(b"\n", ctx.ends[k])
    line_end = len(src) if line_end < 0 else line_end + 1
    rest = src[ctx.ends[k]:line_end].strip()
    if src[line_start:ctx.starts[s]].strip() or rest and not rest.startswith(b"//"):
        return []
    return [Edit(line_start, line_end - 1 if src[line_end - 1:line_end] == b"\n" else line_end, b"")]


# -- cg-grid-sync -----------------------------------------------------------------------------------------------
_COOP_LAUNCH = {b"cudaLaunchCooperativeKernel", b"hipLaunchCooperativeKernel",
                b"cudaLaunchCooperativeKernelMultiDevice", b"hipLaunchCooperativeKernelMultiDevice"}


def _grid_sync(ctx: Context) -> None:
    names, using = _namespaces(ctx)
    found: dict[int, Function] = {}
    for i in range(ctx.n - 2):
        t = ctx.text[i]
        if ctx.kinds[i] != IDENT or t not in (b"this_grid", b"grid_group"):
            continue
        before = ctx.prev_code(i)
        if not (ctx.t(before) == b"::" and ctx.t(ctx.prev_code(before)) in names or using):
            continue
        fn = ctx.function_at(i) or next((f for f in ctx.functions if f.params[0] < i < f.params[1]), None)
        if fn is None:
            continue
        if t == b"this_grid" and ctx.t(ctx.next_code(i)) == b"(":
            close = ctx.match(ctx.next_code(i))
            after = ctx.next_code(close)
            if ctx.t(after) == b"." and ctx.t(ctx.next_code(after)) == b"sync":
                found[ctx.next_code(after)] = fn
                continue
            s = statement_start(ctx, i)
            var = next((ctx.text[ctx.prev_code(k)] for k in range(s, i)
                        if ctx.text[k] == b"=" and ctx.kinds[ctx.prev_code(k)] == IDENT), None)
        elif t == b"grid_group":
            v = ctx.next_code(i)
            while ctx.t(v) in (b"&", b"const"):
                v = ctx.next_code(v)
            var = ctx.text[v] if ctx.kinds[v] == IDENT else None
        else:
            continue
        if var is not None:
            for k in _var_syncs(ctx, var, i, fn):
                found[k] = fn
    for at in sorted(found):
        _judge_grid_sync(ctx, at, found[at])


def _var_syncs(ctx: Context, var: bytes, start: int, fn: Function) -> list[int]:
    """`var.sync()` and `cg::sync(var)` in ``fn`` after ``start``: the `sync` tokens."""
    out = []
    for k in range(max(start, fn.body[0]), fn.body[1]):
        if ctx.text[k] != var or ctx.kinds[k] != IDENT:
            continue
        nxt = ctx.next_code(k)
        if ctx.t(nxt) == b"." and ctx.t(ctx.next_code(nxt)) == b"sync":
            out.append(ctx.next_code(nxt))
        elif ctx.t(ctx.prev_code(k)) == b"(" and ctx.t(ctx.prev_code(ctx.prev_code(k))) == b"sync" \
                and ctx.t(nxt) == b")":
            out.append(ctx.prev_code(ctx.prev_code(k)))
    return out


def _launches(ctx: Context, name: bytes) -> tuple[list[int], list[int]]:
    """(plain launches, cooperative launches) of kernel ``name`` in this file, as token indices."""
    plain, coop = [], []
    for j in range(ctx.n - 2):
        t = ctx.text[j]
        if t == name and ctx.kinds[j] == IDENT and not ctx.device[j]:
            k = ctx.next_code(j)
            if ctx.t(k) == b"<":  # template arguments
                depth = 0
                while k < ctx.n:
                    if ctx.text[k] == b"<":
                        depth += 1
                    elif ctx.text[k] == b">":
                        depth -= 1
                        if depth == 0:
                            break
                    k += 1
                k = ctx.next_code(k)
            if ctx.t(k) == b"<<" and ctx.t(k + 1) == b"<":
                plain.append(j)
        elif t in _COOP_LAUNCH or t == b"hipLaunchKernelGGL":
            args = ctx.call_args(j)
            if args and any(ctx.text[k] == name for k in range(*args[0])):
                (coop if t in _COOP_LAUNCH else plain).append(j)
    return plain, coop


def _judge_grid_sync(ctx: Context, at: int, fn: Function) -> None:
    kernels = [fn] if fn.kernel else [g for g in ctx.functions if g.kernel and any(
        ctx.text[k] == ctx.text[fn.name_index] and ctx.is_call(k) for k in range(g.body[0], g.body[1]))]
    hip = bool(ctx.words & {b"hipLaunchKernelGGL", b"hipMalloc", b"hipDeviceSynchronize"}) or b"hip/hip_" in ctx.src
    coop_api = "`hipLaunchCooperativeKernel`" if hip else \
        "`cudaLaunchCooperativeKernel` (HIP: `hipLaunchCooperativeKernel`)"
    plain_lines, any_coop, edits = [], False, []
    for k in kernels:
        plain, coop = _launches(ctx, ctx.text[k.name_index])
        plain_lines += [ctx.lines.line_col(ctx.starts[j])[0] for j in plain]
        any_coop = any_coop or bool(coop)
        for j in plain:
            edit = _cooperative_launch(ctx, j, hip)
            if edit is not None:
                edits.append(edit)
    who = f"`{fn.name}`" if fn.kernel else f"`{fn.name}` (called by {', '.join(f'`{k.name}`' for k in kernels)})"
    if plain_lines:
        where = ", ".join(str(n) for n in sorted(set(plain_lines)))
        ctx.report(GRID, at, f"grid-wide `sync()` in {who}, not launched cooperatively "
                   f"({'lines' if ', ' in where else 'line'} {where}): use {coop_api}, arguments as a `void*` "
                   f"array, and a grid the device holds at once "
                   f"(`hipOccupancyMaxActiveBlocksPerMultiprocessor` times the CUs)", subject=fn.name,
                   edits=edits if len(edits) == len(set(plain_lines)) else [])
    elif not any_coop:
        ctx.report(GRID, at, f"grid-wide `sync()` in {who}: it works only when the kernel is launched with "
                   f"{coop_api} and the whole grid fits on the device at once; no launch of it is in this file",
                   severity="info", confidence="medium", subject=fn.name)


def _cooperative_launch(ctx: Context, j: int, hip: bool) -> Edit | None:
    """`k<<<g, b[, shm[, s]]>>>(x, y);` or `hipLaunchKernelGGL(k, g, b, shm, s, x, y);` as a statement of its own,
    every argument a plain variable -> `{ void* args_[] = {&x, &y}; cudaLaunchCooperativeKernel(k, g, b, args_,
    shm, s); }`."""
    if ctx.t(ctx.prev_code(j)) not in (b";", b"{", b"}"):
        return None
    if ctx.text[j] == b"hipLaunchKernelGGL":
        args = ctx.call_args(j)
        if not args or len(args) < 5:
            return None
        kernel = ctx.span_text(*args[0])
        config = [ctx.span_text(*a) for a in args[1:5]]
        call_args = args[5:]
        end = ctx.match(ctx.next_code(j))
    else:
        k = j
        while k < ctx.n and not (ctx.text[k] == b"<<" and ctx.t(k + 1) == b"<"):
            k += 1
        kernel = ctx.span_text(j, k)
        m = k + 2
        config, depth, start = [], 0, m
        while m < ctx.n and not (depth == 0 and ctx.text[m] == b">>" and ctx.t(m + 1) == b">"):
            t = ctx.text[m]
            if t in (b"(", b"[", b"{"):
                depth += 1
            elif t in (b")", b"]", b"}"):
                depth -= 1
            elif t == b"," and depth == 0:
                config.append(ctx.span_text(start, m))
                start = m + 1
            m += 1
        config.append(ctx.span_text(start, m))
        if m >= ctx.n or len(config) < 2:
            return None
        call_args = ctx.call_args(m + 1)
        if call_args is None:
            return None
        end = ctx.match(ctx.next_code(m + 1))
    if ctx.t(ctx.next_code(end)) != b";":
        return None
    names = []
    for a, b in call_args:
        toks = [k for k in range(a, b) if ctx.kinds[k] != 4]
        if len(toks) != 1 or ctx.kinds[toks[0]] != IDENT:
            return None
        names.append(b"&" + ctx.text[toks[0]])
    config = [c.strip() for c in config] + [b"0"] * (4 - len(config))
    func = b"reinterpret_cast<const void*>(" + kernel + b")" if hip else kernel
    api = b"hipLaunchCooperativeKernel" if hip else b"cudaLaunchCooperativeKernel"
    params = b"args_" if names else b"nullptr"
    decl = b"void* args_[] = {" + b", ".join(names) + b"}; " if names else b""
    new = b"{ " + decl + api + b"(" + b", ".join([func, config[0], config[1], params, config[2], config[3]]) + b"); }"
    return Edit(ctx.starts[j], ctx.ends[ctx.next_code(end)], new)
