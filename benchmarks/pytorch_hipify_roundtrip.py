"""Does `hipport convert` fight PyTorch's own build of an extension on ROCm? (issue 33, docs/convert.md "PyTorch
extensions"). `CUDAExtension` on ROCm runs PyTorch's hipify over the extension's sources before compiling them; this
runs that hipify (extension mode, the sources named as `cpp_extension.py` names them) over an extension tree as it is
and over hipport's conversion of it, and prints every line where the two hipified trees differ. No line beyond
hipport's own choices (where `<hip/hip_runtime.h>` goes, a library header's path) means PyTorch's build compiles the
converted tree as it would have compiled the original.

PyTorch's hipify is not part of hipport: point the script at a folder holding its `hipify` package (`torch/utils` of
an installed PyTorch), at a PyTorch wheel (only `torch/utils/hipify/` is read out of it, into a temporary folder), or
at ROCm's standalone `hipify_torch` checkout (its v1 or v2 mappings).

    python benchmarks/pytorch_hipify_roundtrip.py --torch-wheel /path/torch-2.14.1-...whl
    python benchmarks/pytorch_hipify_roundtrip.py --hipify-dir /usr/lib/python3/site-packages/torch/utils
    python benchmarks/pytorch_hipify_roundtrip.py --hipify-torch /path/hipify_torch --v1
    python benchmarks/pytorch_hipify_roundtrip.py --tree my_extension --sources csrc/a.cpp csrc/b.cu
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "pytorch" / "input"


def load_hipify(args, scratch: Path):
    """PyTorch's `hipify_python` module, from wherever the arguments say."""
    if args.torch_wheel:
        with zipfile.ZipFile(args.torch_wheel) as wheel:
            names = [n for n in wheel.namelist() if n.startswith("torch/utils/hipify/")]
            if not names:
                sys.exit(f"{args.torch_wheel}: no torch/utils/hipify in it")
            wheel.extractall(scratch / "wheel", names)
        sys.path.insert(0, str(scratch / "wheel" / "torch" / "utils"))
        return importlib.import_module("hipify.hipify_python")
    if args.hipify_dir:
        sys.path.insert(0, str(args.hipify_dir))
        return importlib.import_module("hipify.hipify_python")
    sys.path.insert(0, str(args.hipify_torch))
    return importlib.import_module("hipify_torch.hipify_python" if args.v1 else "hipify_torch.v2.hipify_python")


def hipified(module, tree: Path, sources: list[str]) -> dict[str, list[str]]:
    """Each source's hipified text, as `CUDAExtension` has PyTorch write it (out of place, beside the source)."""
    files = [str((tree / s).resolve()) for s in sources]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        result = module.hipify(project_directory=str(tree), output_directory=str(tree), header_include_dirs=[],
                               includes=[str(tree / "*")], extra_files=files, show_detailed=False,
                               is_pytorch_extension=True, hipify_extra_files_only=True, show_progress=False)
    out = {}
    for rel, path in zip(sources, files):
        entry = result.get(path)
        target = getattr(entry, "hipified_path", None) if not isinstance(entry, dict) else entry.get("hipified_path")
        out[rel] = Path(target or path).read_text().splitlines()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--torch-wheel", type=Path, help="a PyTorch wheel; its torch/utils/hipify is used")
    where.add_argument("--hipify-dir", type=Path, help="a folder holding PyTorch's `hipify` package")
    where.add_argument("--hipify-torch", type=Path, help="a checkout of ROCm's hipify_torch")
    parser.add_argument("--v1", action="store_true", help="with --hipify-torch: its v1 mappings (default v2)")
    parser.add_argument("--tree", type=Path, default=FIXTURE, help="the extension (default: the test fixture)")
    parser.add_argument("--sources", nargs="+", default=["csrc/binding.cpp", "csrc/scale.cu"],
                        help="its sources, as setup.py names them")
    parser.add_argument("--rocm-version", default="7.2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        module = load_hipify(args, scratch)
        original, converted = scratch / "original", scratch / "converted"
        shutil.copytree(args.tree, original)
        r = subprocess.run([sys.executable, "-m", "hipport", "convert", "--no-cache", "-q", "--rocm-version",
                            args.rocm_version, str(args.tree), "-o", str(converted)], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout + r.stderr, file=sys.stderr)
            return r.returncode
        before, after = hipified(module, original, args.sources), hipified(module, converted, args.sources)
        version = getattr(sys.modules.get(module.__name__.rsplit(".", 1)[0] + ".version"), "__version__", None)
        label = f"PyTorch's hipify {version}" if version else f"hipify_torch {'v1' if args.v1 else 'v2'}"
        print(f"{label}: {len(args.sources)} sources")
        differing = 0
        for rel in args.sources:
            diff = [d for d in difflib.unified_diff(before[rel], after[rel], f"{rel} (original)", f"{rel} (converted)",
                                                    n=0, lineterm="") if d[:1] in "+-" and d[:3] not in ("+++", "---")]
            differing += len(diff)
            print(f"{rel}: {len(before[rel])} lines hipified, {len(diff)} differing")
            for d in diff:
                print(f"  {d}")
        print(f"total: {differing} differing lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
