"""Build glue for a tree that builds for AMD through the compatibility header (`hipport compat --build`).

CMake: a file to `include()` from the project's CMakeLists.txt (CMake 3.21+): the GPU targets, `enable_language
(HIP)`, the tree's units compiled as HIP (`LANGUAGE HIP`), and a function that gives a target the forwarding
headers' folder, the forced include and the HIP libraries. Make: a fragment to include or run with `make -f`,
whose `hipport-amd-objects` target compiles every unit with hipcc and `hipport-amd` links them.

Which libraries: the HIP counterparts (rules/build/cmake.toml `[targets]`, make.toml `[libraries]`) of the CUDA
libraries whose names the tree uses.
"""

from __future__ import annotations

import os
from pathlib import Path

from hipport.convert.build.rules import load_build_rules

CMAKE_NAME = "hipport_compat.cmake"
MAKE_NAME = "hipport_compat.mk"
FIRST_LINE = "# {name}: written by `hipport compat` for ROCm {v}; regenerate it rather than edit it."


def _rel(path: str, out_dir: Path) -> str:
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(out_dir))).as_posix()


def libraries(plan, roc: bool = False) -> tuple[list[tuple[str, str]], list[str]]:
    """([(CMake package, imported target)], [make library names]) for the CUDA libraries the tree uses."""
    make_rules, cmake_rules = load_build_rules()
    cmake, make = [], []
    for lib in plan.libraries:
        entry = cmake_rules.targets.get(lib, {})
        target = entry.get("roc") if roc and entry.get("roc") else entry.get("hip")
        package = entry.get("roc_package") if roc and entry.get("roc") else entry.get("package")
        if target and package:
            cmake.append((package, target))
        rule = make_rules.libraries.get(lib)
        name = (rule.roc if roc and rule is not None and rule.roc else rule.hip if rule is not None else None)
        if name:
            make.append(name)
    return cmake, make


def cmake_text(plan, out_dir: Path, header_name: str, archs: tuple, command: str, roc: bool = False) -> str:
    v = f"{plan.target[0]}.{plan.target[1]}"
    packages, _ = libraries(plan, roc)
    units = [f'  "${{CMAKE_CURRENT_LIST_DIR}}/{_rel(u, out_dir)}"' for u in plan.units]
    lines = [FIRST_LINE.format(name=CMAKE_NAME, v=v),
             f"# Written again, from the tree's folder, with: {command}",
             "# For the AMD build, from the CMakeLists.txt that defines the target (CMake 3.21 or later):",
             f"#   include(path/to/{CMAKE_NAME})",
             "#   hipport_compat_target(<target>)",
             "# The sources keep their CUDA names: the forced include maps them, the forwarding headers stand in for",
             "# CUDA's. Set CMAKE_HIP_ARCHITECTURES before the include to build for other GPUs.",
             "if(NOT CMAKE_HIP_ARCHITECTURES)",
             f"  set(CMAKE_HIP_ARCHITECTURES {';'.join(archs)})",
             "endif()",
             "enable_language(HIP)",
             'set(HIPPORT_COMPAT_DIR "${CMAKE_CURRENT_LIST_DIR}")',
             "set(HIPPORT_COMPAT_SOURCES",
             *units,
             ")",
             "set_source_files_properties(${HIPPORT_COMPAT_SOURCES} PROPERTIES LANGUAGE HIP)"]
    lines += [f"find_package({p} REQUIRED)" for p in dict.fromkeys(p for p, _ in packages)]
    # A target with HIP sources links the HIP runtime by itself; the libraries are the tree's.
    link = " ".join(dict.fromkeys(t for _, t in packages))
    lines += ["function(hipport_compat_target target)",
              '  target_include_directories(${target} PRIVATE "${HIPPORT_COMPAT_DIR}")',
              f'  target_compile_options(${{target}} PRIVATE "$<$<COMPILE_LANGUAGE:HIP>:SHELL:-include '
              f'${{HIPPORT_COMPAT_DIR}}/{header_name}>")',
              *([f"  target_link_libraries(${{target}} PRIVATE {link})"] if link else []),
              "endfunction()",
              ""]
    return "\n".join(lines)


def make_text(plan, out_dir: Path, header_name: str, archs: tuple, command: str, program: str,
              roc: bool = False) -> str:
    v = f"{plan.target[0]}.{plan.target[1]}"
    _, libs = libraries(plan, roc)
    root = os.path.commonpath([os.path.abspath(u) for u in plan.units]) if plan.units else os.path.abspath(out_dir)
    if plan.units and len(plan.units) == 1:
        root = os.path.dirname(root)
    sources = " \\\n    ".join(Path(os.path.relpath(os.path.abspath(u), root)).as_posix() for u in plan.units)
    lines = [FIRST_LINE.format(name=MAKE_NAME, v=v),
             f"# Written again, from the tree's folder, with: {command}",
             f"# make -f path/to/{MAKE_NAME} hipport-amd   (or `include` it from the project's Makefile)",
             "# hipport-amd-objects compiles every unit below with hipcc for HIPPORT_ARCHS; hipport-amd links them.",
             "HIPPORT_COMPAT_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))",
             f"HIPPORT_SOURCE_DIR ?= $(HIPPORT_COMPAT_DIR)/{_rel(root, out_dir)}",
             "HIPCC ?= hipcc",
             f"HIPPORT_ARCHS ?= {' '.join(archs)}",
             "HIPPORT_BUILD ?= hipport-build",
             f"HIPPORT_PROGRAM ?= $(HIPPORT_BUILD)/{program}",
             "HIPPORT_CXXFLAGS ?= -std=c++17",
             f"HIPPORT_SOURCES := {sources}",
             f"HIPPORT_LIBS := {' '.join(f'-l{name}' for name in libs)}".rstrip(),
             "HIPPORT_FLAGS := -x hip $(addprefix --offload-arch=,$(HIPPORT_ARCHS)) -I$(HIPPORT_COMPAT_DIR) \\",
             f"    -include $(HIPPORT_COMPAT_DIR)/{header_name} $(HIPPORT_CXXFLAGS)",
             "HIPPORT_OBJECTS := $(addprefix $(HIPPORT_BUILD)/,$(addsuffix .o,$(HIPPORT_SOURCES)))",
             "",
             ".PHONY: hipport-amd hipport-amd-objects",
             "hipport-amd: $(HIPPORT_PROGRAM)",
             "hipport-amd-objects: $(HIPPORT_OBJECTS)",
             "$(HIPPORT_PROGRAM): $(HIPPORT_OBJECTS)",
             "\t$(HIPCC) $(addprefix --offload-arch=,$(HIPPORT_ARCHS)) -o $@ $^ $(HIPPORT_LIBS) $(HIPPORT_LDFLAGS)",
             "$(HIPPORT_BUILD)/%.o: $(HIPPORT_SOURCE_DIR)/% $(HIPPORT_COMPAT_DIR)/" + header_name,
             "\t@mkdir -p $(dir $@)",
             "\t$(HIPCC) $(HIPPORT_FLAGS) -c $< -o $@",
             ""]
    return "\n".join(lines)
