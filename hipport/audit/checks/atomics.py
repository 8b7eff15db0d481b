"""Check 10: atomics whose behaviour on AMD depends on the memory or the type: system scope, floating-point add,
16-bit float types, and non-add/exchange/CAS operations on host or managed memory."""

from __future__ import annotations

from bisect import bisect_left

from hipport.audit.checks.common import enclosing_open, split_template_args, statement_start, user_defined
from hipport.audit.checks.context import COMMENT, IDENT, KEYWORD, LITERAL, Allocation, Context, Function
from hipport.releases import system_cas_loops

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
_CAST_PUNCT = {b"*", b"&", b"::", b"<", b">"}

_KIND_TEXT = {
    "device": "coarse-grained device memory",
    "device-flags": "device memory with the flags given there",
    "device-finegrained": "fine-grained device memory",
    "managed": "managed memory (fine-grained, coherent, unless advised `hipMemAdviseSetCoarseGrain`)",
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
        space, decl, origin = _space(ctx, *args[0], i, fn) if root else (None, None, None)
        if origin is not None and origin != decl:
            root = ctx.text[origin]  # `float* row = out + k; atomicAdd(row, v)`: the memory is `out`'s
        alloc, host_name = ctx.allocation_of(root.decode("latin-1"), fn) if root else (None, "")
        pointee, from_parse, via = _pointee(ctx, i, decl, fn)
        if alloc is None and decl is not None and space in ("managed", "global") and _file_scope(ctx, decl):
            # `__managed__ float m;` / `__device__ float g;`: the variable is its own allocation
            api, kind = ("__managed__", "managed") if space == "managed" else ("__device__", "device")
            alloc, host_name = Allocation(kind, api, ctx.lines.line_col(ctx.starts[decl])[0]), root.decode("latin-1")
        if word.endswith(b"_system"):
            _system(ctx, i, word, root, alloc, host_name, fn)
        if base == b"atomicAdd" and pointee in _HALF_TYPES:
            ctx.report(HALF, i, f"`{word.decode()}` on `{pointee}` has no HIP overload; use a CAS loop on the "
                       f"containing 32-bit word, or accumulate in `float`",
                       confidence="high" if from_parse else "medium", subject=pointee)
            continue
        if base == b"atomicAdd" and pointee in ("float", "double") and space not in ("lds", "private"):
            _float_add(ctx, i, word, pointee, alloc, host_name, space, from_parse, shown=via,
                       patch="instantiated" not in via or not _other_types(via))
        if base in _PCIE_OPS and alloc is not None and alloc.kind in ("host", "host-noncoherent", "managed") \
                and not (word.endswith(b"_system") and word.decode() in system_cas_loops(ctx.rocm)):
            # the targeted compiler makes this system-scope atomic a CAS loop, which PCIe carries atomically
            ctx.report(PCIE, i, f"`{word.decode()}` on `{host_name}` ({alloc.api}, line {alloc.line}): over PCIe "
                       f"only add, exchange and CAS are atomic; keep this data in `hipMalloc` memory",
                       subject=word.decode())


def _pointer_root(ctx: Context, a: int, b: int) -> bytes | None:
    """The variable an atomic's address comes from: `p`, `&p[i]`, `p + i`, `&s.field`, `(float*)&p[i]`,
    `reinterpret_cast<float*>(p)`; the type names of casts are stepped over."""
    k = a
    while k < b:
        t = ctx.text[k]
        if ctx.kinds[k] == COMMENT:
            k += 1
            continue
        if t in _CAST and ctx.t(ctx.next_code(k)) == b"<":
            k = _skip_angle(ctx, ctx.next_code(k), b)
            continue
        if t == b"(" and _is_c_cast(ctx, k, b):
            k = ctx.match(k) + 1
            continue
        if ctx.kinds[k] == IDENT and t not in _CAST:
            return t
        k += 1
    return None


def _skip_angle(ctx: Context, k: int, b: int) -> int:
    """Index just past the `>` closing the `<` at ``k``."""
    depth = 0
    while k < b:
        t = ctx.text[k]
        if t == b"<":
            depth += 1
        elif t == b">":
            depth -= 1
            if depth == 0:
                return k + 1
        elif t == b">>":
            depth -= 2
            if depth <= 0:
                return k + 1
        k += 1
    return b


def _is_c_cast(ctx: Context, k: int, b: int) -> bool:
    """`(T*)`, `(unsigned int*)`, `(T)` followed by an operand: a C-style cast, not a parenthesised expression."""
    close = ctx.match(k)
    if close < 0 or close >= b:
        return False
    inner = [j for j in range(k + 1, close) if ctx.kinds[j] != COMMENT]
    if not inner or any(ctx.kinds[j] not in (IDENT, KEYWORD) and ctx.text[j] not in _CAST_PUNCT for j in inner):
        return False
    after = ctx.next_code(close)
    if after >= b:
        return False
    last = ctx.text[inner[-1]]
    return last in (b"*", b"&") or ctx.kinds[after] in (IDENT, LITERAL) or ctx.text[after] in (b"(", b"&", b"*")


# -- where the memory is: LDS (`__shared__`), global, managed, or unknown ---------------------------------------
_DECL_STARTS = {b"__shared__", b"extern", b"static", b"const", b"volatile", b"__device__", b"__managed__",
                b"__constant__", b"register", b"auto", b"unsigned", b"signed", b"float", b"double", b"int", b"char",
                b"short", b"long", b"bool"}
_NOT_DECL = {b"return", b"case", b"goto", b"throw", b"delete", b"new", b"sizeof", b"else", b"do"}


def _starts_declaration(ctx: Context, s: int) -> bool:
    while s < ctx.n and ctx.kinds[s] == COMMENT:
        s += 1
    t = ctx.t(s)
    if t in _NOT_DECL:
        return False
    if t in _DECL_STARTS:
        return True
    if ctx.kinds[s] == IDENT:
        nxt = ctx.t(ctx.next_code(s))
        return nxt in (b"*", b"&", b"<", b"::") or ctx.kinds[ctx.next_code(s)] == IDENT
    return False


def _is_decl(ctx: Context, k: int) -> bool:
    """`T name`, plus what `Context.is_decl_name` leaves out: `extern __shared__ T name[]`,
    `__shared__ __align__(16) T name[]`, and the later names of a list (`__shared__ float a[8], b[8];`)."""
    if ctx.is_decl_name(k):
        return True
    if ctx.t(ctx.next_code(k)) not in (b"=", b";", b",", b")", b"[", b"{"):
        return False
    p = ctx.prev_code(k)
    while ctx.t(p) in (b"*", b"&", b"const", b"volatile", b"__restrict__", b"__restrict"):
        p = ctx.prev_code(p)
    if p < 0 or not (ctx.t(p) == b"," or ctx.kinds[p] in (IDENT, KEYWORD)) or ctx.t(p) in _NOT_DECL:
        return False
    if ctx.t(p) == b"," and enclosing_open(ctx, k, b"(") >= 0:
        return False  # an argument list
    return _starts_declaration(ctx, statement_start(ctx, k))


def _decl_of(ctx: Context, name: bytes, i: int, fn: Function | None) -> int | None:
    """Where ``name``, used at ``i``, is declared: in the function (its parameters included), else at file
    scope (`extern __shared__ float s[];`, `__device__ float total;`)."""
    lo = fn.params[0] if fn else 0
    kinds = ctx.kinds
    for k in reversed(ctx.positions_between(name, lo, i)):
        if kinds[k] == IDENT and _is_decl(ctx, k):
            return k
    if fn is None:
        return None
    known = ctx.__dict__.setdefault("_file_scope_decls", {})  # once a name: a global is used from every kernel
    if name not in known:
        known[name] = [k for k in ctx.positions(name) if kinds[k] == IDENT and ctx.function_at(k) is None
                       and enclosing_open(ctx, k, b"(") < 0 and _is_decl(ctx, k)]
    found = known[name]
    k = bisect_left(found, fn.name_index) - 1
    return found[k] if k >= 0 else None


def _decl_words(ctx: Context, decl: int) -> list[bytes]:
    """The type words of a declaration, also for the second name of a list (`float a, *b;`)."""
    p = ctx.prev_code(decl)
    while ctx.t(p) in (b"*", b"&", b"const", b"volatile", b"__restrict__", b"__restrict"):
        p = ctx.prev_code(p)
    if ctx.t(p) != b",":
        return ctx.decl_type_words(decl)
    k = statement_start(ctx, decl)
    while k < decl:
        if ctx.kinds[k] == IDENT and ctx.t(ctx.next_code(k)) in (b"=", b";", b",", b"[", b"{") \
                and ctx.is_decl_name(k):
            return ctx.decl_type_words(k)
        k += 1
    return []


def _initialisers(ctx: Context, decl: int, fn: Function) -> list[tuple[int, int, int]]:
    """(first, last, at) token ranges of what a local pointer is set to: its initialiser and every plain
    assignment `name = ...;` in the function."""
    out = []
    name = ctx.text[decl]
    k = ctx.next_code(decl)
    if ctx.t(k) == b"=":
        out.append((k + 1, _expr_end(ctx, k + 1), decl))
    for j in range(fn.body[0], fn.body[1]):
        if j == decl or ctx.text[j] != name or ctx.kinds[j] != IDENT:
            continue
        eq = ctx.next_code(j)
        if ctx.t(eq) == b"=" and ctx.t(ctx.prev_code(j)) not in (b".", b"->", b"::", b"*") and not _is_decl(ctx, j):
            out.append((eq + 1, _expr_end(ctx, eq + 1), j))
    return out


def _expr_end(ctx: Context, k: int) -> int:
    while k < ctx.n:
        t = ctx.text[k]
        if t in (b"(", b"[", b"{") and ctx.match(k) > k:
            k = ctx.match(k) + 1
            continue
        if t in (b";", b",", b")", b"]", b"}"):
            return k
        k += 1
    return ctx.n


def _space(ctx: Context, a: int, b: int, at: int, fn: Function | None, depth: int = 0) \
        -> tuple[str | None, int | None, int | None]:
    """Memory space behind the address tokens[a:b] used at ``at``: "lds" (`__shared__`, or a pointer set only
    from one), "global" (a kernel parameter, a `__device__` variable, or a pointer set only from those),
    "managed" (`__managed__`), "private" (a local variable or array), or None. Also the declaration of the
    address's root variable, and of the variable it derives from in the same function (`p` for `q = p + k`)."""
    root = _pointer_root(ctx, a, b)
    if root is None or depth > 4:
        return None, None, None
    decl = _decl_of(ctx, root, at, fn)
    if decl is None:
        return None, None, None
    prefix = {ctx.text[j] for j in range(statement_start(ctx, decl), decl)}
    if b"__shared__" in prefix:
        return "lds", decl, decl
    if fn is not None and fn.params[0] < decl < fn.params[1]:
        if fn.kernel:
            return "global", decl, decl
        return _param_space(ctx, fn, decl, depth), decl, decl
    if fn is None or not fn.body[0] < decl < fn.body[1]:
        if b"__managed__" in prefix:
            return "managed", decl, decl
        if b"__device__" in prefix:
            return "global", decl, decl
        return None, decl, decl
    words = _decl_words(ctx, decl)
    if not (ctx.t(ctx.prev_code(decl)) == b"*" or b"*" in words or b"auto" in words):
        return "private", decl, decl
    found = {_space(ctx, ea, eb, j, fn, depth + 1)[::2] for ea, eb, j in _initialisers(ctx, decl, fn)}
    if len(found) != 1:
        return None, decl, None
    space, origin = found.pop()
    return space, decl, origin


def _param_space(ctx: Context, fn: Function, decl: int, depth: int) -> str | None:
    """What the callers of a `__device__` function in this file pass for one of its pointer parameters."""
    name = ctx.text[decl].decode("latin-1")
    if name not in fn.param_names:
        return None
    pos = fn.param_names.index(name)
    callee = ctx.text[fn.name_index]
    spaces = set()
    for j in ctx.positions(callee):
        if j == fn.name_index or not ctx.device[j] or not ctx.is_call(j):
            continue
        args = ctx.call_args(j)
        if not args or len(args) <= pos:
            return None
        spaces.add(_space(ctx, *args[pos], j, ctx.function_at(j), depth + 1)[0])
    return spaces.pop() if len(spaces) == 1 else None


def _pointee(ctx: Context, i: int, decl: int | None, fn: Function | None) -> tuple[str | None, bool, str]:
    """Type the atomic works on: from the overload clang picks, else from the root's declaration (a type the
    file defines with `#define`/`typedef`/`using`, or a template parameter, followed to what it stands for).
    Returns (type, from the parse, how to show it when that is not the plain type)."""
    parsed = ctx.parsed()
    if parsed is not None:
        call = parsed.calls.get(ctx.starts[i])
        if call is not None and call.param_types:
            t = call.param_types[0].replace("const ", "").replace("volatile ", "").rstrip(" *")
            return t, True, ""
    if decl is None:
        return None, False, ""
    words = [w for w in _decl_words(ctx, decl) if w not in (b"const", b"volatile", b"*", b"__restrict__",
                                                           b"__shared__", b"&", b"::")]
    for w in reversed(words):
        text = w.decode("latin-1")
        if text in ("float", "double") or text in _HALF_TYPES:
            return text, False, ""
        if text in _BUILTIN_TYPES:
            return None, False, ""
        alias = _type_alias(ctx, w)
        if alias is not None:
            return alias, False, f"`{text}` (`{alias}`)"
        owner = _template_of(ctx, decl, fn)
        if owner is not None and text in owner[1]:
            types = _instantiated_types(ctx, owner[0], owner[1], text, 0)
            floats = sorted(types & {"float", "double"})
            if floats:
                return floats[-1], False, f"`{text}` (instantiated with `{'`, `'.join(sorted(types))}`)"
            return None, False, ""
    return None, False, ""


def _other_types(via: str) -> bool:
    """A template instantiated with types other than float/double too: `unsafeAtomicAdd` would not fit them."""
    return any(t not in ("float", "double") for t in via.split("(instantiated with ", 1)[1].strip("`)").split("`, `"))


_BUILTIN_TYPES = {"float", "double", "int", "unsigned", "long", "short", "char", "bool", "size_t", "int32_t",
                  "uint32_t", "int64_t", "uint64_t"} | _HALF_TYPES


_ALIASED = {b"float", b"double"} | {t.encode() for t in _HALF_TYPES}


def type_alias(ctx: Context, name: bytes) -> str | None:
    """`float`, `double` or a half type where this file says `#define name float`, `typedef __half name;` or
    `using name = float;`; else what an included header says (``ctx.header_aliases``)."""
    known = ctx.__dict__.setdefault("_type_alias", {})  # asked at every atomic: once a name
    if name not in known:
        known[name] = _find_type_alias(ctx, name)
    return known[name]


def _find_type_alias(ctx: Context, name: bytes) -> str | None:
    body = ctx.macro_value(name)
    if body is not None:
        return ctx.text[body[0]].decode("latin-1") if len(body) == 1 and ctx.text[body[0]] in _ALIASED else None
    for k in ctx.positions(name):
        if k >= ctx.n - 2:
            break
        if ctx.kinds[k] != IDENT or ctx.t(ctx.next_code(k)) not in (b";", b"="):
            continue
        p = ctx.prev_code(k)
        if ctx.t(p) in _ALIASED and ctx.t(ctx.prev_code(p)) == b"typedef":
            return ctx.text[p].decode()
        if ctx.t(ctx.next_code(k)) == b"=" and ctx.t(p) == b"using":
            v = ctx.next_code(ctx.next_code(k))
            if ctx.t(v) in _ALIASED and ctx.t(ctx.next_code(v)) == b";":
                return ctx.text[v].decode()
    return ctx.header_aliases.get(name)


_type_alias = type_alias


def type_aliases(ctx: Context) -> dict[bytes, str]:
    """Every name this file makes `float`, `double` or a half type (`#define`, `typedef`, `using`), in one pass."""
    out: dict[bytes, str] = {}
    for name in ctx.macros:
        body = ctx.macro_value(name)
        if body and len(body) == 1 and ctx.text[body[0]] in _ALIASED:
            out[name] = ctx.text[body[0]].decode("latin-1")
    for k in range(1, ctx.n - 2):
        t = ctx.text[k]
        if t == b"typedef" and ctx.t(ctx.next_code(k)) in _ALIASED:
            name = ctx.next_code(ctx.next_code(k))
            if ctx.kinds[name] == IDENT and ctx.t(ctx.next_code(name)) == b";":
                out.setdefault(ctx.text[name], ctx.text[ctx.next_code(k)].decode("latin-1"))
        elif t == b"using" and ctx.kinds[ctx.next_code(k)] == IDENT and ctx.t(ctx.next_code(ctx.next_code(k))) == b"=":
            v = ctx.next_code(ctx.next_code(ctx.next_code(k)))
            if ctx.t(v) in _ALIASED and ctx.t(ctx.next_code(v)) == b";":
                out.setdefault(ctx.text[ctx.next_code(k)], ctx.text[v].decode("latin-1"))
    return out


def _template_header(ctx: Context, name_index: int) -> list[str]:
    """Parameter names of the `template <...>` before the declaration whose name is at ``name_index``."""
    k = ctx.prev_code(name_index)
    while k >= 0 and (ctx.kinds[k] in (IDENT, KEYWORD) or ctx.text[k] in (b"*", b"&", b"::")) \
            and ctx.text[k] != b"template":
        k = ctx.prev_code(k)
    if ctx.t(k) != b">":
        return []
    depth, j = 0, k
    while j >= 0:
        if ctx.text[j] == b">":
            depth += 1
        elif ctx.text[j] == b"<":
            depth -= 1
            if depth == 0:
                break
        j -= 1
    if ctx.t(ctx.prev_code(j)) != b"template":
        return []
    return [ctx.text[m].decode("latin-1") for m in range(j + 1, k)
            if ctx.kinds[m] == IDENT and ctx.t(ctx.next_code(m)) in (b",", b">", b"=")]


def _template_of(ctx: Context, k: int, fn: Function | None) -> tuple[bytes, list[str]] | None:
    """(name, template parameters) of the function template holding token ``k``: ``fn`` if given, else the
    host function whose body holds it."""
    if fn is not None:
        return (ctx.text[fn.name_index], fn.template_params) if fn.template_params else None
    outer, j = -1, k
    while True:
        o = enclosing_open(ctx, j, b"{")
        if o < 0:
            break
        outer, j = o, o
    p = ctx.prev_code(outer) if outer >= 0 else -1
    if ctx.t(p) != b")" or ctx.match(p) < 0:
        return None
    name = ctx.prev_code(ctx.match(p))
    if ctx.kinds[name] != IDENT:
        return None
    params = _template_header(ctx, name)
    return (ctx.text[name], params) if params else None


def _instantiated_types(ctx: Context, name: bytes, params: list[str], param: str, depth: int) -> set[str]:
    """Types a function template's parameter takes where the file names `name<...>`; a template argument that is
    itself a parameter of the enclosing function template is followed once more."""
    pos = params.index(param)
    out: set[str] = set()
    for j in ctx.positions(name):
        if j >= ctx.n - 2:
            break
        if ctx.kinds[j] != IDENT or ctx.t(ctx.next_code(j)) != b"<":
            continue
        split = split_template_args(ctx, ctx.next_code(j))
        if split is None:
            continue
        args = [[k for k in range(a, b) if ctx.kinds[k] != COMMENT] for a, b in split[0]]
        if len(args) <= pos or not args[pos]:
            continue
        text = " ".join(ctx.text[x].decode("latin-1") for x in args[pos])
        if text in _BUILTIN_TYPES or " " in text:
            out.add(text)
            continue
        alias = _type_alias(ctx, ctx.text[args[pos][0]])
        if alias is not None:
            out.add(alias)
            continue
        outer = _template_of(ctx, j, ctx.function_at(j)) if depth < 2 else None
        if outer is not None and text in outer[1]:
            out |= _instantiated_types(ctx, outer[0], outer[1], text, depth + 1)
        else:
            out.add(text)
    return out


def _file_scope(ctx: Context, decl: int) -> bool:
    return ctx.function_at(decl) is None and ctx.function_of_params(decl) is None


def _where(alloc: Allocation | None, host_name: str) -> str:
    if alloc is None:
        return ""
    if alloc.api.startswith("__"):
        return f"`{host_name}` is a `{alloc.api}` variable (line {alloc.line}): {_KIND_TEXT.get(alloc.kind, alloc.kind)}"
    return f"`{host_name}` comes from `{alloc.api}` (line {alloc.line}): {_KIND_TEXT.get(alloc.kind, alloc.kind)}"


def _system(ctx: Context, i: int, word: bytes, root, alloc, host_name: str, fn: Function | None) -> None:
    if alloc is not None and alloc.kind in ("host", "device-finegrained"):
        return  # coherent memory: exactly what system scope needs
    if alloc is not None and alloc.kind == "managed" and host_name not in _coarse_advised(ctx):
        # HIP's managed memory is fine-grained by default (hip_runtime_api.h, hipMemAdviseSetCoarseGrain: "The
        # default memory model is fine-grain", 5.2 to 7.2), so system scope holds there
        return
    if alloc is not None:
        where = _where(alloc, host_name)
        if alloc.kind == "managed":
            where = f"`{host_name}` comes from `{alloc.api}` (line {alloc.line}), made coarse-grained by " \
                    f"`hipMemAdviseSetCoarseGrain`"
        msg = f"`{word.decode()}`: {where}; system scope needs coherent memory " \
              f"(`hipHostMalloc` default, managed memory left fine-grained, or fine-grained device memory)"
        ctx.report(SYSTEM, i, msg, subject=word.decode())
    else:
        # The allocation is not in this file: a program that asks for system scope mostly hands it memory the
        # host or a peer shares (managed or pinned, both coherent by default), so this is a reminder, not a defect.
        what = f"`{root.decode('latin-1')}`" if root else "this pointer"
        ctx.report(SYSTEM, i, f"`{word.decode()}`: {what} is allocated outside this file; system scope holds on "
                   f"coherent memory (`hipHostMalloc`, managed memory, fine-grained device memory) and drops to "
                   f"device scope on `hipMalloc` memory", confidence="low", subject=word.decode(), severity="info")


def _coarse_advised(ctx: Context) -> set[str]:
    """Pointers the file advises `hipMemAdviseSetCoarseGrain` (`hipMemAdvise(p, n, hipMemAdviseSetCoarseGrain,
    dev)`): managed memory that is coherent only at synchronisation points from then on."""
    known = ctx.__dict__.get("_coarse_advised")
    if known is None:
        known = set()
        for k in ctx.positions(b"hipMemAdviseSetCoarseGrain"):
            call = enclosing_open(ctx, k, b"(")
            name = ctx.prev_code(call) if call >= 0 else -1
            if name < 0 or ctx.text[name] != b"hipMemAdvise":
                continue
            args = ctx.call_args(name)
            root = _pointer_root(ctx, *args[0]) if args else None
            if root is not None:
                known.add(root.decode("latin-1"))
        ctx.__dict__["_coarse_advised"] = known
    return known


# A float atomicAdd on global memory that is not host or managed is correct as it stands (a CAS loop): a speed
# matter, not a defect, so it is information; on host or managed memory it is a warning (the hardware add that
# `-munsafe-fp-atomics` or `unsafeAtomicAdd` brings in is silently lost there).
_SLOW = "info"


def _float_add(ctx: Context, i: int, word: bytes, pointee: str, alloc, host_name: str, space, from_parse,
               shown: str = "", patch: bool = True) -> None:
    """``shown`` names the type when it is not written as `float`/`double` (a template parameter, an alias);
    ``patch`` is False when `unsafeAtomicAdd` would not fit every type the call is instantiated with."""
    # LDS (`__shared__`) float adds are native and never reach here; unknown memory is a guess.
    conf = "high" if from_parse and space is not None else "medium"
    on = shown or f"`{pointee}`"
    name = word.decode()
    if alloc is not None and alloc.kind == "device":
        if word == b"atomicAdd" and patch:
            ctx.report(FLOAT, i, f"`atomicAdd` on {on} compiles to a CAS loop; {_where(alloc, host_name)}, so "
                       f"`unsafeAtomicAdd` can use the hardware add (or aggregate per warp first)",
                       edits=[ctx.edit(i, "unsafeAtomicAdd")], confidence=conf, subject=pointee, severity=_SLOW)
        else:
            only = " for the float and double instantiations (it has no integer form)" if not patch else ""
            ctx.report(FLOAT, i, f"`{name}` on {on} compiles to a CAS loop; {_where(alloc, host_name)}, where "
                       f"`unsafeAtomicAdd` can use the hardware add{only}; or aggregate per warp first",
                       confidence=conf, subject=pointee, severity=_SLOW)
    elif alloc is not None:
        ctx.report(FLOAT, i, f"`{name}` on {on}: {_where(alloc, host_name)}; hardware FP atomics "
                   f"do nothing there on MI100/MI200, so keep the CAS-loop `atomicAdd` and do not build with "
                   f"`-munsafe-fp-atomics`", confidence=conf, subject=pointee)
    elif space is None:
        ctx.report(FLOAT, i, f"`{name}` on {on}: hipport cannot tell which memory this pointer "
                   f"reaches; in global memory it compiles to a CAS loop (aggregate per warp first, `unsafeAtomicAdd` "
                   f"only on `hipMalloc` memory), in `__shared__` memory the add is native",
                   confidence=conf, subject=pointee, severity=_SLOW)
    else:
        ctx.report(FLOAT, i, f"`{name}` on {on} in global memory compiles to a CAS loop; aggregate "
                   f"per warp first, and use `unsafeAtomicAdd` only where the memory is coarse-grained (`hipMalloc`)",
                   confidence=conf, subject=pointee, severity=_SLOW)


__all__ = ["check", "COMMENT"]
