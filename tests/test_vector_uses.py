"""Whether a project's expressions may apply an operator to two HIP vector values (hipport.convert.vector_uses):
each case is a snippet whose answer was worked out by hand from C++'s declarations and precedence."""

from __future__ import annotations

import pytest

from hipport.convert.vector_uses import Sources


def _may(src: str, op: str = "/", vector: str = "float2") -> bool:
    return Sources([src.encode()]).may_apply(op.encode(), vector.encode())


@pytest.mark.parametrize("src", [
    "__device__ void f(float2 p, float x) { p = p / x; }",                       # a float divisor
    "__device__ void f(float2 p, float x) { float2 q = p / (x + 1.0f); }",       # a group of scalars
    "__device__ void f(float2 p, float2 q, float x) { x = p.x / q.y; }",         # components are scalars
    "__device__ void f(float2 p) { p = p / 2.0f; }",                             # a literal
    "__device__ void f(float2 p, int n) { p = p / float(n); }",                  # a cast to float
    "__device__ void f(float2 p) { float a, b; p = p / b; }",                    # a later declarator
    "__device__ float g(float2); __device__ void f(float2 p) { p = p / g(p); }",  # a call returning float
    "__device__ void f(float2 *p, int i) { p[i] = p[i] / sqrtf(p[i].x); }",      # a C math function
])
def test_divisions_by_values_that_are_not_vectors_apply_nothing(src):
    assert _may(src) is False


@pytest.mark.parametrize("src", [
    "__device__ void f(float2 p, float2 q) { p = p / q; }",                       # two float2
    "__device__ void f(float2 *p, const float2 *q, int i) { p[i] = p[i] / q[i]; }",
    "template <typename T> __device__ T f(T a, T b) { return a / b; }",           # T may be float2
    "__device__ void f(float2 p) { { float2 a; } { float a; p = p / a; } }",      # `a` is declared both ways
    "__device__ void f(float2 p, S s) { p = p / s.v; }",                          # a member of unknown type
    "#define DIV(a, b) ((a) / (b))\n",                                            # a macro's parameters
    "__device__ void f(float2 p, float2 q, float s) { p = s * q / q; }",          # divides the product `s * q`
])
def test_divisions_that_may_take_two_vectors(src):
    assert _may(src) is True


def test_a_product_is_not_read_as_a_declaration():
    # `a.x * s` must not declare `s` of type `x`; here `s` is a float2 parameter, so `p *= s` may apply.
    assert _may("__device__ void f(float2 a, float2 p, float2 s) { float t = a.x * s.y; p *= s; }", "*=") is True
    assert _may("__device__ void f(float2 a, float2 p, float s) { float t = a.x * s; p *= s; }", "*=") is False


def test_compound_assignment_looks_at_the_whole_right_side():
    # `p *= s * q` multiplies p by a float2 although the right side starts with a float.
    assert _may("__device__ void f(float2 p, float2 q, float s) { p *= s * q; }", "*=") is True
    assert _may("__device__ void f(float2 p, float s, int n) { p *= s * n; }", "*=") is False


def test_pointer_declarators_and_casts_are_not_products():
    assert _may("__global__ void k(float2 *a, float *b) { float2 *c = (float2 *)b; }", "*") is False
