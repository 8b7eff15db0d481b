"""`hipport convert --verify`: the converted tree compiled with hipcc, failures named with their first errors and
known causes. The real toolchain where installed (need(): skipped locally, failing under CI=true), and fake
`hipcc` scripts on PATH for what a test machine cannot show (no hipcc, an NVIDIA-platform hipcc)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc import require_hipcc

from hipport.convert.verify import (
    TreeFile,
    explain,
    included_files,
    is_unit,
    load_causes,
    parse_errors,
)
from hipport.rules import RuleError

ROOT = Path(__file__).resolve().parents[1]

GOOD = b"""#include <cuda_runtime.h>
#include "util.cuh"
__global__ void k(float *p) { p[0] = twice(1.f); }
int main() { float *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); cudaDeviceSynchronize(); return 0; }
"""
UTIL = b"#pragma once\n__device__ inline float twice(float x) { return 2 * x; }\n"
BAD = b"""#include <cuda_runtime.h>
__global__ void r(float *p) {
  float v = p[threadIdx.x];
  v += __shfl_down_sync(0xffffffff, v, 1, 32);
  p[0] = v;
}
"""


def hipport(*args, env=None, cwd=None):
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True,
                          env={**base, **(env or {})}, cwd=cwd)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "src" / "good.cu").write_bytes(GOOD)
    (root / "include" / "util.cuh").write_bytes(UTIL)
    (root / "src" / "bad.cu").write_bytes(BAD)
    return root


# -- the real toolchain ----------------------------------------------------------------------------------------

def test_real_hipcc_names_the_failing_unit_its_first_error_and_cause(tree):
    """--check: the converted text is compiled from a temporary copy (the tree is not written); bad.cu fails
    (converted for ROCm 7.0, its __shfl_down_sync does not exist in HIP 5.2), good.cu compiles with util.cuh
    found through -I."""
    require_hipcc()
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    r = hipport("convert", tree, "--check", "--verify", "-I", tree / "include", "--rocm-version", "7.0",
                "--offload-arch", "gfx90a")
    err = r.stderr.decode()
    assert r.returncode == 4, err
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before
    assert "verify: 2 translation units" in err and "1 of 2 do not compile" in err
    assert f"FAILED {tree / 'src' / 'bad.cu'}" in err
    assert "good.cu" not in err.split("verify:", 1)[1]
    assert f"{tree / 'src' / 'bad.cu'}:4:8: error: use of undeclared identifier '__shfl_down_sync'" in err
    assert "cause: HIP 5.2 has no `__shfl_down_sync`" in err and "--rocm-version 5.2" in err
    assert "line numbers are those of the converted text" in err


def test_real_hipcc_output_dir_and_settings_include_dirs(tree, tmp_path):
    """-o: the output tree is compiled, its headers found through the settings' `include-dirs` (mapped to the
    converted copy); converted for the installed release, both units compile: exit 0."""
    require_hipcc()
    (tree / ".hipport.toml").write_text('include-dirs = ["include"]\noffload-arch = ["gfx90a"]\n')
    out = tmp_path / "out"
    r = hipport("convert", tree, "-o", out, "--verify", "--rocm-version", "5.2", cwd=tree)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "verify: 2 translation units" in err and "all 2 compile" in err
    assert b"__shfl_down(" in (out / "src" / "bad.cu").read_bytes()


# -- fake toolchains --------------------------------------------------------------------------------------------

FAKE = r'''#!{python}
import json, os, re, sys
args = sys.argv[1:]
log = os.environ.get("FAKE_HIPCC_LOG")
if log:
    with open(log, "a") as fh:
        fh.write(json.dumps({{"args": args, "platform": os.environ.get("HIP_PLATFORM")}}) + "\n")
amd = os.environ.get("HIP_PLATFORM") == "amd" and not os.environ.get("FAKE_HIPCC_NVIDIA")
if "--version" in args:
    print("HIP version: 5.2.21153-0\nclang version 15" if amd else "nvcc: NVIDIA (R) Cuda compiler driver")
    sys.exit(0)
if "-###" in args:
    for a in args:
        if a.startswith("--offload-arch=") and a.split("=", 1)[1] != "gfx90a":
            print("clang: error: invalid target ID '%s'; format is a processor name" % a.split("=", 1)[1],
                  file=sys.stderr)
            sys.exit(1)
    if os.environ.get("FAKE_HIPCC_LINKS"):  # the device job a real toolchain prints: it links the device libraries
        print(' "clang" "-cc1" "-triple" "amdgcn-amd-amdhsa" "-mlink-builtin-bitcode" "/rocm/amdgcn/bitcode/ocml.bc"')
    sys.exit(0)
src = args[-1]
text = open(src).read()
for n, line in enumerate(text.splitlines(), 1):
    m = re.search(r"BREAK\((\w+)\)", line)
    if m:
        print("%s:%d:%d: error: use of undeclared identifier '%s'" % (src, n, m.start() + 1, m.group(1)),
              file=sys.stderr)
        print("%s:%d:1: error: redefinition of 'atomicMax'" % (src, n), file=sys.stderr)
        sys.exit(1)
sys.exit(0)
'''


@pytest.fixture
def fake_bin(tmp_path):
    folder = tmp_path / "fakebin"
    folder.mkdir()
    hipcc = folder / "hipcc"
    hipcc.write_text(FAKE.format(python=sys.executable))
    hipcc.chmod(0o755)
    return folder


def _path_without_hipcc(tmp_path) -> str:
    """PATH with nothing but a folder that has no hipcc (hipport runs from sys.executable, not from PATH)."""
    empty = tmp_path / "emptybin"
    empty.mkdir(exist_ok=True)
    return str(empty)


def test_without_hipcc_one_line_exit_2_and_nothing_written(tree, tmp_path):
    r = hipport("convert", tree, "--verify", env={"PATH": _path_without_hipcc(tmp_path)})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "--verify needs hipcc" in lines[0]
    assert (tree / "src" / "bad.cu").read_bytes() == BAD


def test_hipcc_driving_nvcc_is_refused(tree, fake_bin):
    r = hipport("convert", tree, "--check", "--verify", env={"PATH": str(fake_bin), "FAKE_HIPCC_NVIDIA": "1"})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "nvcc even with HIP_PLATFORM=amd (which hipport sets)" in lines[0]


def test_hip_platform_nvidia_in_environment_is_overridden(tree, fake_bin, tmp_path):
    """A hipcc that drives nvcc unless HIP_PLATFORM=amd: hipport sets it, says so, and the run compiles."""
    log = tmp_path / "log.jsonl"
    (tree / "src" / "bad.cu").unlink()
    r = hipport("convert", tree, "--check", "--verify", "--offload-arch", "gfx90a",
                env={"PATH": str(fake_bin), "HIP_PLATFORM": "nvidia", "FAKE_HIPCC_LOG": str(log)})
    err = r.stderr.decode()
    assert r.returncode == 1, err  # --check: files would change; everything compiles
    assert "HIP_PLATFORM=nvidia in the environment; hipport runs hipcc with HIP_PLATFORM=amd" in err
    assert "it compiles" in err
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls and all(c["platform"] == "amd" for c in calls)


def test_fake_hipcc_units_targets_include_dirs_and_causes(tree, fake_bin, tmp_path):
    """Only translation units are compiled (an included .cu is not one; a header is not), for the targets the
    compiler knows (gfx942 skipped, named), with the settings' include folders and -I; errors are reported
    file:line:col with their causes; exit 4 in place after converting."""
    log = tmp_path / "log.jsonl"
    (tree / "src" / "kernels.cu").write_bytes(b"__global__ void kk() { BREAK(__shfl_xor_sync); }\n")
    (tree / "src" / "main.cu").write_bytes(b'#include "kernels.cu"\nint main() {}\n')
    (tree / "src" / "host.cpp").write_bytes(b"int plain() { return 0; }\n")
    (tree / "src" / "bad.cu").write_bytes(BAD.replace(b"p[0] = v;", b"p[0] = v; BREAK(__ballot_sync)"))
    (tree / "extra").mkdir()
    (tree / ".hipport.toml").write_text('include-dirs = ["include"]\n')
    r = hipport("convert", tree, "--verify", "--offload-arch", "gfx90a,gfx942", "-I", tree / "extra", "-j", "2",
                env={"PATH": str(fake_bin), "FAKE_HIPCC_LOG": str(log)}, cwd=tree)
    err = r.stderr.decode()
    assert r.returncode == 4, err
    compiled = [json.loads(line)["args"] for line in log.read_text().splitlines()]
    compiled = [a for a in compiled if "-###" not in a and "--version" not in a]
    assert sorted(Path(a[-1]).name for a in compiled) == ["bad.cu", "good.cu", "main.cu"]
    for args in compiled:
        assert "--offload-arch=gfx90a" in args and "--offload-arch=gfx942" not in args
        assert "-fsyntax-only" in args and "-std=c++17" in args
        assert f"-I{tree / 'include'}" in args and f"-I{tree / 'extra'}" in args
    assert "gfx942 skipped (not known to the installed clang)" in err
    assert "3 translation units" in err and "1 of 3 do not compile" in err
    bad = tree / "src" / "bad.cu"
    assert f"FAILED {bad}\n    {bad}:5:13: error: use of undeclared identifier '__ballot_sync'" in err
    assert "cause: user code defines `atomicMax`, which HIP already declares" in err
    assert b"hip/hip_runtime.h" in bad.read_bytes()  # converted in place, then compiled


def test_quiet_names_each_failing_unit_in_one_line(tree, fake_bin):
    (tree / "src" / "bad.cu").write_bytes(b"__global__ void r() { BREAK(x); }\n")
    r = hipport("convert", tree, "--check", "--verify", "-q", "--offload-arch", "gfx90a",
                env={"PATH": str(fake_bin)})
    assert r.returncode == 4
    bad = tree / "src" / "bad.cu"
    assert r.stderr.decode().splitlines() == [
        f"does not compile: {bad}: {bad}:2:23: use of undeclared identifier 'x'"]


def test_no_known_target_is_a_usage_error(tree, fake_bin):
    r = hipport("convert", tree, "--verify", "--offload-arch", "gfx942", env={"PATH": str(fake_bin)})
    assert r.returncode == 2
    assert "no target the installed hipcc can compile for (gfx942: not known to the installed clang)" in \
        r.stderr.decode()
    assert (tree / "src" / "bad.cu").read_bytes() == BAD


def test_include_dir_without_verify_is_a_usage_error(tree):
    r = hipport("convert", tree, "-I", tree / "include")
    assert r.returncode == 2 and b"only applies with --verify" in r.stderr


# -- pieces -----------------------------------------------------------------------------------------------------

def test_every_cause_is_the_first_to_match_its_example():
    causes = load_causes()
    assert causes
    for cause in causes:
        found = explain(cause.example, causes, {"installed": "5.2", "target": "7.0"})
        assert found[0] is cause, (cause.id, found[0] and found[0].id)
        assert "{" not in found[1] + found[2], cause.id  # every placeholder filled


def test_malformed_cause_file_is_one_line(tmp_path):
    bad = tmp_path / "verify.toml"
    bad.write_text('[[cause]]\nid = "x"\nerror = "("\ncause = "c"\nfix = "f"\nexample = "e"\n')
    with pytest.raises(RuleError, match="not a valid regex"):
        load_causes(bad)
    bad.write_text('[[cause]]\nid = "x"\nerror = "a"\ncause = "c"\n')
    with pytest.raises(RuleError, match="needs `fix`"):
        load_causes(bad)


def test_units_and_includes(tmp_path):
    a, b, h, c = (tmp_path / n for n in ("a.cu", "b.cu", "inc/h.cuh", "c.cpp"))
    files = {a: b'#include "b.cu"\n#include <h.cuh>\n', b: b"", h: b"", c: b"int x;\n"}
    assert included_files(files, [tmp_path / "inc"]) == {b, h}
    assert is_unit(a, b"", False) and not is_unit(h, b"", True)
    assert not is_unit(c, b"int x;", False) and is_unit(c, b"int x;", True)
    assert is_unit(c, b"#include <hip/hip_runtime.h>\n", False)


def test_parse_errors_maps_paths_and_skips_notes(tmp_path):
    unit = tmp_path / "copy" / "src" / "a.cu"
    out = (f"In file included from {unit}:1:\n"
           f"{tmp_path}/copy/src/../inc/h.h:3:5: error: redefinition of 'atomicMin'\n"
           f"{unit}:9:2: note: previous definition is here\n"
           "clang: error: cannot find ROCm device library for gfx1100\n"
           "2 errors generated.\n")
    shown = {str(unit): "src/a.cu", str(tmp_path / "copy" / "inc" / "h.h"): "inc/h.h"}
    errors = parse_errors(out, unit.parent, shown, tmp_path / "copy", load_causes(), {})
    assert [(e.location(), e.message) for e in errors] == [
        ("inc/h.h:3:5", "redefinition of 'atomicMin'"),
        ("hipcc", "cannot find ROCm device library for gfx1100")]
    assert errors[0].cause.id == "redefines-hip"


def test_tree_file_is_plain_data():
    f = TreeFile(Path("a.cu"), "a.cu", text=b"x")
    assert f.text == b"x" and not f.changed


def test_interrupt_stops_the_running_compilers(tree, fake_bin, tmp_path):
    """SIGTERM while hipcc runs: exit 143 at once, the compilers (in their own session) killed, not waited for."""
    import signal
    import time

    pids = tmp_path / "pids"
    slow = fake_bin / "hipcc"
    slow.write_text(slow.read_text().replace(
        "src = args[-1]\n",
        "src = args[-1]\nimport time\nopen(os.environ['FAKE_PIDS'], 'a').write('%d\\n' % os.getpid())\n"
        "time.sleep(120)\n"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": str(fake_bin), "FAKE_PIDS": str(pids)}
    proc = subprocess.Popen([sys.executable, "-m", "hipport", "convert", str(tree), "--check", "--verify",
                             "--offload-arch", "gfx90a", "-j", "2"], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text().count("\n") >= 1) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids.exists(), "no compiler started"
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert time.monotonic() - started < 30
    time.sleep(0.5)
    for pid in map(int, pids.read_text().split()):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        with open(f"/proc/{pid}/stat") as fh:  # a zombie awaiting its reaper is gone too
            assert fh.read().split(")")[1].split()[0] == "Z", f"compiler {pid} still runs"


def test_codegen_where_hipcc_links_device_libraries_and_settings_defines(tree, fake_bin, tmp_path):
    """A hipcc whose `-###` jobs link ROCm's device libraries compiles each unit with code generation (`-c -o`
    into the temporary folder, not `-fsyntax-only`), and says so; the settings' `defines` reach it as -D / -U."""
    log = tmp_path / "log.jsonl"
    (tree / "src" / "bad.cu").unlink()
    (tree / ".hipport.toml").write_text('defines = ["USE_ROCM", "SCALE=3", "!CUDA_VERSION"]\n')
    r = hipport("convert", tree, "--check", "--verify", "--offload-arch", "gfx90a", "-I", tree / "include",
                env={"PATH": str(fake_bin), "FAKE_HIPCC_LOG": str(log), "FAKE_HIPCC_LINKS": "1"}, cwd=tree)
    err = r.stderr.decode()
    assert r.returncode == 1, err  # --check: files would change; the unit compiles
    assert "hipcc (HIP 5.2, HIP_PLATFORM=amd, code generation) for gfx90a: it compiles" in err
    compiled = [json.loads(line)["args"] for line in log.read_text().splitlines()]
    compiled = [a for a in compiled if "-###" not in a and "--version" not in a]
    assert len(compiled) == 1
    args = compiled[0]
    assert "-fsyntax-only" not in args and "-c" in args
    obj = Path(args[args.index("-o") + 1])
    assert obj.suffix == ".o" and not str(obj).startswith(str(tree))
    assert Path(args[-1]).name == "good.cu"
    assert ["-DUSE_ROCM", "-DSCALE=3", "-UCUDA_VERSION"] == [a for a in args if a[:2] in ("-D", "-U")]


def test_define_args():
    from hipport.convert.verify import define_args

    assert define_args(["A", "B=2", " !C ", "!", ""]) == ["-DA", "-DB=2", "-UC"]
