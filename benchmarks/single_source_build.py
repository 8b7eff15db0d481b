#!/usr/bin/env python3
"""Does a real single-source project still build for AMD after `hipport convert`, and does its CUDA path build for
AMD through `hipport compat` alone? Measured on ggml (github.com/ggml-org/ggml), whose CUDA backend builds for
ROCm through its own compatibility header (`src/ggml-cuda/vendors/hip.h`, selected by `GGML_USE_HIP`).

The code is not in this repository: the tree is extracted from a git clone at a pinned commit (``--repo``, a git
directory such as a `fetch`ed mirror, and ``--commit``) into WORK (default /tmp/hipport-ss-build). Four steps,
each compiling the HIP build's units one at a time with the real compiler (``--hipcc``, default `rocm7-hipcc`:
ROCm 7.2.4), `-x hip --offload-arch=ARCH -fsyntax-only -std=c++17`:

  a  the tree as it is, with its own HIP path: `-DGGML_USE_HIP -DGGML_HIP_GRAPHS -DGGML_HIP_NO_VMM
     -DGGML_SCHED_MAX_COPIES=4` (what a default HIP build defines), `-Iinclude -Isrc -Isrc/ggml-cuda`;
  b  a copy converted by `hipport convert src include --rocm-version R`, the same units and flags
     (done: as many units as in a); a converted tree identical to the original, byte for byte, is not compiled
     again (its units are a's; --recompile compiles them anyway);
  c  `hipport audit src/ggml-cuda --report json` of the tree as it is, with the HIP build's switches in a
     `.hipport.toml` beside it; each finding (info included) is placed: in the compatibility layer
     (vendors/hip.h); on a line the AMD build never compiles (in no preprocessed output, `hipcc -E -dD`, the
     compiler's own answer, of the host pass and the device passes for the audit's targets, gfx90a, gfx942 and
     gfx1100, of each unit with findings and of --cover units including each header with findings: fewer units
     can only make more lines look dead); in a file no unit includes; or on a compiled line (done: none in the
     first two);
  d  a CUDA-only copy: vendors/hip.h, vendors/musa.h, src/ggml-hip and src/ggml-musa removed, the
     `GGML_USE_HIP`/`GGML_USE_MUSA` branches of src/ggml-cuda resolved as undefined (`unifdef -U`, then a
     condition it leaves, `!defined(GGML_USE_HIP) && CUDART_VERSION >= ...`, written with `0` for the test), so the
     tree is what it would be had it never built for AMD; `hipport compat src/ggml-cuda` writes the header and the
     forwarding headers, and the units are compiled as its Make glue does (`-I` the compat folder, `-include
     hipport_compat.h`, the CUDA build's defines: `-DGGML_CUDA_PEER_MAX_BATCH_SIZE=128
     -DGGML_SCHED_MAX_COPIES=4`): d1 with the header as written (--d1-limit: the first N units), d2
     with the user section of
     ``--user-section`` (default benchmarks/single_source_ggml_user.h) pasted between its markers and the header
     written again (which keeps it).

Units: `--units ordinary` (src/ggml-cuda/*.cu), `instances` (the template instances the HIP build compiles:
fattn-tile*, fattn-mma*, mmq*, mmf* and the four fattn-vec ones of a default build) or `all`; `--limit N` the
first N. Results: one line per step, each failing unit with its first error with -v, and WORK/results.json.

    python3 benchmarks/single_source_build.py --repo /work/.mirror/ggml-org+ggml/repo \\
        --commit d99724f2b141fed9e1a9f402213506c081433465
    python3 benchmarks/single_source_build.py ... --steps d --units all -v
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WORK = Path("/tmp/hipport-ss-build")
DEFAULT_USER = Path(__file__).with_name("single_source_ggml_user.h")
# What a default configuration defines (CMakeLists.txt's options, src/ggml-hip/ and src/ggml-cuda/CMakeLists.txt):
# GGML_HIP_GRAPHS and GGML_HIP_NO_VMM are ON, GGML_HIP_MMQ_MFMA is ON (so no GGML_HIP_NO_MMQ_MFMA); the CUDA build
# passes its peer batch size, and GGML_CUDA_GRAPHS is OFF outside llama.cpp.
HIP_DEFINES = ["-DGGML_USE_HIP", "-DGGML_HIP_GRAPHS", "-DGGML_HIP_NO_VMM", "-DGGML_SCHED_MAX_COPIES=4"]
CUDA_DEFINES = ["-DGGML_CUDA_PEER_MAX_BATCH_SIZE=128", "-DGGML_SCHED_MAX_COPIES=4"]
INCLUDES = ["-Iinclude", "-Isrc", "-Isrc/ggml-cuda"]
FA_VEC_DEFAULT = ["fattn-vec-instance-f16-f16.cu", "fattn-vec-instance-q4_0-q4_0.cu",
                  "fattn-vec-instance-q8_0-q8_0.cu", "fattn-vec-instance-bf16-bf16.cu"]
# The audit's default targets: a line none of their device passes (nor the host pass) compiles is dead on AMD.
LIVE_ARCHS = ("gfx90a", "gfx942", "gfx1100")
USER_BEGIN = "// hipport: user section begin"
USER_END = "// hipport: user section end"


def run(cmd, cwd=None, timeout=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def hipport(*args, cwd=None) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "hipport", *args], cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def extract(repo: Path, commit: str, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(repo), "archive", commit, "--", "src", "include"],
                             capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def units(tree: Path, which: str, limit: int | None) -> list[str]:
    cuda = tree / "src" / "ggml-cuda"
    out = sorted(p.relative_to(tree).as_posix() for p in cuda.glob("*.cu")) if which != "instances" else []
    if which in ("all", "instances"):
        inst = cuda / "template-instances"
        for pattern in ("fattn-tile*.cu", "fattn-mma*.cu", "mmq*.cu", "mmf*.cu"):
            out += sorted(p.relative_to(tree).as_posix() for p in inst.glob(pattern))
        out += [f"src/ggml-cuda/template-instances/{n}" for n in FA_VEC_DEFAULT if (inst / n).exists()]
    return out[:limit] if limit else out


def first_error(text: str) -> str:
    for line in text.splitlines():
        if ": error:" in line or "fatal error" in line:
            return line.strip()[:240]
    return (text.strip().splitlines() or [""])[-1][:240]


def compile_units(tree: Path, names: list[str], flags: list[str], args, label: str) -> dict:
    """Each unit alone, one compile at a time, at a lower priority: {unit: first error or ""}."""
    out = {}
    start = time.monotonic()
    for k, name in enumerate(names, 1):
        cmd = ["nice", "-n", "10", args.hipcc, "-x", "hip", f"--offload-arch={args.arch}", "-fsyntax-only",
               "-std=c++17", "-w", *flags, name]
        try:
            r = run(cmd, cwd=tree, timeout=args.timeout)
            out[name] = "" if r.returncode == 0 else first_error(r.stderr + r.stdout)
        except subprocess.TimeoutExpired:
            out[name] = f"timed out after {args.timeout} s"
        if args.verbose:
            print(f"  [{label} {k}/{len(names)}] {'ok' if not out[name] else 'FAIL'} {name}", file=sys.stderr)
    print(f"{label}: {sum(not e for e in out.values())}/{len(out)} units compile "
          f"({time.monotonic() - start:.0f} s)")
    if args.verbose:
        for name, err in out.items():
            if err:
                print(f"  {name}: {err}")
    return out


def step_b(orig: Path, work: Path, names, args) -> dict:
    conv = work / "converted"
    if conv.exists():
        shutil.rmtree(conv)
    shutil.copytree(orig, conv, symlinks=True)
    r = hipport("convert", "src", "include", "--rocm-version", args.release, "--no-cache", "-j", "1", cwd=conv)
    changed = hipport("convert", "src", "include", "--rocm-version", args.release, "--no-cache", "-j", "1",
                      "--check", "-q", cwd=conv)
    summary = [line for line in r.stderr.splitlines() if line.strip()][:3]
    print(f"b: `hipport convert src include` exit {r.returncode}; " + " / ".join(summary)[:300])
    diff = run(["diff", "-rq", str(orig), str(conv)])
    differing = [line for line in diff.stdout.splitlines() if line.strip()]
    print(f"b: files that differ from the tree as it is: {len(differing)}; a second run would change "
          f"{len(changed.stdout.split())} files")
    if not differing and not args.recompile:
        # The same bytes as the tree step a compiled: the same units compile (--recompile compiles them anyway).
        print(f"b: the converted tree is the tree as it is, byte for byte: its {len(names)} units are step a's")
        return {"exit": r.returncode, "differing": [], "units": "identical to a"}
    result = compile_units(conv, names, [*HIP_DEFINES, *INCLUDES], args, "b (after convert, GGML_USE_HIP)")
    return {"exit": r.returncode, "differing": differing, "units": result}


def live_lines(tree: Path, names, flags, args, wanted: set[str]) -> dict[str, set[int]]:
    """{file: lines that some unit's preprocessed output holds}, host and device passes (the compiler's answer to
    which lines the AMD build compiles). Units are preprocessed until each file of ``wanted`` has been seen in at
    least ``args.cover`` of them (every unit that is itself in ``wanted``): fewer units can only make more lines
    look dead, never hide one."""
    live: dict[str, set[int]] = {}
    seen: dict[str, int] = {}
    marker = re.compile(r'^# (\d+) "([^"]+)"')
    for name in names:
        own = os.path.normpath(os.path.join(tree, name))
        if own not in wanted and all(seen.get(w, 0) >= args.cover for w in wanted):
            continue
        in_unit: set[str] = set()
        # -dD keeps each #define in place, so a finding on one counts where the preprocessor read it.
        for arch, only in [(LIVE_ARCHS[0], "--offload-host-only"), *((a, "--offload-device-only") for a in LIVE_ARCHS)]:
            cmd = ["nice", "-n", "10", args.hipcc, "-x", "hip", f"--offload-arch={arch}", "-E", "-dD", "-std=c++17",
                   "-w", only, *flags, name]
            try:
                r = run(cmd, cwd=tree, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                continue
            path, line = None, 0
            for text in r.stdout.splitlines():
                m = marker.match(text)
                if m:
                    line, path = int(m.group(1)), os.path.normpath(os.path.join(tree, m.group(2)))
                    in_unit.add(path)
                    continue
                if path is not None:
                    if text.strip():
                        live.setdefault(path, set()).add(line)
                    line += 1
        for path in in_unit:
            seen[path] = seen.get(path, 0) + 1
    return live


_CONDITIONAL = re.compile(r"^\s*#\s*(?:if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")
_source_lines: dict[str, list[str]] = {}


def compiled(path: str, line: int, live: set[int]) -> bool:
    """Whether ``line`` of ``path`` is compiled: it is in the preprocessed output, or a line before it is with no
    conditional directive between them (the preprocessor writes a macro call spanning lines on its first line and
    leaves the others empty, as it leaves comments and blank lines; a branch it skips starts at a directive)."""
    if line in live:
        return True
    lines = _source_lines.get(path)
    if lines is None:
        lines = _source_lines[path] = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    for k in range(line, 0, -1):
        if k in live:
            return True
        if k <= len(lines) and _CONDITIONAL.match(lines[k - 1]):
            return False
    return False


def step_c(orig: Path, names, args) -> dict:
    settings = orig / ".hipport.toml"
    settings.write_text('defines = ["GGML_USE_HIP", "GGML_HIP_GRAPHS", "GGML_HIP_NO_VMM", "GGML_SCHED_MAX_COPIES=4"]\n'
                        'include-dirs = ["include", "src", "src/ggml-cuda"]\n')
    try:
        r = hipport("audit", "src/ggml-cuda", "--rocm-version", args.release, "--report", "json", "-o", "-",
                    "--no-cache", "-j", "1", cwd=orig)
    finally:
        settings.unlink()
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        print(f"c: the audit gave no JSON report (exit {r.returncode}): {r.stderr.strip()[:300]}")
        return {"exit": r.returncode}
    findings = []
    for f in report.get("files", []):
        for finding in f.get("findings", []):
            finding["line"] = finding["location"]["line"]
            findings.append((os.path.normpath(os.path.join(orig, f["path"])), finding))
    live = live_lines(orig, names, [*HIP_DEFINES, *INCLUDES], args, {p for p, _ in findings})
    compat = [x for x in findings if x[0].endswith("/vendors/hip.h")]
    dead, unseen, rest = [], [], []
    for path, finding in findings:
        if path.endswith("/vendors/hip.h"):
            continue
        if path not in live:
            unseen.append((path, finding))
        elif not compiled(path, finding["line"], live[path]):
            dead.append((path, finding))
        else:
            rest.append((path, finding))
    print(f"c: audit exit {r.returncode}, {len(findings)} findings (info included): {len(compat)} in the compatibility "
          f"layer (vendors/hip.h), {len(dead)} on lines the AMD build never compiles (hipcc -E -dD: host pass, device "
          f"passes for {', '.join(LIVE_ARCHS)}; of each "
          f"unit with findings and {args.cover} including each header with findings), {len(unseen)} in files no "
          f"unit includes, {len(rest)} on compiled lines")
    if args.verbose:
        for label, group in (("compat layer", compat), ("dead on AMD", dead), ("no unit", unseen)):
            for path, finding in group:
                print(f"  {label}: {os.path.relpath(path, orig)}:{finding['line']}: {finding['rule']}: "
                      f"{finding['message'][:160]}")
    by_rule: dict[str, int] = {}
    for _, finding in rest:
        key = f"{finding['rule']} ({finding['severity']})"
        by_rule[key] = by_rule.get(key, 0) + 1
    print("c: on compiled lines, by rule: " + ", ".join(f"{k} {v}" for k, v in sorted(by_rule.items())))
    return {"exit": r.returncode, "findings": len(findings), "compat_layer": len(compat), "dead": len(dead),
            "no_unit": len(unseen), "compiled": by_rule}


def cuda_only(orig: Path, work: Path) -> Path:
    tree = work / "cuda-only"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(orig, tree, symlinks=True)
    src = tree / "src"
    for gone in (src / "ggml-hip", src / "ggml-musa"):
        shutil.rmtree(gone, ignore_errors=True)
    for gone in (src / "ggml-cuda" / "vendors" / "hip.h", src / "ggml-cuda" / "vendors" / "musa.h"):
        gone.unlink(missing_ok=True)
    residual = re.compile(r"defined\s*\(\s*(?:GGML_USE_HIP|GGML_USE_MUSA)\s*\)")
    for path in sorted((src / "ggml-cuda").rglob("*")):
        if path.suffix not in (".cu", ".cuh", ".h") or not path.is_file():
            continue
        r = run(["unifdef", "-UGGML_USE_HIP", "-UGGML_USE_MUSA", "-o", str(path), str(path)])
        if r.returncode > 1:
            raise SystemExit(f"unifdef failed on {path}: {r.stderr.strip()}")
        lines = path.read_text(encoding="utf-8", errors="surrogateescape").split("\n")
        lines = [residual.sub("0", ln) if ln.lstrip().startswith("#") else ln for ln in lines]
        path.write_text("\n".join(lines), encoding="utf-8", errors="surrogateescape")
    left = run(["grep", "-rn", "GGML_USE_HIP\\|GGML_USE_MUSA\\|vendors/hip.h", str(src / "ggml-cuda")])
    if left.stdout.strip():
        raise SystemExit(f"the CUDA-only copy still names the HIP path:\n{left.stdout[:2000]}")
    return tree


def step_d(orig: Path, work: Path, names, args) -> dict:
    tree = cuda_only(orig, work)
    out = tree / "hipport-compat"
    r = hipport("compat", "src/ggml-cuda", "-o", "hipport-compat", "--rocm-version", args.release, "-j", "1",
                cwd=tree)
    print(f"d: `hipport compat src/ggml-cuda` exit {r.returncode}: " + " / ".join(
        line for line in r.stderr.splitlines()[:4])[:600])
    flags = [*CUDA_DEFINES, *INCLUDES, "-Ihipport-compat", "-include", "hipport-compat/hipport_compat.h"]
    d1 = compile_units(tree, names[:args.d1_limit] if args.d1_limit is not None else names, flags, args,
                       "d1 (CUDA-only + generated header)")
    header = out / "hipport_compat.h"
    text = header.read_text(encoding="utf-8")
    user = args.user_section.read_text(encoding="utf-8")
    begin = text.index("\n", text.index(USER_BEGIN)) + 1
    end = text.index(USER_END)
    header.write_text(text[:begin] + user + text[end:], encoding="utf-8")
    again = hipport("compat", "src/ggml-cuda", "-o", "hipport-compat", "--rocm-version", args.release, "-j", "1",
                    cwd=tree)
    kept = user in header.read_text(encoding="utf-8")
    check = hipport("compat", "src/ggml-cuda", "-o", "hipport-compat", "--rocm-version", args.release, "-j", "1",
                    "--check", "-q", cwd=tree)
    print(f"d: user section of {args.user_section.name} ({len(user.splitlines())} lines) pasted, header written "
          f"again (exit {again.returncode}): section {'kept' if kept else 'LOST'}; --check exit {check.returncode}")
    d2 = compile_units(tree, names, flags, args, "d2 (CUDA-only + generated header + user section)")
    return {"compat_exit": r.returncode, "d1": d1, "user_kept": kept, "check_exit": check.returncode, "d2": d2}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path, required=True, help="git directory of a ggml clone (a bare mirror is fine)")
    ap.add_argument("--commit", required=True, help="the pinned commit (40 hex digits)")
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK, help=f"work folder (default {DEFAULT_WORK})")
    ap.add_argument("--steps", default="abcd", help="which steps, e.g. `ad` (default abcd)")
    ap.add_argument("--units", choices=["ordinary", "instances", "all"], default="ordinary",
                    help="src/ggml-cuda/*.cu (default), the template instances the HIP build compiles, or both")
    ap.add_argument("--limit", type=int, help="only the first N units")
    ap.add_argument("--release", default="7.2", help="ROCm release for convert, audit and compat (default 7.2)")
    ap.add_argument("--hipcc", default="rocm7-hipcc", help="the compiler (default rocm7-hipcc: ROCm 7.2.4)")
    ap.add_argument("--arch", default="gfx942", help="--offload-arch (default gfx942)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per compile (default 900)")
    ap.add_argument("--user-section", type=Path, default=DEFAULT_USER,
                    help=f"lines for the header's user section in d2 (default {DEFAULT_USER.name})")
    ap.add_argument("--d1-limit", type=int, help="step d1 (the header without a user section): the first N units (0: none)")
    ap.add_argument("--cover", type=int, default=3,
                    help="step c: preprocess units until each header with findings was seen in N (default 3)")
    ap.add_argument("--recompile", action="store_true",
                    help="step b: compile the converted units even when the tree is unchanged")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        ap.error("--commit: 40 hex digits (a pinned commit)")
    for tool in (args.hipcc, "unifdef", "git"):
        if shutil.which(tool) is None:
            ap.error(f"`{tool}` is not on PATH")
    orig = args.work / "orig"
    extract(args.repo, args.commit, orig)
    names = units(orig, args.units, args.limit)
    print(f"ggml {args.commit[:12]}, {len(names)} units ({args.units}), {args.hipcc} --offload-arch={args.arch} "
          f"-fsyntax-only, ROCm {args.release} for hipport")
    results = {"commit": args.commit, "units": names, "release": args.release, "hipcc": args.hipcc,
               "arch": args.arch}
    if "a" in args.steps:
        results["a"] = compile_units(orig, names, [*HIP_DEFINES, *INCLUDES], args, "a (as it is, GGML_USE_HIP)")
    if "b" in args.steps:
        results["b"] = step_b(orig, args.work, names, args)
    if "c" in args.steps:
        results["c"] = step_c(orig, names, args)
    if "d" in args.steps:
        results["d"] = step_d(orig, args.work, names, args)
    (args.work / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
