#!/usr/bin/env python3
"""Print docs/build-files.md's mapping tables from the rule data (rules/build/make.toml, rules/build/cmake.toml).

    python3 tools/build_flags_table.py            # print the tables
    python3 tools/build_flags_table.py --write    # replace them in docs/build-files.md (between the build-tables markers)

tests/test_build_files.py checks docs/build-files.md holds exactly what this prints."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "build-files.md"
sys.path.insert(0, str(ROOT))

from hipport.convert.build.rules import load_build_rules  # noqa: E402

START, END = "<!-- build-tables: start (tools/build_flags_table.py) -->", "<!-- build-tables: end -->"


def _code(items) -> str:
    return ", ".join(f"`{i}`" for i in items)


def tables() -> str:
    make, cmake = load_build_rules()
    out = ["| nvcc (Makefiles, and flags in CMake files) | hipcc | note |", "| --- | --- | --- |"]
    for cuda, hip in make.compilers.items():
        out.append(f"| `{cuda}` (also as `.../bin/{cuda}`) | `{hip}` | |")
    for f in make.flags:
        spell = _code(f.cuda) + (" `VALUE`" if f.value == "required" else "")
        if f.kind == "drop":
            hip = "dropped"
        elif f.kind == "unwrap":
            hip = "the value's flags, commas split"
        elif f.kind == "arch":
            hip = "`--offload-arch=` the targets"
        elif f.values:
            hip = "; ".join(f"`{v}` → `{h}`" if h else f"`{v}` → dropped" for v, h in f.values.items())
            if f.keep_others:
                hip += "; other values kept"
        else:
            hip = f"`{f.hip.replace('{value}', 'VALUE')}`" if f.hip else "dropped"
        note = f.note + (" (only where nvcc runs)" if f.nvcc_only else "")
        out.append(f"| {spell} | {hip} | {note.strip()} |")
    out += ["", "| CUDA library | HIP library | `--roc` | note |", "| --- | --- | --- | --- |"]
    for lib in make.libraries.values():
        hip = f"`-l{lib.hip}`" if lib.hip else "kept, reported"
        roc = f"`-l{lib.roc}`" if lib.roc else ""
        out.append(f"| `-l{lib.cuda}` | {hip} | {roc} | {lib.note} |")
    out += ["", "| CUDA install location | ROCm's |", "| --- | --- |",
            f"| {_code(f'$({v})' for v in make.path_variables)} | `$({make.hip_variable})` "
            f"(`{make.hip_variable} ?= {make.hip_prefix}` added when the file sets none) |",
            f"| {_code(p + '[-X.Y]' for p in make.path_prefixes)} | `{make.hip_prefix}` |"]
    out += [f"| `.../{a}` | `.../{b}` |" for a, b in make.subdirs.items()]
    out += ["", "| CMake (CUDA) | CMake (HIP) | `--roc` / note |", "| --- | --- | --- |"]
    for name, e in cmake.languages.items():
        out.append(f"| language `{name}` (project, enable_language, `$<COMPILE_LANGUAGE:>`, `LANGUAGE`) | "
                   f"`{e['hip']}` | |")
    for table in (cmake.variables, cmake.properties):
        for name, e in table.items():
            hip = f"`{e['hip']}`" if "hip" in e else "kept, reported"
            note = "values → the AMD targets" if e.get("arch") else e.get("note", "")
            out.append(f"| `{name}` | {hip} | {note} |")
    for name, note in cmake.drop_properties.items():
        out.append(f"| `{name}` | dropped | {note} |")
    sep = cmake.separable
    out.append(f"| `{sep['property']}`, `{sep['variable']}` | `{sep['compile']}` and `{sep['link']}` "
               f"(target_/add_compile_options, target_/add_link_options) | {sep['note']} |")
    for name, e in cmake.packages.items():
        out.append(f"| `find_package({name})` | `find_package({e['hip']})` and one per HIP library used | |")
    for name, e in cmake.targets.items():
        hip = f"`{e['hip']}`" if "hip" in e else "kept, reported"
        extra = [f"`{e['roc']}`"] if "roc" in e else []
        extra += [e["note"]] if "note" in e else []
        out.append(f"| `CUDA::{name}` (`{name}` in target_link_libraries) | {hip} | {'; '.join(extra)} |")
    for name, e in cmake.commands.items():
        out.append(f"| `{name}()` | `{e['hip']}()` | |")
    for name, e in cmake.findcuda.items():
        if "target" in e:
            hip = f"as `CUDA::{e['target']}`"
        else:
            hip = f"`{e['hip']}`" if "hip" in e else "kept, reported"
        out.append(f"| `${{{name}}}` | {hip} | {e.get('note', '')} |")
    out.append("| `.cu` sources (add_executable, add_library, target_sources, set, list, file(GLOB)) | "
               "`set_source_files_properties(... PROPERTIES LANGUAGE HIP)` added | |")
    return "\n".join(out) + "\n"


def readme_block(text: str) -> str | None:
    if START not in text or END not in text:
        return None
    return text[text.index(START) + len(START):text.index(END)].strip("\n") + "\n"


def main() -> int:
    block = tables()
    if "--write" in sys.argv:
        text = PAGE.read_text(encoding="utf-8")
        if readme_block(text) is None:
            print("docs/build-files.md has no build-tables markers", file=sys.stderr)
            return 1
        new = text[:text.index(START) + len(START)] + "\n" + block + text[text.index(END):]
        PAGE.write_text(new, encoding="utf-8")
        return 0
    sys.stdout.write(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
