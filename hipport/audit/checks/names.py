"""Check 9: user definitions that take the name of a HIP built-in."""

from __future__ import annotations

import os
import re

from hipport import directives as dirs
from hipport.audit.checks.context import COMMENT, IDENT, KEYWORD, LITERAL, Context, int_value
from hipport.model import Edit
from hipport.wavefront import load_wave_rules

RULE = "hip-name-collision"
COMPAT = "compat-macro-wrong"
_BUILTINS = {b"__lane_id", b"warpSize", b"__shfl", b"__shfl_up", b"__shfl_down", b"__shfl_xor", b"__ballot",
             b"__activemask", b"__any", b"__all", b"__popcll", b"__ffsll", b"__lanemask_lt", b"__lanemask_gt",
             b"__lanemask_eq", b"__syncwarp", b"__shfl_sync", b"__shfl_down_sync", b"__shfl_up_sync",
             b"__shfl_xor_sync", b"__ballot_sync", b"__fns32", b"__fns64", b"__ldg"}
_DECL_WORDS = {b"__device__", b"__host__", b"__forceinline__", b"inline", b"static", b"int", b"unsigned", b"void",
               b"float", b"double", b"long", b"auto", b"T", b"constexpr", b"const", b"__inline__", b"uint32_t",
               b">"}


# A definition under a test of the HIP release is a stand-in for releases that lack the built-in (hipport's own
# `HIPPORT_SHIM_` blocks, or the project's): it cannot collide where HIP has the name.
_RELEASE_TESTS = (b"HIP_VERSION", b"HIPPORT_SHIM_")


def release_guarded(ctx: Context) -> list[tuple[int, int]]:
    """Token ranges inside `#if` blocks whose condition tests the HIP release."""
    ranges, stack = [], []
    for d in ctx.structure.directives:
        if d.name in (b"if", b"ifdef", b"ifndef"):
            stack.append((d.last, any(t in ctx.src[d.start:d.end] for t in _RELEASE_TESTS)))
        elif d.name in (b"elif", b"else") and stack:
            start, guarded = stack.pop()
            if guarded:
                ranges.append((start, d.first))
            stack.append((d.last, False))
        elif d.name == b"endif" and stack:
            start, guarded = stack.pop()
            if guarded:
                ranges.append((start, d.first))
    return ranges


_SHUFFLES = {b"__shfl", b"__shfl_up", b"__shfl_down", b"__shfl_xor", b"__shfl_sync", b"__shfl_down_sync",
             b"__shfl_up_sync", b"__shfl_xor_sync"}
_VECTOR = re.compile(rb"^(?:u?char|u?short|u?int|u?long|longlong|ulonglong|float|double|__half|half|"
                     rb"__nv_bfloat16|__hip_bfloat16)[1-4]$")


def _vector_overload(ctx: Context, open_: int) -> bool:
    """A shuffle defined for a vector or struct value (`float4 __shfl_down(float4 v, ...)`): HIP overloads its
    shuffles for scalars only, so this adds an overload rather than clashing with one."""
    close = ctx.match(open_)
    if close < 0:
        return False
    structs = {ctx.text[ctx.next_code(k)] for k in range(ctx.n) if ctx.text[k] in (b"struct", b"class")}
    # the value parameter: the first one, or the second after a `*_sync` mask
    params, start, depth = [], open_ + 1, 0
    for k in range(open_ + 1, close + 1):
        t = ctx.text[k]
        if t in (b"(", b"<", b"["):
            depth += 1
        elif t in (b")", b">", b"]") and k != close:
            depth -= 1
        if depth == 0 and (t == b"," or k == close):
            params.append((start, k))
            start = k + 1
    value = 1 if ctx.text[ctx.prev_code(open_)].endswith(b"_sync") else 0
    if len(params) <= value:
        return False
    words = [ctx.text[k] for k in range(*params[value]) if ctx.kinds[k] == IDENT]
    return any(_VECTOR.match(w) or w in structs for w in words[:-1])


# HIP's own warp built-ins a compatibility macro maps the CUDA names onto, and where their width goes.
_HIP_SHUFFLES = {b"__shfl": 2, b"__shfl_up": 2, b"__shfl_down": 2, b"__shfl_xor": 2}
_HIP_TARGETS = {*_HIP_SHUFFLES, b"__ballot", b"__any", b"__all", b"__activemask", b"__syncwarp", b"__lane_id",
                b"__builtin_amdgcn_wave_barrier", b"__builtin_amdgcn_s_barrier", b"__ballot_sync", b"__any_sync",
                b"__all_sync", b"__shfl_sync", b"__shfl_up_sync", b"__shfl_down_sync", b"__shfl_xor_sync"}
_NARROW = {b"unsigned", b"int", b"uint32_t", b"int32_t", b"unsigned int"}


def _macro_params(ctx: Context, d) -> tuple[list[bytes], int] | None:
    """Parameter names of a function-like `#define` and the index of its body's first token (None if
    object-like)."""
    k = d.first + 2
    if not (k + 1 < d.last and ctx.text[k + 1] == b"(" and ctx.starts[k + 1] == ctx.ends[k]):
        return None
    close = ctx.match(k + 1)
    if close < 0:
        return None
    return [ctx.text[j] for j in range(k + 2, close) if ctx.kinds[j] == IDENT], close + 1


def _args(ctx: Context, open_: int, stop: int) -> list[list[int]]:
    close = ctx.match(open_)
    if close < 0 or close > stop:
        return []
    out, cur, depth = [], [], 0
    for j in range(open_ + 1, close):
        t = ctx.text[j]
        if t in (b"(", b"[", b"{"):
            depth += 1
        elif t in (b")", b"]", b"}"):
            depth -= 1
        if depth == 0 and t == b",":
            out.append(cur)
            cur = []
        elif ctx.kinds[j] != COMMENT:
            cur.append(j)
    out.append(cur)
    return out


def compat_mapping(ctx: Context, d) -> list[str] | None:
    """For `#define <CUDA warp built-in>(...) <HIP form>`: what is wrong with the mapping (empty when it is
    right), or None when the body maps onto no HIP warp built-in (an ordinary redefinition)."""
    shape = _macro_params(ctx, d)
    name = ctx.text[d.first + 2]
    params, body = shape if shape is not None else ([], d.first + 3)
    targets = [j for j in range(body, d.last) if ctx.text[j] in _HIP_TARGETS and ctx.t(j + 1) == b"("]
    if not targets:
        if name == b"__activemask" and any(int_value(ctx.text[j].rstrip(b"uU")) == 0xFFFFFFFF
                                           for j in range(body, d.last) if ctx.kinds[j] == LITERAL):
            return ["it gives a 32-bit mask (`0xffffffff`): lanes 32-63 are left out"]
        return None
    problems = []
    mask = params[0] if name.endswith(b"_sync") and params and name != b"__syncwarp" else None
    for j in targets:
        target = ctx.text[j]
        args = _args(ctx, j + 1, d.last)
        if target in _HIP_SHUFFLES and args:
            first = [ctx.text[k] for k in args[0]]
            if mask is not None and first == [mask]:
                problems.append(f"it passes the mask `{mask.decode()}` where `{target.decode()}` takes the value")
            width = _HIP_SHUFFLES[target]
            if len(args) > width and [ctx.text[k] for k in args[width]] == [b"32"]:
                problems.append(f"it gives `{target.decode()}` a width of 32: on a 64-lane wavefront it "
                                f"shuffles within each half")
        if target in (b"__ballot", b"__activemask", b"__ballot_sync"):
            before = ctx.prev_code(j)
            if ctx.t(before) == b")":
                opened = ctx.match(before)
                cast = b" ".join(ctx.text[k] for k in range(opened + 1, before))
                if cast in _NARROW:
                    problems.append(f"it narrows `{target.decode()}` to `{cast.decode()}`: lanes 32-63 are lost")
    return problems


# Warp built-ins that return nothing and only order the lanes of a wavefront, which run in lockstep on AMD GPUs:
# a project's `#define __syncwarp()` that expands to nothing is its stand-in for a release without it (HIP has it
# from ROCm 7.0), not a clash, as long as no HIP header comes after it (ROCm 7.2's amd_warp_sync_functions.h then
# fails to compile: `void __syncwarp() {` becomes `void  {`, checked with rocm7-hipcc).
_BARRIERS = {b"__syncwarp"}
_NOOP = {b"", b"do{}while(0)", b"((void)0)", b"(void)0", b"(void)(0)", b"{}"}


def _noop_barrier(ctx: Context, name: bytes, d) -> bool:
    """`#define __syncwarp()` (or `__syncwarp(mask)`) expanding to nothing, and every call of it passes as many
    arguments as it takes (a `__syncwarp(mask)` call of a macro without parameters does not compile)."""
    shape = _macro_params(ctx, d)
    if name not in _BARRIERS or shape is None:
        return False
    params, body = shape
    if b"".join(ctx.text[j] for j in range(body, d.last) if ctx.kinds[j] != COMMENT) not in _NOOP:
        return False
    for i in range(ctx.n):
        if ctx.text[i] == name and not ctx.in_directive[i] and ctx.t(ctx.next_code(i)) == b"(":
            if len(_args(ctx, ctx.next_code(i), ctx.n)) != max(len(params), 1) or not params and _args(
                    ctx, ctx.next_code(i), ctx.n) != [[]]:
                return False
    return True


def _system_include_after(ctx: Context, d) -> bool:
    """An `#include <...>` after the directive ``d`` that can be compiled with it (not in another branch of an `#if`
    around it, `#ifdef USE_ROCM ... #define ... #else #include <cuda_runtime.h>`): a HIP header there sees it."""
    rel, other_branch = 0, None  # depth relative to d; the depth of an `#if` whose other branch the walk is in
    for later in ctx.structure.directives:
        if later.first <= d.first:
            continue
        if later.name in (b"if", b"ifdef", b"ifndef"):
            rel += 1
        elif later.name == b"endif":
            if other_branch == rel:
                other_branch = None
            rel -= 1
        elif later.name in (b"elif", b"else"):
            if rel <= 0 and other_branch is None:
                other_branch = rel
        elif later.name == b"include" and other_branch is None and b"<" in ctx.src[later.start:later.end]:
            return True
    return False


def _block_scope(ctx: Context, i: int) -> bool:
    """Token ``i`` sits in a function body or a block inside one: a variable declared there shadows HIP's
    `warpSize` for that block only (`int warpSize = getWarpSizeCurrentDevice();` in host code) and collides with
    nothing."""
    depth = 0
    for k in range(i - 1, -1, -1):
        t = ctx.text[k]
        if ctx.kinds[k] == COMMENT or ctx.in_directive[k]:
            continue
        if t == b"}":
            depth += 1
        elif t == b"{":
            if depth:
                depth -= 1
            elif ctx.t(ctx.prev_code(k)) in (b")", b"else", b"do", b"try", b"const", b"noexcept", b"override"):
                return True
    return False


def _uses(ctx: Context, name: bytes) -> list[int]:
    return [ctx.lines.line_col(ctx.starts[i])[0]
            for i in range(ctx.n) if ctx.text[i] == name and not ctx.in_directive[i] and ctx.kinds[i] == IDENT]


def check(ctx: Context) -> None:
    sync = {n.encode() for n in load_wave_rules().sync_names}
    if RULE not in ctx.hazards or COMPAT not in ctx.hazards or not (ctx.words & (_BUILTINS | sync)):
        return
    for name, d in ctx.macros.items():
        if name not in _BUILTINS:
            continue
        problems = compat_mapping(ctx, d)
        if problems == []:
            continue  # a compatibility macro onto HIP's correct form: the AMD build means it
        if problems is None and _noop_barrier(ctx, name, d) and not _system_include_after(ctx, d):
            continue  # the project's no-op stand-in, defined after HIP's headers: its own code only
        if problems is None and shape_is_object(ctx, d) and _after_hip_headers(ctx, d):
            continue  # `#define warpSize 32` (bm3d): every build reads HIP's headers before it, none after
        if problems:
            uses = _uses(ctx, name)
            where = (f"; used at line{'s' if len(uses) > 1 else ''} {', '.join(map(str, uses))}" if uses else "")
            ctx.report(COMPAT, d.first + 2, f"`#define {name.decode()}` maps the CUDA built-in wrongly for a "
                       f"64-lane wavefront: {'; '.join(dict.fromkeys(problems))}{where}", subject=name.decode())
            continue
        ctx.report(RULE, d.first + 2, f"`#define {name.decode()}` redefines a HIP built-in and rewrites HIP's "
                       f"own headers too; remove it or rename it", subject=name.decode())
    guarded = None
    wave = load_wave_rules()
    for i in range(ctx.n - 1):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in _BUILTINS | sync or ctx.in_directive[i] or ctx.device[i]:
            continue
        if ctx.text[i] in sync and ctx.rocm < wave.sync_from:
            continue  # HIP declares it by default only from 7.0: before, the project's own is the only one
        if guarded is None:
            guarded = release_guarded(ctx)
        if any(a <= i < b for a, b in guarded):
            continue
        prev = ctx.prev_code(i)
        if ctx.t(prev) in (b".", b"->", b"::") or ctx.kinds[prev] not in (IDENT, KEYWORD) and ctx.t(prev) != b">":
            continue
        if ctx.t(prev) not in _DECL_WORDS and ctx.kinds[prev] != IDENT:
            continue
        nxt = ctx.t(ctx.next_code(i))
        if nxt == b"(" and ctx.text[i] in _SHUFFLES and _vector_overload(ctx, ctx.next_code(i)):
            continue
        if nxt == b"(":
            what = "function"
        elif nxt in (b"=", b";") and ctx.text[i] == b"warpSize":
            if _block_scope(ctx, i):
                continue
            what = "variable"
        else:
            continue
        if what == "function" and ctx.text[i] in sync:
            # HIP's `__syncwarp()` and `__activemask()` take nothing: the same signature is a redefinition (or,
            # `static`, "static declaration follows non-static"); another is an overload that compiles and
            # takes the calls HIP's built-in would have
            close = ctx.match(nxt_i := ctx.next_code(i))
            same = close == ctx.next_code(nxt_i) or ctx.t(ctx.next_code(nxt_i)) == b"void"
            how = "clashes with it there" if same else "takes the calls HIP's would there (another overload)"
            ctx.report(RULE, i, f"`{ctx.text[i].decode()}` is HIP's own from ROCm {_v(wave.sync_from)}: this "
                       f"definition {how}; keep it for older releases behind `#if {wave.sync_guard}`",
                       edits=_release_guard(ctx, i, wave), subject=ctx.text[i].decode(),
                       severity=None if same else "warning")
            continue
        ctx.report(RULE, i, f"this {what} `{ctx.text[i].decode()}` collides with the HIP built-in of that name; "
                   f"delete it where HIP's does the job, or rename it", subject=ctx.text[i].decode())


def _release_guard(ctx: Context, i: int, wave) -> list:
    """The definition of the function named at ``i`` behind the release guard of rules/wavefront.toml, with
    `<hip/hip_version.h>` before it where no include before it defines `HIP_VERSION_MAJOR`; [] when the definition
    does not start and end its lines (a guard needs lines of its own)."""
    fn = next((f for f in ctx.functions if f.name_index == i), None)
    if fn is None:
        return []
    first = i
    while True:
        p = ctx.prev_code(first)
        if p < 0 or ctx.in_directive[p] or ctx.text[p] in (b";", b"{", b"}", b")", b"="):
            break
        first = p
    start = ctx.lines.line_start(ctx.starts[first])
    end = ctx.lines.line_end(ctx.ends[fn.body[1]])
    end = len(ctx.src) if end == -1 else end
    if end > 0 and ctx.src[end - 1:end] == b"\r":
        end -= 1
    if ctx.src[start:ctx.starts[first]].strip() or ctx.src[ctx.ends[fn.body[1]]:end].strip() \
            or end == len(ctx.src):
        return []
    nl = b"\r\n" if ctx.src.find(b"\r\n") >= 0 else b"\n"
    include = not any(d.start < start and (t := dirs.include_target(ctx.tokens, d)) is not None
                      and t[2].decode("latin-1") in wave.sync_includes for d in ctx.structure.directives)
    head = (f"#include <{wave.sync_include}>".encode() + nl if include else b"") + \
        f"#if {wave.sync_guard}".encode() + nl
    return [Edit(start, start, head), Edit(end, end, nl + b"#endif")]


def _v(version: tuple) -> str:
    return ".".join(map(str, version[:2]))


# Where a translation unit reads HIP's runtime header (convert writes `<hip/hip_runtime.h>` for these), and the
# headers of the GPU stack that a macro named like a HIP built-in would rewrite if they came after it.
_RUNTIME_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*<(?:cuda\.h|cuda_runtime\.h|cuda_runtime_api\.h|'
                              rb'hip/hip_runtime\.h|hip/hip_runtime_api\.h)>', re.M)
_GPU_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*<(?:cuda|cu[a-z]|curand|cublas|cufft|cusparse|cusolver|cudnn|'
                          rb'nvrtc|nvtx|nv/|cooperative_groups|thrust/|cub/|hip|rocprim|rocrand|rccl|nccl|sm_\d|'
                          rb'device_|vector_types|mma|crt/)', re.M)
_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
_SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".cpp", ".cc", ".cxx", ".hip", ".inl")


def shape_is_object(ctx: Context, d) -> bool:
    return _macro_params(ctx, d) is None


def _after_hip_headers(ctx: Context, d) -> bool:
    """Every translation unit that compiles the definition ``d`` has read HIP's runtime header before it and reads
    no header of the GPU stack after it: the file itself, or, for a header, each file beside it that includes it
    (and theirs, for a header included by headers), so the macro reaches only the project's own code."""
    return _covered(ctx.src, ctx.path, ctx.starts[d.first], 0)


def _covered(src: bytes, path: str, pos: int, depth: int) -> bool:
    if not _nothing_gpu_after(src, path, pos, 0):
        return False
    if any(m.start() < pos for m in _RUNTIME_INCLUDE.finditer(src)):
        return True
    if depth >= 4 or not path or path.startswith("<"):
        return False
    includers = _includers(path)
    return bool(includers) and all(_covered(text, other, at, depth + 1) for other, text, at in includers)


def _nothing_gpu_after(src: bytes, path: str, pos: int, depth: int) -> bool:
    """No GPU header included after ``pos``, directly or through the project's headers included after it."""
    if any(m.start() > pos for m in _GPU_INCLUDE.finditer(src)):
        return False
    if depth >= 4 or not path or path.startswith("<"):
        return True
    here = os.path.dirname(os.path.abspath(path))
    for m in _QUOTED_INCLUDE.finditer(src):
        if m.start() <= pos:
            continue
        header = os.path.join(here, m.group(1).decode("utf-8", "replace"))
        try:
            with open(header, "rb") as fh:
                text = fh.read(2_000_000)
        except OSError:
            continue
        if not _nothing_gpu_after(text, header, -1, depth + 1):
            return False
    return True


def _includers(path: str) -> list[tuple[str, bytes, int]]:
    """(file, its bytes, offset of the include) of each source beside ``path`` that includes it with quotes."""
    folder, base = os.path.split(os.path.abspath(path))
    out = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    for name in names:
        other = os.path.join(folder, name)
        if other == os.path.abspath(path) or not name.endswith(_SOURCE_SUFFIXES):
            continue
        try:
            with open(other, "rb") as fh:
                text = fh.read(2_000_000)
        except OSError:
            continue
        for m in _QUOTED_INCLUDE.finditer(text):
            if os.path.basename(m.group(1).decode("utf-8", "replace")) == base:
                out.append((other, text, m.start()))
                break
    return out
