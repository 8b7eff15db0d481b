"""Property-based tests (issue 8, item 3), bounded to run in well under a minute.

* On generated C++/CUDA-like sources (CUDA names from the rules, look-alike identifiers, comments, strings, raw
  strings, preprocessor lines, CRLF, Latin-1 bytes), convert never raises and is idempotent, and what it leaves
  is checked against the input by re-lexing both, not against the edits it made:
  - every token that no rule may touch is unchanged and in the same order: comments, string and character
    literals, numbers, punctuation, and every identifier no rule maps; the only other changes allowed are those
    the call rules are documented to make (`HIP_SYMBOL(...)` and `reinterpret_cast<const void*>(...)` wrapped
    around an argument, an all-lanes warp mask dropped or widened). `#include` lines are compared as headers:
    no CUDA header with a HIP form is left, no other header is lost, and only HIP headers are added; a comment
    on an `#include` line is kept like any other comment, also when the line goes;
  - no CUDA name that a rule renames is left as an identifier, except where the input gives it to the user
    (a member, a qualified name, something declared with that name, a stringized or pasted operand);
  - a UTF-8 byte-order mark stays first.
* The rule loader, given a fuzzed rule file (TOML structure and values, or broken TOML), either loads it or raises
  RuleError with a one-line message naming the file; never another exception.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import shutil
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import hipport.rules as rules_mod
from hipport.convert import ConvertOptions, convert_source
from hipport.rules import RuleError, load_rules
from hipport.scan import COMMENT, IDENT, KEYWORD, lex
from hipport.semantic import load_semantic

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


# -- what the rules may touch, read from the rule data (not from the converter) ------------------------------

_SEM = load_semantic()
# CUDA names that default options rename to something else (cuDNN's family is reported, not renamed).
_RENAMED = {n.encode() for n, r in _RULES.names.items()
            if r.hip and r.hip != n and r.family not in _RULES.family_notes}
# Identifiers a rule may rewrite or write: every name of the rename tables and their HIP names, the warp, call
# and macro rules' names on both sides, and the renamed namespaces.
_MAPPED = {n.encode() for n in _RULES.names} | {r.hip.encode() for r in _RULES.names.values() if r.hip}
_MAPPED |= {n.encode() for n in (*_SEM.warp_sync, *_SEM.warp_sync.values(), *_SEM.by_arity, *_SEM.guards,
                                 *_SEM.guards.values(), *_SEM.device_pass, *_SEM.device_pass.values())}
_MAPPED |= {hip.encode() for _, hip in _SEM.by_arity.values()}
# ... as the default target spells them (rules/forward.toml: `hipblasZdscal_v2_64` is `hipblasZdscal_64` from 7.0).
_MAPPED |= {_SEM.forward.current(r.hip, ConvertOptions().rocm_version[:2]).encode()
            for r in _RULES.names.values() if r.hip}
_MAPPED |= {n.encode() for n in _RULES.namespaces} | {str(h).encode() for h in _RULES.namespaces.values()}
# Tokens the call rules may add around an argument, or write for a mask; and the tokens of an all-lanes mask
# they may drop (with its comma) or widen.
_INSERTABLE = {b"HIP_SYMBOL", b"reinterpret_cast", b"const", b"void", b"(", b")", b"<", b">", b"*",
               _SEM.full64_spelling.encode()}
_MASK_TOKENS = {lex(m.encode()).text(i) for m in (*_SEM.full32, *_SEM.full64) for i in range(len(lex(m.encode())))}
_DELETABLE = _MASK_TOKENS | {b","}
_CUDA_HEADERS_WITH_HIP = {h for h, rule in _RULES.headers.items() if rule.hip}


def _line_end(src: bytes, pos: int) -> int:
    """End of the logical line holding ``pos`` (backslash-newline continues it)."""
    while True:
        nl = src.find(b"\n", pos)
        if nl == -1:
            return len(src)
        if src[max(0, nl - 2):nl].rstrip(b"\r").endswith(b"\\"):
            pos = nl + 1
            continue
        return nl


def view(src: bytes) -> tuple[list[bytes], list[str], list[tuple[int, bytes]]]:
    """(the tokens no rule may touch, in order; the headers of `#include` lines; (index, text) of every
    identifier outside `#include` lines). A comment on an `#include` line counts as a token like any other."""
    t = lex(src)
    kept, headers, idents = [], [], []
    i, n = 0, len(t)
    while i < n:
        text = t.text(i)
        at_line_start = src[src.rfind(b"\n", 0, t.starts[i]) + 1:t.starts[i]].strip() == b""
        if text == b"#" and at_line_start and i + 1 < n and t.text(i + 1) == b"include":
            end = _line_end(src, t.ends[i + 1])
            j = i + 2
            body = []
            while j < n and t.starts[j] < end:
                if t.kinds[j] == COMMENT:
                    kept.append(t.text(j))
                else:
                    body.append(t.text(j))
                j += 1
            joined = b"".join(body)
            m = re.fullmatch(rb'<(.*)>|"(.*)"', joined)
            headers.append((m.group(1) or m.group(2)).decode("latin-1") if m else joined.decode("latin-1"))
            i = j
            continue
        if t.kinds[i] in (IDENT, KEYWORD):
            idents.append((len(kept), text))
        if not (t.kinds[i] in (IDENT, KEYWORD) and text in _MAPPED):
            kept.append(text)
        i += 1
    return kept, headers, idents


def users_names(src: bytes) -> set[bytes]:
    """CUDA names the input gives to the user somewhere (an over-approximation of the documented rules in
    hipport/convert/usernames.py, so that the property holds whenever those rules are followed): a member or
    qualified name, a name used as a scope, a declaration shape (after a name, a keyword, `*`, `&` or `>`, and
    before `(`, `;`, `=`, `[`, `,`, `{`, `:` or `)`), a stringized or pasted operand, or text of a directive that
    is not code (`#error`, `#pragma`, ...)."""
    t = lex(src)
    code = [i for i in range(len(t)) if t.kinds[i] != COMMENT]
    out = set()
    for k, i in enumerate(code):
        if t.kinds[i] not in (IDENT, KEYWORD) or t.text(i) not in _RENAMED:
            continue
        before = t.text(code[k - 1]) if k else b""
        after = t.text(code[k + 1]) if k + 1 < len(code) else b""
        decl = (k and t.kinds[code[k - 1]] in (IDENT, KEYWORD) or before in (b"*", b"&", b">")) and \
            after in (b"(", b";", b"=", b"[", b",", b"{", b":", b")")
        line = src[src.rfind(b"\n", 0, t.starts[i]) + 1:t.starts[i]].lstrip()
        prose = re.match(rb"#\s*(error|warning|pragma|line|ident)\b", line)
        if before in (b".", b"->", b"::", b"#", b"##") or after in (b"::", b"##") or decl or prose:
            out.add(t.text(i))
    return out


def check_tokens(before: bytes, after: bytes) -> None:
    a, a_headers, _ = view(before)
    b, b_headers, b_idents = view(after)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        assert set(a[i1:i2]) <= _DELETABLE and set(b[j1:j2]) <= _INSERTABLE, \
            f"{tag}: {a[i1:i2]!r} became {b[j1:j2]!r}\n{before!r}\n{after!r}"
    assert not [h for h in b_headers if h in _CUDA_HEADERS_WITH_HIP], (b_headers, after)
    lost = {h for h in a_headers if h not in _RULES.headers} - set(b_headers)
    assert not lost, (lost, after)
    added = [h for h in b_headers if h not in a_headers and not h.startswith("hip")]
    assert not added, (added, after)
    left = {text for _, text in b_idents if text in _RENAMED} - users_names(before)
    assert not left, f"CUDA names left: {sorted(left)}\n{before!r}\n{after!r}"


@SETTINGS
@given(source)
@example(b'#include <cuda_runtime.h> // first\n#include <cuda.h> // caf\xe9\n__global__ void k() {}\n')
@example(b'#include "cuda_runtime.h"\n#include "cuda_runtime.h" /* twice */\nvoid f() { cudaFree(0); }\n')
# Found by this property: the right side of `->*` is an expression (a pointer to member), not a member's name.
@example(b'// R"xy(\ncudaMalloc)xy" "->* cudaFree"')
def test_convert_never_raises_is_idempotent_and_changes_only_what_rules_allow(src):
    options = ConvertOptions()
    try:
        converted = convert_source(src, _RULES, options).after
    except Exception as exc:  # noqa: BLE001 - the property is "never raises"
        pytest.fail(f"convert raised {type(exc).__name__}: {exc}\n{src!r}")
    again = convert_source(converted, _RULES, options)
    assert again.after == converted, f"not idempotent:\n{src!r}\n{converted!r}\n{again.after!r}"
    bom = b"\xef\xbb\xbf"
    assert converted.startswith(bom) == src.startswith(bom)
    check_tokens(src[len(bom):] if src.startswith(bom) else src,
                 converted[len(bom):] if converted.startswith(bom) else converted)


def test_the_token_check_catches_what_it_is_for():
    """The checker above fails on the changes it exists to catch (so a property that passes means something)."""
    base = b'#include <stdio.h> // keep\nvoid f() { cudaFree(0); /* c */ const char *s = "cudaMalloc"; }\n'
    good = b'#include <stdio.h> // keep\nvoid f() { hipFree(0); /* c */ const char *s = "cudaMalloc"; }\n'
    check_tokens(base, good)
    for bad in (good.replace(b"/* c */", b"/* C */"),                 # a comment changed
                good.replace(b'"cudaMalloc"', b'"hipMalloc"'),       # a string changed
                good.replace(b" // keep", b""),                      # a comment on an #include line lost
                good.replace(b"#include <stdio.h>", b"#include <cstdio>"),  # a header lost, another added
                good.replace(b"hipFree", b"cudaFree"),               # a CUDA name left
                good.replace(b"(0)", b"(1)"),                        # a number changed
                good.replace(b"void f", b"void g")):                 # a user's identifier changed
        with pytest.raises(AssertionError):
            check_tokens(base, bad)


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
    "nested namespace renamed into another": '[namespaces]\n"thrust::cuda" = { hip = "rocthrust::hip" }\n',
    "namespace not a name": '[namespaces]\n"a b" = { hip = "c" }\n',
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
