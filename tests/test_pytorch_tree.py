"""Files PyTorch's extension build hipifies (hipport/pytorch_tree.py): their CUDA names are renamed by that build, so
`single-source` does not report the ones hipport's rename tables map (issue 34, exllamav2: 59 false findings).
The fixture tests/fixtures/false-alarms/pytorch-extension.cu is one such file; here the same file without PyTorch's
header, the tree (a `setup.py` above the audited folder, headers compiled within the extension's files) and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hipport.platforms import tree_facts
from hipport.pytorch_data import setup_builds_extension

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_audit_false_alarms import FIXTURES, findings_of  # noqa: E402

FIXTURE = FIXTURES / "pytorch-extension.cu"
SETUP = b"""from setuptools import setup
from torch.utils import cpp_extension

setup(name="ext", ext_modules=[cpp_extension.CUDAExtension("ext", ["src/ext/cuda/graph.cu"])],
      cmdclass={"build_ext": cpp_extension.BuildExtension})
"""
GRAPH_CUH = b"""#pragma once
#include <cuda_runtime.h>
#if defined(USE_ROCM)
#define cudaGraphNode_t hipGraphNode_t
#endif
void begin_capture(cudaStream_t stream);
"""
GRAPH_CU = b"""#include "graph.cuh"
void begin_capture(cudaStream_t stream)
{
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
}
"""


def test_the_same_file_outside_a_pytorch_extension_is_reported():
    src = FIXTURE.read_bytes().replace(b"#include <ATen/cuda/CUDAContext.h>\n", b"\n")
    lines = {f.line for f in findings_of(FIXTURE, src) if f.rule_id == "single-source"}
    # the headers, cudaGraph_t, cudaStream_t, the stream capture, cublasSetStream, cublasHgemm and its arguments
    assert lines == {5, 6, 7, 14, 15, 17, 19, 20, 21, 24, 28, 29, 30}


def test_setup_py_importing_cpp_extension_from_torch_utils_builds_an_extension():
    assert setup_builds_extension(SETUP) is not None
    assert setup_builds_extension(b"from torch.utils.cpp_extension import CUDAExtension\nCUDAExtension('x', [])\n")
    assert setup_builds_extension(b"from mylib import cpp_extension\ncpp_extension.CUDAExtension('x', [])\n") is None
    assert setup_builds_extension(b"# from torch.utils import cpp_extension\nCUDAExtension('x', [])\n") is None


def _tree(root: Path, setup: bytes | None = SETUP) -> Path:
    cuda = root / "src" / "ext" / "cuda"
    cuda.mkdir(parents=True)
    if setup is not None:
        (root / "setup.py").write_bytes(setup)
    (cuda / "graph.cuh").write_bytes(GRAPH_CUH)
    (cuda / "bench.cu").write_bytes(GRAPH_CU)  # not a source setup.py names, and includes the header too
    (cuda / "only.cuh").write_bytes(GRAPH_CUH.replace(b"begin_capture", b"only"))
    (cuda / "graph.cu").write_bytes(GRAPH_CU + b'#include "only.cuh"\n')
    return cuda


def test_a_setup_py_above_the_audited_folder_names_its_sources(tmp_path):
    cuda = _tree(tmp_path)
    facts = tree_facts(sorted(cuda.iterdir()))
    assert "setup.py` builds it with PyTorch's `CUDAExtension`" in facts.pytorch_build(str(cuda / "graph.cu"))
    assert facts.pytorch_build(str(cuda / "only.cuh")).startswith("included by `graph.cu`")
    assert facts.pytorch_build(str(cuda / "bench.cu")) == ""   # built some other way
    assert facts.pytorch_build(str(cuda / "graph.cuh")) == ""  # bench.cu includes it too


def test_a_header_of_pytorch_makes_its_includers_the_extensions(tmp_path):
    cuda = _tree(tmp_path, setup=None)
    (cuda / "util.cuh").write_bytes(b"#pragma once\n#include <torch/extension.h>\n")
    (cuda / "bench.cu").write_bytes(b'#include "util.cuh"\n' + GRAPH_CU)
    facts = tree_facts(sorted(cuda.iterdir()))
    assert facts.pytorch_build(str(cuda / "util.cuh")).startswith("includes `torch/extension.h`")
    assert facts.pytorch_build(str(cuda / "bench.cu")).startswith("includes `util.cuh`")
    assert facts.pytorch_build(str(cuda / "graph.cu")) == ""   # nothing says PyTorch builds it
    assert facts.pytorch_build(str(cuda / "graph.cuh")) == ""  # graph.cu includes it too


def _audit_single_source(root: Path, folder: str) -> dict[str, set[int]]:
    (root / "amd.toml").write_text('defines = ["USE_ROCM"]\n')
    r = subprocess.run([sys.executable, "-m", "hipport", "audit", "--no-cache", "--config", "amd.toml",
                        "--rocm-version", "7.2", "--report", "json", "-o", "-", "--fail-on", "error", folder],
                       capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stderr
    out: dict[str, set[int]] = {}
    for f in json.loads(r.stdout)["files"]:
        for x in f["findings"]:
            if x["rule"] == "single-source":
                out.setdefault(Path(f["path"]).name, set()).add(x["location"]["line"])
    return out


def test_cli_audit_of_a_subfolder_leaves_what_the_extension_build_renames(tmp_path):
    _tree(tmp_path)
    found = _audit_single_source(tmp_path, "src/ext/cuda")
    assert "graph.cu" not in found and "only.cuh" not in found
    assert found["bench.cu"] == {2, 4} and found["graph.cuh"] == {2, 6}
    (tmp_path / "setup.py").unlink()
    found = _audit_single_source(tmp_path, "src/ext/cuda")
    assert found["graph.cu"] == {2, 4} and found["only.cuh"] == {2, 6}


def test_a_setup_py_glob_over_a_folder_names_its_files(tmp_path):
    cuda = _tree(tmp_path, setup=SETUP.replace(b'["src/ext/cuda/graph.cu"]', b'glob.glob("src/ext/cuda/*.cu")'))
    facts = tree_facts(sorted(cuda.iterdir()))
    assert facts.pytorch_build(str(cuda / "graph.cu")) and facts.pytorch_build(str(cuda / "bench.cu"))
    assert facts.pytorch_build(str(cuda / "graph.cuh"))  # the glob's folder (the pattern is not matched)
    cuda.rename(tmp_path / "src" / "ext" / "kernels")  # a folder the glob does not name
    facts = tree_facts(sorted((tmp_path / "src" / "ext" / "kernels").iterdir()))
    assert not facts.pytorch
