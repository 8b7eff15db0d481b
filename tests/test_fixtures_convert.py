"""One fixture per rule family in tests/fixtures/convert: `X.cu` converts to `X.hip.cu`, converting that again
changes nothing, `X.noop.cu` (look-alike names in comments, strings, members and longer identifiers) comes out
unchanged, and the HIP forms of the families Debian's HIP packages cover compile."""

from pathlib import Path

import pytest
from hipcc import require_hipcc, syntax_check

from hipport.convert import ConvertOptions, convert_source

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "convert"
INPUTS = sorted(p for p in FIXTURES.glob("*.cu") if not p.name.endswith((".hip.cu", ".noop.cu")))
NOOPS = sorted(FIXTURES.glob("*.noop.cu"))
OPTIONS = ConvertOptions(rocm_version=(6, 3))
# hipBLAS, hipFFT, hipSOLVER, hipCUB and MIOpen are not packaged by Debian; bf16 and a missing local header
# are left for the user on purpose.
COMPILED = ["runtime", "driver", "rtc", "curand", "cusparse", "cucomplex"]


@pytest.mark.parametrize("source", INPUTS, ids=[p.stem for p in INPUTS])
def test_family_fixture(rules, source):
    expected = source.with_name(source.stem + ".hip.cu").read_bytes()
    assert convert_source(source.read_bytes(), rules, OPTIONS).after == expected
    assert convert_source(expected, rules, OPTIONS).after == expected


@pytest.mark.parametrize("source", NOOPS, ids=[p.stem for p in NOOPS])
def test_family_noop(rules, source):
    src = source.read_bytes()
    result = convert_source(src, rules, OPTIONS)
    assert result.after == src
    assert not result.findings


def test_cudnn_is_reported_use_by_use(rules):
    src = (FIXTURES / "cudnn.cu").read_bytes()
    result = convert_source(src, rules, OPTIONS)
    assert result.after == src
    assert {f.subject for f in result.findings} >= {"cudnn.h", "cudnnCreate", "cudnnSetTensor4dDescriptor"}


@pytest.mark.parametrize("family", COMPILED)
def test_family_hip_form_compiles(family):
    require_hipcc()
    r = syntax_check(FIXTURES / f"{family}.hip.cu")
    assert r.returncode == 0, r.stderr[-3000:]
