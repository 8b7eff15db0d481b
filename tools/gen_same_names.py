#!/usr/bin/env python3
"""Write rules/rocm/same_names.toml: the CUDA names HIPIFY's tables give no HIP name that a ROCm release declares
under the same spelling, each checked by compiling it with that release's compiler.

    python3 tools/gen_same_names.py [--check] [--release RELEASE ...]

HIPIFY's tables leave some names without a HIP column although HIP's headers (or clang's HIP wrapper headers,
`__clang_hip_math.h`) declare them by CUDA's spelling: `make_half2` in hip/hip_fp16.h, `__isnanf` in clang's math
header. `convert` would report them as having no HIP equivalent. For each release this script

1. takes the names of rules/mappings/*.toml without a `hip` value that the rules' own data does not already give a
   HIP form for (rules/releases.toml, rules/overrides.toml) and that are not warp built-ins (rules/warp.toml);
2. keeps those that occur as a word in the code of that release's HIP headers or its compiler's `__clang_hip_*.h`;
3. compiles one file with a `using ::NAME;` line for each (a macro counts too) with the release's real compiler
   (`rocm7-hipcc`, `rocm64-hipcc`; ROCm 6.2.2's headers under ../shared/rocm-6.2.2 with its hipcc stand-in; Debian's
   HIP 5.2 `hipcc`), and keeps the names whose line compiles.

A release whose compiler is missing stops the run (`--release` limits it to some). `--check` compares instead of
writing (exit 1 on a difference); tests/test_same_names.py runs it where the compilers are installed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "rocm" / "same_names.toml"
SHARED = ROOT.parent / "shared"

# release: (compiler command, its HIP include folder, its clang resource include folder, where it came from)
RELEASES = {
    "5.2": (["hipcc"], Path("/usr/include"), Path("/usr/lib/llvm-15/lib/clang/15.0.6/include"),
            "Debian 12 hipcc and libamdhip64-dev 5.2.3 (clang 15)"),
    "6.2": ([str(SHARED / "rocm-6.2.2" / "bin" / "hipcc")], SHARED / "rocm-6.2.2" / "include",
            Path("/usr/lib/llvm-15/lib/clang/15.0.6/include"),
            "ROCm 6.2.2 headers with their hipcc stand-in over Debian's clang 15 (../shared/rocm-6.2.2)"),
    "6.4": (["rocm64-hipcc"], Path("/opt/rocm64-root/usr/include"),
            Path("/opt/rocm64-root/usr/lib/llvm-21/lib/clang/21/include"),
            "ROCm 6.4.3 rocm64-hipcc (../shared/tools/rocm_chroot.sh 6.4)"),
    "7.2": (["rocm7-hipcc"], Path("/opt/rocm7-root/usr/include"),
            Path("/opt/rocm7-root/usr/lib/llvm-22/lib/clang/22/include"),
            "ROCm 7.2.4 rocm7-hipcc (../shared/tools/rocm_chroot.sh 7)"),
}
# The HIP headers a port of each family's CUDA headers includes; a library's is used where the tree has it.
FAMILY_HEADERS = {
    "device": ["hip/hip_runtime.h", "hip/hip_fp16.h", "hip/hip_bf16.h", "hip/hip_complex.h"],
    "runtime": ["hip/hip_runtime.h"], "driver": ["hip/hip_runtime.h"],
    "cublas": ["hipblas/hipblas.h"], "cusparse": ["hipsparse/hipsparse.h"], "curand": ["hiprand/hiprand.h"],
    "cufft": ["hipfft/hipfft.h"], "cusolver": ["hipsolver/hipsolver.h"], "cucomplex": ["hip/hip_complex.h"],
}
HIP_FOLDERS = ("hip", "hipblas", "hipsparse", "hiprand", "hipfft", "hipsolver")

_COMMENT_OR_STRING = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
_WORD = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]*")
_ERROR = re.compile(r"probe\.hip:(\d+):\d+: error")


def candidates() -> dict[str, str]:
    """name -> family: the table names without a HIP name that no other rule data answers."""
    answered: set[str] = set()
    releases = tomllib.loads((ROOT / "rules" / "releases.toml").read_text())
    for entry in releases.get("since", []):
        answered |= set(entry.get("names", {}))
    answered |= set(tomllib.loads((ROOT / "rules" / "overrides.toml").read_text()).get("names", {}))
    warp = (ROOT / "rules" / "warp.toml").read_text()
    out = {}
    for path in sorted((ROOT / "rules" / "mappings").glob("*.toml")):
        for name, entry in tomllib.loads(path.read_text()).get("names", {}).items():
            if isinstance(entry, dict) and not entry.get("hip") and name not in answered \
                    and not re.search(rf"\b{re.escape(name)}\b", warp) and path.stem in FAMILY_HEADERS:
                out[name] = path.stem
    return out


def words_in(include: Path, clang: Path) -> set[str]:
    files = [p for folder in HIP_FOLDERS if (include / folder).is_dir() for p in (include / folder).rglob("*")
             if p.suffix in (".h", ".hpp") and not {"nvidia_detail", "nvcc_detail"} & set(p.parts)]
    files += sorted(clang.glob("__clang_hip_*.h"))
    words: set[str] = set()
    for p in files:
        code = _COMMENT_OR_STRING.sub(b" ", p.read_bytes())
        words.update(w.decode("latin-1") for w in _WORD.findall(code))
    return words


def probe(release: str, names: dict[str, str]) -> set[str]:
    """The names whose `using ::NAME;` (or `#ifdef NAME`) compiles with ``release``'s compiler."""
    command, include, _, _ = RELEASES[release]
    headers = []
    for family in sorted(set(names.values())):
        headers += [h for h in FAMILY_HEADERS[family] if (include / h).is_file() and h not in headers]
    lines = [f"#include <{h}>" for h in headers]
    at: dict[int, str] = {}
    for k, name in enumerate(sorted(names)):
        lines.append(f"#ifndef {name}")
        lines.append(f"namespace hipport_probe_{k} {{ using ::{name}; }}")
        at[len(lines)] = name
        lines.append("#endif")
    with tempfile.TemporaryDirectory(prefix="hipport-same-", dir="/tmp") as tmp:
        src = Path(tmp) / "probe.hip"
        src.write_text("\n".join(lines) + "\n")
        env = {**os.environ, "HIP_PLATFORM": "amd"}
        r = subprocess.run([*command, "-x", "hip", "--offload-arch=gfx90a", "-fsyntax-only", "-std=c++17", "-w",
                            "-ferror-limit=0", str(src)], capture_output=True, text=True, cwd=tmp, env=env,
                           timeout=900)
    failed = {at[int(m.group(1))] for m in _ERROR.finditer(r.stderr) if int(m.group(1)) in at}
    other = [ln for ln in r.stderr.splitlines() if ": error" in ln and not _ERROR.search(ln)
             or (m := _ERROR.search(ln)) and int(m.group(1)) not in at]
    if other:
        raise SystemExit(f"gen_same_names: ROCm {release}: errors outside the probe lines:\n" + "\n".join(other[:10]))
    return set(names) - failed


def render(found: dict[str, set[str]], sources: dict[str, str], families: dict[str, str]) -> str:
    out = ["# CUDA names HIPIFY's tables give no HIP name that a ROCm release declares under the same spelling (in HIP's",
           "# headers or clang's `__clang_hip_*.h`). Generated by tools/gen_same_names.py, which compiles each with the",
           "# release's compiler; do not edit: rerun the script. `convert` keeps such a name as it is for a targeted",
           "# release listed here (answered by the release of the same major version, as rules/rocm/releases.toml's)",
           "# instead of reporting it as having no HIP equivalent. A release not listed under [release] says nothing.",
           ""]
    for release in sorted(sources, key=lambda r: tuple(map(int, r.split(".")))):
        out += [f'[release."{release}"]', f'source = "{sources[release]}"', ""]
    out.append("[names]")
    names = sorted(set().union(*found.values()) if found else set())
    for name in names:
        have = [r for r in sorted(found, key=lambda r: tuple(map(int, r.split(".")))) if name in found[r]]
        out.append(f'{name} = {{ family = "{families[name]}", releases = [{", ".join(chr(34) + r + chr(34) for r in have)}] }}')
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    ap.add_argument("--release", action="append", choices=sorted(RELEASES), help="only these releases")
    ap.add_argument("--output", type=Path, default=OUT)
    args = ap.parse_args(argv)
    families = candidates()
    found, sources = {}, {}
    for release in args.release or sorted(RELEASES):
        command, include, clang, source = RELEASES[release]
        if not (include / "hip" / "hip_runtime.h").is_file() or not clang.is_dir():
            print(f"gen_same_names: ROCm {release}: no headers at {include} / {clang}", file=sys.stderr)
            return 2
        words = words_in(include, clang)
        names = {n: f for n, f in families.items() if n in words}
        found[release] = probe(release, names)
        sources[release] = source
        print(f"ROCm {release}: {len(names)} candidates, {len(found[release])} compile", file=sys.stderr)
    text = render(found, sources, families)
    if args.check:
        current = args.output.read_text() if args.output.is_file() else ""
        if current != text:
            print(f"gen_same_names: {args.output} differs from what the compilers say; rerun without --check",
                  file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
