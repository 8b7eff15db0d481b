"""The text of the compatibility header and of its forwarding headers, from a `CompatPlan`.

The header is force-included (`-include`) by the AMD build only; included by nvcc it is `<cuda_runtime.h>` and
nothing else. On AMD it includes HIP's headers first (so that none of them sees a CUDA name mapped), then maps.
A region between two marker lines is the user's: written again, the header keeps it as it is. Written twice from
the same tree, the header is the same bytes.

A forwarding header takes the name of a CUDA header the tree includes (`cuda_runtime.h`, `cub/cub.cuh`): it
includes the compatibility header, which includes the HIP counterpart. The AMD build finds it through `-I`.
"""

from __future__ import annotations

FIRST_LINE = "// hipport_compat.h: written by `hipport compat`; regenerate it rather than edit it (except the user section)."
USER_BEGIN = "// hipport: user section begin (kept as it is when `hipport compat` writes this header again)"
USER_END = "// hipport: user section end"
FORWARDING_LINE = "// hipport: forwarding headers:"
FORWARD_FIRST = "// written by `hipport compat`: the AMD build's stand-in for this CUDA header"
AMD = "defined(__HIP_PLATFORM_AMD__) || (defined(__HIP__) && !defined(__HIP_PLATFORM_NVIDIA__))"
_MASK64 = """\
// A 32-bit mask naming every lane of a warp names every lane of the wavefront on AMD; HIP's *_sync built-ins take
// 64-bit masks (ROCm 7 static_asserts it) and adjust a full mask for wave32 themselves.
template <typename HipportMask>
__device__ inline unsigned long long hipport_mask64(HipportMask mask) {
  return sizeof(HipportMask) < 8 && static_cast<unsigned int>(mask) == 0xffffffffu
             ? ~0ull
             : static_cast<unsigned long long>(mask);
}"""
_DISPATCH = """\
// Calls whose HIP function depends on the number of arguments.
#define HIPPORT_NARGS(...) HIPPORT_NARGS_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define HIPPORT_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, N, ...) N
#define HIPPORT_CAT(a, b) HIPPORT_CAT_(a, b)
#define HIPPORT_CAT_(a, b) a##b"""


def user_section(old: str | None) -> str | None:
    """The lines between the markers of an earlier header (None: no earlier header, or no markers in it)."""
    if not old:
        return None
    begin, end = old.find(USER_BEGIN), old.find(USER_END)
    if begin < 0 or end < begin:
        return None
    start = old.find("\n", begin) + 1
    return old[start:end]


def forwarding_of(old: str | None) -> list[str]:
    """The forwarding headers an earlier header lists (to remove the ones no longer needed)."""
    if not old:
        return []
    for line in old.splitlines():
        if line.startswith(FORWARDING_LINE):
            return line[len(FORWARDING_LINE):].split()
    return []


def render(plan, header_name: str, command: str, user: str | None = None) -> str:
    """The compatibility header. ``command``: how to write it again (shown in it); ``user``: the user section."""
    v = f"{plan.target[0]}.{plan.target[1]}"
    out = [FIRST_LINE,
           f"// For ROCm {v}: the CUDA names, headers and calls of {plan.gpu_files} files of this tree, as hipport maps "
           f"them for that release.",
           f"// Written again, from the tree's folder, with: {command}",
           f"{FORWARDING_LINE} {' '.join(sorted(plan.forwarding))}".rstrip(),
           "#ifndef HIPPORT_COMPAT_H",
           "#define HIPPORT_COMPAT_H",
           "",
           f"#if {AMD}",
           ""]
    if plan.unmapped:
        out.append("// Not mapped: HIP has no counterpart for ROCm " + v + " (the AMD build fails where these are used;")
        out.append("// give them a branch of their own, or a definition in the user section):")
        for name, (rule, place, _message) in sorted(plan.unmapped.items()):
            out.append(f"//   {name}  ({rule}; first in {place.path}:{place.line})")
        out.append("")
    if plan.warp_enable:
        out += [f"#ifndef {plan.warp_enable}", f"#define {plan.warp_enable} 1", "#endif"]
    out += [f"#include <{h}>" for h in plan.includes]
    if plan.pre_includes:
        out.append("// The tree's rocThrust headers, before the CUDA compiler macros below are defined: they test them.")
        out += [f"#include <{h}>" for h in plan.pre_includes]
    out.append("")
    if plan.renames:
        out.append("// CUDA names and their HIP counterparts.")
        out += [f"#define {c} {h}" for c, h in sorted(plan.renames.items())]
        out.append("")
    if plan.namespaces:
        out += [f"namespace {c} = {h};" for c, h in sorted(plan.namespaces.items())]
        out.append("")
    if plan.calls:
        if any("HIPPORT_NARGS" in line for lines in plan.calls.values() for line in lines):
            out += [_DISPATCH, ""]
        out.append("// Calls whose HIP form takes its arguments otherwise.")
        for name in sorted(plan.calls):
            out += plan.calls[name]
        out.append("")
    if plan.warp:
        if any("hipport_mask64" in line for line in plan.warp.values()):
            out += [_MASK64, ""]
        out.append(f"// Warp built-ins, in ROCm {v}'s form.")
        out += [plan.warp[n] for n in sorted(plan.warp)]
        out.append("")
    if plan.device_pass:
        out.append("// Tested for presence, these mean \"the device pass\"; an NVIDIA architecture number compared "
                   "with them is")
        out.append("// no AMD one, so they are 1: `#if __CUDA_ARCH__ >= 700` is false here (hipport reports each).")
        for macro, hip in plan.device_pass.items():
            out += [f"#if defined({hip}) && !defined({macro})", f"#define {macro} 1", "#endif"]
        out.append("")
    if plan.guards:
        out.append("// Include guards of CUDA headers that the tree tests.")
        for cuda, hip in sorted(plan.guards.items()):
            out += [f"#if defined({hip}) && !defined({cuda})", f"#define {cuda}", "#endif"]
        out.append("")
    if plan.stand_ins:
        out.append(f"// Stand-ins for names ROCm {v} lacks.")
        for name, shim in sorted(plan.stand_ins.items()):
            macro = f"HIPPORT_SHIM_{name}"
            out += [f"#if !defined({macro}) && {shim.guard}", f"#define {macro}", shim.code.strip("\n"), "#endif"]
        out.append("")
    out.append(USER_BEGIN)
    # The user's lines exactly as they were (an earlier header's), or one empty line.
    body = user if user is not None and user.strip() else "\n"
    tail = ["#else  // the NVIDIA build: CUDA as it is",
            "#include <cuda_runtime.h>",
            "#endif",
            "",
            "#endif  // HIPPORT_COMPAT_H",
            ""]
    return "\n".join(_squeeze(out)) + "\n" + body + USER_END + "\n\n" + "\n".join(tail)


def _squeeze(lines: list[str]) -> list[str]:
    """No two blank lines in a row (sections that are empty leave none)."""
    out: list[str] = []
    for line in lines:
        if line == "" and out and out[-1] == "":
            continue
        out.append(line)
    return out


def forwarding_header(cuda: str, hip: str, header_name: str, stand_in=None) -> str:
    """The forwarding header named ``cuda``: the compatibility header (which includes ``hip``), or, for a CUDA
    header HIP lacks that hipport has a stand-in for, that definition."""
    lines = [f"// {cuda}: {FORWARD_FIRST}" + (f" (HIP: <{hip}>, included by {header_name})" if hip else ""),
             "#pragma once",
             f"#include <{header_name}>"]
    if stand_in is not None:
        macro = f"HIPPORT_SHIM_{stand_in.name}"
        if stand_in.hip_header:  # a HIP that ships the header builds with its own definitions
            lines += [f"#if __has_include(<{stand_in.hip_header}>)", f"#include <{stand_in.hip_header}>",
                      f"#elif !defined({macro}) && {stand_in.guard}"]
        else:
            lines.append(f"#if !defined({macro}) && {stand_in.guard}")
        lines += [f"#define {macro}", stand_in.code.strip("\n"), "#endif"]
    return "\n".join(lines) + "\n"
