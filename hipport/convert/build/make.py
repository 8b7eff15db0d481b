"""Makefiles: nvcc and its flags, CUDA libraries and install paths -> hipcc's (rules/build/make.toml).

The file is read as logical lines (backslash-newline joins them); comments are never touched. Each line's words
go through the nvcc rules; assignments of a variable that a `-arch=$(VAR)` reads get the AMD targets; a file
that compiles relocatable device code in its recipes gets `-fgpu-rdc` on its link lines too."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hipport.convert.build.common import (
    ARCH_VALUE,
    NOTE,
    UNTRANSLATED,
    BuildContext,
    Word,
    residuals,
    rewrite_flags,
    split_words,
)

_ASSIGN = re.compile(r"[ \t]*(?:(?:export|override|private)[ \t]+)*(?P<name>[^\s:#=+?!$()]+)[ \t]*"
                     r"(?P<op>:::=|::=|:=|\?=|\+=|!=|=)")
# An assignment that asks the NVIDIA driver or compiler which GPU there is (`$(shell nvidia-smi --query-gpu=...)`).
_ASKS_NVIDIA = re.compile(r"\bnvidia-smi\b|\bnvcc\b|\bdeviceQuery\b")
_DIRECTIVE = re.compile(r"[ \t]*(?:ifeq|ifneq|ifdef|ifndef|else|endif|include|-include|sinclude|define|endef|"
                        r"unexport|undefine|vpath)\b")


@dataclass(slots=True)
class Line:
    start: int
    end: int           # end of the logical line's text (comment cut off), before its newline
    recipe: bool
    name: str | None = None  # for an assignment
    name_start: int = 0
    value_start: int = 0


def logical_lines(text: str) -> list[Line]:
    lines: list[Line] = []
    pos, n = 0, len(text)
    in_rule = False
    while pos < n:
        end = pos
        while True:
            nl = text.find("\n", end)
            if nl < 0:
                nl = n
            k = nl
            while k > pos and text[k - 1] == "\r":
                k -= 1
            backslashes = 0
            while k - backslashes > pos and text[k - 1 - backslashes] == "\\":
                backslashes += 1
            if backslashes % 2 == 1 and nl < n:
                end = nl + 1
                continue
            end = nl
            break
        recipe = text.startswith("\t", pos) and in_rule
        body_end = _comment_start(text, pos, end, recipe)
        line = Line(pos, body_end, recipe)
        stripped = text[pos:end].strip()
        if not recipe:
            m = _ASSIGN.match(text, pos, body_end)
            if m:
                line.name, line.name_start, line.value_start = m.group("name"), m.start("name"), m.end()
            if stripped and not stripped.startswith("#"):
                # a rule line starts a recipe; an assignment ends it
                if line.name is None and ":" in text[pos:body_end] and not _DIRECTIVE.match(text, pos, body_end):
                    in_rule = True
                elif line.name is not None:
                    in_rule = False
        lines.append(line)
        pos = end + 1
    return lines


def _comment_start(text: str, start: int, end: int, recipe: bool) -> int:
    i = start
    quote = None
    while i < end:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if recipe:
            if quote:
                if c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#" and (i == start or text[i - 1] in " \t"):
                return i
        elif c == "#":
            return i
        i += 1
    return end


def _words(ctx: BuildContext, line: Line) -> list[Word]:
    start = line.value_start if line.name is not None else line.start
    return split_words(ctx.text, start, line.end)


def convert_makefile(ctx: BuildContext) -> None:
    lines = logical_lines(ctx.text)
    rules = ctx.make
    compiler_vars: set[str] = set()
    rdc_vars: set[str] = set()
    rdc_in_recipe = False
    handled: list[tuple[Line, list[Word], set[int]]] = []
    if rules.arch_variable and not _assigns(lines, rules.arch_variable, ctx):
        ctx.arch_variable = rules.arch_variable
    for line in lines:
        runs = [w for w in _words(ctx, line) if w.text.rsplit("/", 1)[-1] in rules.compilers]
        if runs:
            ctx.uses_nvcc = True
            if line.name is not None:
                compiler_vars.add(line.name)
    for line in lines:
        if line.end <= line.start:
            continue
        words = _words(ctx, line)
        before_rdc = ctx.rdc
        ctx.rdc = False
        nvcc_line = not line.recipe or _runs_compiler(ctx, words, compiler_vars)
        done = rewrite_flags(ctx, words, nvcc_line=nvcc_line, flags=nvcc_line or not ctx.uses_nvcc)
        if ctx.rdc:
            if line.name is not None:
                rdc_vars.add(line.name)
            else:
                rdc_in_recipe = True
        ctx.rdc = ctx.rdc or before_rdc
        if line.name is not None:
            if line.name in rules.path_variables:
                ctx.edit(line.name_start, line.name_start + len(line.name), rules.hip_variable, "paths")
                ctx.path_refs = True
        handled.append((line, words, done))
    # Variables a -arch=$(VAR) reads: their CUDA architectures become the AMD targets.
    for line, words, done in handled:
        if line.name is None or line.name not in ctx.arch_vars or not words:
            continue
        values = [w.text for w in words]
        if all(ARCH_VALUE.match(v) for v in values):
            ctx.edit(words[0].start, words[-1].end, ctx.arch_text, "arch-variable")
            done.update(range(len(words)))
        elif _ASKS_NVIDIA.search(" ".join(values)):
            ctx.untranslated(words[0].start, " ".join(values), f"{line.name} feeds --offload-arch and is set by "
                             f"asking NVIDIA's tools for the GPU; set it to AMD targets ({ctx.arch_text})",
                             "arch-variable")
            done.update(range(len(words)))
        elif not any(v.startswith("gfx") or v.startswith("$") for v in values):
            ctx.untranslated(words[0].start, " ".join(values), f"{line.name} feeds --offload-arch; give it AMD "
                             f"targets ({ctx.arch_text})", "arch-variable")
            done.update(range(len(words)))
    assigned = {line.name for line, _, _ in handled if line.name is not None}
    for name, at in ctx.arch_vars.items():
        if name not in assigned:  # from the environment or `make VAR=...`: set for NVIDIA GPUs today
            ctx.untranslated(at, f"$({name})", f"{name} feeds --offload-arch and the file does not set it (an "
                             "included file, the environment or the make command line does); give it AMD targets "
                             f"({ctx.arch_text})", "arch-variable")
    if ctx.rdc:
        _rdc_link(ctx, handled, compiler_vars, rdc_vars, rdc_in_recipe)
    prelude = []
    if ctx.path_refs and not _assigns(lines, rules.hip_variable, ctx):
        prelude.append((f"{rules.hip_variable} ?= {rules.hip_prefix}", "paths",
                        "the file reads the CUDA location from the environment"))
    if ctx.arch_variable and any(f"$({ctx.arch_variable})".encode() in e.new for e in ctx.edits):
        prelude.append((f"{ctx.arch_variable} ?= {ctx.arch_text}", "arch",
                        f"the GPU targets, in one place (`make {ctx.arch_variable}=gfx1100` builds for another)"))
    if prelude:
        _prelude(ctx, lines, prelude)
    for line, words, done in handled:
        residuals(ctx, words, done)
        _drop_emptied_lines(ctx, line)


def _drop_emptied_lines(ctx: BuildContext, line: Line) -> None:
    """A continuation line whose every word was dropped goes, with the backslash that led to it."""
    text = ctx.text
    starts = [line.start] + [line.start + m.end() for m in re.finditer("\n", text[line.start:line.end])]
    for k in range(1, len(starts)):
        a = starts[k]
        b = starts[k + 1] - 1 if k + 1 < len(starts) else line.end
        content_end = b
        while content_end > a and text[content_end - 1] in " \t\r\\":
            content_end -= 1
        if content_end <= a or not text[a:content_end].strip() or not ctx.deleted_only(a, content_end):
            continue
        if k + 1 < len(starts):  # a middle line: remove it whole
            ctx.replace_edits_within(a, starts[k + 1], "", "empty-line")
        else:  # the last line: remove it and the backslash before it
            prev = a - 1
            while prev > starts[k - 1] and text[prev - 1] in " \t\r\\":
                prev -= 1
            if any(e.start < a and e.end > prev for e in ctx.edits):
                continue
            ctx.replace_edits_within(prev, b, "", "empty-line")


def _command_word(words: list[Word]) -> int | None:
    first = 0
    while first < len(words) and words[first].text in ("@", "-", "+", "@-", "-@"):
        first += 1
    return first if first < len(words) else None


def _runs_compiler(ctx: BuildContext, words: list[Word], compiler_vars: set[str]) -> bool:
    """The recipe line runs nvcc, or a variable set to it (`$(CC)`, `${NVCC}`)."""
    first = _command_word(words)
    if first is None:
        return False
    cmd = words[first].text.lstrip("@-+")
    return cmd.rsplit("/", 1)[-1] in ctx.make.compilers or any(cmd in (f"$({v})", f"${{{v}}}")
                                                               for v in compiler_vars)


def _assigns(lines: list[Line], name: str, ctx: BuildContext) -> bool:
    """The file sets ``name`` (or a CUDA variable that becomes it)."""
    return any(line.name == name or (name == ctx.make.hip_variable and line.name in ctx.make.path_variables)
               for line in lines)


def _prelude(ctx: BuildContext, lines: list[Line], assignments: list[tuple[str, str, str]]) -> None:
    """Assignments (`ROCM_PATH ?= /opt/rocm`: the file only read a CUDA variable from the environment, and ROCm's
    is often unset; `OFFLOAD_ARCH ?= ...`) above the first line that is not a comment, in the file's line
    endings."""
    for line in lines:
        if ctx.text[line.start:line.end].strip():
            eol = "\r\n" if ctx.text.find("\r\n", line.start) == ctx.text.find("\n", line.start) - 1 else "\n"
            ctx.edit(line.start, line.start, "".join(a + eol for a, _, _ in assignments), "prelude", "")
            for text, rule, why in assignments:
                ctx.report(line.start, NOTE, "info", f"added `{text}`: {why}", text, rule)
            return


def _rdc_link(ctx: BuildContext, handled, compiler_vars: set[str], rdc_vars: set[str], rdc_in_recipe: bool) -> None:
    """Relocatable device code is linked by hipcc only with `-fgpu-rdc` on the link line too (nvcc needed no flag
    there): add it to recipe lines that run the compiler without `-c` and name no variable that has it."""
    for line, words, _done in handled:
        if not line.recipe or not words or not _runs_compiler(ctx, words, compiler_vars):
            continue
        first = _command_word(words)
        texts = {w.text for w in words}
        if texts & {"-c", "-dc", "--device-c", "-fgpu-rdc", "-rdc=true", "--relocatable-device-code=true", "-E",
                    "-M", "-MM"}:
            continue
        if any(f"$({v})" in w.text or f"${{{v}}}" in w.text for v in rdc_vars for w in words):
            continue
        if not rdc_in_recipe and not rdc_vars:
            continue
        at = words[first].end
        ctx.edit(at, at, " -fgpu-rdc", "rdc-link", "")
        ctx.report(words[first].start, NOTE, "info", "`-fgpu-rdc` added to the link step: hipcc links "
                   "relocatable device code only when told", "-fgpu-rdc", "rdc-link")


__all__ = ["UNTRANSLATED", "convert_makefile", "logical_lines"]
