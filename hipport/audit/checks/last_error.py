"""A runtime call whose failure the code handles and carries on from, followed in the same function by
`hipGetLastError()` (`last-error-sticky`). From ROCm 7.0 the failure stays recorded until that call reads it, where
before the next call's success replaced it; CUDA's `cudaGetLastError()` behaves as 7.0 does.

"Handled and carried on" is read from the code, narrowly: the call's status (the call itself, or the variable it
was stored in) is compared in an `if` with a specific error (`== cudaErrorPeerAccessAlreadyEnabled`) or with
success, and the branch the failure takes does not leave the function; or the statement holding the call compares
it with a specific error (`EXPECT_EQ(hipMalloc(...), hipErrorOutOfMemory)`). `hipErrorNotReady` (a query's "not
yet") is never recorded, so comparisons with it are not failures."""

from __future__ import annotations

import re

from hipport.audit.checks import host_flow
from hipport.audit.checks.common import enclosing_open
from hipport.audit.checks.context import IDENT, Context
from hipport.model import Edit

RULE = "last-error-sticky"
_READERS = frozenset({b"hipGetLastError", b"cudaGetLastError", b"hipPeekAtLastError", b"cudaPeekAtLastError"})
_CALL = re.compile(rb"\b(?:hip|cuda)[A-Z]\w*(?=\s*\()")
_NOT_RUNTIME = re.compile(rb"^(?:hip|cuda)(?:GetLastError|PeekAtLastError|GetErrorString|GetErrorName|"
                          rb"DrvGetErrorString|DrvGetErrorName|LaunchKernelGGL)$")
_SUCCESS = frozenset({b"hipSuccess", b"cudaSuccess"})
_NOT_RECORDED = frozenset({b"hipErrorNotReady", b"cudaErrorNotReady"})
_ERROR = re.compile(rb"^(?:hip|cuda)Error[A-Z]\w*$")
_IF = re.compile(rb"\bif\b")


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or ctx.rocm < (7, 0) or not ctx.words & _READERS:
        return
    bodies: dict[tuple[int, int], list[int]] = {}
    for m in re.finditer(rb"\b(?:hip|cuda)(?:GetLastError|PeekAtLastError)\b", ctx.src):
        k = host_flow.token_at(ctx, m.start())
        if k is None or ctx.text[k] not in _READERS or ctx.in_directive[k] or ctx.device[k] or not ctx.is_call(k):
            continue
        body = host_flow.function_body(ctx, k)
        if body is not None:
            bodies.setdefault(body, []).append(k)
    for body, readers in bodies.items():
        for m in _CALL.finditer(ctx.src, ctx.ends[body[0]], ctx.starts[readers[-1]]):
            call = host_flow.token_at(ctx, m.start())
            if call is None or _NOT_RUNTIME.match(ctx.text[call]) or not ctx.is_call(call) or ctx.in_directive[call]:
                continue
            handled = _handled(ctx, call, body)
            if handled is None:
                continue
            done, where, edits = handled
            later = _first_check(ctx, readers, call, done)
            if later is None:
                continue
            name = ctx.text[call].decode("latin-1")
            reader = ctx.text[later].decode("latin-1")
            clear = f"(void){_prefix(ctx.text[call])}GetLastError();"
            line = ctx.lines.line_col(ctx.starts[later])[0]
            ctx.report(RULE, call, f"a failure of `{name}` is not fatal here ({where}); from ROCm 7.0 "
                       f"it stays recorded, so `{reader}()` on line {line} returns it as if a later call had failed "
                       f"(read it where it is handled: `{clear}`)", confidence="medium", edits=edits, subject=name)


def _first_check(ctx: Context, readers: list[int], call: int, done: int) -> int | None:
    """The first read after ``call`` that checks for failures, unless a `*GetLastError()` reads (and so clears) the
    error first: inside the code that handles it, up to ``done``, or as a statement of its own whose value is
    dropped (`(void)hipGetLastError();`)."""
    for r in readers:
        if r <= call:
            continue
        if r <= done or _dropped(ctx, r):
            if ctx.text[r].endswith(b"GetLastError"):
                return None
            continue
        return r
    return None


def _dropped(ctx: Context, r: int) -> bool:
    """`X();` or `(void)X();`: the read's value is not used."""
    close = ctx.match(ctx.next_code(r))
    if close < 0 or ctx.t(ctx.next_code(close)) != b";":
        return False
    p = ctx.prev_code(r)
    if ctx.t(p) == b")" and ctx.t(ctx.prev_code(p)) == b"void":
        p = ctx.prev_code(ctx.match(p))
    return ctx.t(p) in (b";", b"{", b"}", b")") and host_flow.own_start(ctx, r) in (r, ctx.next_code(p))


def _prefix(name: bytes) -> str:
    return "cuda" if name.startswith(b"cuda") else "hip"


def _handled(ctx: Context, call: int, body: tuple[int, int]):
    """(index of the last token of the code that handles a failure of ``call``, where that is in words, the
    patch) when the code carries on after it; None when it does not, or the shape is not one this knows."""
    open_ = enclosing_open(ctx, call, b"(")
    while open_ >= 0:
        kw = ctx.prev_code(open_)
        if ctx.t(kw) == b"if":
            return _handled_if(ctx, kw, call)
        if ctx.t(kw) in host_flow.CONTROL:
            return None
        open_ = enclosing_open(ctx, open_, b"(")
    start = host_flow.own_start(ctx, call)
    last = host_flow.statement_last(ctx, start) if ctx.t(start) not in host_flow.CONTROL else None
    if last is None or ctx.t(last) != b";":
        return None
    close = ctx.match(ctx.next_code(call))
    # the status stored: `T e = call(...);` / `e = call(...);`
    eq = ctx.prev_code(call)
    if ctx.t(eq) == b"=" and ctx.kinds[ctx.prev_code(eq)] == IDENT and ctx.t(ctx.next_code(close)) == b";":
        var = ctx.text[ctx.prev_code(eq)]
        for m in _IF.finditer(ctx.src, ctx.ends[last], ctx.starts[body[1]]):
            if_ = host_flow.token_at(ctx, m.start())
            cond = host_flow.condition_of(ctx, if_) if if_ is not None else None
            if cond is None:
                continue
            if _assigned(ctx, var, last, if_):
                return None
            if host_flow.mentions(ctx, *cond, {var}):
                found = _handled_if(ctx, if_, call, var)
                if found is None:
                    return None
                return found[0], found[1], _after(ctx, last, call)
        return None
    # an expected error compared in the statement itself (`EXPECT_EQ(call(...), hipErrorOutOfMemory)`)
    words = {ctx.text[k] for k in range(start, last)}
    if any(_ERROR.match(w) for w in words) and not words & _NOT_RECORDED:
        return last, f"line {ctx.lines.line_col(ctx.starts[start])[0]} expects an error", _after(ctx, last, call)
    return None


def _assigned(ctx: Context, var: bytes, after: int, before: int) -> bool:
    return any(ctx.text[k] == var and ctx.t(ctx.next_code(k)) == b"=" for k in range(after + 1, before))


def _handled_if(ctx: Context, if_: int, call: int, var: bytes | None = None):
    """The `if` at ``if_`` tests the status of ``call`` (the call in its condition, or the variable ``var`` that
    holds it): the branch a failure takes, when it does not leave the function."""
    cond = host_flow.condition_of(ctx, if_)
    br = host_flow.branches(ctx, if_)
    if cond is None or br is None:
        return None
    first, last = cond
    if any(ctx.text[k] in _NOT_RECORDED for k in range(first, last)):
        return None
    errors = [k for k in range(first, last) if _ERROR.match(ctx.text[k])]
    success = [k for k in range(first, last) if ctx.text[k] in _SUCCESS]
    compared = errors or success
    if compared:
        ops = {_operator(ctx, k) for k in compared}
        if len(ops) != 1 or None in ops:
            return None
        equal = ops.pop() == b"=="
        # `== error` / `!= success`: the failure takes the then-branch; `!= error` / `== success`: the else
        fail_then = equal if errors else not equal
    else:  # `if (status)` / `if (!status)`
        negated = ctx.text[first] == b"!"
        k = ctx.next_code(first) if negated else first
        if var is not None:
            plain = ctx.text[k] == var and ctx.next_code(k) >= last
        else:
            plain = k == call and ctx.match(ctx.next_code(call)) == ctx.prev_code(last)
        if not plain:
            return None
        fail_then = not negated
    branch = br[0] if fail_then else br[1]
    if branch is not None and host_flow.leaves(ctx, *branch):
        return None
    done = host_flow.statement_last(ctx, if_)
    if done is None:
        return None
    line = ctx.lines.line_col(ctx.starts[if_])[0]
    where = f"the `if` on line {line} " + ("handles it" if branch is not None else "lets it through")
    edits = _first_in(ctx, branch, call) if branch is not None and ctx.t(branch[0]) == b"{" else []
    return done, where, edits


def _operator(ctx: Context, k: int) -> bytes | None:
    """`==` or `!=` comparing the constant at ``k`` with something."""
    before, after = ctx.prev_code(k), ctx.next_code(k)
    for op in (ctx.t(before), ctx.t(after)):
        if op in (b"==", b"!="):
            return op
    return None


def _clear(ctx: Context, call: int) -> bytes:
    return f"(void){_prefix(ctx.text[call])}GetLastError();".encode()


def _after(ctx: Context, last: int, call: int) -> list[Edit]:
    """A new line after the statement ending at ``last`` that reads the error."""
    end = host_flow.line_end(ctx, last)
    if end is None:
        return []
    nl = b"\r\n" if ctx.src[end:end + 2] == b"\r\n" else b"\n"
    return [Edit(end, end, nl + host_flow.indent_of(ctx, last) + _clear(ctx, call))]


def _first_in(ctx: Context, branch: tuple[int, int], call: int) -> list[Edit]:
    """A first line inside the braced branch that reads the error."""
    brace = branch[0]
    end = host_flow.line_end(ctx, brace)
    if end is None:
        return []
    inner = ctx.next_code(brace)
    same_line = inner < branch[1] and ctx.lines.line_col(ctx.starts[inner])[0] == \
        ctx.lines.line_col(ctx.starts[brace])[0]
    if inner < branch[1] and not same_line:
        indent = host_flow.indent_of(ctx, inner)
    else:
        indent = host_flow.indent_of(ctx, brace) + b"    "
    nl = b"\r\n" if ctx.src[end:end + 2] == b"\r\n" else b"\n"
    return [Edit(end, end, nl + indent + _clear(ctx, call))]
