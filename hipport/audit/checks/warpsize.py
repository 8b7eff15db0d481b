"""Check 5: `warpSize` where C++ needs a constant expression (not a constant from ROCm 7.0)."""

from __future__ import annotations

from hipport.audit.checks.common import const_context, constexpr_as_const, enclosing_open, statement_start
from hipport.audit.checks.context import IDENT, Context

RULE = "warpsize-constexpr"


def _warpsize_macros(ctx: Context) -> dict[bytes, bytes]:
    """Object-like macros of the file (its AMD view) that expand, through each other, to `warpSize`: name -> the
    macro that holds it (`#define NUM_WARPS (1024 / WARP_SIZE)`, `#define WARP_SIZE (warpSize)`)."""
    found: dict[bytes, bytes] = {}

    def reaches(name: bytes, seen: frozenset) -> bytes | None:
        body = ctx.macro_value(name)
        if body is None or name in seen:
            return None
        for j in body:
            t = ctx.text[j]
            if t == b"warpSize":
                return name
            if ctx.kinds[j] == IDENT and t in ctx.macros:
                via = reaches(t, seen | {name})
                if via is not None:
                    return via
        return None

    for name in ctx.macros:
        via = reaches(name, frozenset())
        if via is not None:
            found[name] = via
    return found


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or b"warpSize" not in ctx.words:
        return
    _through_macros(ctx)
    candidates = []
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT or ctx.text[i] != b"warpSize" or ctx.in_directive[i]:
            continue
        if ctx.t(ctx.prev_code(i)) in (b".", b"->", b"::"):
            continue
        if ctx.is_decl_name(i):
            continue  # a declaration of its own (hip-name-collision reports it)
        where = const_context(ctx, i)
        if where is not None:
            candidates.append((i, where))
    if not candidates:
        return
    parsed = ctx.parsed()
    for i, where in candidates:
        if parsed is not None:
            confirmed = parsed.in_const_error(ctx.starts[i])
            confidence = "high" if confirmed else "medium"
        else:
            confidence = "medium"
        edits = _fix(ctx, i, where)
        ctx.report(RULE, i, f"`warpSize` in a {where}: not a constant expression from ROCm 7.0"
                   + (_advice(where, edits, bool(ctx.device[i]))), confidence=confidence, edits=edits,
                   subject=where)


def _through_macros(ctx: Context) -> None:
    """A project macro that expands to `warpSize`, used where a constant expression is required: the same error,
    reported at the use (no patch: the macro serves its run-time uses too)."""
    macros = _warpsize_macros(ctx)
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT or ctx.in_directive[i] or ctx.text[i] not in macros:
            continue
        where = const_context(ctx, i)
        if where is None:
            continue
        name, via = ctx.text[i].decode(), macros[ctx.text[i]].decode()
        how = f"`{name}` is `warpSize`" if name == via else f"`{name}` expands to `warpSize` (through `{via}`)"
        ctx.report(RULE, i, f"{how} in a {where}: not a constant expression from ROCm 7.0 (give the macro a "
                   f"constant for the AMD build, e.g. 64, or size for the largest case)", confidence="medium",
                   subject=where)


# In a device function's body the target's width is a constant: rocPRIM's, which `hipport convert` writes there.
_DEVICE_WIDTH = "`::rocprim::arch::wavefront::max_size()` is the target's width as a constant in device code"
_DEVICE_WIDTH_SHORT = "`::rocprim::arch::wavefront::max_size()` in device code"
_HOST_SHORT = "a template parameter chosen on the host from `hipDeviceAttributeWarpSize`"
_HOST_CHOICE = ("make the warp size a template parameter chosen on the host "
                "(`hipDeviceGetAttribute(&w, hipDeviceAttributeWarpSize, dev)`)")


def _advice(where: str, edits, device: bool) -> str:
    if where == "array bound":
        return " (size the array for the largest case" + (f", or {_DEVICE_WIDTH})" if device else ")")
    if edits:
        return " (`const` is enough where it is only used at run time)"
    if device and where in ("template argument", "static_assert", "constexpr initialiser"):
        return f" ({_DEVICE_WIDTH}; or {_HOST_CHOICE})"
    if where == "template argument":  # a signature (`enable_if`): a device function's may use rocPRIM's width
        return f" ({_DEVICE_WIDTH_SHORT}, also in a device function's signature; in a kernel's, {_HOST_SHORT})"
    return f" ({_HOST_CHOICE})"


def _fix(ctx: Context, i: int, where: str):
    if where == "array bound":
        b = enclosing_open(ctx, i, b"[")
        divided = ctx.t(ctx.prev_code(i)) == b"/"
        return [ctx.edit(i, "32" if divided else "64")] if b >= 0 else []
    if where == "constexpr initialiser":
        s = statement_start(ctx, i)
        ce = next((k for k in range(s, i) if ctx.text[k] == b"constexpr"), None)
        eq = next((k for k in range(s, i) if ctx.text[k] == b"="), None)
        if ce is None or eq is None or not ctx.device[i]:
            return []
        name = ctx.prev_code(eq)
        fn = ctx.function_at(i)
        uses = [k for k in range(eq, fn.body[1]) if ctx.text[k] == ctx.text[name]]
        if all(const_context(ctx, k) is None for k in uses):
            return constexpr_as_const(ctx, name) or []
    return []
