"""Tests for tools/gen_rules.py and the rules/mappings/*.toml it generates.

Self-contained on purpose: no import of the hipport package, and the table checks use their own
parser so that a generator bug cannot hide behind itself.
"""
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from needs import need

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO / "tools" / "gen_rules.py"
MAPPINGS = REPO / "rules" / "mappings"
# HIPIFY's tables live outside the repository (../shared/hipify-tables); .ci/run fetches them and names them here.
TABLES = Path(os.environ.get("HIPPORT_HIPIFY_TABLES") or REPO.parent / "shared" / "hipify-tables")
FAMILIES = ("runtime", "driver", "device", "rtc", "cublas", "curand", "cufft", "cusparse",
            "cusolver", "cudnn", "cub", "cucomplex")
# rules/README.md's documented keys, plus roc_changed, which the ROC tables fill in.
KEYS = {"hip", "roc", "hip_added", "hip_deprecated", "hip_changed", "hip_removed", "experimental",
        "roc_added", "roc_deprecated", "roc_changed", "roc_removed",
        "cuda_added", "cuda_deprecated", "cuda_changed", "cuda_removed", "section"}
VERSION_KEYS = {k for k in KEYS if k.endswith(("_added", "_deprecated", "_changed", "_removed"))}
VERSION_KEYS.add("experimental")
VERSION = re.compile(r"\d+\.\d+(\.\d+)?")
# The generator's documented stand-in when a [DEPRECATED]/[REMOVED] section gives no version.
UNKNOWN_OK = {"cuda_deprecated", "cuda_removed"}


@pytest.fixture
def tables():
    need(TABLES.is_dir(), f"HIPIFY's tables ({TABLES})",
         "git clone ROCm/HIPIFY at 014177bc and set HIPPORT_HIPIFY_TABLES to its docs/tables")
    return TABLES


def load(family):
    with open(MAPPINGS / f"{family}.toml", "rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def names():
    return {family: load(family)["names"] for family in FAMILIES}


# --- (a) the committed files are exactly what the generator makes ---------------------------------

@pytest.mark.usefixtures("tables")
def test_regenerated_files_are_byte_identical(tmp_path):
    run = subprocess.run([sys.executable, str(GENERATOR), "--tables", str(TABLES), "--out", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in MAPPINGS.glob("*.toml"))
    for new in tmp_path.iterdir():
        assert new.read_bytes() == (MAPPINGS / new.name).read_bytes(), f"{new.name} is stale: regenerate"


@pytest.mark.usefixtures("tables")
def test_check_mode_passes_on_committed_files():
    run = subprocess.run([sys.executable, str(GENERATOR), "--tables", str(TABLES), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


# --- (b) every table row made it, read with an independent parser ---------------------------------

TABLE_FAMILY = {"CUDA_Runtime": "runtime", "CUDA_Driver": "driver", "CUDA_Device": "device",
                "CUDA_RTC": "rtc", "CUBLAS": "cublas", "CURAND": "curand", "CUFFT": "cufft",
                "CUSPARSE": "cusparse", "CUSOLVER": "cusolver", "CUDNN": "cudnn", "CUB": "cub",
                "cuComplex": "cucomplex"}


def table_rows(path):
    """Yield (cuda, hip, roc) per row; hip/roc are None when the table has no such column."""
    columns = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if line.startswith("|**"):
            labels = [c.strip("*") for c in cells]
            columns = {"hip": labels.index("HIP") if "HIP" in labels else None,
                       "roc": next((i for i, c in enumerate(labels) if c in ("ROC", "MIOPEN")), None)}
        elif line.startswith("|`"):
            yield cells[0], *(None if columns[k] is None else cells[columns[k]] for k in ("hip", "roc"))


def table_files():
    return sorted(p for p in TABLES.glob("*.md") if p.name != "README.md")


@pytest.mark.usefixtures("tables")
def test_all_22_tables_map_to_a_family():
    files = table_files()
    assert len(files) == 22
    for path in files:
        assert path.name.split("_API")[0] in TABLE_FAMILY, path.name


@pytest.mark.usefixtures("tables")
def test_every_table_row_is_generated_with_its_targets(names):
    for path in table_files():
        generated = names[TABLE_FAMILY[path.name.split("_API")[0]]]
        seen = set()
        for cuda, hip, roc in table_rows(path):
            if cuda in seen:  # a repeated row: the generator keeps the first one
                continue
            seen.add(cuda)
            assert cuda in generated, f"{path.name}: {cuda} missing"
            for key, want in (("hip", hip), ("roc", roc)):
                if want is not None:
                    assert generated[cuda].get(key, "") == want, f"{path.name}: {cuda} {key}"
        assert len(seen) == len(generated), f"{path.name}: generated file has extra names"


# --- (c) the files follow the documented format ---------------------------------------------------

def test_exactly_the_twelve_families_are_generated():
    assert sorted(p.stem for p in MAPPINGS.glob("*.toml")) == sorted(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_file_follows_the_format(family):
    text = (MAPPINGS / f"{family}.toml").read_text(encoding="utf-8")
    assert text.startswith("# Generated by tools/gen_rules.py from HIPIFY's published API tables")
    data = load(family)
    assert data["family"]["name"] == family
    assert data["family"]["title"] and data["family"]["sources"]
    assert list(data["names"]) == sorted(data["names"])
    for name, entry in data["names"].items():
        assert isinstance(entry, dict) and entry.keys() <= KEYS, name
        assert entry.get("section"), name
        for key in entry.keys() & VERSION_KEYS:
            ok = VERSION.fullmatch(entry[key]) or (key in UNKNOWN_OK and entry[key] == "unknown")
            assert ok, f"{name}.{key} = {entry[key]!r}"
        for key in entry.keys() & {"hip", "roc"}:
            assert entry[key].strip() == entry[key] != "", name


# --- (d) known facts -------------------------------------------------------------------------------

@pytest.mark.parametrize("family, cuda, expected", [
    ("runtime", "cudaMalloc", {"hip": "hipMalloc", "hip_added": "1.5.0"}),
    ("runtime", "cudaMallocHost", {"hip": "hipHostMalloc", "hip_added": "1.6.0"}),
    ("runtime", "cudaThreadSynchronize", {"hip": "hipDeviceSynchronize", "cuda_deprecated": "10.0",
                                          "section": "Thread Management"}),
    ("runtime", "cudaDeviceFlushGPUDirectRDMAWrites", {"hip": None, "cuda_added": "11.3"}),
    ("driver", "cuMemAlloc", {"hip": "hipMalloc", "hip_added": "1.5.0"}),
    ("driver", "cuCtxAttach", {"hip": None, "cuda_deprecated": "unknown", "section": "Context Management"}),
    ("device", "__all", {"hip": "__all", "hip_added": "1.6.0"}),
    ("device", "__shfl_down_sync", {"hip": None}),
    ("rtc", "nvrtcCompileProgram", {"hip": "hiprtcCompileProgram", "cuda_changed": "8.0"}),
    ("cublas", "cublasSgemm", {"hip": "hipblasSgemm", "roc": "rocblas_sgemm", "roc_added": "1.5.0"}),
    ("curand", "curandCreateGenerator", {"hip": "hiprandCreateGenerator", "roc": "rocrand_create_generator"}),
    ("curand", "curandStateSobol32", {"hip": "hiprandStateSobol32",
                                      "roc": "rocrand_device::sobol32_engine<false>"}),
    ("cusparse", "cusparseCreate", {"hip": "hipsparseCreate", "roc": "rocsparse_create_handle"}),
    ("cucomplex", "cuCaddf", {"hip": "hipCaddf"}),
    ("cub", "CUB_NAMESPACE_BEGIN", {"hip": "BEGIN_HIPCUB_NAMESPACE", "hip_added": "2.5.0"}),
])
def test_known_facts(names, family, cuda, expected):
    # None means the key must be absent: hip None is an unsupported name.
    entry = names[family][cuda]
    assert {k: entry.get(k) for k in expected} == expected


# --- generator behaviour on small synthetic tables --------------------------------------------------

HEADER = ("|**CUDA**|**A**|**D**|**C**|**R**|**HIP**|**A**|**D**|**C**|**R**|**E**|\n"
          "|:--|:-:|:-:|:-:|:-:|:--|:-:|:-:|:-:|:-:|:-:|\n")


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_rules", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_repeated_name_keeps_first_row_and_notes_it(gen, tmp_path):
    (tmp_path / "X_supported_by_HIP.md").write_text(
        "## **1. One [DEPRECATED]**\n" + HEADER + "|`cuA`| | | | |`hipA`|1.0| | | | |\n"
        "## **2. Two**\n" + HEADER + "|`cuA`|9.0| | | |`hipB`|2.0| | | | |\n", encoding="utf-8")
    notes = []
    entries = gen.build_family(tmp_path, ["X_supported_by_HIP.md"], "x", notes)
    assert entries == {"cuA": {"hip": "hipA", "hip_added": "1.0", "cuda_added": "9.0",
                               "cuda_deprecated": "unknown", "section": "One"}}
    assert any("hipB" in n for n in notes)


def test_disagreeing_sources_stop_the_run(gen, tmp_path):
    (tmp_path / "a.md").write_text("## **1. S**\n" + HEADER + "|`cuA`| | | | |`hipA`| | | | | |\n")
    (tmp_path / "b.md").write_text("## **1. S**\n" + HEADER + "|`cuA`| | | | |`hipZ`| | | | | |\n")
    with pytest.raises(SystemExit, match="disagrees"):
        gen.build_family(tmp_path, ["a.md", "b.md"], "x", [])
