"""Check 7: warp built-ins and headers with no HIP form for the targeted ROCm version."""

from __future__ import annotations

from hipport import directives as dirs
from hipport.audit.checks.common import is_32bit_type, is_full_mask32, operand_before, outer_decl, user_defined
from hipport.audit.checks.context import COMMENT, IDENT, KEYWORD, LITERAL, Context

RULE = "warp-builtin-unavailable"
_SYNC_TO_PLAIN = {b"__shfl_sync": "__shfl", b"__shfl_up_sync": "__shfl_up", b"__shfl_down_sync": "__shfl_down",
                  b"__shfl_xor_sync": "__shfl_xor", b"__ballot_sync": "__ballot", b"__any_sync": "__any",
                  b"__all_sync": "__all"}
_NEED_70 = {b"__match_any_sync", b"__match_all_sync", b"__reduce_add_sync", b"__reduce_min_sync",
            b"__reduce_max_sync", b"__reduce_and_sync", b"__reduce_or_sync", b"__reduce_xor_sync"}
_HEADERS = {b"mma.h": "warp matrix functions have no HIP form; port to rocWMMA",
            b"cuda/pipeline": "no HIP counterpart; use plain loads and `__syncthreads()`",
            b"cuda_pipeline.h": "no HIP counterpart; use plain loads and `__syncthreads()`",
            b"cuda/barrier": "no HIP counterpart; use `__syncthreads()`"}
# `cooperative_groups/reduce.h`, `scan.h` and `memcpy_async.h` are judged by `cg-api-unavailable` (coop_groups.py).


AMBIGUOUS = "builtin-overload-ambiguous"
# HIP's two overloads of each (ROCm 5.2's amd_device_functions.h), the argument classes that fit neither exactly,
# and the type CUDA's single declaration converts the argument to.
_OVERLOADED = {b"__ffs": ({"long", "long long"}, "int"), b"__ffsll": ({"long", "int"}, "long long")}
_LONG_NAMES = {b"uint64_t", b"int64_t", b"size_t", b"ssize_t", b"ptrdiff_t", b"intptr_t", b"uintptr_t"}
_INT_NAMES = {b"int", b"unsigned", b"uint32_t", b"int32_t", b"uint", b"short", b"char", b"uint16_t", b"int16_t",
              b"uint8_t", b"int8_t", b"bool", b"signed"}
_NOT_TYPE_WORDS = {b"const", b"volatile", b"static", b"__shared__", b"register", b"constexpr", b"extern",
                   b"__device__", b"__constant__", b"__restrict__", b"__restrict", b"*", b"&"}


def _v(t: tuple[int, ...]) -> str:
    return ".".join(map(str, t))


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards:
        return
    rocm = ctx.rocm
    sync = ctx.sync_state()
    wmma_lines: set[int] = set()
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if target and target[2] in _HEADERS:
            ctx.report(RULE, d.first, f"`<{target[2].decode()}>`: {_HEADERS[target[2]]}", severity="error",
                       subject=target[2].decode(), offset=target[0])
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT:
            continue
        word = ctx.text[i]
        if word in (b"wmma", b"nvcuda") and ctx.t(ctx.next_code(i)) == b"::":
            line = ctx.lines.line_col(ctx.starts[i])[0]
            if ctx.t(ctx.prev_code(i)) != b"::" and line not in wmma_lines:
                wmma_lines.add(line)
                ctx.report(RULE, i, f"`{word.decode()}::` warp matrix functions have no HIP form; port to rocWMMA",
                           severity="error", subject="wmma")
            continue
        if not ctx.is_call(i) or user_defined(ctx, word):
            continue
        if word in _SYNC_TO_PLAIN and sync == "absent":
            _sync_before_62(ctx, i, word)
        elif word in _SYNC_TO_PLAIN and sync == "opt-in" and b"hip/hip_" in ctx.src:
            # HIP code only: in CUDA code convert writes the mask-free forms for an opt-in release
            ctx.report(RULE, i, f"`{word.decode()}` needs `HIP_ENABLE_WARP_SYNC_BUILTINS` defined in ROCm "
                       f"{_v(rocm)} (opt-in there; on by default from 7.0)", severity="warning",
                       subject=word.decode())
        elif word in _NEED_70 and rocm < (7, 0):
            ctx.report(RULE, i, f"`{word.decode()}` has no HIP form before ROCm 7.0 (targeting {_v(rocm)})",
                       severity="error", subject=word.decode())
        elif word == b"__syncwarp":
            _syncwarp(ctx, i)
    if AMBIGUOUS in ctx.hazards and ctx.words & set(_OVERLOADED):
        for i in range(ctx.n):
            if ctx.text[i] in _OVERLOADED and ctx.kinds[i] == IDENT and ctx.is_call(i) and \
                    not user_defined(ctx, ctx.text[i]):
                _overload(ctx, i)


def _type_class(words: list[bytes]) -> str | None:
    """"long long", "long" (64-bit `long` and its typedefs on Linux) or "int" (32 bits or narrower) for the
    words of a declaration or cast; None for anything else (a typedef hipport does not know, `auto`)."""
    words = [w for w in words if w not in _NOT_TYPE_WORDS]
    if not words:
        return None
    if words.count(b"long") >= 2:
        return "long long"
    if b"long" in words or words[-1] in _LONG_NAMES:
        return "long"
    if all(w in _INT_NAMES for w in words):
        return "int"
    return None


def _arg_class(ctx: Context, a: int, b: int) -> tuple[str, str] | None:
    """(class, how it was told) of a call argument: a literal, a cast, or a variable (possibly indexed) whose
    declaration hipport can read; None when it cannot tell."""
    code = [k for k in range(a, b) if ctx.kinds[k] != COMMENT]
    if not code:
        return None
    first = code[0]
    if len(code) == 1 and ctx.kinds[first] == LITERAL:
        text = ctx.text[first].lower()
        if not text[:1].isdigit() or b"." in text or (b"e" in text and not text.startswith(b"0x")):
            return None
        suffix = text.lstrip(b"0123456789abcdefx")
        cls = "long long" if b"ll" in suffix else "long" if b"l" in suffix else "int"
        return cls, f"the literal `{ctx.text[first].decode('latin-1')}`"
    if ctx.text[first] == b"(" and ctx.match(first) > first:
        close = ctx.match(first)
        inner = [ctx.text[k] for k in range(first + 1, close) if ctx.kinds[k] != COMMENT]
        if inner and all(ctx.kinds[k] in (IDENT, KEYWORD) or ctx.text[k] in (b"*",) for k in range(first + 1, close)
                         if ctx.kinds[k] != COMMENT) and close < code[-1]:
            cls = _type_class(inner)
            return (cls, f"the cast to `{b' '.join(inner).decode('latin-1')}`") if cls else None
        return None
    if ctx.kinds[first] != IDENT or operand_before(ctx, code[-1] + 1) != first:
        return None
    if any(ctx.text[k] in (b".", b"->") for k in code) or (len(code) > 1 and ctx.text[code[1]] == b"("):
        return None  # a member or a call: the type is not written here
    fn = ctx.function_at(a)
    decl = ctx.find_decl(ctx.text[first], first, fn.params if fn else None)
    if decl is None:
        return None
    words = ctx.decl_type_words(decl)
    indexed = len(code) > 1
    pointer = b"*" in words or ctx.t(ctx.next_code(decl)) == b"["
    if indexed != pointer:
        return None  # `p` for a pointer, `v[i]` on a value: not a plain element read
    cls = _type_class(words)
    line = ctx.lines.line_col(ctx.starts[decl])[0]
    return (cls, f"`{ctx.text[first].decode('latin-1')}` (declared `{b' '.join(w for w in words if w not in _NOT_TYPE_WORDS).decode('latin-1')}` "
                 f"on line {line})") if cls else None


def _overload(ctx: Context, i: int) -> None:
    args = ctx.call_args(i)
    if not args or len(args) != 1:
        return
    word = ctx.text[i]
    pos = ctx.starts[i]
    if any(f.rule_id == "ballot-32bit" and ctx.lines.line_col(pos) == (f.line, f.col) for f in ctx.findings):
        return  # a 64-bit ballot given to `__ffs`: ballot-32bit's `__ffsll` is the fix
    found = _arg_class(ctx, *args[0])
    if found is None:
        return
    cls, how = found
    bad, cast = _OVERLOADED[word]
    if cls not in bad:
        return
    a, b = args[0]
    code = [k for k in range(a, b) if ctx.kinds[k] != COMMENT]
    simple = operand_before(ctx, code[-1] + 1) == code[0] and ctx.text[code[0]] != b"("
    edits = [ctx.edit(code[0], f"({cast}){ctx.text[code[0]].decode('latin-1')}")] if simple else \
        [ctx.edit(code[0], f"({cast})(" + ctx.text[code[0]].decode("latin-1")),
         ctx.edit(code[-1], ctx.text[code[-1]].decode("latin-1") + ")")]
    ctx.report(AMBIGUOUS, i, f"`{word.decode()}` on {how} is ambiguous in HIP, which overloads it for "
               f"`{'int` and `unsigned int' if word == b'__ffs' else 'long long` and `unsigned long long'}`; cast "
               f"the argument to `{cast}` as CUDA converts it", edits=edits, subject=word.decode())


def _sync_before_62(ctx: Context, i: int, word: bytes) -> None:
    args = ctx.call_args(i)
    plain = _SYNC_TO_PLAIN[word]
    edits = []
    if args and len(args) >= 2:
        # `__shfl_down_sync(mask, v, d)` -> `__shfl_down(v, d)`: the mask has no meaning without the _sync form
        edits = [ctx.edit(i, plain), ctx.edit(ctx.next_code(i) + 1, b"", args[1][0] - 1)]
        edits[1] = type(edits[1])(ctx.ends[ctx.next_code(i)], ctx.starts[args[1][0]], b"")
    ctx.report(RULE, i, f"`{word.decode()}` does not exist before ROCm 6.2 (targeting {_v(ctx.rocm)}); call "
               f"`{plain}` without the mask", severity="error", edits=edits, subject=word.decode())


_SYNCWARP_7_0 = ('(__builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"), __builtin_amdgcn_wave_barrier(), '
                 '__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront"))')


def _mask_width(ctx: Context, first: int, last: int) -> int | None:
    """64 or 32 when the mask tokens[first:last] is certainly that wide (a literal, or a name by its declared
    type); None when it cannot be told."""
    code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
    if len(code) == 1 and ctx.kinds[code[0]] == LITERAL:
        return 64 if b"ll" in ctx.text[code[0]].lower() else 32
    if len(code) != 1 or ctx.kinds[code[0]] != IDENT:
        return None
    fn = ctx.function_at(code[0])
    decl = ctx.find_decl(ctx.text[code[0]], code[0], fn.params if fn else None)
    if decl is None:
        decl = outer_decl(ctx, ctx.text[code[0]], code[0])
    narrow = is_32bit_type(ctx, decl) if decl is not None else None
    return None if narrow is None else 32 if narrow else 64


def _syncwarp(ctx: Context, i: int) -> None:
    args = ctx.call_args(i) or []
    partial = False
    if args:
        is32, value = is_full_mask32(ctx, *args[0])
        text = ctx.span_text(*args[0]).replace(b" ", b"").lower()
        full = value == 0xFFFFFFFF or text in (b"0xffffffffffffffffull", b"~0ull", b"__activemask()", b"-1")
        partial = not full
    if partial and ctx.rocm >= (7, 0):
        # ROCm 7's `__syncwarp(mask)` is a wavefront barrier that checks (without NDEBUG) that `mask` is the lanes
        # calling it: a 64-bit mask of the lanes inside the branch (CTranslate2's `lane < blockDim.x / 32`) is right.
        width = _mask_width(ctx, *args[0])
        if width == 64:
            ctx.report(RULE, i, "`__syncwarp` with a partial mask: ROCm 7 makes it a barrier of the whole wavefront "
                       "and, in builds without `NDEBUG`, traps unless the mask is exactly the lanes that call it",
                       severity="info", confidence="medium", subject="__syncwarp")
        elif width is None:  # a 32-bit one is `warp-mask-32bit`'s compile error
            ctx.report(RULE, i, "`__syncwarp` with a partial mask: ROCm 7 needs it 64-bit and, in builds without "
                       "`NDEBUG`, traps unless it is exactly the lanes that call it; check both",
                       severity="warning", confidence="medium", subject="__syncwarp")
    elif partial:
        ctx.report(RULE, i, "`__syncwarp` with a partial mask: HIP lanes never run independently, so this cannot "
                   "synchronise a subset; restructure the code around whole-wavefront steps",
                   severity="warning", confidence="medium", subject="__syncwarp")
    elif ctx.rocm < (7, 0):
        end = ctx.match(ctx.next_code(i))
        # ROCm 7.0's own __syncwarp: the barrier alone would let the compiler move loads and stores across it
        ctx.report(RULE, i, f"`__syncwarp` has no HIP form before ROCm 7.0 (targeting {_v(ctx.rocm)}); write what "
                   f"ROCm 7.0's does, a wave barrier between a release and an acquire fence (`hipport convert` "
                   f"defines a stand-in `__syncwarp` instead)",
                   severity="error", edits=[ctx.edit(i, _SYNCWARP_7_0, end)], subject="__syncwarp")
