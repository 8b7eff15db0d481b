"""Many files lexed in one libclang buffer (scan.lex_many, issue 25) give each file the tokens it has alone,
whatever one file leaves open at its end; and the whole-array offset arithmetic is exact at its edges."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from hipport import scan


def _texts(tokens: scan.Tokens) -> list[bytes]:
    return [tokens.text(i) for i in range(len(tokens))]


def _alone(src: bytes) -> scan.Tokens:
    return scan._lex(src, scan._PIECE, scan._MARGIN)


def _same(a: scan.Tokens, b: scan.Tokens) -> bool:
    return (list(a.kinds), list(a.starts), list(a.ends)) == (list(b.kinds), list(b.starts), list(b.ends))


def test_each_file_gets_its_own_tokens_at_its_own_offsets():
    group = [b"int a;\n", b"  cudaMalloc(&p, n); // c\n", b"\n\n#define X 1\nX"]
    many = scan.lex_many(group)
    assert _texts(many[group[1]]) == [b"cudaMalloc", b"(", b"&", b"p", b",", b"n", b")", b";", b"// c"]
    assert list(many[group[1]].starts)[:2] == [2, 12]
    assert _texts(many[group[2]]) == [b"#", b"define", b"X", b"1", b"X"]
    assert all(_same(many[s], _alone(s)) for s in group)


def test_what_a_file_leaves_open_does_not_reach_the_next():
    # An unterminated comment (libclang reports no token for it, it only swallows what follows), a raw string, a
    # line comment continued by a backslash, a backslash at the very end, a backslash before trailing blanks.
    group = [b"int a; /* open", b"int b;", b'auto s = R"x(raw', b"int c;", b"// c \\", b"int d;", b"x \\",
             b"int e;", b"y \\ \t", b"int f;", b"int g;"]
    many = scan.lex_many(group)
    for name in (b"b", b"c", b"d", b"e", b"f", b"g"):
        assert _texts(many[b"int " + name + b";"]) == [b"int", name, b";"]
    assert all(_same(many[s], _alone(s)) for s in group)


_SNIPPETS = [b"int a;", b"/* open", b"*/", b'R"x(', b')x"', b"\\", b"\\\n", b"// c", b"\n", b"'", b'"', b" ",
             b"#if 0", b"#endif", b"x", b'u8R"(', b')"', b"<<<", b">>>", b"\r\n", b"/", b"*", b"\t", b"'a'", b"\f"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_SNIPPETS), max_size=7).map(b"".join), min_size=2, max_size=7))
def test_lexed_together_is_lexed_alone(group):
    many = scan.lex_many(group)
    for src in group:
        if src:
            assert _same(many[src], _alone(src)), (group, src)


def test_lex_uses_the_tokens_made_ahead_only_inside_the_block():
    src = b"__global__ void k() {}\n"
    with scan.lexed_ahead([src, b"int x;\n"]):
        inside = scan.lex(src)
        assert inside is scan.lex(bytes(src))  # equal bytes, another object: the same tokens
    assert not scan._AHEAD
    assert _same(inside, scan.lex(src))


def test_large_files_are_left_to_lex():
    big = b"int x;\n" * (scan._AHEAD_MAX_FILE // 7 + 1)
    assert big not in scan.lex_many([big, b"int y;"])


def test_offset_arithmetic_at_its_edges():
    top = 2**32 - 1
    assert list(scan._plus(array("I", [0, 5, top - 7]), 7)) == [7, 12, top]
    assert list(scan._plus(array("I", [7, 8, top]), -7)) == [0, 1, top - 7]
    assert list(scan._plus(array("I"), -3)) == []
    assert list(scan._sum(array("I", [0, 1, top - 1]), array("I", [0, 2, 1]))) == [0, 3, top]
    assert list(scan._sum(array("I"), array("I"))) == []
