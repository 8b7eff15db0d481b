"""Build a benchmark corpus from examples/cuda: many files, varied, at least 200,000 lines.

The mix follows what a large CUDA tree holds: kernels and host code with renamed identifiers (each copy gets its
own names, so nothing is shared between files), headers with no CUDA at all, and a few very large generated
files. `--scale 10` builds the 10x corpus."""

from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "cuda"


def _plain_header(rng: random.Random, index: int) -> str:
    lines = [f"// Utility header {index}: plain C++, no accelerator code.", f"#pragma once",
             "#include <vector>", "#include <string>", f"namespace util{index} {{"]
    for k in range(rng.randint(60, 240)):
        lines.append(f"inline int helper_{index}_{k}(int a, int b) {{ return a * {k} + b; }}  // step {k}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def build(out: Path, scale: int = 1, seed: int = 7) -> tuple[int, int]:
    rng = random.Random(seed)
    if out.exists():
        shutil.rmtree(out)
    sources = [p for p in sorted(EXAMPLES.rglob("*")) if p.is_file() and p.suffix in (".cu", ".cuh", ".h", ".cpp")]
    files = lines = 0
    for copy in range(85 * scale):
        folder = out / f"module{copy:04d}"
        for src in sources:
            text = src.read_text(encoding="utf-8")
            # Distinct identifiers per copy, as in a real tree where every module has its own names.
            text = text.replace("kernel", f"kernel_m{copy}").replace("main(", f"main_{copy}(")
            target = folder / src.relative_to(EXAMPLES)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            files += 1
            lines += text.count("\n")
        for h in range(2):
            text = _plain_header(rng, copy * 10 + h)
            (folder / f"util_{h}.hpp").write_text(text, encoding="utf-8")
            files += 1
            lines += text.count("\n")
    # A few very large generated translation units (tables of kernels, as code generators emit).
    big_body = "".join((EXAMPLES / "vector_add" / "vector_add.cu").read_text().replace("main(", f"main_big{i}(")
                       for i in range(40))
    for b in range(10 * scale):
        path = out / "generated" / f"big_{b}.cu"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(big_body, encoding="utf-8")
        files += 1
        lines += big_body.count("\n")
    return files, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args()
    files, lines = build(args.out, args.scale)
    print(f"{args.out}: {files} files, {lines} lines")


if __name__ == "__main__":
    main()
