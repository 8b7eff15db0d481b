"""Property-based tests (issue 8, item 3), bounded to run in well under a minute.

* On generated C++/CUDA-like sources (CUDA names from the rules, look-alike identifiers, comments, strings, raw
  strings, preprocessor lines, CRLF, Latin-1 bytes): convert never raises, is idempotent, and every edit lies on
  code tokens: no byte of a comment or a string literal changes, identifiers are replaced whole, and the output is
  exactly the input with the edits applied.
* The rule loader, given a fuzzed rule file (TOML structure and values, or broken TOML), either loads it or raises
  RuleError with a one-line message naming the file; never another exception.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hipport.rules as rules_mod
from hipport.convert import ConvertOptions, convert_source
from hipport.convert.context import ConversionContext
from hipport.convert.engine import run_passes
from hipport.model import apply_edits
from hipport.rules import RuleError, load_rules
from hipport.scan import COMMENT, IDENT, LITERAL, lex

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize=True)

# -- sources ---------------------------------------------------------------------------------------------------

_RULES = load_rules()
_CUDA_NAMES = sorted(n for n in _RULES.names if n.startswith(("cuda", "cu", "CU", "__")))[::37]
_CUDA_NAMES += ["cudaMalloc", "cudaFree", "cudaMemcpy", "cudaStream_t", "cudaSuccess", "__shfl_down_sync",
                "cudaMemcpyToSymbol", "CUDART_VERSION", "cuInit", "cublasSgemm", "curandCreateGenerator",
                "threadIdx", "__syncthreads", "cudaLaunchKernel"]
_HEADERS = ["cuda_runtime.h", "cuda.h", "cublas_v2.h", "curand.h", "cuda_fp16.h", "stdio.h", "vector", "my.h"]

latin1_text = st.binary(max_size=12).map(lambda b: bytes(c for c in b if c not in b"\r\n"))  # any byte but newline
ident = st.one_of(
    st.sampled_from(_CUDA_NAMES),
    st.sampled_from(_CUDA_NAMES).map(lambda n: b"my" + n.encode()),          # longer identifiers stay
    st.sampled_from(_CUDA_NAMES).map(lambda n: n.encode() + b"Wrapper"),
    st.from_regex(rb"\A[a-z_][a-z0-9_]{0,6}\Z"),
    st.sampled_from([b"int", b"float", b"void", b"return", b"struct", b"namespace", b"__global__", b"__device__",
                     b"__shared__", b"dim3", b"size_t", b"sizeof", b"template", b"auto"]),
).map(lambda n: n.encode() if isinstance(n, str) else n)
comment = st.one_of(
    latin1_text.map(lambda t: b"//" + t),
    latin1_text.map(lambda t: b"/*" + t.replace(b"*/", b"") + b" cudaMalloc */"),  # never renamed in a comment
)
string = st.one_of(
    latin1_text.map(lambda t: b'"' + t.replace(b"\\", b"").replace(b'"', b"") + b' cudaFree"'),
    latin1_text.map(lambda t: b"'" + (t[:1].replace(b"\\", b"").replace(b"'", b"") or b"c") + b"'"),
    latin1_text.map(lambda t: b'R"xy(' + t.replace(b")xy", b"") + b'\ncudaMalloc)xy"'),
    latin1_text.map(lambda t: b'u8"' + t.replace(b"\\", b"").replace(b'"', b"") + b'"'),
)
punct = st.sampled_from([b"(", b")", b"{", b"}", b";", b",", b"<<<", b">>>", b"::", b"->", b".", b"*", b"&", b"=",
                         b"[", b"]", b"<", b">", b"0", b"42", b"0xffffffff", b"1.5f", b"\\"])
space = st.sampled_from([b" ", b"  ", b"\t", b"\n", b"\r\n", b"\\\n"])
directive = st.one_of(
    st.sampled_from(_HEADERS).map(lambda h: b"#include <" + h.encode() + b">"),
    st.sampled_from(_HEADERS).map(lambda h: b'#include "' + h.encode() + b'" // ' + b"caf\xe9"),
    st.tuples(ident, ident).map(lambda t: b"#define " + t[0] + b" " + t[1]),
    ident.map(lambda n: b"#define M(x) " + n + b"(x)"),
    st.sampled_from([b"#if CUDART_VERSION >= 11000", b"#ifdef __CUDACC__", b"#else", b"#endif", b"#pragma once",
                     b"#if defined(CUDA_VERSION) && CUDA_VERSION > 9000", b"#error cudaMalloc here", b"#"]),
)
# Whole calls the engine rewrites beyond a rename (arguments, warp forms, launches).
snippet = st.sampled_from([
    b"cudaMemcpyToSymbol(sym, h, n);", b"cudaMemcpyFromSymbol(h, sym, n);", b"cudaGetSymbolAddress(&p, sym);",
    b"v = __shfl_down_sync(0xffffffff, v, 1);", b"m = __ballot_sync(0xffffffff, x > 0);",
    b"k<<<grid, block, 0, s>>>(p, n);", b"cudaLaunchKernel((void*)k, g, b, args, 0, s);",
    b"cudaError_t e = cudaGetLastError(); if (e != cudaSuccess) printf(\"%s\", cudaGetErrorString(e));",
    b"__global__ void k(float *p) { p[threadIdx.x] = 0; __syncthreads(); }",
])
# Directives start a line; the newline after them is CRLF or LF.
piece = st.one_of(ident, ident, ident, punct, punct, space, space, comment, string, snippet,
                  st.tuples(directive, st.sampled_from([b"\n", b"\r\n"])).map(lambda t: b"\n" + t[0] + t[1]))
source = st.tuples(st.booleans(), st.lists(piece, max_size=60)).map(
    lambda t: (b"\xef\xbb\xbf" if t[0] else b"") + b" ".join(t[1]))


def _protected_spans(src: bytes) -> list[tuple[int, int]]:
    """Comment and string/character literal tokens: no edit may touch them. The quoted header name of an
    `#include` is not a string: rewriting it is the point."""
    tokens = lex(src)
    spans = []
    for i in range(len(tokens)):
        kind = tokens.kinds[i]
        if kind == LITERAL and i >= 2 and tokens.text(i - 1) == b"include" and tokens.text(i - 2) == b"#":
            continue
        if kind == COMMENT or (kind == LITERAL and (b'"' in tokens.text(i) or b"'" in tokens.text(i))):
            spans.append((tokens.starts[i], tokens.ends[i]))
    return spans


def _applied(edits) -> list:
    """The edits apply_edits keeps (it drops one overlapping an edit already applied), in source order."""
    kept, pos = [], None
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if pos is not None and e.end > pos:
            continue
        kept.append(e)
        pos = e.start
    return kept[::-1]


@SETTINGS
@given(source)
def test_convert_never_raises_is_idempotent_and_touches_only_code(src):
    options = ConvertOptions()
    # convert_source sets a UTF-8 byte-order mark aside and runs the converter on what follows it.
    bom = b"\xef\xbb\xbf" if src.startswith(b"\xef\xbb\xbf") else b""
    full = src
    src = src[len(bom):]
    try:
        conv = ConversionContext("<gen>", src, _RULES, options)
        result = run_passes(conv)
    except Exception as exc:  # noqa: BLE001 - the property is "never raises"
        pytest.fail(f"convert raised {type(exc).__name__}: {exc}\n{src!r}")
    assert result.after == apply_edits(src, conv.edits)
    converted = convert_source(full, _RULES, options).after
    assert converted == bom + result.after
    again = convert_source(converted, _RULES, options)
    assert again.after == converted, f"not idempotent:\n{full!r}\n{converted!r}\n{again.after!r}"

    tokens = lex(src)
    starts, ends = set(tokens.starts), set(tokens.ends)
    ident_spans = {(tokens.starts[i], tokens.ends[i]) for i in range(len(tokens)) if tokens.kinds[i] == IDENT}
    protected = _protected_spans(src)
    headers = [(tokens.starts[i], tokens.ends[i]) for i in range(2, len(tokens))
               if tokens.kinds[i] == LITERAL and tokens.text(i - 1) == b"include" and tokens.text(i - 2) == b"#"]
    lines_start = {0} | {m.end() for m in re.finditer(rb"\n", src)}
    for e in _applied(conv.edits):
        whole_line_removal = e.new == b"" and e.start in lines_start
        for a, b in protected:
            if whole_line_removal and e.start <= a and b <= e.end:
                continue  # an #include line dropped as a duplicate, with its trailing comment
            assert not (e.start < b and a < e.end) and not (a < e.start < b), \
                f"edit {e} touches protected bytes {src[a:b]!r} in\n{src!r}"
        in_header = any(a < e.start and e.end < b for a, b in headers)  # `"cuda.h"` -> `"hip/hip_runtime.h"`
        if e.start < e.end and not whole_line_removal and not in_header:
            assert e.start in starts and e.end in ends, f"edit {e} cuts a token in\n{src!r}"
        if (e.start, e.end) in ident_spans and re.fullmatch(rb"[A-Za-z_]\w*", e.new):
            # A renamed identifier: replacing it back gives the input's bytes there.
            assert src[e.start:e.end] != e.new


@SETTINGS
@given(st.lists(st.sampled_from([b"\r\n", b"\n", b"// \xe9\xe8 caf\xe9 ", b"cudaFree(0);", b"/* \xff */",
                                 b'"\xb5s"', b"int x;", b"\r"]), max_size=40))
def test_latin1_and_newlines_survive_byte_for_byte(parts):
    """Whatever the newline style or encoding, only CUDA identifiers change: replacing each hip name back gives
    the input exactly."""
    src = b"".join(parts)
    after = convert_source(src, _RULES, ConvertOptions()).after
    assert after.replace(b"hipFree", b"cudaFree") == src


# -- rule files --------------------------------------------------------------------------------------------------

def _toml_key(k: str) -> str:
    return json.dumps(k)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"


def to_toml(doc: dict) -> str:
    plain = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    tables = [f"[{_toml_key(k)}]\n" + "\n".join(f"{_toml_key(n)} = {_toml_value(x)}" for n, x in v.items())
              for k, v in doc.items() if isinstance(v, dict)]
    return "\n".join(plain) + "\n" + "\n\n".join(tables) + "\n"


scalar = st.one_of(st.text(max_size=8), st.sampled_from(["", "6.2.0", "unknown", "1.x", "hipMalloc", "a b"]),
                   st.integers(), st.floats(), st.booleans())
junk = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                    max_leaves=6)
entry_key = st.one_of(st.sampled_from(sorted(rules_mod.NAME_KEYS | rules_mod.HEADER_KEYS | {"rename", "note"})),
                      st.text(max_size=6))
entry = st.one_of(st.dictionaries(entry_key, st.one_of(scalar, junk), max_size=4), junk)
name = st.one_of(st.sampled_from(["cudaMalloc", "cudaFoo", "cuda.h", "cuda_runtime.h", "CUB", "cub", "two\nlines"]),
                 st.text(max_size=8))
table = st.one_of(st.dictionaries(name, entry, max_size=4), junk)
rule_doc = st.fixed_dictionaries({}, optional={
    "family": st.one_of(st.fixed_dictionaries({"name": st.one_of(st.text(max_size=6), junk)}), junk),
    "names": table, "versions": table, "import": st.one_of(st.dictionaries(st.text(max_size=4), scalar), junk),
    "headers": table, "namespaces": table, "families": table, "extra": junk,
})
raw_text = st.one_of(
    rule_doc.map(to_toml),
    st.tuples(rule_doc.map(to_toml), st.integers(0, 400)).map(lambda t: t[0][: t[1]]),   # truncated
    st.tuples(rule_doc.map(to_toml), st.integers(0, 400), st.text(max_size=3)).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1]:]),                                     # a stray character
)


# Rule files that once crashed hipport/rules.py (found by the fuzzer below); each must now give one RuleError line.
LOADER_REGRESSIONS = {
    "headers not a table": '"headers" = []\n',
    "namespaces not a table": '"namespaces" = 3\n',
    "families not a table": '"families" = ""\n',
    "namespace entry without hip": '[namespaces]\n"cub" = {  }\n',
    "entry name with a newline": '[family]\nname = "x"\n[names]\n"a\\nb" = { hip = "y" }\n',
    "not UTF-8": b"# caf\xe9\n",
}


@pytest.mark.parametrize("case", LOADER_REGRESSIONS)
def test_rule_loader_regressions(tiny_builtin, tmp_path, case):
    text = LOADER_REGRESSIONS[case]
    (tmp_path / "bad.toml").write_bytes(text if isinstance(text, bytes) else text.encode())
    with mock.patch.object(rules_mod, "builtin_rules_dir", lambda: tiny_builtin):
        try:
            load_rules([tmp_path], use_cache=False)
        except RuleError as exc:
            assert "\n" not in str(exc) and "bad.toml" in str(exc)
        else:
            pytest.fail("loaded")


@pytest.fixture(scope="module")
def tiny_builtin(tmp_path_factory):
    """A small stand-in for the bundled rules so each example loads in milliseconds (the loader is the same)."""
    base = tmp_path_factory.mktemp("builtin")
    (base / "mappings").mkdir()
    (base / "mappings" / "runtime.toml").write_text(
        '[family]\nname = "runtime"\n[names]\ncudaMalloc = { hip = "hipMalloc", hip_added = "1.5.0" }\n')
    shutil.copyfile(rules_mod.builtin_rules_dir() / "headers.toml", base / "headers.toml")
    return base


@pytest.mark.parametrize("kind", ["mapping", "headers", "raw bytes"])
def test_rule_loader_rejects_malformed_files_with_one_clear_line(tiny_builtin, tmp_path_factory, kind):
    extra = tmp_path_factory.mktemp("extra")
    path = extra / "fuzzed rules.toml"
    texts = {"mapping": raw_text, "headers": raw_text.map(lambda t: "[headers]\n" + t),
             "raw bytes": st.binary(max_size=200).map(lambda b: b.decode("latin-1"))}[kind]

    @settings(max_examples=120 if kind == "mapping" else 50, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(texts)
    def check(text):
        data = text.encode("utf-8", "surrogatepass") if kind != "raw bytes" else text.encode("latin-1")
        path.write_bytes(data)
        try:
            load_rules([extra], use_cache=False)
        except RuleError as exc:
            message = str(exc)
            assert str(path) in message, message
            assert "\n" not in message, message
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"{type(exc).__name__} instead of RuleError: {exc}\n--- {path.name} ---\n{text}")

    with mock.patch.object(rules_mod, "builtin_rules_dir", lambda: tiny_builtin):
        check()
