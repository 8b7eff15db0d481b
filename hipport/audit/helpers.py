"""Calls to device helpers that assume 32-lane warps, reported where the call stands.

A warp reduction written once in `common.h` and called from every kernel is the usual shape of real code: the
finding at the helper's loop is in a header the reader of the kernel never opens. So after a file's own checks,
each device function (of this file, and of the headers it includes with `#include "..."`) that holds a 32-lane
finding gets a summary, and every call to it is reported at the call, naming the definition.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from hipport import directives as dirs
from hipport.audit.checks.common import (
    SHUFFLES,
    SYNC_BUILTINS,
    is_32bit_type,
    is_full_mask32,
    outer_decl,
    split_template_args,
)
from hipport.audit.checks.atomics import type_aliases
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context, int_value
from hipport.files import interrupts_raised, reraise_if_interrupted_since
from hipport.model import Finding

# The rules whose findings inside a helper make every call of it a 32-lane assumption, most telling first. A
# 32-bit mask inside a helper is not one: it is fixed at the definition and the callers need no change.
LANE_RULES = ("warp-loop-32", "lane-math-32", "ballot-32bit")
_MAX_HEADER_BYTES = 2_000_000


@dataclass(frozen=True, slots=True)
class Helper:
    name: str
    where: str          # `common.h:45`
    rule_id: str
    message: str        # the first such finding inside it
    mask_params: tuple[int, ...] = ()   # positions of parameters that reach a `*_sync` built-in as its mask
    width_params: tuple[int, ...] = ()  # positions of parameters used as a shuffle width or shuffle-loop bound
    width_tparams: tuple[int, ...] = () # the same for template parameters
    reads_warp_size: bool = False       # a kernel that reads `warpSize`: its launches must not count lanes in 32s
    default_32: int = -1                # position of a width template parameter that defaults to 32
    # Of mask_params, those reaching `__syncwarp`: HIP's does not trim its mask on wave32, so "every lane" is
    # `__activemask()` there, not the 64-bit literal (amd_warp_sync_functions.h, ROCm 7.2).
    syncwarp_params: tuple[int, ...] = ()
    # A kernel's parameters that number its lanes or warps (`threadIdx.x % ws`, `tid / ws`), where the kernel also
    # works with the hardware's width (`warpSize`, a ballot): a 32 passed there is wrong on a 64-lane wavefront.
    lane_params: tuple[int, ...] = ()


def _mask_params(ctx: Context, fn, builtins=SYNC_BUILTINS) -> tuple[int, ...]:
    """Parameters of ``fn`` passed straight on as the lane mask of a `*_sync` built-in (or of another such helper)."""
    names = [n.encode() for n in fn.param_names]
    if not names:
        return ()
    found = set()
    for i in range(fn.body[0], fn.body[1]):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in builtins or not ctx.is_call(i):
            continue
        args = ctx.call_args(i)
        if not args:
            continue
        code = [k for k in range(*args[0]) if ctx.kinds[k] == IDENT]
        if len(code) == 1 and ctx.text[code[0]] in names and code[0] == ctx.next_code(args[0][0] - 1):
            found.add(names.index(ctx.text[code[0]]))
    return tuple(sorted(found))


def _width_names(ctx: Context, fn) -> set[bytes]:
    """Names used as a shuffle's `width`, or in the header of a loop whose body shuffles (`o = W / 2`, `o < W`)."""
    found: set[bytes] = set()
    for i in range(fn.body[0], fn.body[1]):
        word = ctx.text[i]
        if word in SHUFFLES and ctx.kinds[i] == IDENT and ctx.is_call(i):
            args = ctx.call_args(i) or []
            pos = SHUFFLES[word] + 2  # value, lane/offset, then width
            if len(args) > pos:
                found.update(ctx.text[k] for k in range(*args[pos]) if ctx.kinds[k] == IDENT)
        elif word == b"for" and ctx.t(ctx.next_code(i)) == b"(":
            open_ = ctx.next_code(i)
            close = ctx.match(open_)
            if close <= open_:
                continue
            body_start = ctx.next_code(close)
            body_end = ctx.match(body_start) if ctx.t(body_start) == b"{" else body_start
            while body_end < ctx.n and ctx.t(body_end) != b";" and ctx.t(body_start) != b"{":
                body_end += 1
            if any(ctx.text[k] in SHUFFLES for k in range(body_start, max(body_end, body_start) + 1)):
                found.update(ctx.text[k] for k in range(open_, close) if ctx.kinds[k] == IDENT)
    return found


def _group_widths(ctx: Context, fn) -> set[bytes]:
    """Names every shuffle of kernel ``fn`` takes as its `width` (`__shfl_down_sync(m, v, i, BS)`), in a kernel
    that meets no hardware width (`warpSize`, a ballot): its shuffles work in groups of that many lanes on any
    wavefront, so a 32 the host launches it with is a group of 32, as meant, not half of a 64-lane wavefront (a
    device helper's caller may mix it with the hardware's width: judged at the call)."""
    lo, hi = fn.body
    if any(ctx.positions_between(w, lo, hi) for w in _HARDWARE_WIDTH):
        return set()
    names: set[bytes] | None = None
    for i in range(lo, hi):
        word = ctx.text[i]
        if word in SHUFFLES and ctx.kinds[i] == IDENT and ctx.is_call(i):
            args = ctx.call_args(i) or []
            pos = SHUFFLES[word] + 2
            width = {ctx.text[k] for k in range(*args[pos]) if ctx.kinds[k] == IDENT} if len(args) > pos else set()
            names = width if names is None else names & width
    return names or set()


def summarise(ctx: Context, findings: list[Finding], label: str) -> dict[str, Helper]:
    """Device functions of ``ctx`` with a 32-lane finding in their body, by name (the first definition wins)."""
    out: dict[str, Helper] = {}
    # The 32-lane findings by line (a stable sort: the file's order among those of one line), so that each
    # function takes those inside it by a binary search rather than a pass over every finding.
    lane = sorted((f for f in findings if f.rule_id in LANE_RULES and f.severity in ("warning", "error")),
                  key=lambda f: f.line)
    lane_lines = [f.line for f in lane]
    for fn in ctx.functions:
        if fn.name in out:
            continue
        widths = _width_names(ctx, fn) - (_group_widths(ctx, fn) if fn.kernel else set())
        width_params = tuple(k for k, n in enumerate(fn.param_names) if n.encode() in widths)
        width_tparams = tuple(k for k, n in enumerate(fn.template_params) if n.encode() in widths)
        inside, masks, syncwarp = [], (), ()
        if not fn.kernel:  # a kernel is launched, not called: only what it is passed matters
            first = ctx.lines.line_col(ctx.starts[fn.body[0]])[0]
            last = ctx.lines.line_col(ctx.starts[fn.body[1]])[0]
            inside = lane[bisect_left(lane_lines, first):bisect_right(lane_lines, last)]
            masks = _mask_params(ctx, fn)
            syncwarp = _mask_params(ctx, fn, {b"__syncwarp"}) if masks else ()
        reads = fn.kernel and bool(ctx.positions_between(b"warpSize", fn.body[0], fn.body[1]))
        lane_params = _lane_params(ctx, fn) if fn.kernel else ()
        if not inside and not masks and not width_params and not width_tparams and not reads and not lane_params:
            continue
        line = ctx.lines.line_col(ctx.starts[fn.name_index])[0]
        best = min(inside, key=lambda f: (LANE_RULES.index(f.rule_id), f.line)) if inside else None
        default_32 = _report_default_32(ctx, fn, width_tparams)
        out[fn.name] = Helper(fn.name, f"{label}:{line}", best.rule_id if best else "", best.message if best else "",
                              masks, width_params, width_tparams, reads, default_32, syncwarp, lane_params)
    syncwarp_macros = _macro_wrappers(ctx, {b"__syncwarp"})
    for name, masks in _macro_wrappers(ctx).items():
        d = ctx.macros[name]
        line = ctx.lines.line_col(ctx.starts[d.first])[0]
        out.setdefault(name.decode("latin-1"), Helper(name.decode("latin-1"), f"{label}:{line}", "", "", masks,
                                                      syncwarp_params=syncwarp_macros.get(name, ())))
    return out


# What shows a kernel works with the hardware's wavefront, whatever width its parameters say.
_HARDWARE_WIDTH = frozenset({b"warpSize", b"__ballot", b"__ballot_sync", b"__activemask", b"__lane_id",
                             b"__popcll", b"__ffsll"})


def _lane_params(ctx: Context, fn) -> tuple[int, ...]:
    """Parameters of kernel ``fn`` that divide a thread index into lanes or warps (`threadIdx.x % ws`, `tid / ws`,
    `tid & (ws - 1)`), when the kernel also meets the hardware's width (`warpSize`, a ballot): then a host's 32 for
    them disagrees with a 64-lane wavefront. A kernel that numbers its lanes only by the parameter is a logical warp
    of that width, right on 64 lanes (a 16..1 reduction inside each 32-lane group): none."""
    from hipport.audit.checks.common import operand_before, thread_derived
    from hipport.audit.checks.context import THREAD_INDEX

    names = [n.encode() for n in fn.param_names]
    lo, hi = fn.body
    if not names or not any(ctx.positions_between(w, lo, hi) for w in _HARDWARE_WIDTH):
        return ()
    derived = thread_derived(ctx, fn) | THREAD_INDEX
    found = set()
    for k in sorted(k for name in set(names) for k in ctx.positions_between(name, lo, hi)):
        if ctx.kinds[k] != IDENT:
            continue
        op = ctx.prev_code(k)
        if ctx.t(op) == b"(" and ctx.t(ctx.next_code(k)) == b"-":  # `tid & (ws - 1)`
            op = ctx.prev_code(op)
            if ctx.t(op) != b"&":
                continue
        elif ctx.t(op) not in (b"%", b"/"):
            continue
        if any(ctx.text[m] in derived for m in range(operand_before(ctx, op), op)):
            found.add(names.index(ctx.text[k]))
    return tuple(sorted(found))


def _report_default_32(ctx: Context, fn, width_tparams: tuple[int, ...]) -> int:
    """`template <typename T, int W = 32>` where `W` is the width a helper shuffles with: every call that leaves it
    out works on 32-lane halves of a 64-lane wavefront. Reported at the default; returns the parameter's position."""
    if not width_tparams or _WIDTH_RULE not in ctx.hazards:
        return -1
    k, floor = fn.name_index, max(0, fn.name_index - 120)
    while k > floor and ctx.text[k] != b"template":
        if ctx.text[k] in (b";", b"{", b"}") and not ctx.in_directive[k]:
            return -1
        k -= 1
    if ctx.text[k] != b"template" or ctx.t(ctx.next_code(k)) != b"<":
        return -1
    split = split_template_args(ctx, ctx.next_code(k))
    if split is None:
        return -1
    for pos, (a, b) in enumerate(split[0]):
        code = [m for m in range(a, b) if ctx.kinds[m] != COMMENT]
        if pos in width_tparams and len(code) >= 3 and ctx.text[code[-2]] == b"=" and \
                int_value(ctx.text[code[-1]]) == 32:
            ctx.report(_WIDTH_RULE, code[-1], f"`{ctx.text[code[-3]].decode('latin-1')}` defaults to 32 and "
                       f"`{fn.name}` shuffles with it: every call that leaves it out works on 32-lane halves of a "
                       f"64-lane wavefront (pass the wavefront size chosen on the host, or default to 64 where "
                       f"only wave64 is built)", confidence="medium", subject=fn.name, severity="warning")
            return pos
    return -1


def _macro_wrappers(ctx: Context, builtins=SYNC_BUILTINS) -> dict[bytes, tuple[int, ...]]:
    """Function-like macros that pass one of their parameters on as the lane mask of a `*_sync` built-in
    (`#define WARP_SYNC(m) __syncwarp(m)`), with the positions of those parameters."""
    out: dict[bytes, tuple[int, ...]] = {}
    for name, d in ctx.macros.items():
        k = d.first + 2
        if k + 1 >= d.last or ctx.text[k + 1] != b"(" or ctx.starts[k + 1] != ctx.ends[k]:
            continue
        close = ctx.match(k + 1)
        if close < 0 or close >= d.last:
            continue
        params = [ctx.text[j] for j in range(k + 2, close) if ctx.kinds[j] == IDENT]
        found = set()
        for j in range(close + 1, d.last):
            if ctx.text[j] not in builtins or not ctx.is_call(j):
                continue
            args = ctx.call_args(j) or []
            code = [m for m in range(*args[0]) if ctx.kinds[m] != COMMENT] if args else []
            if len(code) == 1 and ctx.text[code[0]] in params:
                found.add(params.index(ctx.text[code[0]]))
        if found:
            out[name] = tuple(sorted(found))
    return out


def included_headers(ctx: Context, path: str, include_dirs: tuple[str, ...]) -> list[str]:
    """`#include "x"` targets that exist, resolved as a compiler would: next to the file, then the -I folders."""
    if path.startswith("<"):
        return []
    here = os.path.dirname(os.path.abspath(path))
    out = []
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if target is None or ctx.src[target[0] - 1] != 0x22:  # only quoted includes are the project's own
            continue
        name = target[2].decode("utf-8", "replace")
        for folder in (here, *include_dirs):
            candidate = os.path.normpath(os.path.join(folder, name))
            if os.path.isfile(candidate):
                out.append(candidate)
                break
    return out


def report_calls(ctx: Context, helpers: dict[str, Helper], *, local: bool,
                 macros: dict[bytes, tuple[str, str]] | None = None) -> None:
    """Each call to a header's 32-lane helper is reported at the call (once per line and helper), unless this file
    defines a function of that name (that one is called); for every helper, a 32-bit mask it is passed."""
    if not helpers:
        return
    own = set() if local else {fn.name for fn in ctx.functions}
    wanted = {n.encode() for n in helpers}
    if not ctx.words & wanted:
        return
    definitions = {fn.name_index for fn in ctx.functions}
    seen = set()
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in wanted or ctx.in_directive[i]:
            continue
        if ctx.t(ctx.prev_code(i)) in (b".", b"->", b"::") or i in definitions:
            continue  # a member of something else, or the definition itself
        shape = _call_shape(ctx, i)
        if shape is None:
            continue
        kind, targs, args, config = shape
        name = ctx.text[i].decode("latin-1")
        helper = helpers[name]
        if name in own:
            continue
        _check_width_args(ctx, i, helper, kind, targs, args)
        if not local and helper.default_32 >= 0 and len(targs) <= helper.default_32 and kind == "call":
            line = ctx.lines.line_col(ctx.starts[i])[0]
            if (line, name) not in seen:
                seen.add((line, name))
                ctx.report(_WIDTH_RULE, i, f"`{name}` (defined at {helper.where}) shuffles with a width that "
                           f"defaults to 32, and this call leaves it out: on a 64-lane wavefront it works on 32-lane "
                           f"halves", confidence="medium", subject=name, severity="warning")
        if kind == "launch":
            if helper.reads_warp_size:
                _check_launch_config(ctx, i, helper, config)
            if helper.lane_params:
                _check_warp_size_args(ctx, i, helper, args)
            continue
        line = ctx.lines.line_col(ctx.starts[i])[0]
        if helper.mask_params:
            _check_mask_args(ctx, args, helper, macros or {})
        # A helper of this file carries its own finding a few lines away; one from a header is out of sight.
        if local or not helper.rule_id or (line, name) in seen or helper.rule_id not in ctx.hazards:
            continue
        seen.add((line, name))
        # A warning, whatever the helper's own finding: the fix is made at the definition, not at the call.
        ctx.report(helper.rule_id, i, f"`{name}` (defined at {helper.where}) assumes 32-lane warps: {helper.message}",
                   confidence="medium", subject=name, severity="warning")


def _call_shape(ctx: Context, i: int):
    """("call" | "launch", template-argument ranges, argument ranges) for `f(...)`, `f<...>(...)` and
    `f<...><<<...>>>(...)`; None for anything else."""
    k = ctx.next_code(i)
    targs: list[tuple[int, int]] = []
    if ctx.t(k) == b"<":
        split = split_template_args(ctx, k)
        if split is None:
            return None
        targs, close = split
        k = ctx.next_code(close)
    if ctx.t(k) == b"(":
        args = ctx.call_args(ctx.prev_code(k)) if k > 0 else None
        return ("call", targs, args or [], [])
    if ctx.t(k) == b"<<" and ctx.t(k + 1) == b"<":
        j = k + 2
        while j + 1 < ctx.n and not (ctx.text[j] == b">>" and ctx.text[j + 1] == b">"):
            if ctx.text[j] == b";":
                return None
            j += 1
        args = ctx.call_args(j + 1) if j + 1 < ctx.n else None
        return ("launch", targs, args or [], _split_commas(ctx, k + 2, j)) if args is not None else None
    return None


def _split_commas(ctx: Context, first: int, last: int) -> list[tuple[int, int]]:
    out, start, k = [], first, first
    while k < last:
        if ctx.text[k] in (b"(", b"[", b"{") and ctx.match(k) > k:
            k = ctx.match(k) + 1
            continue
        if ctx.text[k] == b",":
            out.append((start, k))
            start = k + 1
        k += 1
    out.append((start, last))
    return out


_WIDTH_RULE = "warp-loop-32"


def _literal_32(ctx: Context, first: int, last: int) -> int | None:
    code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
    if len(code) == 1 and int_value(ctx.text[code[0]]) == 32:
        return code[0]
    return None


def _check_width_args(ctx: Context, call: int, helper: Helper, kind: str, targs, args) -> None:
    """A literal 32 passed where the callee shuffles with it (as the width or as a shuffle loop's bound)."""
    if _WIDTH_RULE not in ctx.hazards or not (helper.width_params or helper.width_tparams):
        return
    for positions, ranges, what in ((helper.width_params, args, "argument"),
                                    (helper.width_tparams, targs, "template argument")):
        for pos in positions:
            if pos >= len(ranges):
                continue
            lit = _literal_32(ctx, *ranges[pos])
            if lit is None:
                continue
            # `warpSize` is a device-side value: the patch only fits a call made in device code at run time.
            edits = [ctx.edit(lit, "warpSize")] if what == "argument" and kind == "call" and ctx.device[call] else []
            ctx.report(_WIDTH_RULE, lit, f"32 is passed as the {what} that `{helper.name}` (defined at "
                       f"{helper.where}) shuffles with: on a 64-lane wavefront it works on 32-lane halves "
                       f"(pass the wavefront size{', `warpSize`' if edits else ''})", confidence="medium",
                       edits=edits, subject=helper.name, severity="warning")


_MASK_RULE = "warp-mask-32bit"
_MAX_HOPS = 4


def _check_mask_args(ctx: Context, args, helper: Helper, macros: dict[bytes, tuple[str, str]]) -> None:
    """The argument a helper forwards as a lane mask: a 32-bit literal, or a variable whose value (followed back
    through plain copies `T b = a;` in the calling function) is one or has a 32-bit type."""
    if _MASK_RULE not in ctx.hazards or ctx.sync_state() != "on":
        return
    for pos in helper.mask_params:
        if not args or pos >= len(args):
            continue
        why = _mask_origin(ctx, args[pos][0], *args[pos], macros)
        if why:
            arg = ctx.span_text(*args[pos]).decode("latin-1").strip()
            code = [k for k in range(*args[pos]) if ctx.kinds[k] != COMMENT]
            is32, value = is_full_mask32(ctx, *args[pos])
            edits = []
            if is32:  # a literal written at the call: its 64-bit spelling is right whatever the helper does
                full = "__activemask()" if pos in helper.syncwarp_params else "0xffffffffffffffffull"
                new = full if value == 0xFFFFFFFF else \
                    ctx.text[code[-1]].rstrip(b"uUlL").decode("latin-1") + "ull"
                edits = [ctx.edit(code[0], new, code[-1])]
            ctx.report(_MASK_RULE, code[0],
                       f"`{arg}` reaches the lane mask of `{helper.name}` (defined at {helper.where}) {why}; HIP "
                       f"masks are 64-bit (`unsigned long long`, full mask `0xffffffffffffffffull`)",
                       confidence="medium", subject=helper.name, edits=edits)


def _mask_origin(ctx: Context, call: int, first: int, last: int,
                 macros: dict[bytes, tuple[str, str]] | None = None) -> str:
    fn = ctx.function_at(call)
    for _ in range(_MAX_HOPS):
        is32, _value = is_full_mask32(ctx, first, last)
        if is32:
            return f"as the 32-bit value `{ctx.span_text(first, last).decode('latin-1').strip()}`"
        code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
        if len(code) != 1 or ctx.kinds[code[0]] != IDENT:
            return ""
        word = ctx.text[code[0]]
        body = ctx.macro_value(word)
        if body:
            first, last = body[0], body[-1] + 1
            continue
        decl = ctx.find_decl(word, code[0], fn.params if fn else None)
        if decl is None:
            decl = outer_decl(ctx, word, code[0])
        if decl is None:
            if macros and word in macros:
                where, value = macros[word]
                return f"as `{word.decode('latin-1')}`, the 32-bit value `{value}` (defined at {where})"
            return ""
        if is_32bit_type(ctx, decl) is True:
            line = ctx.lines.line_col(ctx.starts[decl])[0]
            return f"through the 32-bit variable `{ctx.text[decl].decode('latin-1')}` (line {line})"
        if ctx.t(ctx.next_code(decl)) != b"=":
            return ""
        first = ctx.next_code(ctx.next_code(decl))
        last = first
        while last < ctx.n and ctx.text[last] not in (b";", b","):
            last += 1
    return ""


_LAUNCH_RULE = "launch-warps-32"
# A variable or constant named for the warp size (`warp_size`, `kWarpSize`, `WS`): lane_math's names.
_WARP_NAME = re.compile(rb"(?i)^(?:k_?|c_?|g_?|n_?|h_?)?(?:warp|warp_?size|warp_?sz|warp_?lanes|warp_?width|"
                        rb"lanes?_?per_?warp|threads?_?per_?warp|warp_?threads|ws|wave_?size|wavefront_?size)$")


def _check_launch_config(ctx: Context, launch: int, helper: Helper, config) -> None:
    """A kernel that reads `warpSize` launched with a grid or block counted in 32-thread warps (`WARPS * 32`,
    `BLOCK / 32`, a block of 32): on a 64-lane wavefront it sees half the warps the launch was sized for."""
    if _LAUNCH_RULE not in ctx.hazards or len(config) < 2 or 64 not in ctx.wave_sizes():
        return  # only wave32 targets: a warp of 32 is what the kernel gets
    for pos, what in ((1, "block"), (0, "grid")):
        lit = _thirty_two(ctx, *config[pos], launch, lone=(pos == 1), hops=2)
        if lit is None:
            continue
        expr = ctx.span_text(*config[pos]).decode("latin-1").strip()
        line = ctx.lines.line_col(ctx.starts[lit])[0]
        here = ctx.lines.line_col(ctx.starts[ctx.next_code(config[pos][0] - 1)])[0]
        via = "" if line == here else f" (the 32 is on line {line})"
        ctx.report(_LAUNCH_RULE, ctx.next_code(config[pos][0] - 1),
                   f"the {what} size `{expr}` counts 32 threads per warp{via}, but `{helper.name}` (defined at "
                   f"{helper.where}) works in warps of `warpSize`: on a 64-lane wavefront it gets half the warps "
                   f"it was sized for (size the launch from `hipDeviceAttributeWarpSize`)",
                   confidence="medium", subject=helper.name, severity="warning")
        if line != here and line not in ctx.finding_lines(_LAUNCH_RULE):
            ctx.report(_LAUNCH_RULE, lit, f"32 threads per warp here sizes the launch of `{helper.name}` "
                       f"(line {here}), which works in warps of `warpSize`: on a 64-lane wavefront it gets half "
                       f"the warps it was sized for", confidence="medium",
                       subject=helper.name, severity="warning")
        return


def _check_warp_size_args(ctx: Context, launch: int, helper: Helper, args) -> None:
    """A 32 the host passes a kernel as the width it numbers lanes and warps by (`k<<<g, b>>>(x, warp_size)` with
    `int warp_size = 32;`), where the kernel also works with the hardware's width: on a 64-lane wavefront the two
    disagree. The host has the device's width to pass: `hipDeviceAttributeWarpSize`."""
    if _LAUNCH_RULE not in ctx.hazards or 64 not in ctx.wave_sizes():
        return
    for pos in helper.lane_params:
        if pos >= len(args):
            continue
        code = [k for k in range(*args[pos]) if ctx.kinds[k] != COMMENT]
        if len(code) == 1 and ctx.kinds[code[0]] == LITERAL and pos in helper.width_params:
            continue  # warp-loop-32 reports a literal width at the call
        lit = _thirty_two(ctx, *args[pos], launch, lone=True, hops=2)
        if lit is None:
            continue
        arg = ctx.span_text(*args[pos]).decode("latin-1").strip()
        line = ctx.lines.line_col(ctx.starts[lit])[0]
        via = "" if ctx.lines.line_col(ctx.starts[code[0]])[0] == line else f" (32, line {line})"
        ctx.report(_LAUNCH_RULE, code[0], f"`{arg}`{via} is the warp size `{helper.name}` ({helper.where}) numbers "
                   f"lanes and warps by, beside the hardware's wavefront: on a 64-lane one they disagree (pass "
                   f"the device's, `hipDeviceGetAttribute(&ws, hipDeviceAttributeWarpSize, dev)`)",
                   confidence="medium", subject=helper.name, severity="warning")


def _thirty_two(ctx: Context, first: int, last: int, at: int, *, lone: bool, hops: int) -> int | None:
    """The literal 32 that counts lanes in a launch expression: a factor or divisor (`W * 32`, `n / 32`), the
    whole block size, or the same inside a variable's initialiser or an object-like macro (``hops`` deep)."""
    code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
    if lone and len(code) == 1 and int_value(ctx.text[code[0]]) == 32:
        return code[0]
    for k in code:
        if int_value(ctx.text[k]) == 32 and (ctx.t(ctx.prev_code(k)) in (b"*", b"/")
                                             or ctx.t(ctx.next_code(k)) == b"*"):
            return k
    if hops <= 0:
        return None
    for k in code:
        if ctx.kinds[k] != IDENT or ctx.t(ctx.next_code(k)) in (b"(", b"::") or \
                ctx.t(ctx.prev_code(k)) in (b".", b"->", b"::"):
            continue
        # A warp size of its own (`int warp_size = 32;`) counts lanes as a factor or divisor too: `n * warp_size`.
        alone = lone and len(code) == 1 or (_WARP_NAME.match(ctx.text[k]) is not None and (
            ctx.t(ctx.prev_code(k)) in (b"*", b"/") or ctx.t(ctx.next_code(k)) == b"*"))
        body = ctx.macro_value(ctx.text[k])
        if body:
            found = _thirty_two(ctx, body[0], body[-1] + 1, at, lone=alone, hops=hops - 1)
        else:
            decl = ctx.find_decl(ctx.text[k], k, None) or _dim3_decl(ctx, ctx.text[k], k)
            init = _initialiser(ctx, decl) if decl is not None else None
            found = _thirty_two(ctx, *init, at, lone=alone, hops=hops - 1) if init else None
        if found is not None:
            return found
    return None


def _dim3_decl(ctx: Context, name: bytes, before: int) -> int | None:
    """`dim3 name(...)` before ``before`` (a constructor call, which `find_decl` does not take for a declaration)."""
    known = ctx.__dict__.setdefault("_dim3_decls", {})  # once a name: every launch of a file may use `block`
    if name not in known:
        known[name] = [k for k in ctx.positions(name)
                       if ctx.t(ctx.prev_code(k)) == b"dim3" and ctx.t(ctx.next_code(k)) in (b"(", b"{")]
    found = known[name]
    k = bisect_left(found, before) - 1
    return found[k] if k >= 0 else None


def _initialiser(ctx: Context, decl: int) -> tuple[int, int] | None:
    """`T x = expr;` -> expr; `dim3 x(a, b)` / `dim3 x{a, b}` -> a (the x dimension, the one warps are cut from)."""
    nxt = ctx.next_code(decl)
    if ctx.t(nxt) == b"=":
        k = ctx.next_code(nxt)
        end = k
        while end < ctx.n and ctx.text[end] not in (b";", b","):
            if ctx.text[end] in (b"(", b"[", b"{") and ctx.match(end) > end:
                end = ctx.match(end)
            end += 1
        return (k, end)
    if ctx.t(nxt) in (b"(", b"{") and ctx.match(nxt) > nxt:
        return _split_commas(ctx, nxt + 1, ctx.match(nxt))[0]
    return None


def mask_macros(ctx: Context, label: str) -> dict[bytes, tuple[str, str]]:
    """Object-like macros whose value is a 32-bit full-width literal: name -> (`file:line`, value)."""
    out = {}
    for name, d in ctx.macros.items():
        body = ctx.macro_value(name)
        if not body:
            continue
        b0, b1 = body[0], body[-1] + 1
        while ctx.text[b0] == b"(" and ctx.match(b0) == b1 - 1:
            b0, b1 = b0 + 1, b1 - 1
        is32, value = is_full_mask32(ctx, b0, b1)
        if is32 and value == 0xFFFFFFFF:
            line = ctx.lines.line_col(ctx.starts[d.first])[0]
            out[name] = (f"{label}:{line}", ctx.span_text(b0, b1).decode("latin-1"))
    return out


_MASK_CALL_NAME = re.compile(rb"(?i)sync|shfl|shuffle|ballot|vote")


def report_header_masks(ctx: Context, macros: dict[bytes, tuple[str, str]], helpers: dict[str, Helper]) -> None:
    """Mask arguments that only an included header explains, and calls that only look like mask wrappers:
    a `*_sync` built-in given a 32-bit mask macro of an included header (`FULL_MASK` in `common.h`), and a
    device call to a warp-looking name defined nowhere in sight that is given `0xffffffff` (a guess)."""
    if _MASK_RULE not in ctx.hazards or ctx.sync_state() != "on":
        return
    from hipport.audit.checks.common import user_defined

    wanted = {w for w in ctx.words if (macros and w in SYNC_BUILTINS) or
              (not w.startswith((b"__", b"cuda", b"hip")) and _MASK_CALL_NAME.search(w))}
    if not wanted:
        return
    for i in range(ctx.n):
        if ctx.text[i] not in wanted or ctx.kinds[i] != IDENT or not ctx.device[i] or ctx.in_directive[i] \
                or not ctx.is_call(i):
            continue
        word = ctx.text[i]
        args = ctx.call_args(i)
        if not args:
            continue
        if word in SYNC_BUILTINS:
            code = [k for k in range(*args[0]) if ctx.kinds[k] != COMMENT]
            if not macros or len(code) != 1 or ctx.text[code[0]] not in macros or user_defined(ctx, word):
                continue
            name = ctx.text[code[0]]
            fn = ctx.function_at(i)
            if ctx.macro_value(name) is not None or ctx.find_decl(name, code[0], fn.params if fn else None) \
                    is not None or outer_decl(ctx, name, code[0]) is not None:
                continue
            where, value = macros[name]
            ctx.report(_MASK_RULE, code[0], f"`{name.decode('latin-1')}` (defined at {where}) is the 32-bit mask "
                       f"`{value}`: `{word.decode()}` takes a 64-bit mask on HIP (`0xffffffffffffffffull`)",
                       subject=name.decode("latin-1"))
            continue
        text = word.decode("latin-1")
        if not _MASK_CALL_NAME.search(word) or text in helpers or user_defined(ctx, word) or \
                word.startswith((b"__", b"cuda", b"hip")):
            continue
        for a, b in args:
            code = [k for k in range(a, b) if ctx.kinds[k] != COMMENT]
            if len(code) == 1 and ctx.kinds[code[0]] == LITERAL and int_value(ctx.text[code[0]]) == 0xFFFFFFFF:
                ctx.report(_MASK_RULE, code[0], f"`{text}` is defined nowhere hipport can see; if it passes "
                           f"`{ctx.text[code[0]].decode('latin-1')}` on to a `*_sync` built-in as the lane mask, "
                           f"HIP needs a 64-bit mask there (`0xffffffffffffffffull`)", confidence="low",
                           subject=text, severity="warning")
                break


@lru_cache(maxsize=256)
def header_summary(path: str, mtime_ns: int, size: int, options, run_checks: Callable) \
        -> tuple[dict[str, Helper], dict[bytes, tuple[str, str]], dict[bytes, str], dict[bytes, str]]:
    """The helpers, 32-bit mask macros, float/half type aliases and warp-size constants of 32 (name ->
    "header.h:line") of one header, audited with the including
    file's options by ``run_checks`` (the engine's, handed down so this module need not import the engine that
    imports it; cached per version)."""
    if size > _MAX_HEADER_BYTES:
        return {}, {}, {}, {}
    try:
        with open(path, "rb") as fh:
            src = fh.read()
    except OSError:
        return {}, {}, {}, {}
    signals_before = interrupts_raised()
    try:
        ctx = run_checks(src, path, options)
    except Exception:  # noqa: BLE001 - a header that cannot be lexed has no summary; its own audit says why
        reraise_if_interrupted_since(signals_before)  # ctypes wraps a Ctrl-C in ArgumentError
        return {}, {}, {}, {}
    label = os.path.basename(path)
    # The header's own includes count as its definitions too (a `warp.h` that includes `config.h`).
    constants = {**ctx.header_constants, **{name: f"{label}:{line}" for name, line in ctx.warp_constants.items()}}
    return summarise(ctx, ctx.findings, label), mask_macros(ctx, label), type_aliases(ctx), constants


def of_includes(ctx: Context, path: str, options, run_checks: Callable) \
        -> tuple[dict[str, Helper], dict[bytes, tuple[str, str]], dict[bytes, str], dict[bytes, str]]:
    """The helpers, mask macros, type aliases and warp-size constants of the headers ``path`` includes with quotes
    (the first definition wins), each audited by ``run_checks``."""
    helpers: dict[str, Helper] = {}
    macros: dict[bytes, tuple[str, str]] = {}
    aliases: dict[bytes, str] = {}
    constants: dict[bytes, str] = {}
    for header in included_headers(ctx, path, tuple(getattr(options, "include_dirs", ()))):
        if os.path.abspath(header) == os.path.abspath(path):
            continue
        try:
            st = os.stat(header)
        except OSError:
            continue
        found, masks, types, consts = header_summary(header, st.st_mtime_ns, st.st_size, options, run_checks)
        for name, helper in found.items():
            helpers.setdefault(name, helper)
        for name, value in masks.items():
            macros.setdefault(name, value)
        for name, value in types.items():
            aliases.setdefault(name, value)
        for name, value in consts.items():
            constants.setdefault(name, value)
    return helpers, macros, aliases, constants
