"""Calls whose HIP form differs in more than the name: symbol and kernel arguments, arity-dependent
functions, and the warp built-ins whose form depends on the targeted ROCm release."""

from __future__ import annotations

import re

from typing import TYPE_CHECKING

from hipport.convert import mask_variables
from hipport.convert.amd_args import amd_arguments
from hipport.convert.calls import Arg, call_args, matching_close
from hipport.convert.declared import canonical, declared_type
from hipport.scan import IDENT, LITERAL

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext

_ALREADY_WRAPPED = (b"HIP_SYMBOL", b"reinterpret_cast", b"static_cast", b"const_cast", b"(void", b"(const", b"(void*")


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
        if conv.skip[i] or i in conv.claimed:  # claimed: an earlier pass rewrote this call (sync_builtins)
            continue
        name = src[starts[i] : ends[i]].decode("latin-1")
        if name in sem.warp_sync:
            if conv.user_names.is_users(i):
                continue
            conv.claimed.add(i)
            _warp_sync(conv, i, name)
            continue
        if name in sem.before_sync:
            # 6.2 declares `__activemask` only with HIP_ENABLE_WARP_SYNC_BUILTINS, as it does the *_sync forms
            if conv.options.rocm_version < sem.sync_enabled and not conv.user_names.is_users(i):
                _before_sync(conv, i, name)
            continue
        if name not in sem.symbol_args and name not in sem.kernel_args and name not in sem.by_arity \
                and name not in sem.rewrites and name not in sem.defaults and name not in sem.location:
            continue
        if conv.user_names.is_users(i):
            continue  # `pool.cudaMemcpyToSymbol(...)`, `Sym::cudaMemcpyToSymbol(...)`: the user's function
        found = call_args(tokens, i)
        if found is None:
            continue
        args = amd_arguments(conv, found[2])  # a platform test inside the call: the AMD build's arguments
        if name in sem.location:
            _location_to_device(conv, i, name, args)
        if name in sem.defaults:
            _append_defaults(conv, name, args)
        if name in sem.rewrites:
            _rewrite_arguments(conv, i, name, args, found[0])
        if name in sem.by_arity:
            count, hip = sem.by_arity[name]
            if len(args) == count:
                conv.claimed.add(i)
                conv.convert(starts[i], ends[i], hip.encode(), name, "runtime")
        if name in sem.symbol_args:
            pos = sem.symbol_args[name]
            if pos < len(args) and not _arg_text(conv, args[pos]).startswith(_ALREADY_WRAPPED):
                address = name in sem.symbol_address and not _arg_text(conv, args[pos]).startswith(b"&") \
                    and _declared_as(conv, args[pos]) != b"const void*"
                _wrap(conv, args[pos], b"HIP_SYMBOL(&" if address else b"HIP_SYMBOL(", b")", name, "argument")
        if name in sem.kernel_args:
            pos, min_args = sem.kernel_args[name]
            if pos < len(args) and len(args) >= min_args and not _arg_text(conv, args[pos]).startswith(_ALREADY_WRAPPED):
                _wrap(conv, args[pos], b"reinterpret_cast<const void*>(", b")", name, "argument")


_LOCATION_TYPES = {b"cudaMemLocationTypeDevice": "device", b"hipMemLocationTypeDevice": "device",
                   b"cudaMemLocationTypeHost": "host"}


def _location_to_device(conv: "ConversionContext", i: int, name: str, args: list[Arg]) -> None:
    """`[location]`: `cudaMemPrefetchAsync(p, n, {cudaMemLocationTypeDevice, dev}, 0, s)` ->
    `hipMemPrefetchAsync(p, n, dev, s)`; a location variable `loc` becomes
    `((loc).type == hipMemLocationTypeDevice ? (loc).id : hipCpuDeviceId)`."""
    count, pos, flags, hip, declared = conv.semantic.location[name]
    if len(args) != count:
        return
    text = _arg_text(conv, args[pos]).strip()
    if text.startswith(b"{") and text.endswith(b"}"):
        parts = [t.strip() for t in text[1:-1].split(b",")]
        kind = _LOCATION_TYPES.get(parts[0]) if len(parts) == 2 else None
        if kind is None:
            conv.finding("call-shape-unknown", "warning", args[pos].start,
                         f"`{name}`: HIP's `{hip}` takes a device ordinal, not the location "
                         f"`{text.decode('latin-1')}`; write the device (or `hipCpuDeviceId`) by hand", subject=name)
            return
        device = renamed_text(conv, args[pos].first + 3, args[pos].last - 1).strip() if kind == "device" \
            else b"hipCpuDeviceId"
    else:
        if declared and not _declared_location(conv, text):
            return  # the ordinal form of the same arity
        loc = renamed_text(conv, args[pos].first, args[pos].last).strip()
        device = b"((" + loc + b").type == hipMemLocationTypeDevice ? (" + loc + b").id : hipCpuDeviceId)"
    conv.claimed.add(i)
    conv.claimed.update(range(args[pos].first, args[pos].last))  # written whole here, renamed inside
    conv.convert(conv.tokens.starts[i], conv.tokens.ends[i], hip.encode(), name, "runtime")
    conv.edits_only(args[pos].start, args[pos].end, device)
    if flags is not None:
        conv.edits_only(args[flags - 1].end, args[flags].end, b"")
        if _arg_text(conv, args[flags]).strip() not in (b"0", b"0u", b"0U"):
            conv.finding("call-rewrite-note", "warning", args[flags].start,
                         f"`{name}`: HIP's `{hip}` takes no flags; `{_arg_text(conv, args[flags]).decode('latin-1')}`"
                         f" is dropped", subject=name)


def _declared_location(conv: "ConversionContext", text: bytes) -> bool:
    """Whether ``text`` is a variable this file declares as `cudaMemLocation` (or `hipMemLocation`)."""
    if not re.fullmatch(rb"[A-Za-z_]\w*", text):
        return False
    return re.search(rb"\b(?:cuda|hip)MemLocation\s+(?:\w+\s*,\s*)*" + re.escape(text) + rb"\b", conv.src) is not None


def _append_defaults(conv: "ConversionContext", name: str, args: list[Arg]) -> None:
    """`[defaults]`: a call leaving out trailing parameters CUDA's declaration gives defaults, and HIP's does not,
    gets their values written (`cudaStreamWaitEvent(s, e)` -> `hipStreamWaitEvent(s, e, 0)`)."""
    params, values = conv.semantic.defaults[name]
    missing = params - len(args)
    if not args or missing <= 0 or missing > len(values):
        return
    text = b"".join(b", " + v.encode() for v in values[len(values) - missing:])
    conv.convert(args[-1].end, args[-1].end, text, name, "argument")


_NULLS = {b"0", b"NULL", b"nullptr", b"0L", b"0UL", b"(void*)0", b"((void*)0)", b"NULL_PTR"}


def _applies(conv: "ConversionContext", rw, name: str, nargs: int | None) -> bool:
    roc = conv.options.roc
    if rw.mode == "hip" and roc or rw.mode == "roc" and not roc:
        return False
    target = conv.options.rocm_version
    if rw.rocm_min is not None and target < rw.rocm_min or rw.rocm_before is not None and target >= rw.rocm_before:
        return False
    if rw.unless_defined and _amd_defines(conv).intersection(rw.unless_defined):
        return False  # the call takes the arguments as they are there
    if rw.mode == "roc":
        rule = conv.rules.names.get(name)
        if rule is None or not rule.roc:
            return False  # not renamed to a ROC name: its arguments stay the CUDA ones
    return nargs is None or rw.args is None or rw.args == nargs


def _amd_defines(conv: "ConversionContext") -> set[str]:
    """Macros the AMD build defines for the file: the project's switches, and the file's own `#define`s."""
    stated = {d.partition("=")[0].strip() for d in conv.options.defines if not d.startswith("!")}
    return stated | conv.defines


def _filled(conv: "ConversionContext", text: str) -> str:
    """An inserted text with `{hip_version}` as the targeted release numbers itself (100 * major + minor, `603`):
    hipGetProcAddress asks for a function as of that HIP version."""
    if "{hip_version}" not in text:
        return text
    major, minor = conv.options.rocm_version[:2]
    return text.replace("{hip_version}", str(major * 100 + minor))


_API_NAME = re.compile(rb'^"([A-Za-z_][A-Za-z0-9_]*)"$')


def _api_name(conv: "ConversionContext", call: str, arg: Arg, warn: str, edits: list) -> None:
    """A string naming a CUDA API function for a lookup by name (`cuGetProcAddress("cuMemAlloc", ...)`): HIP looks
    its functions up by their HIP names, so the literal gets the name the rename tables give (`"hipMalloc"`). A
    name HIP lacks is reported; so is an argument that is no literal, with ``warn``."""
    tokens = conv.tokens
    m = _API_NAME.match(_arg_text(conv, arg).strip()) if arg.last - arg.first == 1 \
        and tokens.kinds[arg.first] == LITERAL else None
    if m is None:
        if warn:
            conv.finding("call-rewrite-note", "warning", arg.start,
                         f"`{call}`: {warn} (`{_arg_text(conv, arg).decode('latin-1')}`)", subject=call)
        return
    cuda = m.group(1).decode("latin-1")
    rule = conv.rules.names.get(cuda)
    target = rule.target(False) if rule is not None else None
    if target is not None:
        target = conv.rules.for_release("names", cuda, conv.options.rocm_version) or target
        edits.append((arg.start, arg.end, b'"' + target.encode() + b'"'))
        conv.claimed.add(arg.first)
    elif not cuda.startswith("hip"):
        conv.finding("call-rewrite-note", "warning", arg.start,
                     f"`{call}`: HIP has no function for `\"{cuda}\"`; the lookup will not find it", subject=call)


def _rewrite_arguments(conv: "ConversionContext", i: int, name: str, args: list[Arg], open_paren: int) -> None:
    """`[[rewrite]]` rules: arguments inserted, replaced, removed, moved, copied or cast. Every position is one of
    the call as written, and every change an edit at an argument's edges, so renames inside the arguments still
    apply; moved and copied text is written renamed. A call of another argument count is reported."""
    sem = conv.semantic
    candidates = [rw for rw in sem.rewrites[name] if _applies(conv, rw, name, None)]
    if not candidates:
        return
    chosen = next((rw for rw in candidates if _applies(conv, rw, name, len(args))), None)
    start = conv.tokens.starts[i]
    if chosen is None:
        counts = sorted({rw.args for rw in candidates if rw.args is not None})
        conv.finding("call-shape-unknown", "warning", start,
                     f"`{name}` takes other arguments on {'ROCm' if conv.options.roc else 'HIP'} and hipport knows "
                     f"the call with {' or '.join(map(str, counts))} arguments, not {len(args)}; renamed only: "
                     f"rewrite its arguments by hand", subject=name)
        return
    n = len(args)
    inserts: dict[int, list] = {}   # offset -> [(order key, text)]
    edits: list[tuple[int, int, bytes]] = []

    def before(pos: int, text: bytes, order: tuple) -> None:
        if pos < n:
            inserts.setdefault(args[pos].start, []).append((order, text + b", "))
        else:
            at = args[-1].end if args else conv.tokens.ends[open_paren]
            inserts.setdefault(at, []).append((order, b", " + text))

    def drop(first: int, count: int) -> None:
        last = first + count - 1
        if last + 1 < n:
            edits.append((args[first].start, args[last + 1].start, b""))
        elif first > 0:
            edits.append((args[first - 1].end, args[last].end, b""))
        else:
            edits.append((args[first].start, args[last].end, b""))
        for a in args[first:last + 1]:
            conv.claimed.update(range(a.first, a.last))

    for k, op in enumerate(chosen.ops):
        if op.pos >= n and op.kind not in ("insert",):
            continue  # nothing there to change
        if op.kind == "insert":
            before(op.pos, _filled(conv, op.text).encode(), (op.pos, k))
        elif op.kind == "replace":
            arg_text = _arg_text(conv, args[op.pos]).decode("latin-1")
            text = dict(op.values).get(arg_text.replace(" ", ""), op.text)
            if op.warn and arg_text.replace(" ", "") not in dict(op.values):
                conv.finding("call-rewrite-note", "warning", args[op.pos].start,
                             f"`{name}`: {op.warn} (`{arg_text}` "
                             + (f"became `{text}`)" if text else "is left as written)"), subject=name)
            if text:
                edits.append((args[op.pos].start, args[op.pos].end, text.encode()))
                conv.claimed.update(range(args[op.pos].first, args[op.pos].last))
        elif op.kind == "remove":
            arg = args[op.pos]
            if op.warn and _arg_text(conv, arg).replace(b" ", b"") not in _NULLS:
                conv.finding("call-rewrite-note", "warning", arg.start,
                             f"`{name}`: {op.warn} (`{_arg_text(conv, arg).decode('latin-1')}` is dropped)",
                             subject=name)
            drop(op.pos, 1)
        elif op.kind in ("move", "copy"):
            last = min(op.pos + op.count, n) - 1
            text = renamed_text(conv, args[op.pos].first, args[last].last)
            before(op.to, text, (op.to, k))
            if op.kind == "move":
                drop(op.pos, last - op.pos + 1)
        elif op.kind == "api_name":
            _api_name(conv, name, args[op.pos], op.warn, edits)
        elif op.kind == "cast":
            arg = args[op.pos]
            # a null constant converts as it is, and const_cast cannot take one
            if arg.first != arg.last and not _arg_text(conv, arg).startswith(_ALREADY_WRAPPED) \
                    and _arg_text(conv, arg).replace(b" ", b"") not in _NULLS \
                    and _declared_as(conv, arg) != canonical(op.text.encode()):
                edits.append((arg.start, arg.start, f"{op.cast_as}<{op.text}>(".encode()))
                edits.append((arg.end, arg.end, b")"))
    for at, texts in inserts.items():
        edits.append((at, at, b"".join(t for _, t in sorted(texts, key=lambda x: x[0]))))
    edits.sort()
    for k, (a, b, new) in enumerate(edits):
        if k == 0:
            conv.convert(a, b, new, name, "argument")
        else:
            conv.edits_only(a, b, new)
    if chosen.note:
        unfinished = not chosen.ops or chosen.incomplete
        conv.finding("call-not-rewritten" if unfinished else "call-rewrite-note", "warning", start,
                     f"`{name}`: {chosen.note}", subject=name)


def _declared_as(conv: "ConversionContext", arg: Arg) -> bytes | None:
    """The HIP spelling of the type ``arg`` was declared with in this file, in one spelling (`canonical`), or None.
    A `[symbol]` argument with `address` declared `const void*` is the symbol's address already: CUDA's C++
    template overload takes the variable (`void* p` gives `&p`, as a `__device__` variable does), but for a
    `const void*` the C function wins the overload (checked with nvcc 13), so `p` itself is the symbol. A cast to
    the type the argument was declared with is not written."""
    found = declared_type(conv, arg)
    return canonical(renamed_text(conv, *found)) if found else None


def renamed_text(conv: "ConversionContext", first: int, last: int) -> bytes:
    """The source text of tokens first..last-1 with the CUDA names in it written as the rename pass would."""
    tokens, src = conv.tokens, conv.src
    roc = conv.options.roc
    out, pos = [], tokens.starts[first]
    for k in range(first, last):
        out.append(src[pos:tokens.starts[k]])
        text = src[tokens.starts[k]:tokens.ends[k]]
        if tokens.kinds[k] == IDENT and not conv.user_names.is_users(k):
            rule = conv.rules.names.get(text.decode("latin-1"))
            target = rule.target(roc) if rule is not None else None
            if target and not roc:
                target = conv.semantic.forward.current(target, conv.options.rocm_version)
            if target and (roc or rule.family not in conv.rules.family_notes):
                text = target.encode()
        out.append(text)
        pos = tokens.ends[k]
    return b"".join(out)


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


_QUALIFIERS = {b"const", b"volatile", b"static", b"register", b"__shared__", b"constexpr", b"&", b"__restrict__"}


def _mask_call(conv: "ConversionContext", arg: Arg) -> bool:
    """Whether a mask argument is one call, in brackets or not, of a built-in whose HIP result is a 64-bit mask
    (rules/warp.toml `mask_calls`: `__activemask()`, `__ballot_sync(m, p)`)."""
    tokens = conv.tokens
    first, last = arg.first, arg.last
    while last - first > 2 and tokens.text(first) == b"(" and matching_close(tokens, first) == last - 1:
        first, last = first + 1, last - 1
    if first >= last or tokens.text(first) not in conv.semantic.mask_types[2]:
        return False
    found = call_args(tokens, first)
    return found is not None and found[1] == last - 1


def _declared_width(conv: "ConversionContext", arg: Arg) -> tuple[int | None, str]:
    """(64 or 32 or None, the type word) of a mask argument that is one variable, from the nearest declaration of it
    before the call: `uint64_t m = ...`, a parameter `unsigned long long m`, `auto m = __activemask()`."""
    tokens = conv.tokens
    if arg.last - arg.first != 1:
        return None, ""
    wide, narrow, mask_calls = conv.semantic.mask_types
    name = tokens.text(arg.first)
    n = len(tokens)
    for k in range(arg.first - 1, max(0, arg.first - 4000), -1):
        if tokens.text(k) != name or k + 1 >= n or tokens.text(k + 1) not in (b"=", b";", b",", b")", b"{", b"("):
            continue
        j = k - 1
        while j >= 0 and tokens.text(j) in _QUALIFIERS:
            j -= 1
        if j < 0:
            return None, ""
        word = tokens.text(j)
        if word == b"long":
            return (64, "long") if j > 0 and tokens.text(j - 1) in (b"long", b"unsigned") else (None, "")
        if word in wide:
            return 64, word.decode()
        if word == b"auto":
            init = tokens.text(k + 2) if k + 2 < n and tokens.text(k + 1) == b"=" else b""
            return (64, "auto") if init in mask_calls else (None, "")
        if word in narrow:
            unsigned = word == b"int" and j > 0 and tokens.text(j - 1) == b"unsigned"
            return 32, "unsigned int" if unsigned else word.decode()
        if word in (b"=", b"(", b",", b"return", b"+=", b"|=", b"&="):
            continue  # a use of the name, not its declaration: look further back
        return None, ""
    return None, ""


def _before_sync(conv: "ConversionContext", i: int, name: str) -> None:
    """`__activemask()` -> `__ballot(1)` for releases that have no `__activemask`."""
    found = call_args(conv.tokens, i)
    if found is None or found[2]:
        return
    conv.claimed.add(i)
    conv.convert(conv.tokens.starts[i], conv.tokens.ends[found[1]], conv.semantic.before_sync[name].encode(), name,
                 "warp")


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
    # On 6.2 the *_sync forms are undeclared unless the build defines HIP_ENABLE_WARP_SYNC_BUILTINS (and then take
    # only 64-bit masks): the output is written as for older releases, the mask-free built-ins the hand ports use,
    # so that it builds as written.
    if target < sem.sync_enabled:
        missing = (f"has no HIP form before ROCm {_v(sem.sync_opt_in)}" if target < sem.sync_opt_in else
                   f"is undeclared on ROCm {_v(target)} without HIP_ENABLE_WARP_SYNC_BUILTINS")
        if len(args) < 2:
            conv.finding("warp-sync-mask", "error", tokens.starts[i],
                         f"`{name}` {missing}; rewrite it by hand "
                         f"(`{mask_free}` without a mask, or target a newer ROCm)", subject=name)
            return
        conv.convert(tokens.starts[i], tokens.ends[i], mask_free.encode(), name, "warp")
        conv.edits_only(mask.start, args[1].start, b"")
        if kind == "other":
            # Left as it was, the call cannot build with this release; the mask-free form covers every active
            # lane, which is what a partial mask usually names on hardware whose lanes never run apart.
            conv.finding("warp-sync-mask", "warning", tokens.starts[i],
                         f"`{name}` {missing}: written as `{mask_free}`, "
                         f"its mask `{_arg_text(conv, mask).decode('latin-1')}` dropped; `{mask_free}` works on "
                         f"every active lane, so make sure the lanes outside the mask are inactive here or do not "
                         f"change the result (`hipport audit` says more)", subject=name)
        return
    if kind == "full32":
        conv.convert(mask.start, mask.end, sem.full64_spelling.encode(), name, "warp")
    elif kind == "other":
        if _mask_call(conv, mask):
            return  # `__activemask()`, a ballot: HIP declares them `unsigned long long`
        width, declared = _declared_width(conv, mask)
        if width == 64:
            return  # a variable declared 64-bit (or `auto` from `__activemask()`): what HIP takes
        arg = _arg_text(conv, mask).decode("latin-1")
        if width == 32:
            if mask_variables.widen(conv, mask, name):
                return
            conv.finding("warp-sync-mask", "warning", mask.start,
                         f"`{name}` takes a 64-bit mask on HIP, and `{arg}` is declared `{declared}` (32 bits), which "
                         f"ROCm 7's `static_assert` rejects: declare it `unsigned long long` and give it the lanes of "
                         f"a whole wavefront (`__activemask()`, a 64-bit ballot)", subject=name)
            return
        conv.finding("warp-sync-mask", "warning", mask.start,
                     f"`{name}` takes a 64-bit mask on HIP; make sure `{arg}` is a 64-bit `unsigned long long`",
                     subject=name)


def _v(version: tuple) -> str:
    return ".".join(map(str, version))
