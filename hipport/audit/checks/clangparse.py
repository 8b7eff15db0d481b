"""A libclang parse of one file, for the few questions that only types can answer.

The file is parsed in CUDA mode with no toolkit: ``#include`` lines are blanked out (same length, so byte offsets
stay those of the original), and a small stub header declares the CUDA/HIP built-ins, index variables and atomics
with their CUDA signatures, except that masks come back 64-bit
as they do in HIP. ``warpSize`` is declared as a plain ``const int`` (not a constant), the way ROCm 7 has
it, so clang itself reports the places where it sits in a constant expression.

Only the extents the checks ask for are walked, since walking every cursor from Python costs far more than parsing.
"""

from __future__ import annotations

import bisect
import ctypes
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import accumulate

import clang.cindex as ci

_NAME = "/hipport-audit/input.cu"
_STUB = "/hipport-audit/stub.h"
_ARGS = ["-x", "cuda", "-nocudainc", "-nocudalib", "--cuda-host-only", "--cuda-path=/nonexistent",
         "-std=c++17", "-nostdinc", "-nostdinc++", "-include", _STUB, "-ferror-limit=0",
         "-D__CUDACC__", "-D__HIPCC__", "-D__HIP_PLATFORM_AMD__"]
_INCLUDE_LINE = re.compile(rb"(?m)^[ \t]*#[ \t]*include[^\n]*")

_STUB_TEXT = b"""
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __restrict__ __restrict
typedef decltype(sizeof(0)) size_t;
typedef signed char int8_t; typedef unsigned char uint8_t; typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t; typedef unsigned long long uint64_t;
struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; __host__ __device__ dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1); };
struct uchar4 { unsigned char x, y, z, w; };
struct float2 { float x, y; }; struct float4 { float x, y, z, w; }; struct int2 { int x, y; }; struct int4 { int x, y, z, w; };
extern "C" int cudaConfigureCall(dim3, dim3, size_t = 0, void* = 0);
extern "C" int __cudaPushCallConfiguration(dim3, dim3, size_t = 0, void* = 0);
extern const __device__ uint3 threadIdx, blockIdx;
extern const __device__ dim3 blockDim, gridDim;
extern const __device__ int warpSize;
struct __half { unsigned short x; }; struct __half2 { __half x, y; }; struct __nv_bfloat16 { unsigned short x; };
typedef __half half; typedef __half2 half2; typedef __nv_bfloat16 __hip_bfloat16;
__device__ void __syncthreads(); __device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __threadfence(); __device__ void __threadfence_block(); __device__ void __threadfence_system();
__device__ unsigned long long __ballot_sync(unsigned mask, int pred); __device__ unsigned long long __ballot(int pred);
__device__ int __any_sync(unsigned mask, int pred); __device__ int __all_sync(unsigned mask, int pred);
__device__ int __any(int pred); __device__ int __all(int pred);
__device__ unsigned long long __activemask(); __device__ unsigned long long __lanemask_lt(); __device__ unsigned __lane_id();
template <class T> __device__ unsigned long long __match_any_sync(unsigned mask, T v);
template <class T> __device__ unsigned long long __match_all_sync(unsigned mask, T v, int* pred);
template <class T> __device__ T __shfl_sync(unsigned mask, T v, int src, int width = 32);
template <class T> __device__ T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32);
template <class T> __device__ T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32);
template <class T> __device__ T __shfl(T v, int src, int width = 64);
template <class T> __device__ T __shfl_up(T v, unsigned d, int width = 64);
template <class T> __device__ T __shfl_down(T v, unsigned d, int width = 64);
template <class T> __device__ T __shfl_xor(T v, int m, int width = 64);
template <class T> __device__ T __reduce_add_sync(unsigned mask, T v);
template <class T> __device__ T __reduce_min_sync(unsigned mask, T v);
template <class T> __device__ T __reduce_max_sync(unsigned mask, T v);
__device__ int __popc(unsigned); __device__ int __popcll(unsigned long long);
__device__ int __ffs(int); __device__ int __ffsll(long long);
__device__ int __clz(int); __device__ int __clzll(long long);
__device__ unsigned __brev(unsigned); __device__ unsigned long long __brevll(unsigned long long);
#define HIPPORT_ATOMIC(name) \\
  __device__ int name(int*, int); __device__ unsigned name(unsigned*, unsigned); \\
  __device__ unsigned long long name(unsigned long long*, unsigned long long); \\
  __device__ float name(float*, float); __device__ double name(double*, double); \\
  __device__ __half name(__half*, __half); __device__ __half2 name(__half2*, __half2); \\
  __device__ __nv_bfloat16 name(__nv_bfloat16*, __nv_bfloat16);
HIPPORT_ATOMIC(atomicAdd) HIPPORT_ATOMIC(atomicAdd_system) HIPPORT_ATOMIC(atomicAdd_block)
HIPPORT_ATOMIC(unsafeAtomicAdd) HIPPORT_ATOMIC(safeAtomicAdd)
HIPPORT_ATOMIC(atomicSub) HIPPORT_ATOMIC(atomicExch) HIPPORT_ATOMIC(atomicMin) HIPPORT_ATOMIC(atomicMax)
HIPPORT_ATOMIC(atomicAnd) HIPPORT_ATOMIC(atomicOr) HIPPORT_ATOMIC(atomicXor)
HIPPORT_ATOMIC(atomicSub_system) HIPPORT_ATOMIC(atomicExch_system) HIPPORT_ATOMIC(atomicMin_system)
HIPPORT_ATOMIC(atomicMax_system) HIPPORT_ATOMIC(atomicAnd_system) HIPPORT_ATOMIC(atomicOr_system)
HIPPORT_ATOMIC(atomicXor_system)
#undef HIPPORT_ATOMIC
__device__ unsigned atomicInc(unsigned*, unsigned); __device__ unsigned atomicDec(unsigned*, unsigned);
__device__ int atomicCAS(int*, int, int); __device__ unsigned atomicCAS(unsigned*, unsigned, unsigned);
__device__ unsigned long long atomicCAS(unsigned long long*, unsigned long long, unsigned long long);
"""

_index: ci.Index | None = None


@dataclass(slots=True)
class Call:
    name: str
    arg_types: list[str]       # canonical spelling of each argument's type ("" when dependent/unknown)
    param_types: list[str]     # canonical parameter types of the overload clang chose ([] when unresolved)


class _Lazy(Mapping):
    """Offset -> answer, worked out from the cursors the walk kept for that offset when first asked: the checks
    ask about a few declarations and calls, the walk meets every one. ``pick(cursors)`` returns the answer or
    None (then the offset has none). The cursors keep the translation unit alive (`Cursor._tu`)."""

    def __init__(self, pick) -> None:
        self._pick = pick
        self._cursors: dict[int, list] = {}
        self._done: dict[int, object] = {}

    def add(self, offset: int, cursor) -> None:
        self._cursors.setdefault(offset, []).append(cursor)

    def _answer(self, offset: int):
        if offset not in self._done:
            cursors = self._cursors.get(offset)
            self._done[offset] = self._pick(cursors) if cursors else None
        return self._done[offset]

    def __getitem__(self, offset: int):
        found = self._answer(offset)
        if found is None:
            raise KeyError(offset)
        return found

    def __iter__(self):
        return (offset for offset in self._cursors if self._answer(offset) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(slots=True)
class Parsed:
    """What the checks may ask of a parse; everything keyed by byte offset in the original source."""

    decl_types: Mapping[int, str] = field(default_factory=dict)  # name offset of a variable/parameter -> type
    calls: Mapping[int, Call] = field(default_factory=dict)       # callee-name offset -> call
    const_expr_errors: list[tuple[int, int]] = field(default_factory=list)  # (start, end) of "not constant" errors
    _errors: tuple = ()  # (errors indexed, starts, furthest end so far): answered by a binary search

    def in_const_error(self, offset: int) -> bool:
        if not self._errors or self._errors[0] != len(self.const_expr_errors):
            spans = sorted(self.const_expr_errors)
            self._errors = (len(spans), [a for a, _ in spans], list(accumulate((b for _, b in spans), max)))
        _, starts, reach = self._errors
        k = bisect.bisect_right(starts, offset) - 1
        return k >= 0 and reach[k] > offset


def _decl_type(cursors: list) -> str:
    return cursors[-1].type.get_canonical().spelling  # the last declaration the walk met there


def _call_of(call_names: frozenset[str]):
    def pick(cursors: list) -> Call | None:
        for child in reversed(cursors):  # the last call of interest the walk met there
            if child.spelling in call_names:
                ref = child.referenced
                params = []
                if ref is not None and ref.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE):
                    params = [a.type.get_canonical().spelling for a in ref.get_arguments()]
                args = [_written_type(a) for a in child.get_arguments()]
                return Call(child.spelling, args, params)
        return None
    return pick


def _written_type(expr: ci.Cursor) -> str:
    """Type of an argument as written, before the implicit conversion to the parameter type."""
    for _ in range(4):
        if expr.kind != ci.CursorKind.UNEXPOSED_EXPR:
            break
        children = list(expr.get_children())
        if len(children) != 1:
            break
        expr = children[0]
    return expr.type.get_canonical().spelling


def _get_index() -> ci.Index:
    global _index
    if _index is None:
        _index = ci.Index.create(excludeDecls=True)
    return _index


def _blank(match: re.Match) -> bytes:
    return b" " * len(match.group(0))


_CONST_MESSAGES = ("constant expression", "variable length array", "variable-length array",
                   "not an integral constant", "must be initialized by a constant", "cannot appear in a constant")


def parse(src: bytes, regions: list[tuple[int, int]], call_names: frozenset[str],
          marks: list[int] | None = None) -> Parsed | None:
    """Parse ``src`` and collect declaration types and calls inside ``regions`` (sorted byte ranges).
    None when libclang cannot produce a translation unit at all.

    ``marks``, sorted byte offsets of every token that may bring a recorded cursor into an expression (a name of
    ``call_names``, a macro of the file, a `{` that opens a lambda's or a statement expression's body, a name
    spelled across a line continuation), lets the walk skip an expression without one: there it can meet no
    declaration and no call of interest. The answers are those of the whole walk, at a fraction of the cursors."""
    text = _INCLUDE_LINE.sub(_blank, src)
    try:
        tu = _get_index().parse(_NAME, args=_ARGS, unsaved_files=[(_NAME, text), (_STUB, _STUB_TEXT)],
                                options=ci.TranslationUnit.PARSE_INCOMPLETE)
    except ci.TranslationUnitLoadError:
        return None
    out = Parsed()
    for diag in tu.diagnostics:
        if diag.severity < ci.Diagnostic.Warning:
            continue
        loc = diag.location
        if loc.file is None or loc.file.name != _NAME:
            continue
        if any(m in diag.spelling for m in _CONST_MESSAGES):
            spans = [(r.start.offset, r.end.offset + 1) for r in diag.ranges
                     if r.start.file is not None and r.start.file.name == _NAME]
            out.const_expr_errors.extend(spans or [(loc.offset, loc.offset + 1)])
    if not regions:
        return out
    out.decl_types = decls = _Lazy(_decl_type)
    out.calls = calls = _Lazy(_call_of(call_names))
    starts = [r[0] for r in regions]
    ends = [r[1] for r in regions]
    lib = ci.conf.lib
    extent_of, range_start, range_end = lib.clang_getCursorExtent, lib.clang_getRangeStart, lib.clang_getRangeEnd
    locate, location_of = lib.clang_getInstantiationLocation, lib.clang_getCursorLocation
    offset, file_ = ctypes.c_uint(), ci.c_object_p()
    offset_ref, file_ref = ctypes.byref(offset), ctypes.byref(file_)
    file_names: dict[int, str] = {}
    VAR, PARM, FIELD, CALL = (ci.CursorKind.VAR_DECL.value, ci.CursorKind.PARM_DECL.value,
                              ci.CursorKind.FIELD_DECL.value, ci.CursorKind.CALL_EXPR.value)
    TOP = ci.CursorKind.TRANSLATION_UNIT.value
    FIRST_EXPR, LAST_EXPR = 100, 199  # CXCursor_FirstExpr .. CXCursor_LastExpr
    failed: list[BaseException] = []
    # A location in the input file is encoded as the file's base plus the byte offset: read from the raw
    # encoding, an offset costs no call into libclang. Checked on the file's first and last byte, and against
    # libclang's own answer for the first cursors; any other location (the stub, a macro) asks libclang.
    main = tu.get_file(_NAME)
    base = lib.clang_getLocationForOffset(tu, main, 0).int_data if main else 0
    limit = base + len(text)
    fast = [0 < base < (1 << 31) and lib.clang_getLocationForOffset(tu, main, len(text)).int_data == limit, 256]

    def slow_offset(location) -> int:
        locate(location, None, None, None, offset_ref)
        return offset.value

    def raw_offsets(ext) -> tuple[int, int] | None:
        b, e = ext.begin_int_data, ext.end_int_data
        if not (fast[0] and base <= b <= limit and base <= e <= limit):
            return None
        if fast[1]:
            fast[1] -= 1
            if (slow_offset(range_start(ext)), slow_offset(range_end(ext))) != (b - base, e - base):
                fast[0] = False
                return None
        return b - base, e - base

    def place(cursor: ci.Cursor, ext, top: bool) -> tuple[int, int] | None:
        """(first, end offset) of a cursor that overlaps a region, its extent not read from the encoding; None for
        the others."""
        start = range_start(ext)
        if top:
            # Below the top level everything of interest is spelled in the input (the stub only declares).
            locate(start, file_ref, None, None, offset_ref)
            if not file_:
                return None
            key = ctypes.cast(file_, ctypes.c_void_p).value
            if key not in file_names:
                file_names[key] = ci.File(file_).name
            if file_names[key] != _NAME:
                return None
        else:
            locate(start, None, None, None, offset_ref)
        s = offset.value
        e = slow_offset(range_end(ext))
        k = bisect.bisect_right(starts, e) - 1
        return (s, e) if k >= 0 and ends[k] >= s else None

    def decl_offset(cursor: ci.Cursor) -> int:
        raw = location_of(cursor).int_data
        if fast[0] and base <= raw <= limit and not fast[1]:
            return raw - base
        return cursor.location.offset

    size = limit - base
    in_regions = bisect.bisect_right
    no_marks = marks is None
    last_mark = len(marks) if marks is not None else 0

    def visit(child: ci.Cursor, parent: ci.Cursor, _data) -> int:
        # One walk of the tree in libclang (`CXChildVisit_Recurse`), each cursor seen in the order a recursion
        # over `get_children` sees it; the subtrees outside the regions are skipped (`CXChildVisit_Continue`).
        # Called for every cursor of the regions: the offsets come from the extent's encoding where they can.
        try:
            ext = extent_of(child)
            s = ext.begin_int_data - base
            e = ext.end_int_data - base
            if fast[0] and 0 <= s <= size and 0 <= e <= size and (not fast[1] or raw_offsets(ext) is not None):
                k = in_regions(starts, e) - 1
                if k < 0 or ends[k] < s:
                    return 1
                kind = child._kind_id
                if not no_marks and FIRST_EXPR <= kind <= LAST_EXPR:
                    k = bisect.bisect_left(marks, s)
                    if k == last_mark or marks[k] >= e:
                        return 1  # an expression with no mark: nothing recorded can be inside
            else:
                where = place(child, ext, parent._kind_id == TOP)
                if where is None:
                    return 1
                s = where[0]
                kind = child._kind_id
            if kind == VAR or kind == PARM or kind == FIELD:
                child._tu = tu
                decls.add(decl_offset(child), child)
            elif kind == CALL:
                child._tu = tu
                calls.add(s, child)  # the callee name is the first token of a plain call's extent
            return 2
        except BaseException as exc:  # noqa: BLE001 - raised again below, out of libclang's frames
            failed.append(exc)
            return 0

    lib.clang_visitChildren(tu.cursor, ci.callbacks["cursor_visit"](visit), None)
    if failed:
        raise failed[0]
    return out
