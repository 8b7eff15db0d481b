#!/usr/bin/env python3
"""Behaviour on 64 and 32 lanes (issue 34): do the dev-corpus programs with warp-level code compute, once ported,
what their CUDA originals computed on an NVIDIA GPU?

For each HeCBench benchmark of ../shared/behaviour/cuda-reference.json whose CUDA original ran cleanly (24 of 31),
three variants are built for HIP-CPU (../shared/hip-cpu, AMD's HIP runtime for the CPU) and run:

* convert: `hipport convert --rocm-version 5.2 --launch-syntax hip` of `NAME-cuda` (the forms HIP-CPU has:
  mask-free warp functions, `hipLaunchKernelGGL`);
* suggest: the same with `--apply-suggestions` (the audit's patches of confidence `high`);
* hand: the authors' port, `NAME-hip`, as they wrote it but for its `<<<...>>>` launches, which HIP-CPU cannot
  compile: they are written as `hipLaunchKernelGGL` by hipport's launch pass alone, nothing else.

Each is compiled with g++ from the compile lines its Makefile gives (`make -n`), once with 64-lane wavefronts
(CDNA, the column that counts) and once with `-DHIP_CPU_WAVEFRONT_SIZE=32` (RDNA's wave32: code hand-written for 64
lanes fails there), and run with the arguments of its reference. The output is compared with what the CUDA program
printed: timing lines and lines that describe the device are left out, numbers compare within a relative tolerance
(1e-3 by default; the reduction order of 64 lanes is not that of 32), the rest of each line exactly; for a program
that seeds its inputs from the clock, only the verdict lines. A program whose reference prints no result (timing
lines only) is run but reported as `no check`.

The GPU-sized arguments of the shared reference take hours on the emulator for most programs. SMALL gives smaller
ones; their CUDA output, recorded on an NVIDIA H200 with `--record-cuda`, is in benchmarks/behaviour_cuda.json, and
a program uses them only where that file has them.

Verdicts per variant and width: `same`, `differs`, `does not build`, `emulator limit` (a build that fails on what
HIP-CPU lacks, per its README: cooperative groups, the `*_sync` warp forms, `__syncwarp`, bf16, matrix cores,
libraries...; a run-time limit named in RUN_LIMITS or HANGS; a program g++ cannot compile, TOO_BIG), `too slow` (past --timeout), `no check`.

    python3 benchmarks/behaviour.py                      # every program, one at a time
    python3 benchmarks/behaviour.py --only gc --only score -v
    python3 benchmarks/behaviour.py -j 2 --json out.json
    python3 benchmarks/behaviour.py --record-cuda out.json --corpus DIR   # on a machine with nvcc and a GPU

Binaries, build errors and run outputs are cached under --cache by the hash of the sources, the compile lines, the
width and HIP-CPU's headers, so a rerun converts again (seconds) but compiles and runs only what changed.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's hipport (the launch pass the hand ports go through), not another
SHARED = Path(os.environ.get("HIPPORT_SHARED", ROOT.parent / "shared"))  # a checkout elsewhere: point it here
CORPUS = SHARED / "corpus" / "hecbench" / "src"
REFERENCE = SHARED / "behaviour" / "cuda-reference.json"
SMALL_REFERENCE = ROOT / "benchmarks" / "behaviour_cuda.json"
HIP_CPU = Path(os.environ.get("HIPPORT_HIP_CPU", SHARED / "hip-cpu"))
PRELUDE = ROOT / "benchmarks" / "behaviour_prelude.h"  # HIP's intrinsics HIP-CPU lacks (`__fdividef`, `__syncwarp`...)
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hipport-behaviour"

VARIANTS = ("convert", "suggest", "hand")
WIDTHS = (64, 32)
VERDICTS = ("same", "differs", "does not build", "emulator limit", "too slow", "no check")

# Smaller arguments than the shared reference's (which are sized for a GPU), each run on an H200 with
# --record-cuda. A program not listed here, or listed but without a recorded output, runs with the shared ones.
SMALL = {
    "attention-paged": ["2", "4", "64", "256", "32", "1"],
    "bh": ["2000", "2"],
    "bitpermute": ["1"],
    "bscan": ["1"],
    "dpid": ["64", "48", "0.5", "1"],
    "floydwarshall2": ["graph.egr", "1"],
    "gc": ["graph.egr", "1"],
    "gemv": ["-s", "2048", "-i", "1", "-x", "128", "-y", "2"],  # int4 wants 16 values a thread (size / x)
    "logprob": ["64", "2", "1000", "1"],
    "marchingCubes": ["1"],
    "metropolis": ["-l", "32", "3", "-t", "4.7", "0.1", "-a", "2", "2", "20", "2", "-h", "1.0", "-z", "7919"],
    "mxfp4": ["1048576", "1"],
    "nbnxm": ["1"],
    "rmsnorm": ["2", "2048", "1"],
    "scatterAdd": ["100000", "32", "8", "1"],
    "score": ["1"],
    "shuffle": ["1", "1"],
    "simpleSpmv": ["65536", "1024", "1"],
    "softmax-fused": ["2", "4", "64", "256", "1"],
    "wmma": ["0", "16", "16", "64", "1", "1"],
}

# Lines that say what the device or the run is, not what the program computed.
_TIMING = re.compile(r"time|elapsed|throughput|bandwidth|GB/s|\(us\)|\(ms\)|\(s\)|\bsecs?\b|seconds|[GT]flops",
                     re.I)
_DEVICE = re.compile(r"compute units|resident threads|work-groups|GPU memory usage|^\d+(, [-\d.e+]+){10,}$", re.I)
_VERDICT = re.compile(r"pass|fail|match|correct|error|differ|wrong|invalid", re.I)
# Programs whose CUDA output cannot judge a port: run, but reported as `no check`, with the reason.
NO_CHECK = {
    "bscan": "the CUDA program fails its own check on the GPU (`__ballot_sync` with the mask of the lanes below the "
             "caller, which excludes the caller: undefined in CUDA); a right port prints PASS where it printed FAIL",
}
CLOCK_SEEDED = {"segsort"}  # draws its inputs from a clock-seeded generator: verdict lines only (see the README)
TOLERANCE: dict[str, float] = {}

# Emulator limits met at build time: the first error of a build that fails names what HIP-CPU lacks.
BUILD_LIMITS = [
    (re.compile(r"cooperative_groups|thread_block_tile|tiled_partition|this_thread_block|\bcg::"),
     "cooperative groups"),
    (re.compile(r"__(shfl|shfl_up|shfl_down|shfl_xor|ballot|any|all|match_any|match_all|reduce_\w+)_sync\b"
                r"|__activemask|__syncwarp|__lanemask"), "warp `*_sync` forms, `__activemask`, `__syncwarp`"),
    (re.compile(r"bf16|bfloat16|BFloat16", re.I), "bf16 types"),
    (re.compile(r"wmma|mma\.h|fragment<"), "matrix cores (wmma)"),
    (re.compile(r"hipcub|rocprim|\bcub\b|hipblas|rocblas|hiprand|curand"), "a library HIP-CPU does not provide"),
    (re.compile(r"__builtin_amdgcn|\basm\b|__asm__|__hip_atomic|__builtin_nontemporal|__nanosleep|clock64"),
     "AMD GPU built-ins, assembly or clocks"),
    (re.compile(r"<<<|>>>"), "`<<<...>>>` launches"),
    (re.compile(r"__half|half2|__float2half|__hadd|__hmul|hip_fp16"), "half-precision functions HIP-CPU lacks"),
]
# Emulator limits met at run time, by program, found by reading the code (HIP-CPU's README: no divergence within a
# wavefront at warp operations, no independent forward progress, no memory ordering between threads).
# Programs that wait in a loop for other threads of their block with no barrier or warp operation in it: HIP-CPU
# switches threads only there, so such a run never ends (found by reading the code; its README's "no independent
# forward progress"). A run of theirs that passes the time limit is an emulator limit, not `too slow`.
HANGS = {
    "gc": "runSmall's `do { ... } while (again)` waits for colours other threads of the block write (`volatile`), "
          "with no barrier or warp operation in the loop",
}
# Programs g++ cannot compile for HIP-CPU on a development machine: not built, an emulator limit.
TOO_BIG = {
    "segsort": "g++ 12 compiling the hand port's main.cu for HIP-CPU (hundreds of unrolled sort kernels, each a "
               "HIP-CPU coroutine) grew past 19 GB of memory in 38 minutes without finishing (2026-12-03)",
}
RUN_LIMITS = {
    # Checked: with a `__syncthreads()` added before FWrem_64's diagonal branch the hand port's results match.
    "floydwarshall2": "a race in the program: FWrem_64 rewrites the shared `s_kj` after its last reads with no "
                      "`__syncthreads()` between; a GPU's warps run close enough to hide it, HIP-CPU runs each "
                      "thread alone up to its next barrier, so 19,607 distances differ in every variant",
}


@dataclass
class Case:
    name: str
    args: list[str]
    expected: str
    source: str            # "shared" (../shared/behaviour) or "small" (benchmarks/behaviour_cuda.json)
    inputs: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    verdict: str
    detail: str = ""
    seconds: float | None = None


# --- references -------------------------------------------------------------------------------------------------

def cases(reference: Path = REFERENCE, small: Path = SMALL_REFERENCE) -> list[Case]:
    """The programs whose CUDA original ran cleanly, with the smaller arguments where their output is recorded."""
    shared = json.loads(reference.read_text())["benchmarks"]
    recorded = json.loads(small.read_text())["benchmarks"] if small.is_file() else {}
    out = []
    for name, ref in sorted(shared.items()):
        if not ref.get("built") or ref.get("exit_status") != 0:
            continue
        inputs = [str(reference.parent / p) for p in ref.get("inputs", [])]
        mine = recorded.get(name)
        if mine and mine.get("exit_status") == 0 and mine.get("args") == SMALL.get(name):
            out.append(Case(name, list(mine["args"]), mine["stdout"], "small", inputs))
        else:
            out.append(Case(name, list(ref["args"]), ref["stdout"], "shared", inputs))
    return out


# --- comparing outputs ------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b", re.I)


def result_lines(text: str, name: str = "") -> list[str]:
    """The lines that say what the program computed."""
    lines = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line or _TIMING.search(line) or _DEVICE.search(line):
            continue
        if name in CLOCK_SEEDED and not _VERDICT.search(line):
            continue
        lines.append(line)
    return lines


def _same_line(a: str, b: str, tol: float) -> bool:
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)):
        if x == y:
            continue
        fx, fy = float(x), float(y)
        if math.isnan(fx) or math.isnan(fy) or not math.isclose(fx, fy, rel_tol=tol, abs_tol=1e-9):
            return False
    return True


def compare(expected: str, actual: str, name: str = "") -> str:
    """"" when ``actual`` says what ``expected`` says, else the first difference, in one line."""
    want, got = result_lines(expected, name), result_lines(actual, name)
    tol = TOLERANCE.get(name, 1e-3)
    for i, (a, b) in enumerate(zip(want, got)):
        if not _same_line(a, b, tol):
            return f"line {i + 1}: expected `{a[:120]}`, got `{b[:120]}`"
    if len(want) != len(got):
        extra = (got[len(want)] if len(got) > len(want) else want[len(got)])[:120]
        return f"{len(got)} result lines, expected {len(want)} (first unmatched: `{extra}`)"
    return ""


def prints_a_result(case: Case) -> bool:
    return bool(result_lines(case.expected, case.name))


# --- sources ----------------------------------------------------------------------------------------------------

def _tree(cache: Path, variant: str, corpus: Path) -> Path:
    """cache/trees/VARIANT/src: a link to every folder of the corpus, so `-I../mis-cuda` resolves as there."""
    tree = cache / "trees" / variant / "src"
    if not tree.is_dir():
        tree.mkdir(parents=True)
        for entry in corpus.iterdir():
            (tree / entry.name).symlink_to(entry)
    return tree


def _writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


def _launch_syntax_only(folder: Path) -> None:
    """The hand port's `<<<...>>>` as `hipLaunchKernelGGL`, by hipport's launch pass and nothing else."""
    from hipport.convert.context import ConversionContext, ConvertOptions
    from hipport.convert.launch import rewrite_launches
    from hipport.model import apply_edits
    from hipport.rules import load_rules

    rules = load_rules()
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.suffix not in (".cu", ".cuh", ".h", ".hpp", ".cpp"):
            continue
        src = path.read_bytes()
        if b"<<<" not in src:
            continue
        ctx = ConversionContext(path.name, src, rules, ConvertOptions(launch_syntax="hip"))
        rewrite_launches(ctx)
        path.write_bytes(apply_edits(src, ctx.edits))


def prepare(name: str, variant: str, cache: Path, corpus: Path = CORPUS) -> tuple[Path, str]:
    """The variant's program folder in its tree, and what went wrong ("" when nothing did)."""
    tree = _tree(cache, variant, corpus)
    if variant == "hand":
        dest = tree / f"{name}-hip"
        if dest.is_symlink() or dest.exists():
            dest.unlink() if dest.is_symlink() else shutil.rmtree(dest)
        shutil.copytree(corpus / f"{name}-hip", dest, symlinks=True)
        _writable(dest)
        _launch_syntax_only(dest)
        return dest, ""
    dest = tree / f"{name}-cuda"
    if dest.is_symlink():
        dest.unlink()
    elif dest.exists():
        shutil.rmtree(dest)
    cmd = [sys.executable, "-m", "hipport", "convert", "--no-cache", "--quiet", "--rocm-version", "5.2",
           "--launch-syntax", "hip", "-o", str(dest), str(corpus / f"{name}-cuda")]
    if variant == "suggest":
        cmd.insert(4, "--apply-suggestions")
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0 or not dest.is_dir():
        return dest, f"hipport convert exited {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}"
    _writable(dest)
    return dest, ""


# --- building ---------------------------------------------------------------------------------------------------

_MARK = "__HIPCPU_CC__"
_SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")


def make_lines(folder: Path) -> list[list[str]]:
    """The compile and link lines the folder's Makefile runs, with the compiler as _MARK."""
    r = subprocess.run(["make", "-n", "-B", f"CC={_MARK}", f"NVCC={_MARK}", f"HIPCC={_MARK}", "ARCH=sm_90"],
                       cwd=folder, capture_output=True, text=True)
    lines = []
    for line in r.stdout.splitlines():
        words = shlex.split(line)
        if words and words[0] == _MARK:
            lines.append(words[1:])
    return lines


def gxx_lines(lines: list[list[str]], build: Path, width: int) -> list[list[str]]:
    """The Makefile's lines as g++ lines for HIP-CPU: include and define flags kept, GPU flags dropped, objects in
    ``build`` (one folder per width)."""
    out = []
    for words in lines:
        flags, inputs, output, compile_only = [], [], None, False
        it = iter(words)
        for w in it:
            if w == "-Xcompiler":
                flags += [f for f in next(it, "").split(",") if f in ("-fopenmp",)]
            elif w in ("-I", "-D", "-U", "-include", "-isystem"):
                flags += [w, next(it, "")]
            elif w.startswith(("-I", "-D", "-U")) or w in ("-fopenmp",) or w.startswith("-l"):
                flags.append(w)
            elif w == "-c":
                compile_only = True
            elif w == "-o":
                output = next(it, "")
            elif w in ("-x", "-arch", "-gencode", "--offload-arch", "-ccbin"):
                next(it, "")
            elif w.startswith("-"):
                continue  # -arch=, -O3, -Wall, --expt-relaxed-constexpr, -std=: g++ gets its own
            elif w.endswith(_SOURCE_SUFFIXES) or w.endswith(".o"):
                inputs.append(w)
        base = ["g++", "-std=c++17", "-O2", "-w", "-I", str(HIP_CPU / "include"), f"-DHIP_CPU_WAVEFRONT_SIZE={width}"]
        if compile_only:
            srcs = [x for s in inputs for x in (["-include", str(PRELUDE), "-x", "c++", s, "-x", "none"]
                                                if s.endswith(".cu") else [s])]
            obj = str(build / Path(output or Path(inputs[0]).with_suffix(".o").name).name)
            out.append(base + flags + ["-c", *srcs, "-o", obj])
        else:
            objs = [str(build / Path(i).name) if i.endswith(".o") else i for i in inputs]
            srcs = [x for s in objs for x in (["-include", str(PRELUDE), "-x", "c++", s, "-x", "none"]
                                              if s.endswith(".cu") else [s])]
            out.append(base + flags + [*srcs, "-o", str(build / "program"), "-ltbb", "-lpthread"])
    return out


def _hip_cpu_fingerprint() -> str:
    h = hashlib.sha256(PRELUDE.read_bytes())
    for path in sorted([*(HIP_CPU / "include").rglob("*"), *(HIP_CPU / "src").rglob("*")]):
        if path.is_file():
            h.update(str(path.relative_to(HIP_CPU)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def build_key(folder: Path, lines: list[list[str]], width: int, fingerprint: str) -> str:
    h = hashlib.sha256(f"{width}\0{fingerprint}\0{json.dumps(lines)}".encode())
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.name.endswith(".o"):
            h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:24]


# Where HIP's own headers are, to tell a name HIP has and HIP-CPU lacks from a porting error.
HIP_HEADERS = [p for p in (Path("/opt/rocm7-root/usr/include/hip"), Path("/opt/rocm64-root/usr/include/hip"),
                           Path("/usr/include/hip"), SHARED / "rocm-6.2.2" / "include" / "hip") if p.is_dir()]
_UNDECLARED = re.compile(r"(?:there are no arguments to |no matching function for call to )[‘'`](\w+)"
                         r"|[‘'`](\w+)[’'`] (?:was not declared|is not a member of [‘'`](?:hip|std)"
                         r"|has not been declared|does not name a type)|no member named [‘'`](\w+)[’'`]")
_NO_HEADER = re.compile(r"([\w/.]+\.h\w*): No such file")
_known: dict[str, bool] = {}


def _in_headers(word: str, roots: list[Path]) -> bool:
    key = f"{word}\0{roots}"
    if key not in _known:
        _known[key] = any(subprocess.run(["grep", "-rqw", "--include=*.h", "--include=*.hpp", word, str(r)])
                          .returncode == 0 for r in roots)
    return _known[key]


def _hip_lacks(first: str) -> str:
    """What HIP has and HIP-CPU lacks, named by a build's first error, or ""."""
    m = _UNDECLARED.search(first)
    if m:
        word = next(g for g in m.groups() if g)
        if _in_headers(word, HIP_HEADERS) and not _in_headers(word, [HIP_CPU / "include", HIP_CPU / "src"]):
            return f"`{word}` (HIP declares it, HIP-CPU does not)"
    m = _NO_HEADER.search(first)
    if m and any((root.parent / m.group(1)).is_file() for root in HIP_HEADERS):
        return f"`<{m.group(1)}>` (HIP has it, HIP-CPU does not)"
    where = first.split(": error")[0]
    # The cache is shared by checkouts that reach HIP-CPU by other paths (a worktree's ../shared, a symlink).
    if any(p in where for p in (str(HIP_CPU), str(HIP_CPU.resolve()), "/hip-cpu/include/", "/hip-cpu/src/")):
        return "HIP-CPU's own headers reject the code"
    if "hip::detail::" in first:
        return "HIP-CPU's own types (a vector's `.x` is an accessor object, not a `float`)"
    return ""


_UNDEFINED = re.compile(r"undefined reference to [`‘'](\w+)")


def _extern_shared(log: str, folder: Path | None) -> str:
    """The name of the first array the link misses that the sources declare `extern __shared__`, or ""."""
    if folder is None:
        return ""
    texts = "\n".join(p.read_text(errors="replace") for p in folder.rglob("*")
                      if p.is_file() and p.suffix in (".cu", ".cuh", ".h", ".hpp"))
    for name in dict.fromkeys(_UNDEFINED.findall(log)):
        if re.search(r"extern\s+__shared__[^;]*\b" + re.escape(name) + r"\s*\[", texts):
            return name
    return ""


def classify_build_error(log: str, folder: Path | None = None) -> tuple[str, str]:
    """(verdict, detail) of a failed build, from its first error (``folder``: the sources, for a link error)."""
    shared = _extern_shared(log, folder)
    if shared:
        return "emulator limit", f"dynamic shared memory declared `extern __shared__` (`{shared}`): HIP-CPU has " \
                                 f"`HIP_DYNAMIC_SHARED` only"
    first = next((ln for ln in log.splitlines() if "error" in ln), log.strip().splitlines()[-1] if log.strip() else "")
    for pattern, what in BUILD_LIMITS:
        if pattern.search(first):
            return "emulator limit", f"{what}: {first.strip()[:200]}"
    lacks = _hip_lacks(first)
    if lacks:
        return "emulator limit", f"{lacks}: {first.strip()[:200]}"
    return "does not build", first.strip()[:240]


def build(name: str, variant: str, folder: Path, width: int, cache: Path, fingerprint: str) -> tuple[Path | None, str]:
    """The cached binary of the folder for ``width``, or (None, the build's error log)."""
    lines = make_lines(folder)
    if not lines:
        return None, "error: `make -n` gave no compile lines"
    key = build_key(folder, lines, width, fingerprint)
    bins = cache / "bin"
    bins.mkdir(parents=True, exist_ok=True)
    # Named by content, not variant: where the patches change nothing, `suggest` runs `convert`'s binary.
    exe, err = bins / f"{name}-w{width}-{key}", bins / f"{name}-w{width}-{key}.err"
    if exe.is_file():
        return exe, ""
    if err.is_file():
        return None, err.read_text()
    work = folder / f".build-w{width}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    for cmd in gxx_lines(lines, work, width):
        r = subprocess.run(["nice", "-n", "10", *cmd], cwd=folder, capture_output=True, text=True)
        if r.returncode != 0:
            err.write_text(r.stderr[-20000:] or r.stdout[-2000:])
            return None, err.read_text()
    os.replace(work / "program", exe)
    shutil.rmtree(work, ignore_errors=True)
    return exe, ""


# --- running ----------------------------------------------------------------------------------------------------

def _limit_cpu(seconds: float):
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (int(seconds), int(seconds) + 2))
    return limit


def run(exe: Path, case: Case, folder: Path, timeout: float, cache: Path) -> dict:
    """stdout, exit status and seconds of one run in ``folder`` (inputs copied in), cached. The limit is on CPU
    time, so that other work on the machine does not make a program too slow (and on wall time, at four times
    that); a run that passed it is cached as such and run again only with a longer limit."""
    key = hashlib.sha256(f"{exe.name}\0{json.dumps(case.args)}".encode()).hexdigest()[:24]
    store = cache / "runs" / f"{case.name}-{key}.json"
    if store.is_file():
        done = json.loads(store.read_text())
        if not done["timed_out"] or done["timeout"] >= timeout:
            return done
    for inp in case.inputs:
        shutil.copy(inp, folder / Path(inp).name)
    t0, before = time.time(), os.times()
    proc = subprocess.Popen([str(exe), *case.args], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace", start_new_session=True, preexec_fn=_limit_cpu(timeout))
    try:
        out, err = proc.communicate(timeout=4 * timeout + 60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    after = os.times()
    cpu = after.children_user + after.children_system - before.children_user - before.children_system
    timed_out = proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL)
    done = {"stdout": out, "stderr": err[-2000:], "status": proc.returncode, "timed_out": timed_out,
            "seconds": round(time.time() - t0, 1), "cpu_seconds": round(cpu, 1), "timeout": timeout}
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(done))
    return done


def judge(case: Case, done: dict) -> Outcome:
    """The verdict of one run; its seconds are CPU-seconds."""
    seconds = done.get("cpu_seconds", done["seconds"])
    done = {**done, "seconds": seconds}
    if done["timed_out"] and case.name in HANGS:
        return Outcome("emulator limit", f"ran past {done['timeout']:g} CPU-seconds: {HANGS[case.name]}",
                       done["seconds"])
    if done["timed_out"]:
        return Outcome("too slow", f"ran past {done['timeout']:g} CPU-seconds", done["seconds"])
    if case.name in RUN_LIMITS:
        diff = compare(case.expected, done["stdout"], case.name) if done["status"] == 0 else \
            f"exit status {done['status']}"
        return Outcome("emulator limit", f"{RUN_LIMITS[case.name]} ({diff or 'same output'})", done["seconds"])
    if done["status"] != 0:
        tail = (done["stderr"].strip().splitlines() or [""])[-1][:160]
        return Outcome("differs", f"exit status {done['status']} (CUDA: 0) {tail}".strip(), done["seconds"])
    if case.name in NO_CHECK:
        return Outcome("no check", NO_CHECK[case.name], done["seconds"])
    diff = compare(case.expected, done["stdout"], case.name)
    if diff:
        return Outcome("differs", diff, done["seconds"])
    return Outcome("same" if prints_a_result(case) else "no check", "", done["seconds"])


def measure(case: Case, cache: Path, timeout: float, widths=WIDTHS, variants=VARIANTS, corpus: Path = CORPUS,
            fingerprint: str = "") -> dict[str, dict[int, Outcome]]:
    """Every variant of one program at every width. The hand port runs first: when a run of it passes the time
    limit, the program is too slow for the emulator and its later runs are not made (they say so). A port that
    passes the limit where an earlier run of the same program took less than a quarter of it loops or hangs: it
    `differs`."""
    fingerprint = fingerprint or _hip_cpu_fingerprint()
    results: dict[str, dict[int, Outcome]] = {}
    slow, quick = "", None  # the run that passed the limit; (seconds, which) of the first that did not
    for variant in sorted(variants, key=lambda v: v != "hand"):
        results[variant] = {}
        folder, problem = prepare(case.name, variant, cache, corpus)
        for width in widths:
            if problem:
                results[variant][width] = Outcome("does not build", problem)
                continue
            first = results[variant].get(widths[0])
            if first and first.verdict in ("does not build", "emulator limit") and width != widths[0]:
                # Only HIP-CPU's `warpSize` differs between the widths: the same error, without a second build.
                results[variant][width] = Outcome(first.verdict, f"as at {widths[0]} lanes: {first.detail}")
                continue
            if case.name in TOO_BIG:
                results[variant][width] = Outcome("emulator limit", f"not built: {TOO_BIG[case.name]}")
                continue
            if slow:
                results[variant][width] = Outcome("emulator limit" if case.name in HANGS else "too slow",
                                                  f"not run: {slow} ran past {timeout:g} CPU-seconds")
                continue
            exe, log = build(case.name, variant, folder, width, cache, fingerprint)
            if exe is None:
                results[variant][width] = Outcome(*classify_build_error(log, folder))
                continue
            done = run(exe, case, folder, timeout, cache)
            outcome = judge(case, done)
            if done["timed_out"] and case.name in HANGS:
                slow = f"{variant} at {width} lanes"
            elif outcome.verdict == "too slow" and quick and quick[0] < timeout / 4:
                outcome = Outcome("differs", f"ran past {timeout:g} CPU-seconds, where {quick[1]} took "
                                             f"{quick[0]:g}", outcome.seconds)
            elif outcome.verdict == "too slow":
                slow = f"{variant} at {width} lanes"
            elif quick is None and outcome.seconds is not None:
                quick = (outcome.seconds, f"{variant} at {width} lanes")
            results[variant][width] = outcome
    return {v: results[v] for v in variants}


# --- recording the CUDA references ------------------------------------------------------------------------------

def record_cuda(out: Path, corpus: Path, names: list[str], timeout: float) -> int:
    """Build each NAME-cuda with its Makefile (nvcc, sm_90) and run it with SMALL's arguments; write the outputs."""
    import platform

    inputs = REFERENCE.parent if REFERENCE.is_file() else corpus.parent / "behaviour"
    smi = shutil.which("nvidia-smi")
    gpu = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip() if smi else "no GPU found"
    shared = json.loads((inputs / "cuda-reference.json").read_text())["benchmarks"]
    result = {"about": f"stdout and exit status of the CUDA originals of HeCBench NAME-cuda run with smaller "
                       f"arguments than ../shared/behaviour's, built with their Makefile (ARCH=sm_90), on {gpu} "
                       f"(32-lane warps), {time.strftime('%Y-%m-%d')}, host {platform.node()}; written by "
                       f"benchmarks/behaviour.py --record-cuda", "benchmarks": {}}

    def one(name: str) -> tuple[str, dict]:
        folder = corpus / f"{name}-cuda"
        b = subprocess.run(["true"] if (folder / "main").is_file() else ["make", "-j", "4", "ARCH=sm_90"],
                           cwd=folder, capture_output=True, text=True)  # built beforehand where nvcc is, or here
        if b.returncode != 0:
            return name, {"args": SMALL[name], "built": False, "exit_status": None, "stdout": b.stderr[-2000:]}
        for inp in shared[name].get("inputs", []):
            shutil.copy(inputs / inp, folder / Path(inp).name)
        try:
            r = subprocess.run(["./main", *SMALL[name]], cwd=folder, capture_output=True, text=True,
                               errors="replace", timeout=timeout)
            return name, {"args": SMALL[name], "built": True, "exit_status": r.returncode, "stdout": r.stdout,
                          "stderr": r.stderr[-2000:]}
        except subprocess.TimeoutExpired:
            return name, {"args": SMALL[name], "built": True, "exit_status": None, "stdout": "timeout"}

    with cf.ThreadPoolExecutor(max_workers=8) as pool:
        for name, entry in pool.map(one, [n for n in names if n in SMALL]):
            result["benchmarks"][name] = entry
            print(f"{name}: exit {entry['exit_status']}", flush=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


# --- the command ------------------------------------------------------------------------------------------------

def _table(rows: list[tuple[Case, dict]], widths) -> str:
    head = ["program", "args"] + [f"{v} {w}" for v in VARIANTS for w in widths]
    short = {"same": "same", "differs": "DIFFERS", "does not build": "no build", "emulator limit": "emu limit",
             "too slow": "too slow", "no check": "no check"}
    body = [[c.name, c.source] + [short[res[v][w].verdict] for v in VARIANTS for w in widths] for c, res in rows]
    cols = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(x.ljust(n) for x, n in zip(r, cols)).rstrip() for r in [head, *body])


def totals(rows: list[tuple[Case, dict]], widths) -> dict[str, dict[int, dict[str, int]]]:
    out = {v: {w: {k: 0 for k in VERDICTS} for w in widths} for v in VARIANTS}
    for _, res in rows:
        for v in VARIANTS:
            for w in widths:
                out[v][w][res[v][w].verdict] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Verdicts: " + ", ".join(VERDICTS) + ".")
    p.add_argument("--only", action="append", metavar="NAME", help="this program only (repeatable)")
    p.add_argument("-j", type=int, default=1, metavar="N", help="programs built and run at a time (default 1)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write every verdict, with its detail, to PATH")
    p.add_argument("--timeout", type=float, default=300, metavar="S",
                   help="CPU-seconds one run may take before it is `too slow` (default 300; wall time: 4 times "
                        "that)")
    p.add_argument("--width", type=int, action="append", choices=WIDTHS,
                   help="only this wavefront width (repeatable; default 64 and 32)")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"binaries and runs (default {DEFAULT_CACHE})")
    p.add_argument("--corpus", type=Path, default=CORPUS, help=f"HeCBench's src/ (default {CORPUS})")
    p.add_argument("-v", "--verbose", action="store_true", help="print the detail of every verdict but `same`")
    p.add_argument("--record-cuda", type=Path, metavar="PATH",
                   help="instead: build the CUDA originals with nvcc and record their output with SMALL's "
                        "arguments into PATH (on a machine with an NVIDIA GPU)")
    a = p.parse_args(argv)
    if a.record_cuda:
        return record_cuda(a.record_cuda, a.corpus, a.only or sorted(SMALL), a.timeout)
    if not (HIP_CPU / "include" / "hip" / "hip_runtime.h").is_file() or not a.corpus.is_dir() or \
            not REFERENCE.is_file():
        print(f"behaviour: needs ../shared/hip-cpu, {a.corpus} and {REFERENCE}", file=sys.stderr)
        return 2
    all_cases = cases()
    known = {c.name for c in all_cases}
    unknown = sorted(set(a.only or ()) - known)
    if unknown:
        print(f"behaviour: no usable reference for `{'`, `'.join(unknown)}`", file=sys.stderr)
        return 2
    chosen = [c for c in all_cases if not a.only or c.name in a.only]
    widths = tuple(sorted(set(a.width or WIDTHS), reverse=True))
    a.cache.mkdir(parents=True, exist_ok=True)
    fingerprint = _hip_cpu_fingerprint()
    rows: dict[str, tuple[Case, dict]] = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, a.j)) as pool:
        jobs = {pool.submit(measure, c, a.cache, a.timeout, widths, VARIANTS, a.corpus, fingerprint): c
                for c in chosen}
        for job in cf.as_completed(jobs):
            case = jobs[job]
            rows[case.name] = (case, job.result())
            cells = ", ".join(f"{v} {w}: {o.verdict}" for v, per in rows[case.name][1].items() for w, o in per.items())
            print(f"[{len(rows)}/{len(chosen)}] {case.name}: {cells}", file=sys.stderr, flush=True)
    ordered = [rows[c.name] for c in chosen]
    print(_table(ordered, widths))
    tot = totals(ordered, widths)
    print()
    for v in VARIANTS:
        for w in widths:
            print(f"{v:8} {w} lanes: " + ", ".join(f"{k} {n}" for k, n in tot[v][w].items()))
    if a.verbose:
        print()
        for case, res in ordered:
            for v in VARIANTS:
                for w in widths:
                    o = res[v][w]
                    if o.verdict != "same":
                        print(f"{case.name} {v} {w}: {o.verdict}: {o.detail}")
    if a.json:
        a.json.write_text(json.dumps({
            "totals": tot,
            "programs": {c.name: {"args": c.args, "reference": c.source,
                                  "variants": {v: {str(w): vars(o) for w, o in per.items()} for v, per in res.items()}}
                         for c, res in ordered}}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
