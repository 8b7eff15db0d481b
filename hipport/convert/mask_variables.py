"""A mask kept in a 32-bit variable on its way to the `*_sync` built-ins, for a target where they take 64 bits.

`unsigned active = __activemask();` then `__shfl_sync(active, v, 0)`: on HIP `__activemask()` returns the 64 bits of
a wavefront, the 32-bit variable keeps half of them, and from ROCm 7.0 the built-ins' `static_assert` rejects the
32-bit type. Where the variable is initialised by a call that returns a mask (rules/warp.toml `[masks] mask_calls`)
and every later use of it in its block is the mask argument of a `*_sync` call, its type becomes `unsigned long
long`: the value is then what the call returned, and nothing else reads the variable, so nothing else changes. A
variable read in any other way (`__popc(active)`, `active == 0xffffffff`) would change meaning with its width: it is
left to the finding of `rewrite_calls` and the audit's patch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipport.convert.calls import call_args, next_code, prev_code
from hipport.scan import COMMENT, IDENT

if TYPE_CHECKING:
    from hipport.convert.calls import Arg
    from hipport.convert.context import ConversionContext

WIDE = b"unsigned long long"
# The 32-bit unsigned spellings this rewrite replaces (a signed `int` mask is left to a person: its sign matters to
# any arithmetic on it); `unsigned int` is matched as two words.
_NARROW_UNSIGNED = {b"unsigned", b"uint32_t", b"uint", b"u32", b"uint32"}
_BEFORE_TYPE = {b";", b"{", b"}", b"const", b"volatile", b"register"}


def widen(conv: "ConversionContext", mask: "Arg", call: str) -> bool:
    """Widen the declaration of the variable ``mask`` names when the rules above hold; True when it is (or was, for
    an earlier call of the same variable) widened."""
    tokens = conv.tokens
    if mask.last - mask.first != 1 or tokens.kinds[mask.first] != IDENT:
        return False
    name = tokens.text(mask.first)
    decl = _declaration(conv, name, mask.first)
    if decl is None:
        return False
    type_first, type_last, var, end = decl
    key = f"mask-variable:{var}"
    if key in conv.once:
        return True
    if not _only_masks(conv, name, end):
        return False
    conv.once.add(key)
    conv.claimed.update(range(type_first, type_last + 1))
    conv.convert(tokens.starts[type_first], tokens.ends[type_last], WIDE, call, "warp")
    return True


def _declaration(conv: "ConversionContext", name: bytes, use: int) -> tuple[int, int, int, int] | None:
    """(first type token, last type token, the variable's token, the token ending its statement) of `TYPE name =
    MASKCALL(...);`, the nearest declaration of ``name`` before ``use``, or None."""
    tokens = conv.tokens
    mask_calls = conv.semantic.mask_types[2]
    for k in range(use - 1, max(0, use - 4000), -1):
        if tokens.kinds[k] != IDENT or tokens.text(k) != name:
            continue
        eq = next_code(tokens, k + 1)
        call = next_code(tokens, eq + 1)
        if eq >= len(tokens) or tokens.text(eq) != b"=" or call >= len(tokens):
            continue  # a use, not a declaration with an initialiser: keep looking back
        last = prev_code(tokens, k - 1)
        if last < 0 or tokens.text(last) not in _NARROW_UNSIGNED | {b"int"}:
            return None
        first = last
        if tokens.text(last) == b"int":
            first = prev_code(tokens, last - 1)
            if first < 0 or tokens.text(first) != b"unsigned":
                return None
        before = prev_code(tokens, first - 1)
        if before >= 0 and tokens.text(before) not in _BEFORE_TYPE:
            return None  # a parameter, a member, a second declarator, a cast: not this simple shape
        if tokens.text(call) not in mask_calls:
            return None
        found = call_args(tokens, call)
        if found is None:
            return None
        end = next_code(tokens, found[1] + 1)
        if end >= len(tokens) or tokens.text(end) != b";":
            return None
        return first, last, k, end
    return None


def _only_masks(conv: "ConversionContext", name: bytes, start: int) -> bool:
    """Every use of ``name`` from token ``start`` to the end of its block is the first argument of a `*_sync` call."""
    tokens = conv.tokens
    sync = {*conv.semantic.warp_sync, "__syncwarp"}  # `__syncwarp(mask)` has no mask-free twin in that table
    depth = 0
    for k in range(start + 1, len(tokens)):
        kind, text = tokens.kinds[k], tokens.text(k)
        if kind == COMMENT:
            continue
        if text == b"{":
            depth += 1
        elif text == b"}":
            depth -= 1
            if depth < 0:
                return True
        elif kind == IDENT and text == name:
            opener = prev_code(tokens, k - 1)
            callee = prev_code(tokens, opener - 1)
            after = next_code(tokens, k + 1)
            if not (opener >= 0 and tokens.text(opener) == b"(" and callee >= 0
                    and tokens.text(callee).decode("latin-1") in sync
                    and after < len(tokens) and tokens.text(after) in (b",", b")")):
                return False
    return True
