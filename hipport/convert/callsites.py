"""Calls whose HIP form differs in more than the name: symbol and kernel arguments, arity-dependent
functions, and the warp built-ins whose form depends on the targeted ROCm release."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipport.convert.calls import Arg, call_args

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext

_ALREADY_WRAPPED = (b"HIP_SYMBOL", b"reinterpret_cast", b"static_cast", b"(void", b"(const", b"(void*")


def _arg_text(conv: "ConversionContext", arg: Arg) -> bytes:
    return conv.src[arg.start : arg.end]


def _wrap(conv: "ConversionContext", arg: Arg, before: bytes, after: bytes, cuda: str, category: str) -> None:
    if arg.first == arg.last:
        return
    conv.convert(arg.start, arg.start, before, cuda, category)
    conv.edits_only(arg.end, arg.end, after)


def rewrite_calls(conv: "ConversionContext") -> None:
    sem = conv.semantic
    tokens, src = conv.tokens, conv.src
    starts, ends = tokens.starts, tokens.ends
    for i in conv.candidates:
        if conv.skip[i]:
            continue
        name = src[starts[i] : ends[i]].decode("latin-1")
        if name in sem.warp_sync:
            if conv.user_names.is_users(i):
                continue
            conv.claimed.add(i)
            _warp_sync(conv, i, name)
            continue
        if name not in sem.symbol_args and name not in sem.kernel_args and name not in sem.by_arity:
            continue
        if conv.user_names.is_users(i):
            continue  # `pool.cudaMemcpyToSymbol(...)`, `Sym::cudaMemcpyToSymbol(...)`: the user's function
        found = call_args(tokens, i)
        if found is None:
            continue
        _, _, args = found
        if name in sem.by_arity:
            count, hip = sem.by_arity[name]
            if len(args) == count:
                conv.claimed.add(i)
                conv.convert(starts[i], ends[i], hip.encode(), name, "runtime")
        if name in sem.symbol_args:
            pos = sem.symbol_args[name]
            if pos < len(args) and not _arg_text(conv, args[pos]).startswith(_ALREADY_WRAPPED):
                _wrap(conv, args[pos], b"HIP_SYMBOL(", b")", name, "argument")
        if name in sem.kernel_args:
            pos, min_args = sem.kernel_args[name]
            if pos < len(args) and len(args) >= min_args and not _arg_text(conv, args[pos]).startswith(_ALREADY_WRAPPED):
                _wrap(conv, args[pos], b"reinterpret_cast<const void*>(", b")", name, "argument")


def _mask_kind(conv: "ConversionContext", arg: Arg) -> str:
    """"full32", "full64" or "other" for a mask argument; a macro defined in this file counts by its value."""
    sem = conv.semantic
    text = b"".join(conv.tokens.text(k) for k in range(arg.first, arg.last)).decode("latin-1")
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    value = conv.macro_values.get(text, text)
    if value in sem.full32:
        return "full32"
    if value in sem.full64:
        return "full64"
    return "other"


def _warp_sync(conv: "ConversionContext", i: int, name: str) -> None:
    sem = conv.semantic
    tokens = conv.tokens
    found = call_args(tokens, i)
    if found is None or not found[2]:
        return
    _, _, args = found
    mask = args[0]
    kind = _mask_kind(conv, mask)
    target = conv.options.rocm_version
    mask_free = sem.warp_sync[name]
    if target < sem.sync_opt_in:
        if kind == "other" or len(args) < 2:
            conv.finding("warp-sync-mask", "error", tokens.starts[i],
                         f"`{name}` has no HIP form before ROCm {_v(sem.sync_opt_in)} and its mask "
                         f"`{_arg_text(conv, mask).decode('latin-1')}` is not all lanes; rewrite it by hand "
                         f"(`{mask_free}` without a mask, or target a newer ROCm)", subject=name)
            return
        conv.convert(tokens.starts[i], tokens.ends[i], mask_free.encode(), name, "warp")
        conv.edits_only(mask.start, args[1].start, b"")
        return
    if kind == "full32":
        conv.convert(mask.start, mask.end, sem.full64_spelling.encode(), name, "warp")
    elif kind == "other":
        conv.finding("warp-sync-mask", "warning", mask.start,
                     f"`{name}` takes a 64-bit mask on HIP; make sure "
                     f"`{_arg_text(conv, mask).decode('latin-1')}` is a 64-bit `unsigned long long`", subject=name)
    if target < sem.sync_enabled and "warp-sync-opt-in" not in conv.once:
        conv.once.add("warp-sync-opt-in")
        conv.finding("warp-sync-opt-in", "info", tokens.starts[i],
                     f"`{name}` needs `-DHIP_ENABLE_WARP_SYNC_BUILTINS` on ROCm {_v(sem.sync_opt_in)}", subject=name)


def _v(version: tuple) -> str:
    return ".".join(map(str, version))
