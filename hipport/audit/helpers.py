"""Calls to device helpers that assume 32-lane warps, reported where the call stands.

A warp reduction written once in `common.h` and called from every kernel is the usual shape of real code: the
finding at the helper's loop is in a header the reader of the kernel never opens. So after a file's own checks,
each device function (of this file, and of the headers it includes with `#include "..."`) that holds a 32-lane
finding gets a summary, and every call to it is reported at the call, naming the definition.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from hipport import directives as dirs
from hipport.audit.checks.common import (
    SHUFFLES,
    SYNC_BUILTINS,
    is_32bit_type,
    is_full_mask32,
    split_template_args,
)
from hipport.audit.checks.context import COMMENT, IDENT, Context, int_value
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


def _mask_params(ctx: Context, fn) -> tuple[int, ...]:
    """Parameters of ``fn`` passed straight on as the lane mask of a `*_sync` built-in (or of another such helper)."""
    names = [n.encode() for n in fn.param_names]
    if not names:
        return ()
    found = set()
    for i in range(fn.body[0], fn.body[1]):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in SYNC_BUILTINS or not ctx.is_call(i):
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


def summarise(ctx: Context, findings: list[Finding], label: str) -> dict[str, Helper]:
    """Device functions of ``ctx`` with a 32-lane finding in their body, by name (the first definition wins)."""
    out: dict[str, Helper] = {}
    for fn in ctx.functions:
        if fn.name in out:
            continue
        widths = _width_names(ctx, fn)
        width_params = tuple(k for k, n in enumerate(fn.param_names) if n.encode() in widths)
        width_tparams = tuple(k for k, n in enumerate(fn.template_params) if n.encode() in widths)
        inside, masks = [], ()
        if not fn.kernel:  # a kernel is launched, not called: only what it is passed matters
            first = ctx.lines.line_col(ctx.starts[fn.body[0]])[0]
            last = ctx.lines.line_col(ctx.starts[fn.body[1]])[0]
            inside = [f for f in findings if f.rule_id in LANE_RULES and first <= f.line <= last
                      and f.severity in ("warning", "error")]
            masks = _mask_params(ctx, fn)
        if not inside and not masks and not width_params and not width_tparams:
            continue
        line = ctx.lines.line_col(ctx.starts[fn.name_index])[0]
        best = min(inside, key=lambda f: (LANE_RULES.index(f.rule_id), f.line)) if inside else None
        out[fn.name] = Helper(fn.name, f"{label}:{line}", best.rule_id if best else "", best.message if best else "",
                              masks, width_params, width_tparams)
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


def report_calls(ctx: Context, helpers: dict[str, Helper], *, local: bool) -> None:
    """Each call to a header's 32-lane helper is reported at the call (once per line and helper), unless this file
    defines a function of that name (that one is called); for every helper, a 32-bit mask it is passed."""
    if not helpers:
        return
    own = set() if local else {fn.name for fn in ctx.functions}
    wanted = {n.encode() for n in helpers}
    if not ctx.words & wanted:
        return
    seen = set()
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in wanted or ctx.in_directive[i]:
            continue
        if ctx.t(ctx.prev_code(i)) in (b".", b"->", b"::") or any(fn.name_index == i for fn in ctx.functions):
            continue  # a member of something else, or the definition itself
        shape = _call_shape(ctx, i)
        if shape is None:
            continue
        kind, targs, args = shape
        name = ctx.text[i].decode("latin-1")
        helper = helpers[name]
        if name in own:
            continue
        _check_width_args(ctx, i, helper, kind, targs, args)
        if kind == "launch":
            continue
        line = ctx.lines.line_col(ctx.starts[i])[0]
        if helper.mask_params:
            _check_mask_args(ctx, args, helper)
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
        return ("call", targs, args or [])
    if ctx.t(k) == b"<<" and ctx.t(k + 1) == b"<":
        j = k + 2
        while j + 1 < ctx.n and not (ctx.text[j] == b">>" and ctx.text[j + 1] == b">"):
            if ctx.text[j] == b";":
                return None
            j += 1
        args = ctx.call_args(j + 1) if j + 1 < ctx.n else None
        return ("launch", targs, args or []) if args is not None else None
    return None


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


def _check_mask_args(ctx: Context, args, helper: Helper) -> None:
    """The argument a helper forwards as a lane mask: a 32-bit literal, or a variable whose value (followed back
    through plain copies `T b = a;` in the calling function) is one or has a 32-bit type."""
    if _MASK_RULE not in ctx.hazards or ctx.rocm < (6, 2):
        return
    for pos in helper.mask_params:
        if not args or pos >= len(args):
            continue
        why = _mask_origin(ctx, args[pos][0], *args[pos])
        if why:
            arg = ctx.span_text(*args[pos]).decode("latin-1").strip()
            ctx.report(_MASK_RULE, ctx.next_code(args[pos][0] - 1),
                       f"`{arg}` reaches the lane mask of `{helper.name}` (defined at {helper.where}) {why}; HIP "
                       f"masks are 64-bit (`unsigned long long`, full mask `0xffffffffffffffffull`)",
                       confidence="medium", subject=helper.name)


def _mask_origin(ctx: Context, call: int, first: int, last: int) -> str:
    fn = ctx.function_at(call)
    for _ in range(_MAX_HOPS):
        is32, _value = is_full_mask32(ctx, first, last)
        if is32:
            return f"as the 32-bit value `{ctx.span_text(first, last).decode('latin-1').strip()}`"
        code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
        if len(code) != 1 or ctx.kinds[code[0]] != IDENT:
            return ""
        decl = ctx.find_decl(ctx.text[code[0]], code[0], fn.params if fn else None)
        if decl is None:
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


@lru_cache(maxsize=256)
def header_helpers(path: str, mtime_ns: int, size: int, options) -> dict[str, Helper]:
    """The helper summary of one header, audited with the including file's options (cached per version)."""
    from hipport.audit.engine import (
        run_checks,  # the engine runs this module; the import is deferred
    )

    if size > _MAX_HEADER_BYTES:
        return {}
    try:
        with open(path, "rb") as fh:
            src = fh.read()
    except OSError:
        return {}
    try:
        ctx = run_checks(src, path, options)
    except Exception:  # noqa: BLE001 - a header that cannot be lexed has no summary; its own audit says why
        return {}
    return summarise(ctx, ctx.findings, os.path.basename(path))


_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def dependency_key(src: bytes, path: str, include_dirs: tuple[str, ...] = ()) -> bytes:
    """What a file's audit depends on besides its own bytes: the headers it includes with quotes, by path, size
    and modification time, so that a cached result is not reused after one of them changed."""
    here = os.path.dirname(os.path.abspath(path))
    parts = []
    for m in _QUOTED_INCLUDE.finditer(src):
        name = m.group(1).decode("utf-8", "replace")
        for folder in (here, *include_dirs):
            candidate = os.path.normpath(os.path.join(folder, name))
            try:
                st = os.stat(candidate)
            except OSError:
                continue
            parts.append(f"{candidate}\0{st.st_size}\0{st.st_mtime_ns}")
            break
    return "\n".join(parts).encode("utf-8", "surrogateescape")


def helpers_of_includes(ctx: Context, path: str, options) -> dict[str, Helper]:
    out: dict[str, Helper] = {}
    for header in included_headers(ctx, path, tuple(getattr(options, "include_dirs", ()))):
        if os.path.abspath(header) == os.path.abspath(path):
            continue
        try:
            st = os.stat(header)
        except OSError:
            continue
        for name, helper in header_helpers(header, st.st_mtime_ns, st.st_size, options).items():
            out.setdefault(name, helper)
    return out
