"""One file in, one FileResult out: renames, include rewrites and what could not be converted.

The engine knows nothing about the command line or terminals; it works on bytes so that encodings it cannot
decode (Latin-1 comments are common in old CUDA code) pass through untouched.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from hipport import directives as dirs
from hipport import rocm
from hipport.callsites import rewrite_calls
from hipport.launch import rewrite_launches
from hipport.macros import rewrite_conditions
from hipport.model import Conversion, Edit, FileResult, Finding
from hipport.rules import RuleSet
from hipport.scan import COMMENT, IDENT, KEYWORD, PUNCT, Lines, Tokens, lex
from hipport.semantic import load_semantic, parse_version

HIP_RUNTIME = b"hip/hip_runtime.h"
_DEVICE_WORDS = {b"__global__", b"__device__", b"__shared__"}
# `cuda_column` is a user's snake_case name; CUDA's own API is camelCase (`cudaX`, `cuX`) or upper case.
_CUDA_LOOKING = re.compile(rb"^(?:cuda[A-Z0-9]|cu[A-Z]|CU_|CUDA_|__nv)")
# Names from the device tables that are ordinary words (`saturate`, `umax`): only a call to one that the
# file does not define is worth reporting as unsupported.
_CUDA_PREFIX = re.compile(r"^(?:cuda|cu[A-Z]|CU|cub|nv|NV|__|curand|cublas|cufft|cusparse|cusolver|cudnn|make_)")
_NOT_DECL_BEFORE = {b"return", b"case", b"else", b"throw", b"new", b"delete", b"sizeof", b"co_return",
                    b"co_yield", b"do", b"goto", b"typeid", b"decltype", b"alignof", b"noexcept"}
_TYPE_KEYWORDS = {b"int", b"float", b"double", b"char", b"bool", b"auto", b"unsigned", b"signed", b"long",
                  b"short", b"void", b"size_t", b"int32_t", b"int64_t", b"uint32_t", b"uint64_t"}
_DECLARATOR_END = {b";", b"=", b",", b"[", b"{", b":"}
_SKIP_DIRECTIVES = {b"include", b"include_next", b"import", b"pragma", b"error", b"warning", b"line"}


NEWEST_ROCM = (7, 0)


@dataclass(frozen=True, slots=True)
class ConvertOptions:
    roc: bool = False
    rocm_version: tuple = NEWEST_ROCM  # the ROCm release the output must build with
    launch_syntax: str = "cuda"        # "cuda" keeps <<<>>>; "hip" writes hipLaunchKernelGGL
    # Audit rule ids whose suggested patches are applied after conversion (None: none; empty: every rule).
    suggestions: frozenset | None = None


def _newline(src: bytes) -> bytes:
    i = src.find(b"\n")
    return b"\r\n" if i > 0 and src[i - 1] == 0x0D else b"\n"


class _FileConverter:
    def __init__(self, path: str, src: bytes, rules: RuleSet, options: ConvertOptions) -> None:
        self.path = path
        self.src = src
        self.rules = rules
        self.options = options
        self.tokens: Tokens = lex(src)
        self.lines = Lines(src)
        self.structure = dirs.analyse(self.tokens, self.lines)
        self.edits: list[Edit] = []
        self.result = FileResult(path, src, None)
        self.defines: set[str] = set()
        self.semantic = load_semantic()
        self.claimed: set[int] = set()      # token indices a semantic pass has dealt with
        self.candidates = _candidates(self.tokens, rules)
        self.once: set[str] = set()         # per-file findings already given
        self.macro_values: dict[str, str] = {}

    # -- helpers -------------------------------------------------------------------------------
    def finding(self, rule_id: str, severity: str, offset: int, message: str, subject: str = "") -> None:
        line, col = self.lines.line_col(offset)
        self.result.findings.append(Finding(rule_id, severity, line, col, message, subject=subject))

    def convert(self, start: int, end: int, new: bytes, cuda: str, category: str) -> None:
        """An edit that counts as one converted reference in the summary."""
        self.edits.append(Edit(start, end, new))
        self.result.conversions.append(
            Conversion(cuda, new.decode("utf-8", "replace"), category, self.lines.line_col(start)[0])
        )

    def edits_only(self, start: int, end: int, new: bytes) -> None:
        """A further edit belonging to a conversion already counted."""
        self.edits.append(Edit(start, end, new))

    # -- passes --------------------------------------------------------------------------------
    def run(self) -> FileResult:
        self.skip = skip = self._tokens_to_skip()
        rewrite_conditions(self)
        rewrite_calls(self)
        if self.options.launch_syntax == "hip":
            rewrite_launches(self)
        self._rename_identifiers(skip)
        self._rewrite_includes()
        self._insert_runtime_include()
        self.result.after = apply_edits(self.src, self.edits)
        self.result.defines = self.defines
        return self.result

    def _tokens_to_skip(self) -> bytearray:
        """Tokens that are never renamed: header names, pragmas and diagnostics text."""
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
            skip[d.first + 1 if d.first + 1 < d.last else d.first] = 1  # the directive's own name
        return skip

    def _rename_identifiers(self, skip: bytearray) -> None:
        tokens, rules, roc = self.tokens, self.rules, self.options.roc
        starts, ends, src = tokens.starts, tokens.ends, self.src
        names, namespaces = rules.names, rules.namespaces
        n = len(tokens)
        claimed = self.claimed
        target_rocm = self.options.rocm_version
        # Generic names (`saturate`, `umax`) the file declares itself are the user's functions, wherever used.
        own = {src[starts[i]:ends[i]] for i in self.candidates if self._is_declaration(i)}
        for i in self.candidates:
            if skip[i] or i in claimed:
                continue
            word = src[starts[i] : ends[i]]
            prev = tokens.text(i - 1) if i else b""
            if prev in (b".", b"->"):
                continue  # a member of some struct, not the CUDA entity of that name
            if prev in _TYPE_KEYWORDS and (tokens.text(i + 1) if i + 1 < n else b"") in _DECLARATOR_END:
                continue  # `int cudaMalloc;`: the user's variable or member of that name
            name = word.decode("latin-1")
            nxt = tokens.text(i + 1) if i + 1 < n else b""
            if name in namespaces and (nxt == b"::" or prev == b"namespace"):
                self.convert(starts[i], ends[i], namespaces[name].encode(), name, "namespace")
                continue
            rule = names.get(name)
            if rule is None:
                if _CUDA_LOOKING.match(word):
                    if self._is_declaration(i):
                        self.defines.add(name)
                    else:
                        line, col = self.lines.line_col(starts[i])
                        self.result.unknown.append((name, line, col))
                continue
            target = rule.target(roc)
            if target is not None and not roc and rule.family in self.rules.family_notes:
                self.result.findings.append(self._unsupported(rule, starts[i]))
                continue
            if target is None:
                if not _CUDA_PREFIX.match(name) and (nxt != b"(" or word in own):
                    continue
                self.result.findings.append(self._unsupported(rule, starts[i]))
            elif target != name:
                self.convert(starts[i], ends[i], target.encode(), name, rule.family)
                added = rule.versions.get("roc_added" if roc and rule.roc else "hip_added")
                if added and parse_version(added)[:2] > target_rocm and not _installed_has(target, target_rocm):
                    self.finding("needs-newer-rocm", "warning", starts[i],
                                  f"`{target}` needs ROCm {added} or newer (targeting "
                                  f"{'.'.join(map(str, target_rocm))}); it is renamed anyway", subject=name)

    def _is_declaration(self, i: int) -> bool:
        """`T name(` or `struct name`: the user declares this name, so it is theirs, not CUDA's."""
        if i == 0:
            return False
        prev_kind = self.tokens.kinds[i - 1]
        prev = self.tokens.text(i - 1)
        if prev in (b"struct", b"class", b"enum", b"union", b"namespace", b"typedef"):
            return True
        nxt = self.tokens.text(i + 1) if i + 1 < len(self.tokens) else b""
        return nxt == b"(" and prev_kind in (IDENT, KEYWORD) and prev not in _NOT_DECL_BEFORE

    def _unsupported(self, rule, offset: int) -> Finding:
        line, col = self.lines.line_col(offset)
        what = "removed" if "cuda_removed" in rule.versions else "unsupported"
        message = f"`{rule.cuda}` has no HIP equivalent ({rule.family}); port it by hand"
        if rule.family in self.rules.family_notes:
            message = f"`{rule.cuda}`: {self.rules.family_notes[rule.family]}"
        if self.options.roc and rule.hip and not rule.roc:
            message = f"`{rule.cuda}` has no ROC equivalent; `{rule.hip}` is the HIP name"
        return Finding(f"{what}-api", "warning", line, col, message, subject=rule.cuda)

    def _rewrite_includes(self) -> None:
        """Map CUDA headers to HIP ones; drop an include that would repeat a HIP header already included."""
        tokens, roc = self.tokens, self.options.roc
        seen: dict[bytes, list[tuple]] = {}
        self.has_runtime = False
        for d in self.structure.directives:
            target = dirs.include_target(tokens, d)
            if target is None:
                continue
            start, end, header = target
            rule = self.rules.headers.get(header.decode("latin-1"))
            new_header = header
            if rule is not None:
                if rule.remove:
                    self.convert(d.start, d.end, b"", rule.cuda, "include")
                    continue
                if rule.unsupported:
                    self.finding("unsupported-header", "warning", start, f"`{rule.cuda}`: {rule.unsupported}",
                                  subject=rule.cuda)
                    continue
                new_header = rocm.installed_header_layout(rule.target(roc)).encode()
                if any(block == d.block for block in seen.get(new_header, ())):
                    self.convert(d.start, d.end, b"", rule.cuda, "include")
                    continue
                self.convert(start, end, new_header, rule.cuda, "include")
            seen.setdefault(new_header, []).append(d.block)
            if new_header == HIP_RUNTIME:
                self.has_runtime = True

    def _has_device_code(self) -> bool:
        tokens = self.tokens
        for m in _DEVICE_CODE.finditer(self.src):
            i = _token_at(tokens, m.start())
            if i is not None and tokens.kinds[i] in (IDENT, PUNCT):
                return True
        return False

    def _insert_runtime_include(self) -> None:
        if self.has_runtime or not self._has_device_code():
            return
        structure = self.structure
        guard = structure.guard
        kinds = self.tokens.kinds
        start_index = guard.last if guard is not None else 0
        first = next((i for i in range(start_index, len(self.tokens)) if kinds[i] != COMMENT), None)
        if first is None:
            return
        at = self.lines.line_start(self.tokens.starts[first])
        if first > 0 and self.tokens.ends[first - 1] > at:  # a comment ends on this line: stay after it
            at = self.tokens.starts[first]
        line = b"#include <hip/hip_runtime.h>" + _newline(self.src)
        self.convert(at, at, line, "(device code)", "include")


_DEVICE_CODE = re.compile(rb"\b__(?:global|device|shared)__\b|<<<")
_BROAD_PREFIXES = ("cu", "CU", "Cu", "__", "nv", "NV")
_PREFIXED = re.compile(rb"\b(?:cu|CU|Cu|__|nv|NV)\w*")
_IDENTIFIER = re.compile(rb"\b[A-Za-z_]\w*")
_other_names: dict[int, tuple[RuleSet, frozenset]] = {}


def _names_without_prefix(rules: RuleSet) -> frozenset:
    """The few rule names without a CUDA prefix (`saturate`, `cub`, `make_cuComplex`, `_CUFFT_H_`)."""
    cached = _other_names.get(id(rules))
    if cached is not None and cached[0] is rules:
        return cached[1]
    sem = load_semantic()
    names = (*rules.names, *rules.namespaces, *sem.guards, *sem.device_pass, *sem.version_macros, *sem.warp_sync)
    others = frozenset(n.encode() for n in names if not n.startswith(_BROAD_PREFIXES))
    _other_names[id(rules)] = (rules, others)
    return others


def _token_at(tokens: Tokens, offset: int) -> int | None:
    """Index of the token starting exactly at ``offset`` (None inside a comment, string or longer token)."""
    i = bisect.bisect_left(tokens.starts, offset)
    return i if i < len(tokens.starts) and tokens.starts[i] == offset else None


def _candidates(tokens: Tokens, rules: RuleSet) -> list[int]:
    """Token indices of every identifier a rule could care about, found with regexes (C speed) so the Python
    loops visit only those: names with a CUDA prefix by prefix, the few others by name when present at all."""
    src = tokens.src
    offsets = [m.span() for m in _PREFIXED.finditer(src)]
    present = _names_without_prefix(rules).intersection(_IDENTIFIER.findall(src))
    if present:
        alternation = b"|".join(re.escape(n) for n in sorted(present, key=len, reverse=True))
        offsets += [m.span() for m in re.finditer(rb"\b(?:" + alternation + rb")\b", src)]
        offsets.sort()
    kinds, ends = tokens.kinds, tokens.ends
    found = []
    for start, end in offsets:
        i = _token_at(tokens, start)
        if i is not None and kinds[i] == IDENT and ends[i] == end:
            found.append(i)
    return found


def _installed_has(name: str, target_rocm: tuple) -> bool:
    return rocm.detect_installed() == target_rocm[:2] and name in rocm.installed_names()


def apply_edits(src: bytes, edits: list[Edit]) -> bytes:
    """Apply edits back to front so earlier offsets stay valid; an edit overlapping one already applied is dropped."""
    out = []
    pos = len(src)
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if edit.end > pos:
            continue
        out.append(src[edit.end : pos])
        out.append(edit.new)
        pos = edit.start
    out.append(src[:pos])
    return b"".join(reversed(out))


def convert_source(src: bytes, rules: RuleSet, options: ConvertOptions = ConvertOptions(),
                   path: str = "<stdin>") -> FileResult:
    """Convert one file's bytes. Raises scan.LexError when libclang cannot read it."""
    if src.startswith(_BOM):
        # A UTF-8 byte-order mark is encoding, not text: the engine sees what follows it, the mark is put back
        # (else a directive on the first line would not be one, and an inserted include would precede the mark).
        result = convert_source(src[len(_BOM):], rules, options, path)
        result.before = src
        if result.after is not None:
            result.after = _BOM + result.after
        return result
    if not _may_need_work(src, rules):
        result = FileResult(path, src, src)
    else:
        result = _FileConverter(path, src, rules, options).run()
    if options.suggestions is not None:
        _apply_audit_suggestions(result, options)
    return result


def _apply_audit_suggestions(result: FileResult, options: ConvertOptions) -> None:
    """Audit the converted text and apply the patches of the opted-in rules; the audit runs on HIP names."""
    from hipport.audit import AuditOptions, apply_suggestions, audit_source  # only when asked: it parses ASTs

    findings = audit_source(result.after, result.path, AuditOptions(rocm_version=options.rocm_version,
                                                                    select=options.suggestions))
    fixable = [f for f in findings if f.edits]
    if fixable:
        result.after = apply_suggestions(result.after, fixable, options.suggestions)
        for f in fixable:
            result.conversions.append(Conversion(f.rule_id, "suggestion", "suggestion", f.line))


_BOM = b"\xef\xbb\xbf"
_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"\n]+)", re.M)


def _may_need_work(src: bytes, rules: RuleSet) -> bool:
    """Most files of a large tree have no CUDA in them: decide that with regexes, before paying ~4 ms for libclang.
    Anything that could matter to a rule (a CUDA-prefixed name, a known unprefixed name, a CUDA header, a launch,
    a CUDA header-guard macro without a prefix) sends the file to the full path."""
    if _PREFIXED.search(src) or b"<<<" in src:
        return True
    if any(m.group(1).decode("latin-1").strip() in rules.headers for m in _INCLUDE.finditer(src)):
        return True
    return bool(_names_without_prefix(rules).intersection(_IDENTIFIER.findall(src)))
