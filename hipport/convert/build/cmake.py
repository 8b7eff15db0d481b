"""CMake projects: the CUDA language, its variables and properties, packages and imported targets -> CMake's HIP
forms (rules/build/cmake.toml); nvcc flags inside arguments follow the Makefile rules (rules/build/make.toml).

The file is scanned into commands and arguments (comments and bracket arguments are never touched); every change
is an edit of the original text, so formatting stays. Lines hipport adds (`set_source_files_properties(... LANGUAGE
HIP)` for `.cu` sources, `find_package()` for the HIP libraries used, `-fgpu-rdc` for separable compilation) go
below the command they belong to, with its indentation."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hipport.convert.build.common import (
    ARCH_VALUE,
    DROPPED,
    NOTE,
    RESIDUAL,
    BuildContext,
    Word,
    rewrite_flags,
    split_words,
)
from hipport.convert.build.rules import CMakeRules

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
_GENEX_FLAG = re.compile(r"^(\$<.*:)([^:<>$]+)(>+)$")
_GENEX_LANG = re.compile(r"\$<(COMPILE_LANGUAGE|LINK_LANGUAGE|COMPILE_LANG_AND_ID):([^>]*)>")
_NO_FLAGS = {"message", "execute_process", "add_custom_command", "add_custom_target", "install", "configure_file"}
_SOURCE_COMMANDS = {"add_executable", "add_library", "target_sources", "set", "list", "cuda_add_executable",
                    "cuda_add_library"}
_TRUE = {"ON", "TRUE", "YES", "Y", "1"}
_RESIDUAL_CMAKE = re.compile(r"\bCUDA::\w+|\bCMAKE_CUDA_\w+|\bCUDAToolkit_\w+|\bCUDA_NVCC_FLAGS\w*")


@dataclass(slots=True)
class Arg:
    start: int
    end: int
    text: str
    quoted: bool = False
    bracket: bool = False

    @property
    def value(self) -> str:
        return self.text[1:-1] if self.quoted else self.text


@dataclass(slots=True)
class Command:
    name: str
    start: int
    open: int
    close: int          # index of the closing parenthesis
    args: list[Arg] = field(default_factory=list)


def _skip_bracket(text: str, i: int) -> int | None:
    """End of a bracket argument or comment opening at ``i`` (``[[``, ``[==[``), or None if none opens there."""
    m = _BRACKET_OPEN.match(text, i)
    if not m:
        return None
    close = text.find("]" + m.group(1) + "]", m.end())
    return len(text) if close < 0 else close + len(m.group(1)) + 2


def _skip_comment(text: str, i: int) -> int:
    end = _skip_bracket(text, i + 1)
    if end is not None:
        return end
    nl = text.find("\n", i)
    return len(text) if nl < 0 else nl


def parse_commands(text: str) -> list[Command]:
    commands: list[Command] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            i = _skip_comment(text, i)
            continue
        m = _IDENT.match(text, i) if (c.isalpha() or c == "_") else None
        if not m:
            i += 1
            continue
        j = m.end()
        while j < n and text[j] in " \t":
            j += 1
        if j >= n or text[j] != "(":
            i = m.end()
            continue
        cmd = Command(m.group(0), m.start(), j, n)
        depth, k = 1, j + 1
        while k < n:
            c = text[k]
            if c in " \t\r\n":
                k += 1
            elif c == "#":
                k = _skip_comment(text, k)
            elif c == "(":
                depth += 1
                k += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    cmd.close = k
                    break
                k += 1
            elif c == '"':
                e = k + 1
                while e < n and text[e] != '"':
                    e += 2 if text[e] == "\\" else 1
                e = min(e + 1, n)
                cmd.args.append(Arg(k, e, text[k:e], quoted=True))
                k = e
            elif c == "[" and _BRACKET_OPEN.match(text, k):
                e = _skip_bracket(text, k)
                cmd.args.append(Arg(k, e, text[k:e], bracket=True))
                k = e
            else:
                e = k
                while e < n and text[e] not in " \t\r\n()#\"":
                    e += 1
                if e == k:
                    e += 1
                cmd.args.append(Arg(k, e, text[k:e]))
                k = e
        commands.append(cmd)
        i = cmd.close + 1
    return commands


class _CMake:
    def __init__(self, ctx: BuildContext, rules: CMakeRules) -> None:
        self.ctx = ctx
        self.rules = rules
        self.text = ctx.text
        self.commands = parse_commands(ctx.text)
        self.inserts: dict[int, list[str]] = {}
        self.seen: set[int] = set()          # offsets of names already converted or reported
        self.marked: set[str] = set()        # sources already given LANGUAGE HIP
        self.found_packages: set[str] = set()
        self.needed: dict[str, int] = {}     # package -> offset of the first use
        self.cuda_find: Command | None = None
        self.cuda_find_args = ""

    # -- helpers ---------------------------------------------------------------------------------------------

    def indent(self, cmd: Command) -> str:
        line_start = self.text.rfind("\n", 0, cmd.start) + 1
        prefix = self.text[line_start:cmd.start]
        return prefix if not prefix.strip() else re.match(r"[ \t]*", prefix).group(0)

    def insert_after(self, cmd: Command, line: str) -> None:
        nl = self.text.find("\n", cmd.close)
        at = len(self.text) if nl < 0 else nl
        if self.text[at - 1:at] == "\r":
            at -= 1
        self.inserts.setdefault(at, []).append("\n" + self.indent(cmd) + line)

    def command_span(self, cmd: Command) -> tuple[int, int]:
        """The command, with its line when it stands alone on it."""
        start, end = cmd.start, cmd.close + 1
        line_start = self.text.rfind("\n", 0, start) + 1
        nl = self.text.find("\n", end)
        line_end = len(self.text) if nl < 0 else nl + 1
        if not self.text[line_start:start].strip() and not self.text[end:line_end].strip():
            return line_start, line_end
        return start, end

    def replace_command(self, cmd: Command, lines: list[str], rule: str) -> None:
        """Replace the whole command by ``lines`` (none: remove it, with its line when it stands alone)."""
        start, end = cmd.start, cmd.close + 1
        old = self.text[start:end]
        if lines:
            self.ctx.edit(start, end, ("\n" + self.indent(cmd)).join(lines), rule, old)
            return
        start, end = self.command_span(cmd)
        self.ctx.edit(start, end, "", rule, old)

    def arch_values(self, cmd: Command, values: list[Arg], rule: str) -> None:
        """GPU architecture values (`70`, `"75;80"`, `native`) -> the AMD targets."""
        if not values:
            return
        parts = [p for a in values for p in a.value.split(";") if p]
        if parts and all(ARCH_VALUE.match(p) for p in parts):
            quoted = len(values) == 1 and values[0].quoted
            new = f'"{";".join(self.ctx.targets)}"' if quoted else " ".join(self.ctx.targets)
            self.ctx.edit(values[0].start, values[-1].end, new, rule)
        elif not any(p.startswith("gfx") for p in parts):
            self.ctx.untranslated(values[0].start, " ".join(a.text for a in values),
                                  f"GPU architectures hipport cannot read; give AMD targets ({' '.join(self.ctx.targets)})",
                                  rule)

    def target_for(self, name: str) -> tuple[str | None, str | None, str]:
        """(HIP target, its package, note) for a CUDA library or imported-target name (without CUDA::)."""
        entry = self.rules.targets[name]
        if self.ctx.roc and "roc" in entry:
            return entry["roc"], entry.get("roc_package"), entry.get("note", "")
        return entry.get("hip"), entry.get("package"), entry.get("note", "")

    def use_target(self, start: int, end: int, name: str, old: str) -> None:
        hip, package, note = self.target_for(name)
        self.seen.add(start)
        if hip is None:
            self.ctx.untranslated(start, old, note, f"target:{name}")
            return
        self.ctx.edit(start, end, hip, f"target:{name}", old)
        if package:
            self.needed.setdefault(package, start)

    # -- the passes ------------------------------------------------------------------------------------------

    def prescan(self) -> None:
        for cmd in self.commands:
            lname = cmd.name.lower()
            values = [a.value for a in cmd.args]
            if lname == "set_source_files_properties" and "PROPERTIES" in values:
                props = values[values.index("PROPERTIES") + 1:]
                if any(k == "LANGUAGE" and v in ("HIP", "CUDA") for k, v in zip(props, props[1:])):
                    self.marked.update(values[:values.index("PROPERTIES")])
            elif lname == "find_package" and values:
                self.found_packages.add(values[0])

    def run(self) -> None:
        self.prescan()
        for cmd in self.commands:
            self.command(cmd)
        self.packages()
        for at, lines in self.inserts.items():
            self.ctx.edit(at, at, "".join(lines), "insert", "")
        self.residuals()

    def command(self, cmd: Command) -> None:
        ctx, rules = self.ctx, self.rules
        lname = cmd.name.lower()
        args = [a for a in cmd.args if not a.bracket]
        values = [a.value for a in args]
        if lname in rules.commands:
            ctx.edit(cmd.start, cmd.start + len(cmd.name), rules.commands[lname]["hip"], f"command:{lname}")
        # the language
        first = 1 if lname == "project" else 0
        if lname in ("project", "enable_language", "check_language"):
            for a in args[first:]:
                if not a.quoted and a.text in rules.languages:
                    ctx.edit(a.start, a.end, rules.languages[a.text]["hip"], "language")
        for k, a in enumerate(args[:-1]):
            if a.text in ("LANGUAGE", "LINKER_LANGUAGE") and args[k + 1].text in rules.languages:
                b = args[k + 1]
                ctx.edit(b.start, b.end, rules.languages[b.text]["hip"], "language")
        for a in args:
            for m in _GENEX_LANG.finditer(a.text):
                if m.group(1) == "COMPILE_LANG_AND_ID":
                    ctx.untranslated(a.start + m.start(), m.group(0), "a compiler-id test (NVIDIA); HIP's "
                                     "compiler is Clang", "language")
                    continue
                pos = a.start + m.start(2)
                for lang in re.finditer(r"[^,]+", m.group(2)):
                    if lang.group(0) in rules.languages:
                        ctx.edit(pos + lang.start(), pos + lang.end(), rules.languages[lang.group(0)]["hip"],
                                 "language")
        # separable compilation and properties with no HIP meaning come out whole
        if self.separable_and_drops(cmd, lname, args, values):
            return
        # variables (anywhere in the arguments) and FindCUDA's results
        for a in args:
            for m in re.finditer(r"(?<![A-Za-z0-9_])[A-Z][A-Za-z0-9_]*", a.text):
                name, at = m.group(0), a.start + m.start()
                entry = rules.variables.get(name)
                found = rules.findcuda.get(name)
                if entry is None and found is not None and "note" in found and a.text[:m.start()][-2:] != "${":
                    self.seen.add(at)  # FindCUDA's variable named bare: list(APPEND CUDA_NVCC_FLAGS ...)
                    ctx.untranslated(at, name, found["note"], f"findcuda:{name}")
                if entry is not None:
                    self.seen.add(at)
                    if "hip" in entry:
                        ctx.edit(at, at + len(name), entry["hip"], f"variable:{name}")
                    else:
                        ctx.untranslated(at, name, entry["note"], f"variable:{name}")
            for m in re.finditer(r"\$\{([A-Za-z0-9_]+)\}", a.text):
                entry = rules.findcuda.get(m.group(1))
                at = a.start + m.start()
                if entry is None:
                    continue
                self.seen.add(at + 2)
                if "target" in entry:
                    self.use_target(at, a.start + m.end(), entry["target"], m.group(0))
                elif "hip" in entry:
                    ctx.edit(at, a.start + m.end(), entry["hip"], f"findcuda:{m.group(1)}")
                else:
                    ctx.untranslated(at, m.group(0), entry["note"], f"findcuda:{m.group(1)}")
        if lname == "set" and args and rules.variables.get(args[0].text, {}).get("arch"):
            end = next((k for k, v in enumerate(values) if v in ("CACHE", "PARENT_SCOPE")), len(values))
            self.arch_values(cmd, args[1:end], f"variable:{args[0].text}")
        # properties
        for k, a in enumerate(args):
            entry = rules.properties.get(a.text) if not a.quoted else None
            if entry is None:
                continue
            ctx.edit(a.start, a.end, entry["hip"], f"property:{a.text}")
            if entry.get("arch"):
                if lname == "set_property":
                    self.arch_values(cmd, args[k + 1:], f"property:{a.text}")
                elif lname == "set_target_properties" and k + 1 < len(args):
                    self.arch_values(cmd, args[k + 1:k + 2], f"property:{a.text}")
        # packages and imported targets
        if lname == "find_package" and args and args[0].text in rules.packages:
            ctx.edit(args[0].start, args[0].end, rules.packages[args[0].text]["hip"], f"package:{args[0].text}")
            for a in args[1:]:
                if re.fullmatch(r"\d+(\.\d+)*|EXACT", a.text):
                    ctx.delete_span(a.start, a.end, f"package:{args[0].text}", a.text)
            if self.cuda_find is None:
                self.cuda_find = cmd
                self.cuda_find_args = "".join(f" {a.text}" for a in args[1:] if a.text in ("REQUIRED", "QUIET"))
        for a in args:
            for m in re.finditer(r"\bCUDA::(\w+)", a.text):
                if m.group(1) in rules.targets:
                    self.use_target(a.start + m.start(), a.start + m.end(), m.group(1), m.group(0))
        if lname in ("target_link_libraries", "link_libraries"):
            for a in args[1 if lname == "target_link_libraries" else 0:]:
                if not a.quoted and a.text in rules.targets:
                    self.use_target(a.start, a.end, a.text, a.text)
        # .cu sources are CUDA to CMake: mark them HIP
        if lname in _SOURCE_COMMANDS:
            names = [a.value for a in args[1:] if a.value.endswith(".cu") and not re.search(r"[$*<>;]", a.value)]
            names = list(dict.fromkeys(n for n in names if n not in self.marked))
            if names:
                self.marked.update(names)
                self.insert_after(cmd, f"set_source_files_properties({' '.join(names)} PROPERTIES LANGUAGE HIP)")
                ctx.fired.add("sources")
        if lname == "file" and len(args) > 2 and values[0] in ("GLOB", "GLOB_RECURSE"):
            if any(v.endswith(".cu") for v in values[2:]) and f"${{{values[1]}}}" not in self.marked:
                self.marked.add(f"${{{values[1]}}}")
                self.insert_after(cmd, f"set_source_files_properties(${{{values[1]}}} PROPERTIES LANGUAGE HIP)")
                ctx.fired.add("sources")
        # nvcc flags in the arguments
        if lname not in _NO_FLAGS:
            words = self.flag_words(args)
            done = rewrite_flags(ctx, words, cmake=True)
            appended = [w for w in words if w.start >= args[2].start] if len(args) > 2 else []
            if (lname == "string" and values[0] == "APPEND" and appended
                    and all(ctx.deleted_only(w.start, w.end) for w in appended)):
                # string(APPEND CMAKE_CUDA_FLAGS " --expt-relaxed-constexpr"): nothing left to append
                start, end = self.command_span(cmd)
                ctx.replace_edits_within(start, end, "", "empty-command")
            for i, w in enumerate(words):
                if i in done:
                    self.seen.add(w.start)
            for i, w in enumerate(words):
                if i in done:
                    continue
                m = RESIDUAL.search(w.text)
                if m and "CUDA" not in w.text:
                    self.seen.add(w.start + m.start())
                    ctx.untranslated(w.start + m.start(), w.text, "no rule for it; convert it by hand")

    def flag_words(self, args: list[Arg]) -> list[Word]:
        words: list[Word] = []
        for a in args:
            if a.quoted:
                words += split_words(self.text, a.start + 1, a.end - 1, quotes=False)
                continue
            m = _GENEX_FLAG.match(a.text)
            if m:
                s = a.start + m.start(2)
                words.append(Word(s, s + len(m.group(2)), m.group(2)))
            elif "$<" not in a.text:
                words.append(Word(a.start, a.end, a.text))
        return words

    def separable_and_drops(self, cmd: Command, lname: str, args: list[Arg], values: list[str]) -> bool:
        """CUDA_SEPARABLE_COMPILATION and the properties with no HIP meaning. True when the command was replaced."""
        ctx, sep = self.ctx, self.rules.separable
        drops = self.rules.drop_properties
        if lname == "set" and values and values[0] == sep["variable"]:
            on = len(values) > 1 and values[1].upper() in _TRUE
            lines = [f"add_compile_options({sep['compile']})", f"add_link_options({sep['link']})"] if on else []
            self.replace_command(cmd, lines, "separable")
            ctx.report(cmd.start, NOTE, "info", f"{sep['variable']}: {sep['note']}", sep["variable"], "separable")
            self.seen.add(args[0].start)
            return True
        if lname == "set_property" and "PROPERTY" in values:
            k = values.index("PROPERTY")
            if k + 1 < len(values) and (values[k + 1] == sep["property"] or values[k + 1] in drops):
                prop = values[k + 1]
                self.seen.add(args[k + 1].start)
                targets = [t for t in values[values.index("TARGET") + 1:k] if t not in ("APPEND", "APPEND_STRING")] \
                    if "TARGET" in values else []
                on = k + 2 < len(values) and values[k + 2].upper() in _TRUE
                if prop == sep["property"]:
                    lines = self.rdc_lines(targets) if on else []
                    self.replace_command(cmd, lines, "separable")
                    ctx.report(cmd.start, NOTE, "info", f"{prop}: {sep['note']}", prop, "separable")
                else:
                    self.replace_command(cmd, [], "drop-property")
                    ctx.report(cmd.start, DROPPED, "info", f"{prop} dropped: {drops[prop]}", prop, "drop-property")
                return True
        if lname == "set_target_properties" and "PROPERTIES" in values:
            k = values.index("PROPERTIES")
            targets = values[:k]
            pairs = list(range(k + 1, len(args) - 1, 2))
            removed = []
            rdc_on = False
            for p in pairs:
                prop = values[p]
                if prop != sep["property"] and prop not in drops:
                    continue
                self.seen.add(args[p].start)
                removed.append(p)
                if prop == sep["property"]:
                    rdc_on = rdc_on or values[p + 1].upper() in _TRUE
                    ctx.report(args[p].start, NOTE, "info", f"{prop}: {sep['note']}", prop, "separable")
                else:
                    ctx.report(args[p].start, DROPPED, "info", f"{prop} dropped: {drops[prop]}", prop,
                               "drop-property")
            if not removed:
                return False
            if len(removed) == len(pairs):
                self.replace_command(cmd, self.rdc_lines(targets) if rdc_on else [], "separable")
                return True
            for p in removed:
                ctx.delete_span(args[p].start, args[p + 1].end, "separable" if values[p] == sep["property"]
                                else "drop-property", f"{values[p]} {values[p + 1]}")
            for line in self.rdc_lines(targets) if rdc_on else []:
                self.insert_after(cmd, line)
            # the rest of the command still goes through the other rules
            return False
        return False

    def rdc_lines(self, targets: list[str]) -> list[str]:
        sep = self.rules.separable
        out = []
        for t in targets:
            out += [f"target_compile_options({t} PRIVATE {sep['compile']})",
                    f"target_link_options({t} PRIVATE {sep['link']})"]
        return out

    def packages(self) -> None:
        missing = [p for p in self.needed if p not in self.found_packages]
        if not missing:
            return
        if self.cuda_find is None:
            for p in missing:
                self.ctx.report(self.needed[p], NOTE, "info", f"this file uses a target of `{p}`: the project "
                                f"needs `find_package({p})`", p, "packages")
            return
        for p in missing:
            self.insert_after(self.cuda_find, f"find_package({p}{self.cuda_find_args})")
        self.ctx.fired.add("packages")

    def residuals(self) -> None:
        """CUDA names no rule took: reported where they stand (comments and bracket arguments excepted)."""
        for cmd in self.commands:
            if cmd.name.lower().startswith("cuda_") and cmd.name.lower() not in self.rules.commands:
                self.ctx.untranslated(cmd.start, cmd.name, "a FindCUDA command with no HIP form; use CMake's "
                                      "HIP language (add_executable, target_*)")
            for a in cmd.args:
                if a.bracket:
                    continue
                for m in _RESIDUAL_CMAKE.finditer(a.text):
                    at = a.start + m.start()
                    if at in self.seen or (m.group(0).startswith("CMAKE_CUDA_")
                                           and m.group(0) == self.rules.separable["variable"]):
                        continue
                    self.seen.add(at)
                    self.ctx.untranslated(at, m.group(0), "no HIP form in hipport's CMake rules; convert it by hand")


def convert_cmake(ctx: BuildContext, rules: CMakeRules) -> None:
    if not re.search(r"CUDA|cuda|nvcc|sm_\d", ctx.text):
        return
    ctx.uses_nvcc = True
    _CMake(ctx, rules).run()
