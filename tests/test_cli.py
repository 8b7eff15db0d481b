"""The `hipport convert` command as a user runs it: modes, file selection, exit codes and messages."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from needs import need

CUDA = b'#include <cuda_runtime.h>\n__global__ void k(float *p) { p[0] = 1; }\nint main() { cudaDeviceSynchronize(); }\n'
HIP = b'#include <hip/hip_runtime.h>\n__global__ void k(float *p) { p[0] = 1; }\nint main() { hipDeviceSynchronize(); }\n'
PLAIN = b"// nothing about CUDA here, only prose mentioning cudaMalloc\nint add(int a, int b) { return a + b; }\n"


def hipport(*args, cwd=None, preexec_fn=None):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
                          preexec_fn=preexec_fn)


def _drop_root_file_access() -> None:
    """In the child, before exec: take CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH out of the capability bounding
    set, so that root (as CI runs) obeys file modes like any user: a chmod-0 file cannot be read."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for cap in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "include").mkdir()
    (root / ".git").mkdir()
    (root / "src" / "k.cu").write_bytes(CUDA)
    (root / "src" / "plain.cpp").write_bytes(PLAIN)
    (root / "include" / "h.cuh").write_bytes(b"#pragma once\ncudaStream_t s;\n")
    (root / ".git" / "x.cu").write_bytes(CUDA)
    (root / "src" / "notes.txt").write_bytes(b"cudaMalloc")
    (root / "third_party").mkdir()
    (root / "third_party" / "t.cu").write_bytes(CUDA)
    return root


def test_in_place_converts_tree_and_skips_git_and_non_sources(tree):
    r = hipport("convert", tree)
    assert r.returncode == 0, r.stderr
    assert (tree / "src" / "k.cu").read_bytes() == HIP
    assert (tree / "src" / "plain.cpp").read_bytes() == PLAIN
    # a header using the runtime gets its include: nvcc gave every .cu file including it cuda_runtime.h
    assert (tree / "include" / "h.cuh").read_bytes() == b"#pragma once\n#include <hip/hip_runtime.h>\nhipStream_t s;\n"
    assert (tree / ".git" / "x.cu").read_bytes() == CUDA
    assert (tree / "src" / "notes.txt").read_bytes() == b"cudaMalloc"
    assert b"4 files scanned, 3 changed" in r.stderr
    assert not list(tree.rglob("*.hipport-tmp"))


def test_second_run_changes_nothing(tree):
    assert hipport("convert", tree).returncode == 0
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    r = hipport("convert", "--check", tree)
    assert r.returncode == 0, r.stderr
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before


def test_exclude_glob(tree):
    r = hipport("convert", "--exclude", "third_party", "--exclude", "*.cuh", tree)
    assert r.returncode == 0
    assert (tree / "third_party" / "t.cu").read_bytes() == CUDA
    assert (tree / "include" / "h.cuh").read_bytes() == b"#pragma once\ncudaStream_t s;\n"
    assert (tree / "src" / "k.cu").read_bytes() == HIP


def test_output_dir_mirrors_tree_and_leaves_sources(tree, tmp_path):
    out = tmp_path / "out"
    r = hipport("convert", tree, "--output-dir", out)
    assert r.returncode == 0, r.stderr
    assert (out / "src" / "k.cu").read_bytes() == HIP
    assert (out / "src" / "plain.cpp").read_bytes() == PLAIN
    assert (tree / "src" / "k.cu").read_bytes() == CUDA


def test_output_dir_inside_input_is_refused(tree):
    r = hipport("convert", tree, "--output-dir", tree / "hip")
    assert r.returncode == 2
    assert b"inside the input tree" in r.stderr and b"Traceback" not in r.stderr


def test_diff_prints_and_writes_nothing(tree):
    r = hipport("convert", "--diff", tree / "src")
    assert r.returncode == 0
    assert b"-int main() { cudaDeviceSynchronize(); }" in r.stdout
    assert b"+int main() { hipDeviceSynchronize(); }" in r.stdout
    assert (tree / "src" / "k.cu").read_bytes() == CUDA


def test_check_exits_1_and_writes_nothing(tree):
    r = hipport("convert", "--check", tree)
    assert r.returncode == 1
    assert (tree / "src" / "k.cu").read_bytes() == CUDA


def test_stdout_one_file(tree):
    r = hipport("convert", "--stdout", tree / "src" / "k.cu")
    assert r.returncode == 0
    assert r.stdout == HIP
    assert (tree / "src" / "k.cu").read_bytes() == CUDA
    r = hipport("convert", "--stdout", tree)
    assert r.returncode == 2 and b"exactly one source file" in r.stderr


def test_modes_cannot_be_combined(tree):
    r = hipport("convert", "--diff", "--check", tree)
    assert r.returncode == 2 and b"cannot be combined" in r.stderr


def test_missing_path_is_a_usage_error(tmp_path):
    r = hipport("convert", tmp_path / "nope")
    assert r.returncode == 2
    assert r.stderr.strip().endswith(b"no such file or directory")
    assert b"Traceback" not in r.stderr


def test_unreadable_file_is_named_and_others_converted(tree):
    bad = tree / "src" / "bad.cu"
    bad.write_bytes(CUDA)
    bad.chmod(0)
    # Root reads every file; CI runs as root, so the run there gives up root's right to ignore file modes.
    r = hipport("convert", tree, preexec_fn=_drop_root_file_access if os.geteuid() == 0 else None)
    assert r.returncode == 3, r.stderr
    assert f"{bad}: cannot read (Permission denied); check permissions".encode() in r.stderr
    assert (tree / "src" / "k.cu").read_bytes() == HIP
    bad.chmod(0o644)
    assert bad.read_bytes() == CUDA


def test_permissions_are_kept(tree):
    path = tree / "src" / "k.cu"
    path.chmod(0o640)
    assert hipport("convert", path).returncode == 0
    assert path.read_bytes() == HIP
    assert (path.stat().st_mode & 0o777) == 0o640


def test_malformed_rule_file_stops_before_any_change(tree, tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "team.toml").write_text('[family]\nname = "team"\n[names]\ncudaX = { hip = 3 }\n')
    r = hipport("convert", "--rules", rules, tree)
    assert r.returncode == 2
    assert r.stderr.count(b"\n") == 1
    assert b"team.toml: entry `cudaX` key `hip` must be a non-empty string" in r.stderr
    assert (tree / "src" / "k.cu").read_bytes() == CUDA


def test_user_rules_win(tree, tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "team.toml").write_text('[family]\nname = "team"\n[names]\ncudaDeviceSynchronize = { hip = "teamSync" }\n')
    r = hipport("convert", "--rules", rules, "--stdout", tree / "src" / "k.cu")
    assert r.returncode == 0, r.stderr
    assert b"teamSync();" in r.stdout


def test_summary_lists_unsupported_and_unknown_names(tmp_path):
    f = tmp_path / "u.cuh"  # a header: a .cu file would get the runtime include nvcc gave it
    f.write_bytes(b"void f() { cudaDeviceFlushGPUDirectRDMAWrites(a, b); cudaBrandNewThing(); }\n")
    r = hipport("convert", "--check", f)
    assert r.returncode == 0, r.stderr  # reported, but nothing to change
    assert b"cudaDeviceFlushGPUDirectRDMAWrites" in r.stderr and b"no HIP equivalent" in r.stderr
    assert b"cudaBrandNewThing" in r.stderr and b"no rule knows" in r.stderr
    assert b"u.cuh:1:12" in r.stderr


def test_help_documents_every_option():
    r = hipport("convert", "--help")
    assert r.returncode == 0
    for option in ("--output-dir", "--diff", "--check", "--stdout", "--roc", "--exclude", "--rules",
                   "--quiet", "--verbose", "Exit status"):
        assert option.encode() in r.stdout, option


def test_quiet_prints_nothing(tree):
    r = hipport("convert", "-q", tree)
    assert r.returncode == 0 and r.stderr == b"" and r.stdout == b""


def test_installed_console_script_works_from_another_directory(tmp_path):
    """`pip install .` (not editable) must ship rules/ inside the wheel."""
    import shutil

    exe = shutil.which("hipport")
    need(exe, "the `hipport` console script", "pip install .")
    f = tmp_path / "k.cu"
    f.write_bytes(CUDA)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([exe, "convert", "--stdout", "k.cu"], capture_output=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == HIP


def test_apply_suggestions_with_select(tmp_path):
    f = tmp_path / "k.cu"
    f.write_bytes(b"__device__ unsigned lanes(int lane) {\n  unsigned mask = 0xffffffffu;\n"
                  b"  return mask & ((1u << lane) - 1);\n}\n")
    plain = hipport("convert", "--stdout", "--rocm-version", "7.0", f)
    assert plain.returncode == 0, plain.stderr
    assert b"((1u << lane) - 1)" in plain.stdout
    fixed = hipport("convert", "--stdout", "--rocm-version", "7.0", "--apply-suggestions",
                    "--select", "warp-mask-32bit", f)
    assert fixed.returncode == 0, fixed.stderr
    assert b"((1ull << lane) - 1)" in fixed.stdout
    again = tmp_path / "again.cu"
    again.write_bytes(fixed.stdout)
    r = hipport("convert", "--check", "--rocm-version", "7.0", "--apply-suggestions", "--select", "warp-mask-32bit", again)
    assert r.returncode == 0, r.stderr
    r = hipport("convert", "--stdout", "--apply-suggestions", "--select", "no-such-rule", f)
    assert r.returncode == 2 and b"unknown audit rule id `no-such-rule`" in r.stderr
    r = hipport("convert", "--stdout", "--suggestion-level", "medium", f)
    assert r.returncode == 2 and b"--suggestion-level only applies with --apply-suggestions" in r.stderr


def test_apply_suggestions_takes_high_confidence_unless_asked(tmp_path):
    """A reduction from offset 16 whose lane and warp ids are not in the file: `warpSize / 2` is a guess about
    how its result is used (confidence medium), so only `--suggestion-level medium` applies it."""
    f = tmp_path / "r.cu"
    f.write_bytes(b"__device__ float wsum(float v) {\n"
                  b"  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(~0ull, v, o);\n  return v;\n}\n")
    safe = hipport("convert", "--stdout", "--rocm-version", "7.0", "--apply-suggestions", f)
    assert safe.returncode == 0, safe.stderr
    assert b"int o = 16;" in safe.stdout
    wide = hipport("convert", "--stdout", "--rocm-version", "7.0", "--apply-suggestions", "--suggestion-level",
                   "medium", f)
    assert wide.returncode == 0, wide.stderr
    assert b"int o = warpSize / 2;" in wide.stdout
