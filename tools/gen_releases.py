#!/usr/bin/env python3
"""Write rules/rocm/releases.toml: what each ROCm release's headers have, read from the real header trees.

    python3 tools/gen_releases.py [--check] [--tree "RELEASE=INCLUDE|SOURCE" ...]

Without `--tree` it reads the four trees of DEFAULT_TREES: Debian 12's HIP 5.2 (`apt-get install libamdhip64-dev
libhiprand-dev libhipsparse-dev librocsparse-dev librocprim-dev`), ../shared/rocm-6.2.2, and the real ROCm 6.4.3 and
7.2.4 of ../shared/tools/rocm_chroot.sh (`.ci/run` installs all four). Run it after a toolchain changes and commit
the result. `--check` compares instead of writing (exit 1 on a difference): tests/test_releases.py does that.

For each release it records
- the library folders present (`hip`, `hipblas`, `hipcub` ...): a claim about a name is made only for a release
  whose tree has that name's library;
- the headers of those libraries (relative paths) where the set differs between releases;
- the API names in code (not comments, strings, or `#if` conditions) that some releases have and others lack:
  names starting with `hip`/`HIP`/`roc`/`ROC`/`__` and the names the rename tables write;
- how the warp `*_sync` built-ins are enabled (absent / opt-in with a macro / on by default, with the macro that
  turns them off), read from the `#if` around their declarations;
- the parameter counts of API functions whose declared arity differs between releases;
- which of CUDA's cooperative-groups names (CG_PROBES: members such as `meta_group_rank`, free functions such as
  `binary_partition`, the collectives) HIP's cooperative-groups headers (`hip/*cooperative_groups*`) declare in
  code, every probed name listed with the releases that have it (an empty list: none of them).

Only differences are written: a name every release has needs no entry, which keeps the file small.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "rocm" / "releases.toml"

# The include folders (or flat headers, `hipblas.h`) of the HIP libraries; the folder name is the library.
LIBRARIES = ("hip", "hipblas", "hipblaslt", "hipcub", "hipfft", "hiprand", "hipsolver", "hipsparse", "hipsparselt",
             "rocprim", "rocrand", "rocblas", "rocfft", "rocsolver", "rocsparse", "rocthrust", "rocwmma", "rccl",
             "miopen", "hiptensor")
HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".inl", ".cuh")
SYNC_PROBE = "__shfl_down_sync"
# CUDA's cooperative-groups API beyond the block, the grid and `tiled_partition` (CUDA Programming Guide,
# "Cooperative Groups"): members, partitions, collectives and their operators, asynchronous copies.
CG_PROBES = ("meta_group_rank", "meta_group_size", "num_threads", "thread_rank", "dim_threads", "group_index",
             "thread_index", "binary_partition", "labeled_partition", "coalesced_threads", "tiled_partition",
             "this_thread_block", "this_grid", "this_multi_grid", "block_tile_memory", "invoke_one",
             "invoke_one_broadcast", "match_any", "match_all", "ballot", "any", "all", "reduce", "inclusive_scan",
             "exclusive_scan", "plus", "less", "greater", "bit_and", "bit_or", "bit_xor", "memcpy_async", "wait",
             "wait_prior", "sync", "barrier_arrive", "barrier_wait")
SHARED = ROOT.parent / "shared"
DEFAULT_TREES = (
    "5.2=/usr/include|Debian 12 libamdhip64-dev 5.2.3 and its library packages",
    f"6.2={SHARED / 'rocm-6.2.2' / 'include'}|ROCm 6.2.2 headers (../shared/rocm-6.2.2)",
    "6.4=/opt/rocm64-root/usr/include|ROCm 6.4.3 (../shared/tools/rocm_chroot.sh 6.4)",
    "7.2=/opt/rocm7-root/usr/include|ROCm 7.2.4 (../shared/tools/rocm_chroot.sh 7)",
)

_COMMENT_OR_STRING = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_IDENT = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]*")
_API = re.compile(r"^(?:hip|HIP|roc|ROC|__[A-Za-z])")
_CONDITIONAL = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|undef|error|warning|pragma|line)\b")
_DECL = re.compile(rb"(?:[\w*&>]\s+|[*&]\s*)\b((?:hip|roc)[A-Za-z0-9_]*)\s*\(")


def blank(match: re.Match) -> bytes:
    """A comment or string made spaces, its newlines kept so line numbers and directives stay."""
    return re.sub(rb"[^\n]", b" ", match.group(0))


def code_of(path: Path) -> bytes:
    data = path.read_bytes().replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
    return _COMMENT_OR_STRING.sub(blank, data)


def library_of(rel: str) -> str | None:
    """The library of a header path: its folder (`hipblas/hipblas.h`), a library's side folder
    (`hipblas-common/hipblas-common.h`, which hipBLAS includes from 6.4 on), or a flat file's stem."""
    top = rel.split("/", 1)[0]
    if "/" not in rel:
        top = top.rsplit(".", 1)[0].split("_", 1)[0]
    top = top.split("-", 1)[0]
    if top == "thrust":
        return "rocthrust"
    return top if top in LIBRARIES else None


def headers_of(include: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for entry in sorted(include.iterdir()):
        if entry.is_dir() and library_of(entry.name + "/x") is not None:
            for p in sorted(entry.rglob("*")):
                # The NVIDIA platform's headers are not what an AMD build compiles.
                if p.suffix in HEADER_SUFFIXES and p.is_file() and not {"nvidia_detail", "nvcc_detail"} & set(p.parts):
                    found[p.relative_to(include).as_posix()] = p
        elif entry.is_file() and entry.suffix in HEADER_SUFFIXES and library_of(entry.name) is not None:
            found[entry.name] = entry
    return found


def conditions_at(code: bytes, offset: int) -> list[str]:
    """The `#if` conditions open at ``offset`` of ``code``, outermost first (`#else` marks its branch `!(...)`)."""
    stack: list[str] = []
    for m in re.finditer(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b([^\n]*)", code[:offset], re.M):
        kind, rest = m.group(1).decode(), m.group(2).decode().strip()
        if kind in ("if", "ifdef", "ifndef"):
            stack.append({"if": rest, "ifdef": f"defined({rest})", "ifndef": f"!defined({rest})"}[kind])
        elif kind in ("elif", "else") and stack:
            stack[-1] = f"!({stack[-1]})" + (f" && ({rest})" if kind == "elif" else "")
        elif kind == "endif" and stack:
            stack.pop()
    return stack


def scan_tree(include: Path, wanted_extra: frozenset[str]) -> dict:
    headers = headers_of(include)
    names: dict[str, set[str]] = {}  # name -> libraries whose headers have it
    arity: dict[str, set[int]] = {}
    sync = {"state": "absent", "macro": ""}
    cg: set[str] = set()
    for rel, path in headers.items():
        lib = library_of(rel)
        code = code_of(path)
        lines = [ln for ln in code.split(b"\n") if not _CONDITIONAL.match(ln)]
        body = b"\n".join(lines)
        if rel.startswith("hip/") and "cooperative_groups" in rel:
            cg.update(w for w in (m.group(0).decode("latin-1") for m in _IDENT.finditer(body)) if w in CG_PROBES)
        for m in _IDENT.finditer(body):
            word = m.group(0).decode("latin-1")
            if _API.match(word) or word in wanted_extra:
                names.setdefault(word, set()).add(lib)
        for m in _DECL.finditer(body):
            count = _params(body, m.end())
            if count is not None:
                arity.setdefault(m.group(1).decode(), set()).add(count)
        if lib == "hip" and sync["state"] == "absent":
            decl = re.search(rb"\b" + SYNC_PROBE.encode() + rb"\s*\(", code)
            if decl:
                conds = conditions_at(code, decl.start())
                sync = {"state": "default", "macro": ""}
                for cond in conds:
                    on = re.fullmatch(r"defined\(\s*(HIP_ENABLE_WARP_SYNC_BUILTINS)\s*\)|(HIP_ENABLE_WARP_SYNC_BUILTINS)",
                                      cond.strip())
                    off = re.search(r"!\s*defined\s*\(?\s*(HIP_DISABLE_WARP_SYNC_BUILTINS)", cond)
                    if on:
                        sync = {"state": "opt-in", "macro": on.group(1) or on.group(2)}
                    elif off:
                        sync = {"state": "default", "macro": off.group(1)}
    return {"headers": set(headers), "names": names, "arity": arity, "sync": sync, "cooperative_groups": cg,
            "libraries": sorted({library_of(r) for r in headers} - {None})}


def _params(code: bytes, start: int) -> int | None:
    """Parameters of the declaration whose `(` ends at ``start``, if `)` is followed by `;`, `{` or an
    attribute (a declaration, not a call); `(void)` and `()` count 0."""
    depth, k, commas, nonblank = 1, start, 0, False
    n = len(code)
    while k < n and depth:
        c = code[k:k + 1]
        if c in b"([{<" and c != b"<":
            depth += 1
        elif c in b")]}":
            depth -= 1
        elif c == b"," and depth == 1:
            commas += 1
        elif c == b";" and depth == 1:
            return None
        if depth and not c.isspace():
            nonblank = True
        k += 1
    if depth:
        return None
    inner = code[start:k - 1].strip()
    tail = code[k:k + 80].lstrip()
    if not re.match(rb"(;|\{|__attribute__|noexcept|const\b|HIP_|__HIP|DEPRECATED|__host__|__device__)", tail):
        return None
    if not inner or inner == b"void":
        return 0
    return commas + 1 if nonblank else 0


def table_targets() -> frozenset[str]:
    """The HIP and ROC names the rename tables write, whatever their prefix (`make_half2`, `atomicAdd`)."""
    import tomllib

    out: set[str] = set()
    for path in sorted((ROOT / "rules" / "mappings").glob("*.toml")):
        data = tomllib.loads(path.read_text())
        for entry in data.get("names", {}).values():
            if isinstance(entry, dict):
                out.update(v for k, v in entry.items() if k in ("hip", "roc") and isinstance(v, str))
    return frozenset(re.sub(r"\W.*", "", n) for n in out if n)


def render(trees: list[tuple[str, str, dict]]) -> str:
    releases = [r for r, _, _ in trees]
    out = ["# What each ROCm release's headers have, where releases differ. Generated by tools/gen_releases.py from",
           "# the real header trees named in each [release.X] `source`; do not edit: rerun the script.",
           "# A name or header listed here exists in exactly the releases given; one not listed is in all of them",
           "# or in none. A release says nothing of a library its tree lacks (`libraries`).", ""]
    for release, source, data in trees:
        out += [f'[release."{release}"]', f'source = "{source}"',
                "libraries = [" + ", ".join(f'"{x}"' for x in data["libraries"]) + "]",
                f'sync_builtins = "{data["sync"]["state"]}"', f'sync_macro = "{data["sync"]["macro"]}"', ""]

    def varying(sets: dict[str, set[str]], lib_of) -> list[tuple[str, list[str]]]:
        rows = []
        for key in sorted(set().union(*[s for s in sets.values()])):
            lib = lib_of(key)
            judged = [r for r, _, d in trees if lib in d["libraries"]]
            have = [r for r in judged if key in sets[r]]
            if have and have != judged:
                rows.append((key, have))
        return rows

    header_sets = {r: d["headers"] for r, _, d in trees}
    out.append("[headers]")
    out += [f'"{h}" = [{", ".join(repr(r).replace(chr(39), chr(34)) for r in have)}]'
            for h, have in varying(header_sets, library_of)]
    out.append("")
    # A name's library: the first library (in release order) whose headers have it.
    lib_of_name: dict[str, str] = {}
    for _, _, d in trees:
        for name, libs in d["names"].items():
            lib_of_name.setdefault(name, sorted(libs)[0])
    name_sets = {r: set(d["names"]) for r, _, d in trees}
    by_library: dict[str, list[str]] = {}
    for n, have in varying(name_sets, lambda n: lib_of_name[n]):
        by_library.setdefault(lib_of_name[n], []).append(f'{n} = [{", ".join(chr(34) + r + chr(34) for r in have)}]')
    for lib in sorted(by_library):
        out.append(f"[names.{lib}]")
        out += by_library[lib]
        out.append("")
    out.append("# Parameter counts of API functions whose declarations differ in arity between releases.")
    out.append("[arity]")
    for name in sorted(set().union(*[d["arity"] for _, _, d in trees])):
        per = {r: sorted(d["arity"][name]) for r, _, d in trees if name in d["arity"]}
        if len(per) > 1 and len({tuple(v) for v in per.values()}) > 1:
            out.append(f"{name} = {{ " + ", ".join(f'"{r}" = {v}' for r, v in per.items()) + " }")
    out.append("")
    out.append("# CUDA's cooperative-groups names and the releases whose HIP cooperative-groups headers declare them.")
    out.append("[cooperative_groups]")
    for name in CG_PROBES:
        have = [r for r, _, d in trees if name in d["cooperative_groups"]]
        out.append(f'{name} = [{", ".join(chr(34) + r + chr(34) for r in have)}]')
    out.append("")
    del releases
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", metavar="RELEASE=INCLUDE|SOURCE",
                    help="a release, its include folder, and words naming where the tree came from "
                         "(default: DEFAULT_TREES)")
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    ap.add_argument("--output", type=Path, default=OUT)
    args = ap.parse_args(argv)
    extra = table_targets()
    trees = []
    for spec in args.tree or DEFAULT_TREES:
        release, rest = spec.split("=", 1)
        include, _, source = rest.partition("|")
        folder = Path(include)
        if not (folder / "hip" / "hip_runtime.h").is_file():
            print(f"gen_releases: `{folder}` holds no hip/hip_runtime.h; name a release's include folder",
                  file=sys.stderr)
            return 2
        trees.append((release, source or str(folder), scan_tree(folder, extra)))
    trees.sort(key=lambda t: tuple(int(x) for x in t[0].split(".")))
    text = render(trees)
    if args.check:
        current = args.output.read_text() if args.output.is_file() else ""
        if current != text:
            print(f"gen_releases: {args.output} differs from what the trees give; rerun without --check",
                  file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
