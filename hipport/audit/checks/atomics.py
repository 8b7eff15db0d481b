"""Check 10: atomics whose behaviour on AMD depends on the memory or the type: system scope, floating-point add,
16-bit float types, and non-add/exchange/CAS operations on host or managed memory."""

from __future__ import annotations

from hipport.audit.checks.common import user_defined
from hipport.audit.checks.context import COMMENT, IDENT, Allocation, Context

SYSTEM = "atomic-system-scope"
FLOAT = "atomic-float-add"
HALF = "atomic-half-type"
PCIE = "atomic-pcie"

_ADDS = {b"atomicAdd", b"atomicAdd_system", b"atomicAdd_block"}
_PCIE_OPS = {b"atomicOr", b"atomicAnd", b"atomicXor", b"atomicMin", b"atomicMax", b"atomicInc", b"atomicDec",
             b"atomicSub"}
_ATOMICS = _ADDS | _PCIE_OPS | {b"atomicExch", b"atomicCAS"}
_HALF_TYPES = {"__half", "half", "__half2", "half2", "__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162",
               "__hip_bfloat16", "hip_bfloat16", "__hip_bfloat162"}
_CAST = {b"reinterpret_cast", b"static_cast", b"const_cast"}

_KIND_TEXT = {
    "device": "coarse-grained device memory",
    "device-flags": "device memory with the flags given there",
    "device-finegrained": "fine-grained device memory",
    "managed": "managed memory (its coherence depends on the system's XNACK and migration)",
    "host": "coherent (fine-grained) pinned host memory",
    "host-noncoherent": "non-coherent pinned host memory",
}


def _all_names(ctx: Context) -> set[bytes]:
    return {w for w in ctx.words if w.startswith(b"atomic") or w == b"__threadfence_system"}


def check(ctx: Context) -> None:
    names = _all_names(ctx)
    if not names:
        return
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT or not ctx.device[i]:
            continue
        word = ctx.text[i]
        if word == b"__threadfence_system" and ctx.is_call(i):
            ctx.report(SYSTEM, i, "`__threadfence_system()` orders memory for the host and other devices only on "
                       "fine-grained (coherent) memory; `hipMalloc` memory is coarse-grained",
                       confidence="medium", subject="__threadfence_system")
            continue
        base = word[:-7] if word.endswith(b"_system") else word
        if base not in _ATOMICS or not ctx.is_call(i) or user_defined(ctx, word):
            continue
        args = ctx.call_args(i)
        if not args:
            continue
        fn = ctx.function_at(i)
        root = _pointer_root(ctx, *args[0])
        alloc, host_name = ctx.allocation_of(root.decode("latin-1"), fn) if root else (None, "")
        pointee, from_parse = _pointee(ctx, i, root, fn)
        shared = root is not None and _is_shared(ctx, root, i, fn)
        if word.endswith(b"_system"):
            _system(ctx, i, word, root, alloc, host_name)
        if base == b"atomicAdd" and pointee in _HALF_TYPES:
            ctx.report(HALF, i, f"`{word.decode()}` on `{pointee}` has no HIP overload; use a CAS loop on the "
                       f"containing 32-bit word, or accumulate in `float`",
                       confidence="high" if from_parse else "medium", subject=pointee)
            continue
        if base == b"atomicAdd" and pointee in ("float", "double") and not shared:
            _float_add(ctx, i, word, pointee, alloc, host_name, root, from_parse)
        if base in _PCIE_OPS and alloc is not None and alloc.kind in ("host", "host-noncoherent", "managed"):
            ctx.report(PCIE, i, f"`{word.decode()}` on `{host_name}` ({alloc.api}, line {alloc.line}): over PCIe "
                       f"only add, exchange and CAS are atomic; keep this data in `hipMalloc` memory",
                       subject=word.decode())


def _pointer_root(ctx: Context, a: int, b: int) -> bytes | None:
    """The variable an atomic's address comes from: `p`, `&p[i]`, `p + i`, `&s.field`."""
    for k in range(a, b):
        if ctx.kinds[k] == IDENT and ctx.text[k] not in _CAST:
            if ctx.t(ctx.next_code(k)) == b"<" and ctx.text[k] in _CAST:
                continue
            return ctx.text[k]
    return None


def _pointee(ctx: Context, i: int, root: bytes | None, fn) -> tuple[str | None, bool]:
    """Type the atomic works on: from the overload clang picks, else from the root's declaration."""
    parsed = ctx.parsed()
    if parsed is not None:
        call = parsed.calls.get(ctx.starts[i])
        if call is not None and call.param_types:
            t = call.param_types[0].replace("const ", "").replace("volatile ", "").rstrip(" *")
            return t, True
    if root is None:
        return None, False
    decl = ctx.find_decl(root, i, fn.params if fn else None)
    if decl is None:
        return None, False
    words = [w.decode("latin-1") for w in ctx.decl_type_words(decl) if w not in (b"const", b"volatile", b"*",
                                                                             b"__restrict__", b"__shared__")]
    for w in reversed(words):
        if w in ("float", "double") or w in _HALF_TYPES:
            return w, False
    return None, False


def _is_shared(ctx: Context, root: bytes, i: int, fn) -> bool:
    decl = ctx.find_decl(root, i, fn.params if fn else None)
    if decl is None:
        return False
    return b"__shared__" in ctx.decl_type_words(decl)


def _where(alloc: Allocation | None, host_name: str) -> str:
    if alloc is None:
        return ""
    return f"`{host_name}` comes from `{alloc.api}` (line {alloc.line}): {_KIND_TEXT.get(alloc.kind, alloc.kind)}"


def _system(ctx: Context, i: int, word: bytes, root, alloc, host_name: str) -> None:
    if alloc is not None and alloc.kind in ("host", "device-finegrained"):
        return  # coherent memory: exactly what system scope needs
    if alloc is not None:
        msg = f"`{word.decode()}`: {_where(alloc, host_name)}; system scope needs coherent memory " \
              f"(`hipHostMalloc` default, or fine-grained device memory)"
        ctx.report(SYSTEM, i, msg, subject=word.decode())
    else:
        ctx.report(SYSTEM, i, f"`{word.decode()}` is system-wide only on fine-grained (coherent) memory; "
                   f"`hipMalloc` memory is coarse-grained and silently gets device scope", confidence="medium",
                   subject=word.decode())


def _float_add(ctx: Context, i: int, word: bytes, pointee: str, alloc, host_name: str, root, from_parse) -> None:
    conf = "high" if from_parse else "medium"
    if alloc is not None and alloc.kind == "device" and word == b"atomicAdd":
        ctx.report(FLOAT, i, f"`atomicAdd` on `{pointee}` compiles to a CAS loop; {_where(alloc, host_name)}, so "
                   f"`unsafeAtomicAdd` can use the hardware add (or aggregate per warp first)",
                   edits=[ctx.edit(i, "unsafeAtomicAdd")], confidence=conf, subject=pointee)
    elif alloc is not None:
        ctx.report(FLOAT, i, f"`{word.decode()}` on `{pointee}`: {_where(alloc, host_name)}; hardware FP atomics "
                   f"do nothing there on MI100/MI200, so keep the CAS-loop `atomicAdd` and do not build with "
                   f"`-munsafe-fp-atomics`", confidence=conf, subject=pointee)
    else:
        ctx.report(FLOAT, i, f"`{word.decode()}` on `{pointee}` in global memory compiles to a CAS loop; aggregate "
                   f"per warp first, and use `unsafeAtomicAdd` only where the memory is coarse-grained (`hipMalloc`)",
                   confidence=conf, subject=pointee)


__all__ = ["check", "COMMENT"]
