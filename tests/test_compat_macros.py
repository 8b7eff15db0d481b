"""A compatibility macro onto HIP's correct form is no name collision; a wrong one is reported at the macro."""

from pathlib import Path

from hipport.audit import audit_source

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "audit" / "compat-macro-wrong.cu"


def test_right_mappings_collide_with_nothing_and_wrong_ones_name_their_uses():
    findings = audit_source(FIXTURE.read_bytes(), FIXTURE.name)
    assert not [f for f in findings if f.rule_id == "hip-name-collision"]
    wrong = {f.line: f.message for f in findings if f.rule_id == "compat-macro-wrong"}
    assert sorted(wrong) == [5, 6, 7, 8]
    assert "used at line 17" in wrong[5] and "the mask `mask`" in wrong[5]
    assert "width of 32" in wrong[6] and "`unsigned`" in wrong[7] and "used at line 21" in wrong[8]


def test_a_redefinition_that_maps_onto_nothing_still_collides():
    src = b"#define __shfl_xor(v, l) my_xor(v, l)\n#define __ballot_sync(m, p) my_vote(p)\n"
    assert [f.rule_id for f in audit_source(src, "c.cu")] == ["hip-name-collision"] * 2


def test_a_compat_header_that_drops_the_mask_silences_the_mask_at_its_calls(tmp_path):
    from hipport.audit import AuditOptions
    (tmp_path / "compat.h").write_text("#pragma once\n#ifdef USE_ROCM\n"
                                       "#define __shfl_xor_sync(mask, var, lane) __shfl_xor(var, lane)\n#endif\n")
    src = (b'#include "compat.h"\n__device__ float f(float v) {\n'
           b"  return __shfl_xor_sync(0xffffffff, v, 1) + __shfl_down_sync(0xffffffff, v, 1);\n}\n")
    (tmp_path / "k.cu").write_bytes(src)
    rules = lambda o: sorted({f.rule_id for f in audit_source(src, str(tmp_path / "k.cu"), o)  # noqa: E731
                              if f.line == 3})
    # `__shfl_down_sync` has no macro: its mask still counts; on the line both are reported once per rule
    assert "warp-mask-32bit" in rules(AuditOptions(defines=("USE_ROCM",)))
    src_xor = src.replace(b" + __shfl_down_sync(0xffffffff, v, 1)", b"")
    (tmp_path / "k.cu").write_bytes(src_xor)
    found = [f.rule_id for f in audit_source(src_xor, str(tmp_path / "k.cu"), AuditOptions(defines=("USE_ROCM",)))]
    assert "warp-mask-32bit" not in found and "warp-builtin-unavailable" not in found
    # a branch that hands the mask on, which the AMD build may compile when no switch is known (a project's own
    # name: `USE_ROCM` is one of rules/platforms.toml's AMD switches, taken as defined): it reaches HIP
    (tmp_path / "compat.h").write_text("#pragma once\n#ifdef MYLIB_AMD\n"
                                       "#define __shfl_xor_sync(mask, var, lane) __shfl_xor(var, lane)\n#else\n"
                                       "#define __shfl_xor_sync(mask, var, lane) my_xor(mask, var, lane)\n#endif\n")
    assert "warp-mask-32bit" in [f.rule_id for f in audit_source(src_xor, str(tmp_path / "k.cu"), AuditOptions())]
    assert "warp-mask-32bit" not in [f.rule_id for f in audit_source(src_xor, str(tmp_path / "k.cu"),
                                                                    AuditOptions(defines=("MYLIB_AMD",)))]


def test_a_local_named_warpsize_shadows_and_collides_with_nothing():
    # faiss's host code asks the device: `int warpSize = getWarpSizeCurrentDevice();` inside a function
    src = (b"int getWarpSizeCurrentDevice();\nint threads_for(int rows) {\n"
           b"  int warpSize = getWarpSizeCurrentDevice();\n  return rows * warpSize;\n}\nint warpSize = 32;\n")
    assert [f.line for f in audit_source(src, "h.cpp") if f.rule_id == "hip-name-collision"] == [6]


def test_a_header_sees_the_compat_macros_its_includers_define_before_it(tmp_path):
    from hipport.audit import AuditOptions
    (tmp_path / "compat.cuh").write_text("#define __shfl_xor_sync(mask, var, lane) __shfl_xor(var, lane)\n")
    (tmp_path / "k.cu").write_text('#include "compat.cuh"\n#include "k.cuh"\n')
    header = b"__device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1); }\n"
    (tmp_path / "k.cuh").write_bytes(header)
    rules = lambda: [f.rule_id for f in audit_source(header, str(tmp_path / "k.cuh"), AuditOptions())]  # noqa: E731
    assert "warp-mask-32bit" not in rules()
    (tmp_path / "other.cu").write_text('#include "k.cuh"\n')   # one includer without the macro: the mask counts
    assert "warp-mask-32bit" in rules()


def test_a_mapping_two_includes_down_silences_the_mask(tmp_path):
    """ggml's layout: `argmax.cu` includes `common.cuh`, which includes `vendors/hip.h` under the project's switch;
    the mask-free mapping there is what the AMD build compiles (31 false errors on ggml before)."""
    from hipport.audit import AuditOptions
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "hip.h").write_text(
        "#pragma once\n#define __shfl_xor_sync(mask, var, laneMask, width) __shfl_xor(var, laneMask, width)\n")
    (tmp_path / "common.cuh").write_text('#pragma once\n#if defined(PROJ_USE_HIP)\n#include "vendors/hip.h"\n'
                                         "#else\n#include <cuda_runtime.h>\n#endif\n")
    src = (b'#include "common.cuh"\n__device__ float f(float v) {\n'
           b"  return __shfl_xor_sync(0xffffffff, v, 1, 32);\n}\n")
    (tmp_path / "k.cu").write_bytes(src)
    hip = [f.rule_id for f in audit_source(src, str(tmp_path / "k.cu"), AuditOptions(defines=("PROJ_USE_HIP",)))]
    assert "warp-mask-32bit" not in hip
    # the look-alike: the same tree whose vendor header maps no `*_sync` name keeps the finding
    (tmp_path / "vendors" / "hip.h").write_text("#pragma once\n#define PROJ_SHFL 1\n")
    plain = [f.rule_id for f in audit_source(src, str(tmp_path / "k.cu"), AuditOptions(defines=("PROJ_USE_HIP",)))]
    assert "warp-mask-32bit" in plain
