"""The SIMD video intrinsic stand-ins (rules/shims.toml `[simd]`, written out by hipport/simd.py) against a model
of CUDA's documented behaviour written here independently, lane by lane, from the intrinsic's name: every
definition is compiled on the host with g++ and run on edge and random words."""

from __future__ import annotations

import random
import re
import shutil
import subprocess

import pytest
from needs import need

from hipport.semantic import load_semantic

SIMD = {name: shim for name, shim in (load_semantic().shims or {}).items() if re.fullmatch(r"__v[a-z]+[24]", name)}
NAME = re.compile(r"__v(abs|absss|absdiffs|absdiffu|add|addss|addus|avgu|haddu|cmp|set|maxs|maxu|mins|minu|neg|negss|"
                  r"sads|sadu|sub|subss|subus)(eq|ne|ge|gt|le|lt)?([su])?([24])")


def _lanes(word: int, bits: int, signed: bool) -> list[int]:
    out = []
    for i in range(0, 32, bits):
        v = (word >> i) & ((1 << bits) - 1)
        if signed and v >> (bits - 1):
            v -= 1 << bits
        out.append(v)
    return out


def model(name: str, a: int, b: int) -> int:
    """CUDA's meaning of ``name`` on words a and b (CUDA Math API, SIMD intrinsics)."""
    op, cmp, sign, n = NAME.fullmatch(name).groups()
    bits = 16 if n == "2" else 8
    lo_s, hi_s, hi_u = -(1 << (bits - 1)), (1 << (bits - 1)) - 1, (1 << bits) - 1
    signed = sign == "s" or op in ("abs", "absss", "absdiffs", "addss", "maxs", "mins", "neg", "negss", "sads",
                                   "subss")
    xs, ys = _lanes(a, bits, signed), _lanes(b, bits, signed)
    clamp_s = lambda v: max(lo_s, min(hi_s, v))  # noqa: E731
    clamp_u = lambda v: max(0, min(hi_u, v))  # noqa: E731
    tests = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "ge": lambda x, y: x >= y,
             "gt": lambda x, y: x > y, "le": lambda x, y: x <= y, "lt": lambda x, y: x < y}
    one = {"abs": abs, "absss": lambda x: clamp_s(abs(x)), "neg": lambda x: -x, "negss": lambda x: clamp_s(-x)}
    two = {"absdiffs": lambda x, y: abs(x - y), "absdiffu": lambda x, y: abs(x - y), "add": lambda x, y: x + y,
           "addss": lambda x, y: clamp_s(x + y), "addus": lambda x, y: clamp_u(x + y),
           "avgu": lambda x, y: (x + y + 1) // 2, "haddu": lambda x, y: (x + y) // 2, "maxs": max, "maxu": max,
           "mins": min, "minu": min, "sub": lambda x, y: x - y, "subss": lambda x, y: clamp_s(x - y),
           "subus": lambda x, y: clamp_u(x - y)}
    if op in ("sads", "sadu"):
        return sum(abs(x - y) for x, y in zip(xs, ys)) & 0xFFFFFFFF
    if op in one:
        results = [one[op](x) for x in xs]
    elif op == "cmp":
        results = [-1 if tests[cmp](x, y) else 0 for x, y in zip(xs, ys)]
    elif op == "set":
        results = [1 if tests[cmp](x, y) else 0 for x, y in zip(xs, ys)]
    else:
        results = [two[op](x, y) for x, y in zip(xs, ys)]
    word = 0
    for k, v in enumerate(results):
        word |= (v & ((1 << bits) - 1)) << (k * bits)
    return word


def test_every_intrinsic_is_described():
    # HIPIFY's table lists 80 SIMD intrinsics without a HIP name; all but the two signed averages are defined, and
    # the two CUDA declares that the table does not list (__vcmpleu2, __vsetgtu2).
    assert len(SIMD) == 80 and {"__vcmpleu2", "__vsetgtu2"} <= set(SIMD)
    assert all(NAME.fullmatch(n) for n in SIMD)
    assert "__vavgs2" not in SIMD and "__vavgs4" not in SIMD


def test_definitions_match_cudas_meaning(tmp_path):
    gxx = shutil.which("g++")
    need(gxx is not None, "g++ (the host compiler)", "apt-get install g++")
    rng = random.Random(7)
    edge = [0, 0xFFFFFFFF, 0x80808080, 0x7F7F7F7F, 0x80007FFF, 0x00FF00FF, 0x01FE7F80, 0xFFFF0001]
    words = edge + [rng.getrandbits(32) for _ in range(40)]
    pairs = [(a, b) for a in edge for b in edge] + [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(200)]
    names = sorted(SIMD)
    body = ["#include <cstdio>", "#define __device__"]
    body += [SIMD[n].code for n in names]
    body.append("int main() {")
    for n in names:
        args = [(a,) for a in words] if "unsigned int b" not in SIMD[n].code else pairs
        for arg in args:
            call = ", ".join(f"{v}u" for v in arg)
            body.append(f'  printf("%u\\n", {n}({call}));')
    body.append("}")
    src = tmp_path / "simd.cpp"
    src.write_text("\n".join(body) + "\n")
    exe = tmp_path / "simd"
    r = subprocess.run([gxx, "-std=c++17", "-O0", "-o", str(exe), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    got = iter(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split())
    wrong = []
    for n in names:
        args = [(a,) for a in words] if "unsigned int b" not in SIMD[n].code else pairs
        for arg in args:
            want = model(n, arg[0], arg[1] if len(arg) > 1 else 0)
            value = int(next(got))
            if value != want:
                wrong.append(f"{n}{tuple(hex(v) for v in arg)}: {value:#x}, CUDA {want:#x}")
    assert not wrong, "\n".join(wrong[:20])


@pytest.mark.parametrize("name", ["__vadd4", "__vsads2", "__vabsss4"])
def test_model_examples_worked_by_hand(name):
    """The model itself, on words worked out by hand."""
    cases = {"__vadd4": ((0x01FF7F80, 0x01010101), 0x0200_8081),
             "__vsads2": ((0x0001FFFF, 0x00030001), 2 + 2),    # |1-3| + |-1-1|
             "__vabsss4": ((0x80FF0102, 0), 0x7F01_0102)}     # -128 saturates to 127, -1 -> 1
    (a, b), want = cases[name]
    assert model(name, a, b) == want


def test_converted_kernel_gets_the_definitions_it_calls_and_compiles(rules, tmp_path):
    from hipcc import require_hipcc, syntax_check

    from hipport.convert import ConvertOptions, convert_source

    src = (b"#include <cuda_runtime.h>\n"
           b"__global__ void k(const unsigned *a, const unsigned *b, unsigned *out) {\n"
           b"  int i = threadIdx.x;\n"
           b"  out[i] = __vabsdiffu4(a[i], b[i]) + __vsadu4(a[i], b[i]);\n"
           b"  out[i] ^= __vcmpgtu2(a[i], b[i]) | __vmaxs4(a[i], __vadd4(a[i], b[i]));\n"
           b"  out[i] += __vavgs2(a[i], b[i]);  // no stand-in: reported\n"
           b"}\n")
    options = ConvertOptions(rocm_version=(5, 2))
    result = convert_source(src, rules, options)
    added = sorted(f.subject for f in result.findings if f.rule_id == "shim-added")
    assert added == ["__vabsdiffu4", "__vadd4", "__vcmpgtu2", "__vmaxs4", "__vsadu4"]
    assert [f.subject for f in result.findings if f.rule_id == "unsupported-api"] == ["__vavgs2"]
    assert convert_source(result.after, rules, options).after == result.after
    require_hipcc()
    out = tmp_path / "k.cu"
    out.write_bytes(result.after.replace(b"  out[i] += __vavgs2(a[i], b[i]);  // no stand-in: reported\n", b""))
    r = syntax_check(out)
    assert r.returncode == 0, r.stderr[-2000:]
