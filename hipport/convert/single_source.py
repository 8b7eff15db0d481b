"""Files of projects that keep CUDA as their main source and build for AMD from the same files.

Such a project builds for AMD through a compatibility header (`#define cudaMalloc hipMalloc` under `USE_HIP`),
`#if` branches on the HIP macros, or both; its NVIDIA build compiles the same files with nvcc. Converting it as if
it were CUDA only breaks both builds: the `#else` branch's `<cuda_runtime.h>` is deleted, a compatibility
`#define` becomes `#define hipX hipX`, the shared code turns into HIP that nvcc cannot build. Here, for one file:

* `FilePlatform` says what the file's branches are for (`hipport/platforms.py`), what the headers it includes with
  quotes define on the AMD path (its compatibility macros and functions), and whether the file already has a HIP
  path (it tests the HIP macros, maps CUDA names onto HIP ones, or includes a header that does);
* `is_gpu_source` tells a CUDA or HIP source from a plain C/C++ file that only keeps a corner for GPU compilers (a
  public C header's `#ifdef __CUDACC__`), which is left alone;
* `keep_to_amd` runs after the passes: it drops every edit, finding and unknown name inside a branch the AMD build
  never compiles, and in a file with a HIP path keeps, in the code both builds compile, only the edits nvcc builds
  as before (rules/platforms.toml `[shared_code]`); a CUDA name left there that the project does not map for AMD is
  reported once (`single-source`), with the `#define` its compatibility header would need.
"""

from __future__ import annotations

import bisect
import re

from hipport import directives as dirs
from hipport import platforms
from hipport.convert.usernames import CUDA_PREFIX
from hipport.model import Conversion, Finding
from hipport.pytorch_data import load_pytorch
from hipport.scan import COMMENT, IDENT, KEYWORD, PUNCT

GPU_SUFFIXES = (".cu", ".cuh", ".hip")
# Sources a host compiler builds; their CUDA or HIP content must show outside the GPU compilers' corners.
HOST_SUFFIXES = (".c", ".h", ".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx", ".inl", ".inc", ".ipp", ".tpp")
# Of those, C++ only (a `.h` may be C): `register` is dropped there, as C++17 rejects it.
CPLUSPLUS_SUFFIXES = (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx", ".ipp", ".tpp")
_DEVICE_WORDS = re.compile(rb"\b__(?:global|device|shared|constant|host|managed|launch_bounds)__\b|<<<")
_HIP_NAME = re.compile(rb"^(?:hip[A-Z_]|HIP_|__hip_|hipblas|hiprand|hipfft|hipsparse|hipsolver|hipcub|rocblas_|"
                       rb"rocrand_|rocsparse_|rocprim|miopen)")
FINDING = "single-source"
_CONDITIONS = {b"if", b"ifdef", b"ifndef", b"elif", b"elifdef", b"elifndef"}


class FilePlatform:
    """What one file's branches are for, and what it and its quoted headers define on the AMD path."""

    def __init__(self, ctx) -> None:  # a ConversionContext (not imported: it imports this module)
        self._ctx = ctx
        self._declared: dict[str, bool] = {}
        tokens = ctx.tokens
        lines = []
        for d in ctx.structure.directives:  # the condition as written (`#if defined(USE_HIP)`), comments out
            start = tokens.ends[d.first + 1] if d.first + 1 < d.last else d.end
            lines.append(platforms.Line(d.name.decode("latin-1"), platforms.directive_text(ctx.src[start:d.end]),
                                        d.start, d.end))
        basic = platforms.classify(lines)
        own = platforms.own_facts(ctx.src, lines, basic, functions=False)
        self.headers = platforms.file_facts(ctx.path, lines, basic)
        tree = ctx.options.tree
        self.other_file, inherited, amd_file = tree.of(ctx.path) if tree is not None and ctx.path else ("", "", "")
        # A HIP path: a branch only the AMD build compiles (`#ifdef USE_HIP #include <hip/hip_runtime.h>`), CUDA names
        # mapped onto HIP ones here or in a header it includes, or a file including it that has such a layer.
        first = next((t for t in basic.tests if basic.amd and t[0] <= basic.amd[0][0]), None) if basic.amd else None
        if first is not None:
            why = f"`{first[1]}` at line {ctx.lines.line_col(first[0])[0]}"
        elif own.maps:
            why = "maps CUDA names onto HIP ones with `#define`"
        elif self.headers.platform:
            why = f"includes `{self.headers.platform}`, which maps CUDA names for AMD"
        else:
            why = inherited
        self.own_hip_path = why if first is not None or own.maps else ""
        # `.hip` files, and headers only AMD branches include, are compiled for AMD only: a HIP path, but no code
        # nvcc builds.
        amd_only = "a `.hip` file" if ctx.path.endswith(".hip") else amd_file
        self.hip_path = (why if not amd_only or first is not None or own.maps else "") or amd_only
        # Shared code builds for AMD only through a compatibility layer (the file's, its headers', or the tree's for
        # a header compiled within a file that has one): there, it is the NVIDIA build's as it stands.
        self.single_source = bool(own.maps or self.headers.platform or inherited) and not amd_only
        known = self.headers
        if self.single_source and tree is not None:
            # Compiled with the tree's compatibility layer (through its -I folders, or within a file that has it).
            known = known | platforms.HeaderFacts(tree.compat_macros, functions=tree.compat_functions)
        self.model = None
        if self.single_source:  # judged again as its AMD build sees CUDA's and the project's own macros
            self.branches, own, self.model = platforms.classify_file(ctx.src, lines, known, single_source=True,
                                                                     functions=False)
        else:
            self.branches = basic
        # Names the project itself gives the AMD build: its macros here and in its quoted headers (functions: those
        # of its headers; the file's own are found on its tokens, `declares`).
        self.macros = own.macros | known.macros
        self.functions = known.functions
        # For tests of GPU macros: also those the tree defines anywhere on its AMD path (`__CUDA_ARCH__`).
        self.condition_macros = self.macros | (tree.macros if tree is not None else frozenset())
        self.includes_hip_runtime = self.headers.includes_hip_runtime
        # PyTorch's extension build hipifies the file before compiling it (pytorch_tree.py), renaming CUDA's names
        self.pytorch = tree.pytorch_build(ctx.path) if tree is not None and ctx.path else ""
        if not self.pytorch:
            self.pytorch = _includes_extension_header(ctx, self.branches)

    def build_renames(self, conv: Conversion) -> bool:
        """PyTorch's extension build renames what this conversion renames: a CUDA name or header hipport's rename
        tables map (hipport has no table of PyTorch's own; where both know a name they agree on its HIP name). An
        argument rewrite is not its: that build only renames."""
        if not self.pytorch:
            return False
        rules = self._ctx.rules
        if conv.category == "include":
            return conv.cuda in rules.headers
        return conv.cuda in rules.names and _IDENT.fullmatch(conv.hip) is not None

    def keeps_condition(self, name: str) -> bool:
        """A test of ``name`` stays as written: the project defines it for the AMD build (`__CUDA_ARCH__` in its
        compatibility header), or the file builds for AMD already and its AMD build sees the name as it is
        (`CUDART_VERSION` undefined there)."""
        return name in self.condition_macros or (self.model is not None and self.model.get(name) is not None)

    def defines(self, name: str) -> bool:
        """The project defines ``name`` (macro or function) on the AMD path: here or in its quoted headers."""
        return name in self.macros or name in self.functions or self._declares(name)

    def _declares(self, name: str) -> bool:
        found = self._declared.get(name)
        if found is None:
            found = self._declared[name] = _declared_at_file_scope(self._ctx, name, self.branches)
        return found


_IDENT = re.compile(r"[A-Za-z_]\w*")


def _includes_extension_header(ctx, branches) -> str:
    """Why the file is a PyTorch extension's on its own (no tree read): it includes one of PyTorch's extension
    headers outside the other platform's branches."""
    data = load_pytorch()
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if target is not None and not branches.in_other(d.start) and data.is_extension_header(target[2].decode("latin-1").strip()):
            return f"includes `{target[2].decode('latin-1').strip()}`, which only PyTorch's extension build provides"
    return ""


def is_gpu_source(ctx) -> bool:
    """A CUDA or HIP source: a `.cu`/`.cuh`/`.hip` file (or one of unknown kind), or a host source with CUDA or HIP
    outside the corners it keeps for GPU compilers (`#ifdef __CUDACC__`, a platform test's branches): a CUDA or HIP
    header, device code or a launch, a name of the rename tables or of HIP, that the file does not declare. Corners
    count too, unless the file is part of what builds for AMD already (it or a file including it, or included by
    it, has a HIP path): a CUDA-only project's `#ifdef __CUDACC__ __host__ __device__` is CUDA to port, a public
    header's in ggml is arranged for both builds."""
    path = ctx.path.lower()
    if not path.endswith(HOST_SUFFIXES):
        return True
    if _gpu_content(ctx, corners=False):
        return True
    plat = ctx.platform
    tree = ctx.options.tree
    if plat.hip_path or (tree is not None and tree.in_context(ctx.path)):
        return False
    return _gpu_content(ctx, corners=True)


def _gpu_content(ctx, corners: bool) -> bool:
    branches = ctx.platform.branches
    tokens = ctx.tokens

    def outside(offset: int) -> bool:
        return corners or not branches.in_corner(offset)

    for d in ctx.structure.directives:
        target = dirs.include_target(tokens, d)
        if target is None or not outside(d.start):
            continue
        header = target[2].decode("latin-1")
        if header in ctx.rules.headers or header.startswith(("hip/", "hipblas", "hiprand", "hipfft", "hipsparse",
                                                              "hipsolver", "hipcub", "rocblas", "rocprim")):
            return True
    for m in _DEVICE_WORDS.finditer(ctx.src):
        i = _token_at(ctx, m.start())
        if i is not None and tokens.kinds[i] in (IDENT, PUNCT) and outside(m.start()):
            return True
    names = ctx.rules.names
    users = ctx.user_names
    bodies = _define_bodies(ctx)
    for i in ctx.candidates:
        start = tokens.starts[i]
        if not outside(start) or ctx.skip[i] or (ctx.structure.in_directive[i] and i not in bodies):
            continue  # a condition's `__CUDACC__` is no CUDA code
        word = tokens.text(i)
        name = word.decode("latin-1")
        # C's math functions are in the device tables under their own names (`expf`): no CUDA by themselves.
        cuda = name in names and CUDA_PREFIX.match(name) is not None
        if (cuda or _HIP_NAME.match(word)) and not users.is_users(i):
            return True
    for m in re.finditer(rb"\b(?:hip|HIP_|roc)\w+", ctx.src):
        i = _token_at(ctx, m.start())
        if i is not None and tokens.kinds[i] == IDENT and _HIP_NAME.match(m.group()) and outside(m.start()) \
                and not ctx.structure.in_directive[i]:
            return True
    return False


# A name followed by `(` after one of these is called, not declared (`return __vsub4(a, b);`).
_CALL_WORDS = {b"return", b"else", b"do", b"case", b"throw", b"co_return", b"co_yield", b"sizeof", b"decltype",
               b"new", b"delete", b"typeid", b"alignof", b"goto"}


def _declared_at_file_scope(ctx, name: str, branches) -> bool:
    """Whether the file defines a macro ``name``, or declares a function ``name`` at file scope (a project's own
    `static __device__ unsigned int __vsub4(...)`; one in a namespace of its own is another name), outside the other
    platform's branches."""
    word = name.encode()
    if word not in ctx.src:
        return False
    tokens, structure = ctx.tokens, ctx.structure
    kinds, in_directive = tokens.kinds, structure.in_directive
    for d in structure.directives:
        if d.name == b"define" and d.first + 2 < d.last and tokens.text(d.first + 2) == word \
                and not branches.in_other(d.start):
            return True
    depth = 0
    prev = -1  # the last code token before the one looked at
    for i in range(len(tokens)):
        if kinds[i] == COMMENT or in_directive[i]:
            continue
        t = tokens.text(i)
        if t == b"{":
            depth += 1
        elif t == b"}":
            depth = max(0, depth - 1)
        elif depth == 0 and t == word and kinds[i] == IDENT and prev >= 0 and not branches.in_other(tokens.starts[i]):
            j = i + 1
            while j < len(tokens) and kinds[j] == COMMENT:
                j += 1
            before = tokens.text(prev)
            if j < len(tokens) and tokens.text(j) == b"(" and before not in _CALL_WORDS and (
                    kinds[prev] in (IDENT, KEYWORD) or before in (b"*", b"&")):
                return True
        prev = i
    return False


def _define_bodies(ctx) -> set[int]:
    """Token indices of the bodies of the file's `#define`s (code, unlike a condition's names)."""
    out: set[int] = set()
    for d in ctx.structure.directives:
        if d.name == b"define":
            out.update(range(d.first + 3, d.last))
    return out


def _token_at(ctx, offset: int) -> int | None:
    """Index of the token starting at ``offset`` (None inside a comment, string or longer token)."""
    starts = ctx.tokens.starts
    i = bisect.bisect_left(starts, offset)
    return i if i < len(starts) and starts[i] == offset else None


def keep_to_amd(ctx) -> None:
    """Drop what the passes did where it would harm the other platform (see the module's text)."""
    plat = ctx.platform
    branches = plat.branches
    if not branches.other and not plat.hip_path:
        return
    shared_ok = platforms.platform_data().shared_categories
    conversions = ctx.result.conversions
    kept_conv: list[bool] = []
    for conv in conversions:
        start, end = conv.start, conv.end
        if start < 0:
            kept_conv.append(True)
            continue
        if branches.in_other(start, end):
            kept_conv.append(False)
        elif plat.single_source and conv.category not in shared_ok and not branches.in_amd(start, end):
            kept_conv.append(False)
        elif plat.hip_path and plat.defines(conv.cuda) and conv.cuda not in ctx.older_only:
            # On AMD branches and in AMD-only files too, a name the project maps stays its own; not a definition
            # kept for releases before the target's built-in, nor its calls, which reach the built-in there.
            kept_conv.append(False)
        else:
            kept_conv.append(True)
    edits = []
    for edit, owner in zip(ctx.edits, ctx.edit_owners):
        if branches.in_other(edit.start, edit.end):
            continue
        if 0 <= owner < len(kept_conv) and not kept_conv[owner]:
            continue
        edits.append(edit)
    ctx.edits[:] = edits
    dropped = [c for c, keep in zip(conversions, kept_conv) if not keep and not branches.in_other(c.start, c.end)]
    ctx.result.conversions = [c for c, keep in zip(conversions, kept_conv) if keep]
    ctx.result.findings = [f for f in ctx.result.findings if not _in_other_line(ctx, f.line, f.col)]
    ctx.result.unknown = [u for u in ctx.result.unknown if not _in_other_line(ctx, u[1], u[2])]
    conditions = [(d.start, d.end) for d in ctx.structure.directives if d.name in _CONDITIONS]
    # What the project's own HIP path serves is the AMD port already done: the readiness counts it as automatic.
    ctx.result.served = sum(1 for c in dropped if _amd_build_has(plat, c, conditions))
    if plat.single_source:
        _report_kept(ctx, dropped, conditions)


def _in_other_line(ctx, line: int, col: int) -> bool:
    starts = ctx.lines.starts
    if not 1 <= line <= len(starts):
        return False
    return ctx.platform.branches.in_other(starts[line - 1] + max(col, 1) - 1)


def _amd_build_has(plat: FilePlatform, conv: Conversion, conditions: list[tuple[int, int]]) -> bool:
    """The project's AMD build resolves this dropped conversion as the file stands: its compatibility layer maps the
    name, the conversion only adds `<hip/hip_runtime.h>` (`(device code)`: hipcc includes it by itself), or it sits
    in a condition, which that build evaluates as written."""
    return conv.cuda.startswith("(") or any(a <= conv.start < b for a, b in conditions) or plat.defines(conv.cuda) \
        or plat.build_renames(conv)


def _report_kept(ctx, dropped: list[Conversion], conditions: list[tuple[int, int]]) -> None:
    """One finding per CUDA name left in the code both builds compile, unless the AMD build resolves it (the
    project maps it for AMD itself, `_amd_build_has`: nothing is missing)."""
    plat = ctx.platform
    seen: set[str] = set()
    where = plat.hip_path
    for conv in dropped:
        if conv.cuda in seen or _amd_build_has(plat, conv, conditions):
            continue
        seen.add(conv.cuda)
        line = conv.line
        if conv.category == "include":
            message = (f"`{conv.cuda}` left: this file also builds for NVIDIA ({where}); for AMD include "
                       f"`{conv.hip}` on an AMD branch (`#ifdef __HIP_PLATFORM_AMD__`)")
        elif re.fullmatch(r"[A-Za-z_]\w*", conv.hip or "") and re.fullmatch(r"[A-Za-z_]\w*", conv.cuda):
            message = (f"`{conv.cuda}` left: this file also builds for NVIDIA ({where}); for AMD, map it where "
                       f"the project does: `#define {conv.cuda} {conv.hip}`")
        elif plat.pytorch and conv.cuda in ctx.rules.names:
            message = (f"`{conv.cuda}`: PyTorch's extension build renames it for AMD ({plat.pytorch}) but leaves its "
                       f"arguments; its HIP form (`{conv.hip[:60]}`) needs a branch of its own for AMD")
        else:
            message = (f"`{conv.cuda}` left: this file also builds for NVIDIA ({where}); its HIP form "
                       f"(`{conv.hip[:60]}`) needs a branch of its own for AMD")
        ctx.result.findings.append(Finding(FINDING, "warning", line, 1, message, subject=conv.cuda))


_CMAKE_HIP = (
    (re.compile(rb"\benable_language\s*\(\s*HIP\b", re.I), lambda m: "`enable_language(HIP)`"),
    (re.compile(rb"\bLANGUAGE\s+HIP\b"), lambda m: "`LANGUAGE HIP`"),
    (re.compile(rb"\bLANGUAGES\s+(?:\w+\s+)*?HIP\b"), lambda m: "`" + " ".join(m.group().decode().split()) + "`"),
    (re.compile(rb"\bproject\s*\([^)]*\bHIP\b", re.I), lambda m: "`project(... HIP)`"),
)


def hip_path_of_cmake(src: bytes) -> str:
    """Why a CMake file already builds for AMD (`enable_language(HIP)`, `LANGUAGE HIP`, `project(... HIP)`), or ""."""
    text = re.sub(rb"#[^\n]*", b"", src)
    for pattern, why in _CMAKE_HIP:
        m = pattern.search(text)
        if m is not None:
            return why(m)
    return ""
