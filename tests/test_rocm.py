"""ROCm targeting: version detection and the installed header layout."""


import pytest

from hipport import rocm
from hipport.convert import ConvertOptions, convert_source


@pytest.fixture
def fake_rocm(tmp_path, monkeypatch):
    root = tmp_path / "include"
    (root / "hip").mkdir(parents=True)
    (root / "hip" / "hip_version.h").write_text("#define HIP_VERSION_MAJOR 5\n#define HIP_VERSION_MINOR 4\n")
    monkeypatch.setattr(rocm, "include_roots", lambda: [root])
    rocm.detect_installed.cache_clear()
    rocm.installed_header_layout.cache_clear()
    yield root
    rocm.detect_installed.cache_clear()
    rocm.installed_header_layout.cache_clear()


def test_version_comes_from_hip_version_h(fake_rocm):
    assert rocm.detect_installed() == (5, 4)


def test_flat_library_header_is_used_when_only_it_is_installed(fake_rocm, rules):
    (fake_rocm / "hipblas.h").write_text("")
    (fake_rocm / "hiprand").mkdir()
    (fake_rocm / "hiprand" / "hiprand.h").write_text("")
    src = b"#include <cublas_v2.h>\n#include <curand.h>\n#include <cusparse.h>\n"
    out = convert_source(src, rules, ConvertOptions(rocm_version=(5, 4))).after
    assert out == b"#include <hipblas.h>\n#include <hiprand/hiprand.h>\n#include <hipsparse/hipsparse.h>\n"


def test_parse_rocm_version():
    assert rocm.parse_rocm_version("6.2") == (6, 2)
    assert rocm.parse_rocm_version("6.2.1") == (6, 2)
    with pytest.raises(rocm.VersionError):
        rocm.parse_rocm_version("six")
