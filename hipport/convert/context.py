"""The state one file's conversion shares between its passes: tokens, directives, the edits made so far and
the result being built. Every pass takes a `ConversionContext` and reports through its methods."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from hipport import directives as dirs
from hipport.convert.usernames import UserNames, macro_text_tokens
from hipport.model import Conversion, Edit, FileResult, Finding
from hipport.platforms import TreeFacts
from hipport.rocm import DEFAULT_ARCHS, NEWEST_ROCM
from hipport.rules import RuleSet
from hipport.scan import COMMENT, IDENT, Lines, Tokens, lex
from hipport.semantic import load_semantic

_SKIP_DIRECTIVES = {b"include", b"include_next", b"import", b"pragma", b"error", b"warning", b"line"}
_BROAD_PREFIXES = ("cu", "CU", "Cu", "__", "nv", "NV")
# `\b(?:cu|CU|...)\w*`, with the word boundary checked behind the prefix: a pattern that starts with the prefixes
# is searched for by its first bytes, which is a third faster over a tree.
PREFIXED = re.compile(rb"(?:cu|CU|Cu|__|nv|NV)(?<!\w..)\w*")
IDENTIFIER = re.compile(rb"\b[A-Za-z_]\w*")
_other_names: dict[int, tuple[RuleSet, frozenset]] = {}


@dataclass(frozen=True, slots=True)
class ConvertOptions:
    roc: bool = False
    rocm_version: tuple = NEWEST_ROCM  # the ROCm release the output must build with
    launch_syntax: str = "cuda"        # "cuda" keeps <<<>>>; "hip" writes hipLaunchKernelGGL
    # Audit rule ids whose suggested patches are applied after conversion (None: none; empty: every rule).
    suggestions: frozenset | None = None
    offload_arch: tuple = DEFAULT_ARCHS  # AMD GPU targets build files compile for (`--offload-arch=`)
    # What the whole tree of the run says of each file's platform (`platforms.tree_facts`: headers only the NVIDIA
    # branches include, headers compiled within a file that builds for AMD, GPU macros the tree defines), or None.
    tree: TreeFacts | None = None
    # The project's switches for its AMD build (`NAME`, `NAME=VALUE`, `!NAME`: the audit's settings or build files),
    # for what a library header declares under them (`HIPBLAS_USE_HIP_HALF`: `hipblasHalf` is `__half`).
    defines: tuple = ()


class ConversionContext:
    def __init__(self, path: str, src: bytes, rules: RuleSet, options: ConvertOptions) -> None:
        self.path = path
        self.src = src
        self.rules = rules
        self.options = options
        self.tokens: Tokens = lex(src)
        self.lines = Lines(src)
        self.structure = dirs.analyse(self.tokens, self.lines)
        self.edits: list[Edit] = []
        self.edit_owners: list[int] = []    # per edit: the index of the conversion it belongs to (-1: none)
        self.result = FileResult(path, src, None)
        self.defines: set[str] = set()
        self.semantic = load_semantic()
        self.claimed: set[int] = set()      # token indices a semantic pass has dealt with
        # Names the project defines for older releases only (its `__syncwarp` shim behind a release test): at the
        # target they are HIP's, so the single-source rule must not keep their calls as the project's own.
        self.older_only: set[str] = set()
        self.candidates = candidates(self.tokens, rules)
        self.once: set[str] = set()         # per-file findings already given
        self.macro_values: dict[str, str] = {}
        self.skip = self._tokens_to_skip()
        self._user_names: UserNames | None = None
        self._platform = None

    @property
    def platform(self):
        """What this file's `#if` branches are for and what its quoted headers define (`single_source.py`)."""
        if self._platform is None:
            from hipport.convert.single_source import FilePlatform  # here: single_source imports this module

            self._platform = FilePlatform(self)
        return self._platform

    @property
    def user_names(self) -> UserNames:
        """Which CUDA-looking names in this file are the user's own (see `usernames.py`)."""
        if self._user_names is None:
            self._user_names = UserNames(self)
        return self._user_names

    def finding(self, rule_id: str, severity: str, offset: int, message: str, subject: str = "") -> None:
        line, col = self.lines.line_col(offset)
        self.result.findings.append(Finding(rule_id, severity, line, col, message, subject=subject))

    def convert(self, start: int, end: int, new: bytes, cuda: str, category: str) -> None:
        """An edit that counts as one converted reference in the summary."""
        self.edits.append(Edit(start, end, new))
        self.edit_owners.append(len(self.result.conversions))
        self.result.conversions.append(
            Conversion(cuda, new.decode("utf-8", "replace"), category, self.lines.line_col(start)[0], start, end)
        )

    def edits_only(self, start: int, end: int, new: bytes) -> None:
        """A further edit belonging to a conversion already counted (the last one counted)."""
        self.edits.append(Edit(start, end, new))
        self.edit_owners.append(len(self.result.conversions) - 1)

    def newline(self) -> bytes:
        i = self.src.find(b"\n")
        return b"\r\n" if i > 0 and self.src[i - 1] == 0x0D else b"\n"

    def _tokens_to_skip(self) -> bytearray:
        """Tokens that are never renamed: header names, pragmas, diagnostics text, the name a `#define` with a body
        or an `#undef` defines (`#define cudaMalloc hipMalloc` is the project's mapping, and HIP's own names are
        often macros: `#define hipX hipX` would leave the AMD build without it), and macro parameters and operands of
        `#`/`##` (with the arguments a macro of the file only stringizes or pastes)."""
        skip = bytearray(len(self.tokens))
        tokens = self.tokens
        for d in self.structure.directives:
            if d.name in _SKIP_DIRECTIVES:
                for k in range(d.first, d.last):
                    skip[k] = 1
            elif d.name == b"define" and d.first + 2 < d.last:
                macro = tokens.text(d.first + 2).decode("latin-1")
                self.defines.add(macro)
                body = b"".join(tokens.text(k) for k in range(d.first + 3, d.last) if tokens.kinds[k] != COMMENT)
                self.macro_values[macro] = body.decode("latin-1")
                if body:  # `#define CUB_STDERR`, a switch with no body, is CUDA's to rename (`HIPCUB_STDERR`)
                    skip[d.first + 2] = 1
            elif d.name == b"undef" and d.first + 2 < d.last:
                skip[d.first + 2] = 1
            skip[d.first + 1 if d.first + 1 < d.last else d.first] = 1  # the directive's own name
        for k in macro_text_tokens(tokens, self.structure):  # parameters, stringized and pasted operands
            skip[k] = 1
        return skip


def names_without_prefix(rules: RuleSet) -> frozenset:
    """The few rule names without a CUDA prefix (`saturate`, `cub`, `make_cuComplex`, `_CUFFT_H_`)."""
    cached = _other_names.get(id(rules))
    if cached is not None and cached[0] is rules:
        return cached[1]
    sem = load_semantic()
    names = (*rules.names, *(ns.rsplit("::", 1)[-1] for ns in rules.namespaces), *sem.guards, *sem.device_pass,
             *sem.version_macros, *sem.warp_sync)
    others = frozenset(n.encode() for n in names if not n.startswith(_BROAD_PREFIXES))
    _other_names[id(rules)] = (rules, others)
    return others


def token_at(tokens: Tokens, offset: int) -> int | None:
    """Index of the token starting exactly at ``offset`` (None inside a comment, string or longer token)."""
    i = bisect.bisect_left(tokens.starts, offset)
    return i if i < len(tokens.starts) and tokens.starts[i] == offset else None


def candidates(tokens: Tokens, rules: RuleSet) -> list[int]:
    """Token indices of every identifier a rule could care about, found with regexes (C speed) so the Python
    loops visit only those: names with a CUDA prefix by prefix, the few others by name when present at all."""
    src = tokens.src
    offsets = [m.span() for m in PREFIXED.finditer(src)]
    present = names_without_prefix(rules).intersection(IDENTIFIER.findall(src))
    if present:
        alternation = b"|".join(re.escape(n) for n in sorted(present, key=len, reverse=True))
        offsets += [m.span() for m in re.finditer(rb"\b(?:" + alternation + rb")\b", src)]
        offsets.sort()
    kinds, starts, ends = tokens.kinds, tokens.starts, tokens.ends
    n = len(starts)
    found = []
    i = 0
    for start, end in offsets:  # in order: each search starts where the last one ended
        i = bisect.bisect_left(starts, start, i)
        if i < n and starts[i] == start and kinds[i] == IDENT and ends[i] == end:
            found.append(i)
    return found


def break_before(ctx: ConversionContext, at: int) -> bytes:
    """A line break to insert before lines inserted at ``at`` when it is not a line's start (after a comment that
    ends where the code starts, `top_of_file`): a `#` there would not start a directive for hipport's next run."""
    return b"" if at == 0 or ctx.src[at - 1] in b"\r\n" else ctx.newline()


def top_of_file(ctx: ConversionContext) -> int | None:
    """Where an include the file lacks goes: after its include guard and its leading comments (None: the file has
    nothing but comments)."""
    guard = ctx.structure.guard
    kinds = ctx.tokens.kinds
    start_index = guard.last if guard is not None else 0
    first = next((i for i in range(start_index, len(ctx.tokens)) if kinds[i] != COMMENT), None)
    if first is None:
        return None
    at = ctx.lines.line_start(ctx.tokens.starts[first])
    if first > 0 and ctx.tokens.ends[first - 1] > at:  # a comment ends on this line: stay after it
        at = ctx.tokens.starts[first]
    return at
