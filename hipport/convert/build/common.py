"""What the Makefile and CMake converters share: words with their offsets, edits, findings, and the nvcc
command-line rules (`rules/build/make.toml` [[flag]], [libraries], [paths], [compilers]) applied to a run of words."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from hipport.convert.build.rules import FlagRule, MakeRules
from hipport.model import Conversion, Edit, FileResult, Finding

CATEGORY = "build"
UNTRANSLATED = "build-untranslated"  # warning: left as it is, a person must look
DROPPED = "build-dropped"            # info: an nvcc-only flag removed, with why
NOTE = "build-note"                  # info: something added or to know (rdc link step, packages)

# A CUDA GPU architecture as nvcc and CMake spell it: sm_70, compute_80, 86, 90a, 75-real, native, all.
ARCH_VALUE = re.compile(r"^(?:(?:sm|compute|lto)_\d+[af]?|\d{2,3}[af]?(?:-real|-virtual)?|native|all|all-major)$")
_VAR_REF = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]")
_ARCH_VAR = re.compile(r"^(?:sm_|compute_|lto_)?\$([({])([A-Za-z_][A-Za-z0-9_]*)[)}]$")


@dataclass(slots=True)
class Word:
    start: int
    end: int
    text: str


@dataclass(slots=True)
class BuildContext:
    path: str
    text: str                      # the file's bytes as Latin-1: one character a byte, offsets are byte offsets
    targets: tuple[str, ...]       # AMD GPU targets (gfx90a...)
    roc: bool
    make: MakeRules
    edits: list[Edit] = field(default_factory=list)
    conversions: list[Conversion] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    fired: set[str] = field(default_factory=set)     # rule ids that changed or reported something
    arch_vars: dict[str, int] = field(default_factory=dict)  # variable holding GPU architectures -> first use's offset
    uses_nvcc: bool = False        # the file runs nvcc (set by the converter, from its code, not its comments)
    rdc: bool = False              # relocatable device code was turned on somewhere
    path_refs: bool = False        # a CUDA install variable was turned into ROCm's
    arch_variable: str | None = None  # Makefiles: literal architectures become `$(this)`, set with `?=` once
    _line_starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    def position(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self._line_starts, offset) - 1
        return i + 1, offset - self._line_starts[i] + 1

    @property
    def arch_text(self) -> str:
        return ",".join(self.targets)

    def edit(self, start: int, end: int, new: str, rule: str, old: str | None = None) -> None:
        self.edits.append(Edit(start, end, new.encode("latin-1")))
        self.fired.add(rule)
        line, _ = self.position(start)
        self.conversions.append(Conversion(old if old is not None else self.text[start:end], new, CATEGORY, line))

    def report(self, offset: int, rule_id: str, severity: str, message: str, subject: str, rule: str) -> None:
        line, col = self.position(offset)
        self.fired.add(rule)
        self.findings.append(Finding(rule_id, severity, line, col, message, confidence="high", subject=subject))

    def untranslated(self, offset: int, subject: str, why: str, rule: str = "residual") -> None:
        self.report(offset, UNTRANSLATED, "warning", f"`{subject}` left as it is: {why}", subject, rule)

    def result(self, src: bytes) -> FileResult:
        from hipport.model import apply_edits

        result = FileResult(self.path, src, apply_edits(src, self.edits))
        result.conversions = self.conversions
        result.findings = sorted(self.findings, key=lambda f: (f.line, f.col, f.rule_id))
        return result

    def deleted_only(self, start: int, end: int) -> bool:
        """Every non-blank character of ``[start, end)`` is removed by an edit that writes nothing."""
        gone = [(e.start, e.end) for e in self.edits if not e.new and e.end > start and e.start < end]
        return all(self.text[k] in " \t\r\n\\" or any(a <= k < b for a, b in gone) for k in range(start, end))

    def replace_edits_within(self, start: int, end: int, new: str, rule: str) -> None:
        """One edit for ``[start, end)`` in place of the edits inside it (their conversions stay recorded)."""
        self.edits = [e for e in self.edits if not (start <= e.start and e.end <= end)]
        self.edits.append(Edit(start, end, new.encode("latin-1")))
        self.fired.add(rule)

    # -- deleting words without leaving double spaces -------------------------------------------------------

    def delete_span(self, start: int, end: int, rule: str, old: str, replacement: str = "") -> None:
        """Remove ``[start, end)`` and the blanks before it on its line (or, at the start of a line, after it),
        never reaching into a span another edit took."""
        text = self.text
        s = start
        while s > 0 and text[s - 1] in " \t":
            s -= 1
        e = end
        while e < len(text) and text[e] in " \t":
            e += 1
        candidates = []
        if s > 0 and text[s - 1] not in "\n(" and s < start:
            candidates.append((s, end))
        if e < len(text) and text[e] not in "\n\\)" and e > end:
            candidates.append((start, e))
        candidates.append((start, end))
        for a, b in candidates:
            if not any(x.start < b and a < x.end or (x.start == x.end and a < x.start < b) for x in self.edits):
                start, end = a, b
                break
        self.edit(start, end, replacement, rule, old)

def split_words(text: str, start: int, end: int, *, quotes: bool = True) -> list[Word]:
    """Blank-separated words of ``text[start:end]``; a backslash-newline is a blank; quotes group (``quotes``)."""
    pattern = _QUOTED_WORD if quotes else _WORD
    return [Word(m.start(), m.end(), m.group()) for m in pattern.finditer(text, start, end)]


# A word: anything but a blank (space, tab, CR, LF, or a backslash-newline); a quote runs to its match, or to the
# end when it has none.
_WORD = re.compile(r"(?:[^ \t\r\n\\]|\\(?!\n))+")
_QUOTED_WORD = re.compile(r"""(?:[^ \t\r\n\\"']|\\(?!\n)|"[^"]*(?:"|\Z)|'[^']*(?:'|\Z))+""")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _flag_at(words: list[Word], i: int, rules: MakeRules) -> tuple[FlagRule, str | None, int] | None:
    """The flag rule word ``i`` starts, its value, and the index of the last word it takes (the value's)."""
    w = words[i].text
    rule = rules.by_spelling.get(w)
    if rule is not None:
        if rule.value == "none":
            return rule, None, i
        if i + 1 < len(words):
            return rule, words[i + 1].text, i + 1
        return rule, "", i
    head, eq, value = w.partition("=")
    if eq:
        rule = rules.by_spelling.get(head)
        if rule is not None and rule.value == "required":
            return rule, value, i
    return None


def arch_replacement(ctx: BuildContext, value: str, at: int = 0) -> str | None:
    """``--offload-arch=...`` for an nvcc architecture value (at offset ``at``), or None when it cannot be read."""
    value = _unquote(value)
    m = _ARCH_VAR.match(value)
    if m:
        open_, name = m.group(1), m.group(2)
        ctx.arch_vars.setdefault(name, at)
        return f"--offload-arch=$({name})" if open_ == "(" else f"--offload-arch=${{{name}}}"
    names = set(_VAR_REF.findall(value))
    if len(names) == 1 and "arch=" in value:  # -gencode arch=compute_$(A),code=sm_$(A)
        name = names.pop()
        ctx.arch_vars.setdefault(name, at)
        return f"--offload-arch=$({name})"
    if names:
        return None
    parts = [p for p in re.split(r"[,=\[\]\s]+", value) if p and p not in ("arch", "code")]
    if parts and all(ARCH_VALUE.match(p) for p in parts):
        if ctx.arch_variable:  # one place to change the targets, also from `make OFFLOAD_ARCH=...`
            return f"--offload-arch=$({ctx.arch_variable})"
        return f"--offload-arch={ctx.arch_text}"
    return None


def rewrite_flags(ctx: BuildContext, words: list[Word], *, cmake: bool = False, nvcc_line: bool = True,
                  flags: bool = True) -> set[int]:
    """Apply the nvcc rules to a run of words (one logical line, or one CMake command's arguments); returns the
    indices of the words dealt with (changed, dropped or reported). ``nvcc_line``: the words are given to nvcc
    (else flags whose spelling other programs use too, such as `-G` or `-x`, are left alone). Without ``flags``
    (a recipe line running some other program) only libraries, install paths and the compiler's name change."""
    rules = ctx.make
    done: set[int] = set()
    arch_emitted: set[str] = set()
    i = 0
    while i < len(words):
        word = words[i]
        found = _flag_at(words, i, rules) if flags else None
        if found is None:
            if _library(ctx, word) or (not cmake and _compiler(ctx, word)) or _paths(ctx, word, cmake):
                done.add(i)
            i += 1
            continue
        rule, value, last = found
        if rule.nvcc_only and not cmake and not (ctx.uses_nvcc and nvcc_line):
            i += 1
            continue
        span_old = ctx.text[word.start:words[last].end]
        done.update(range(i, last + 1))
        joined = last == i  # the value is inside the word (-f=V) or there is none
        if rule.value == "required" and not value:
            ctx.untranslated(word.start, span_old, "the flag has no value", rule.id)
        elif rule.kind == "drop":
            ctx.delete_span(word.start, words[last].end, rule.id, span_old)
            ctx.report(word.start, DROPPED, "info", f"`{span_old}` dropped: {rule.note}", span_old, rule.id)
        elif rule.kind == "unwrap":
            flags = " ".join(p for p in re.split(r"[,\s]+", _unquote(value)) if p)
            if joined:
                ctx.edit(word.start, word.end, flags, rule.id, span_old)
            else:
                gap = ctx.text[word.end:words[last].start]
                if "\n" in gap:
                    ctx.edit(word.start, word.end, "", rule.id, word.text)
                else:
                    ctx.edit(word.start, words[last].start, "", rule.id, word.text + gap)
                if flags != words[last].text:
                    ctx.edit(words[last].start, words[last].end, flags, rule.id, words[last].text)
        elif rule.kind == "arch":
            new = arch_replacement(ctx, value, word.start)
            if not ctx.uses_nvcc and not cmake and (new is None or not re.search(r"(?:sm|compute)_\d", value)):
                done.difference_update(range(i, last + 1))  # -arch x86_64 / -arch $(ARCH) in a file without nvcc
                ctx.arch_vars = {k: v for k, v in ctx.arch_vars.items() if f"$({k})" not in value
                                 and f"${{{k}}}" not in value}
                i += 1
                continue
            if new is None:
                ctx.untranslated(word.start, span_old, "GPU architectures hipport cannot read; give "
                                 f"`--offload-arch=` the AMD targets ({ctx.arch_text})", rule.id)
            elif new in arch_emitted:  # a second -gencode of the same line: one --offload-arch covers them
                ctx.delete_span(word.start, words[last].end, rule.id, span_old)
            else:
                arch_emitted.add(new)
                _replace(ctx, words, i, last, new, rule.id)
        else:  # replace
            if rule.values:
                key = _unquote(value or "")
                new = rule.values.get(key, rule.values.get(key.lower()))
                if new is None:
                    if not rule.keep_others:
                        ctx.untranslated(word.start, span_old, f"no HIP form for the value `{key}`", rule.id)
                    i = last + 1
                    continue
            else:
                new = rule.hip.replace("{value}", _unquote(value or ""))
            parts = new.split()
            if len(parts) > 1:  # `-dc` -> `-fgpu-rdc -c`: a flag the line already has is not given twice
                others = {w.text for k, w in enumerate(words) if k < i or k > last}
                new = " ".join(p for p in parts if p not in others)
            if new == "":
                ctx.delete_span(word.start, words[last].end, rule.id, span_old)
            else:
                _replace(ctx, words, i, last, new, rule.id)
            if "-fgpu-rdc" in new:
                ctx.rdc = True
        i = last + 1
    return done


def _replace(ctx: BuildContext, words: list[Word], i: int, last: int, new: str, rule: str) -> None:
    if last == i or "\n" not in ctx.text[words[i].end:words[last].start]:
        ctx.edit(words[i].start, words[last].end, new, rule)
    else:  # the value is on the next line: keep the line break, put the whole flag in the first word's place
        ctx.edit(words[i].start, words[i].end, new, rule)
        ctx.delete_span(words[last].start, words[last].end, rule, words[last].text)


def _library(ctx: BuildContext, word: Word) -> bool:
    w = word.text
    if not w.startswith("-l") or len(w) < 3:
        return False
    lib = ctx.make.libraries.get(w[2:])
    if lib is None:
        return False
    new = (lib.roc if ctx.roc and lib.roc else lib.hip)
    if new is None:
        ctx.untranslated(word.start, w, lib.note, f"lib:{lib.cuda}")
        return True
    ctx.edit(word.start, word.end, f"-l{new}", f"lib:{lib.cuda}")
    return True


def _compiler(ctx: BuildContext, word: Word) -> bool:
    w = word.text
    base = w.rsplit("/", 1)[-1]
    new = ctx.make.compilers.get(base)
    if new is None:
        return False
    if "/" in w:
        # a path to nvcc: the path rules turn a CUDA prefix into ROCm's (bin/nvcc -> bin/hipcc)
        if _paths(ctx, word):
            return True
        ctx.edit(word.start, word.end, w[: -len(base)] + new, "compiler")
        ctx.untranslated(word.start, w, "a path to nvcc outside the CUDA locations hipport knows; check the "
                         "directory of hipcc", "compiler")
        return True
    ctx.edit(word.start, word.end, new, "compiler")
    return True


def path_pattern(rules: MakeRules) -> re.Pattern:
    # Built once per rule set: every line of every build file asks (re's own cache still costs the escaping).
    cached = _PATH_PATTERNS.get(id(rules))
    if cached is not None and cached[0] is rules:
        return cached[1]
    pattern = _path_pattern(rules)
    _PATH_PATTERNS[id(rules)] = (rules, pattern)
    return pattern


_PATH_PATTERNS: dict[int, tuple[MakeRules, re.Pattern]] = {}


def _path_pattern(rules: MakeRules) -> re.Pattern:
    names = "|".join(map(re.escape, rules.path_variables))
    prefixes = "|".join(map(re.escape, rules.path_prefixes))
    return re.compile(
        rf"(?P<ref>\$\$?(?:\((?P<n1>{names})\)|\{{(?P<n2>{names})\}}|(?P<n3>(?<=\$\$)(?:{names})\b)"
        rf"|ENV\{{(?P<n4>{names})\}}))"
        rf"|(?P<prefix>(?:(?<![\w./-])|(?<=-I)|(?<=-L))(?:{prefixes})(?:-[0-9][0-9.]*)?(?![\w.-]))")


def convert_path_text(ctx: BuildContext, s: str, cmake: bool = False) -> str:
    """``s`` with CUDA install locations turned into ROCm's (in CMake, only literal paths and ``$ENV{...}``: a
    CMake variable ROCM_PATH is not set by anything)."""
    rules = ctx.make
    var = rules.hip_variable
    subdirs = rules.subdirs

    def sub(m: re.Match) -> str:
        if m.group("prefix"):
            new = rules.hip_prefix
        else:
            ref = m.group("ref")
            name = m.group("n1") or m.group("n2") or m.group("n3") or m.group("n4")
            new = ref.replace(name, var)
        return new

    out = []
    pos = 0
    for m in path_pattern(rules).finditer(s):
        if cmake and not (m.group("prefix") or m.group("n4")):
            continue
        out.append(s[pos:m.start()])
        out.append(sub(m))
        pos = m.end()
        for cuda_sub, hip_sub in subdirs.items():
            if s.startswith("/" + cuda_sub, pos) and (pos + len(cuda_sub) + 1 == len(s)
                                                       or not (s[pos + len(cuda_sub) + 1].isalnum())):
                out.append("/" + hip_sub)
                pos += len(cuda_sub) + 1
                break
    out.append(s[pos:])
    return "".join(out)


def _paths(ctx: BuildContext, word: Word, cmake: bool = False) -> bool:
    new = convert_path_text(ctx, word.text, cmake)
    if new == word.text:
        return False
    ctx.edit(word.start, word.end, new, "paths")
    ctx.path_refs = ctx.path_refs or rules_var_ref(ctx, new)
    return True


def rules_var_ref(ctx: BuildContext, text: str) -> bool:
    """``text`` reads the ROCm location variable."""
    var = ctx.make.hip_variable
    return f"$({var})" in text or f"${{{var}}}" in text


# What nvcc leaves behind in a word that no rule took: reported, never guessed at.
RESIDUAL = re.compile(
    r"(?<![\w.-])nvcc(?![\w-])"
    r"|(?<![\w-])(?:-gencode|--generate-code|-arch=|--gpu-architecture|-Xcompiler|-Xptxas|--ptxas-options|--expt-"
    r"|-rdc=|--relocatable-device-code|--use_fast_math|-use_fast_math|-maxrregcount|-lineinfo)"
    r"|(?<![\w])(?:sm|compute)_\d{2,3}[af]?(?!\w)"
    r"|(?<![\w-])-l(?:cu(?:blas|fft|rand|sparse|solver|dnn|tensor|tt|pti)\w*|cuda(?:rt\w*)?|nv[A-Z]\w*|nvrtc|nvjpeg|npp\w*)\b"
    r"|(?:^|(?<=-I)|(?<=-L)|(?<==))/[^\s\"']*?(?:/nvidia|/cuda(?:-[\d.]+)?)(?=[/\s\"']|$)")


def residuals(ctx: BuildContext, words: list[Word], done: set[int]) -> None:
    for i, word in enumerate(words):
        if i in done or word.text[:1] in "\"'":  # a quoted string is prose (echo "...") as often as flags
            continue
        m = RESIDUAL.search(word.text)
        if m:
            ctx.untranslated(word.start + m.start(), word.text, "no rule for it (inside a function call or an "
                             "unusual spelling?); convert it by hand")
