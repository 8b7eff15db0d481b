"""Check 1: 32-bit lane masks given to the `*_sync` built-ins or built as warp masks."""

from __future__ import annotations

from hipport.audit.checks.common import (
    BALLOTS,
    SYNC_BUILTINS,
    is_32bit_type,
    is_full_mask32,
    is_lane_like,
    outer_decl,
    type_span,
    user_defined,
)
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context, int_value
from hipport.audit.checks.mask_values import variable_edits
from hipport.audit.checks.names import release_guarded
from hipport.audit.checks.reductions import in_first_32_tail
from hipport.wavefront import load_wave_rules

RULE = "warp-mask-32bit"
FULL64 = "0xffffffffffffffffull"


def _literal_fix(ctx: Context, first: int, last: int, value: int) -> str:
    if value == 0xFFFFFFFF:
        return FULL64
    toks = [ctx.text[k] for k in range(first, last) if ctx.kinds[k] != COMMENT]
    return toks[-1].rstrip(b"uUlL").decode() + "ull"


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards:
        return
    sync_exists = ctx.sync_state() == "on"  # else convert writes the mask-free forms
    reported_macros: set[bytes] = set()
    reported_decls: set[int] = set()
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT:
            continue
        word = ctx.text[i]
        if word in SYNC_BUILTINS and sync_exists and ctx.is_call(i) and not _projects_own(ctx, word):
            _check_sync_mask(ctx, i, reported_macros, reported_decls)
    _check_lane_shifts(ctx)


def _projects_own(ctx: Context, word: bytes) -> bool:
    """The file defines ``word`` itself for the targeted release: a definition behind a test of the release is the
    project's stand-in for older ones, and from ROCm 7.0 the calls are HIP's (a 32-bit mask stops them there)."""
    if not user_defined(ctx, word):
        return False
    if word in ctx.macros or ctx.rocm < load_wave_rules().sync_from:
        return True
    guarded = release_guarded(ctx)
    return any(not any(a <= fn.name_index < b for a, b in guarded)
               for fn in ctx.functions if ctx.text[fn.name_index] == word)


def _check_sync_mask(ctx: Context, i: int, reported_macros: set, reported_decls: set) -> None:
    args = ctx.call_args(i)
    if not args:
        return
    name = ctx.text[i].decode()
    a, b = args[0]
    code = [k for k in range(a, b) if ctx.kinds[k] != COMMENT]
    if not code:
        return
    is32, value = is_full_mask32(ctx, a, b)
    if is32 and value == 0xFFFFFFFF and len(args) == 1 and name in (wave := load_wave_rules()).dropped_names \
            and ctx.rocm >= wave.dropped_from:
        # HIP's masked `__syncwarp` only checks the mask, without trimming it on wave32: no spelling of "every
        # lane" passes that check on both wave sizes in a debug build; the mask-free call means the same
        ctx.report(RULE, code[0], f"32-bit mask `{ctx.span_text(a, b).decode()}` given to `{name}`: HIP takes a "
                   f"64-bit mask, which it only checks; for every lane drop it (`{name}()`)",
                   edits=[ctx.edit(code[0], "", code[-1])], subject=name)
        return
    if is32:
        fix = _literal_fix(ctx, a, b, value)
        if value == 0xFFFFFFFF and in_first_32_tail(ctx, i):
            fix = "__activemask()"  # 32 threads take part there (warp_loops.py): every lane is not them
        ctx.report(RULE, code[0], f"32-bit mask `{ctx.span_text(a, b).decode()}` given to `{name}`: HIP takes a "
                   f"64-bit mask (use `{fix}`)", edits=[ctx.edit(code[0], fix, code[-1])], subject=name)
        return
    if len(code) != 1 or ctx.kinds[code[0]] != IDENT:
        _check_by_type(ctx, i, code, name)
        return
    word = ctx.text[code[0]]
    body = ctx.macro_value(word)
    if body is not None:
        if not body:
            return
        b0, b1 = body[0], body[-1] + 1
        while ctx.text[b0] == b"(" and ctx.match(b0) == b1 - 1:
            b0, b1 = b0 + 1, b1 - 1
        is32, value = is_full_mask32(ctx, b0, b1)
        if not is32:
            return
        fix = _literal_fix(ctx, b0, b1, value)
        if word not in reported_macros:
            reported_macros.add(word)
            ctx.report(RULE, b0, f"macro `{word.decode()}` is a 32-bit mask used with `{name}`; HIP masks are "
                       f"64-bit (define it as `{fix}`)", edits=[ctx.edit(b0, fix, b1 - 1)], subject=word.decode())
        if not ctx.in_directive[code[0]]:
            # Every such call is a compile error of its own, and the call is the line the compiler names.
            line = ctx.lines.line_col(ctx.starts[b0])[0]
            ctx.report(RULE, code[0], f"`{word.decode()}` (line {line}) is the 32-bit mask "
                       f"`{ctx.span_text(b0, b1).decode('latin-1')}`: `{name}` takes a 64-bit mask on HIP "
                       f"(define it as `{fix}`)", subject=word.decode())
        return
    if word in (b"__activemask",):
        return
    fn = ctx.function_at(i)
    decl = ctx.find_decl(word, code[0], fn.params if fn else None)
    outer = False
    if decl is None:
        # A constant or member declared outside the function (`constexpr unsigned kFull = 0xffffffff;`).
        decl = outer_decl(ctx, word, code[0])
        outer = decl is not None
    if decl is None:
        _check_by_type(ctx, i, code, name)
        return
    if is_32bit_type(ctx, decl) is not True:
        return
    if outer and not ctx.in_directive[code[0]]:
        line = ctx.lines.line_col(ctx.starts[decl])[0]
        ctx.report(RULE, code[0], f"`{word.decode()}` (line {line}) is a 32-bit mask: `{name}` takes a 64-bit mask "
                   f"on HIP (declare it `unsigned long long`)", subject=word.decode())
    if decl in reported_decls:
        return
    # A ballot kept in a 32-bit variable is reported (and fixed) by ballot-32bit.
    if ctx.t(ctx.next_code(decl)) == b"=":
        k = ctx.next_code(ctx.next_code(decl))
        while k < ctx.n and ctx.text[k] not in (b";", b","):
            if ctx.text[k] in BALLOTS:
                return
            k += 1
    reported_decls.add(decl)
    # The type and every value it holds change together, or nothing does (mask_values.py).
    values = variable_edits(ctx, decl, fn)
    span = type_span(ctx, decl)
    edits = [ctx.edit(span[0], "unsigned long long", span[1]), *values] if span and values is not None else []
    how = "make it `unsigned long long`" if edits or not span else \
        "make it `unsigned long long` holding every lane in 64 bits (no patch: a value given to it here names " \
        "32 lanes in a way no edit can widen)"
    ctx.report(RULE, decl, f"mask variable `{word.decode()}` is 32-bit but is passed to `{name}`; {how}",
               edits=edits, subject=word.decode())


def _check_by_type(ctx: Context, i: int, code: list[int], name: str) -> None:
    """An expression mask (`m & 0xffff`, `FULL & x`): only the parse can tell its type."""
    parsed = ctx.parsed()
    if parsed is None:
        return
    call = parsed.calls.get(ctx.starts[i])
    if call is None or not call.arg_types:
        return
    t = call.arg_types[0].replace("const ", "")
    if t in ("unsigned int", "int"):
        ctx.report(RULE, code[0], f"the mask given to `{name}` has the 32-bit type `{t}`; HIP takes a 64-bit "
                   f"mask", confidence="medium", subject=name)


def _check_lane_shifts(ctx: Context) -> None:
    """`1u << lane`, `(1 << laneId) - 1`: 32-bit lane masks (and undefined for lanes 32-63)."""
    for i in range(ctx.n - 2):
        if ctx.kinds[i] != LITERAL or not (ctx.device[i] or ctx.in_directive[i]):
            continue
        text = ctx.text[i]
        if int_value(text) != 1 or b"ll" in text.lower() or b"LL" in text:
            continue
        op = ctx.next_code(i)
        if ctx.t(op) != b"<<":
            continue
        prev = ctx.t(ctx.prev_code(i))
        if prev in (b")", b"]") or ctx.kinds[ctx.prev_code(i)] == IDENT:
            continue  # `x << 1`-like: not a mask built from 1
        k = ctx.next_code(op)
        end = k + 1
        if ctx.t(k) == b"(" and ctx.match(k) > k:
            end = ctx.match(k) + 1
        else:
            while end < ctx.n and (ctx.kinds[end] == IDENT or ctx.text[end] in (b".", b"(", b")")) and \
                    ctx.text[end - 1] != b")":
                end += 1
        if not is_lane_like(ctx, k, end):
            continue
        new = text.rstrip(b"uUlL").decode() + "ull"
        ctx.report(RULE, i, f"lane mask built from 32-bit `{text.decode()} << ...`: lanes 32-63 overflow; "
                   f"shift `{new}` instead", edits=[ctx.edit(i, new)], severity="warning", subject="1 << lane")
