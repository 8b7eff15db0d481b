"""Which files of a run PyTorch's extension build compiles, for `platforms.tree_facts`.

On ROCm, `CUDAExtension`/`BuildExtension` and `cpp_extension.load` run PyTorch's hipify over an extension's sources
and the project headers they include before compiling them, so a CUDA name PyTorch maps is renamed by the build
itself (rules/pytorch.toml). A file is taken to be built that way when

* it includes one of PyTorch's extension headers (`[detect] includes`: `torch/extension.h`, `ATen/cuda/...`),
  itself or through a header of the run it includes with quotes: only PyTorch's build gives it those headers;
* a `setup.py` in its folder or one above it builds with PyTorch's extension machinery and names the file (a run on
  `ext/cuda` of a project whose `setup.py` lists `ext/cuda/graph.cu`) or one of its folders, as a whole string or
  before a glob (`glob("ext/cuda/*.cu")`);
* or it is a header that only such files include (compiled within them, hipified with them)."""

from __future__ import annotations

import os

from hipport.pytorch_data import load_pytorch, setup_builds_extension

# How many folders up from a source a `setup.py` is looked for (a repository's root is rarely further).
_MAX_UP = 8
_MAX_SETUP_BYTES = 1_000_000


def extension_files(torch_includes: dict, live_by: dict, live: dict, other: set) -> dict:
    """file -> why PyTorch's extension build compiles it. ``torch_includes``: file -> the PyTorch extension header it
    includes outside the other platform's branches ("" for none); ``live_by``: header -> the files including it
    (with quotes, outside the other platform's branches); ``live``: file -> those headers; ``other``: the files only
    the other platform's branches include."""
    out: dict[str, str] = {}
    for path, header in torch_includes.items():
        if header and path not in other:
            out[path] = f"includes `{header}`, which only PyTorch's extension build provides"
    # Up: a file that includes such a header sees PyTorch's headers through it.
    work = list(out)
    while work:
        header = work.pop()
        for f in live_by.get(header, ()):
            if f not in out and f not in other:
                out[f] = f"includes `{os.path.basename(header)}`, which includes PyTorch's extension headers"
                work.append(f)
    setups: dict[str, tuple[str, bytes] | None] = {}
    for path in live:
        if path not in out and path not in other:
            why = _named_by_setup(path, setups)
            if why:
                out[path] = why
    # Down: a header every includer of which PyTorch's build compiles is hipified with them.
    changed = True
    while changed:
        changed = False
        for header, includers in live_by.items():
            if header in out or header in other or header not in live:
                continue
            users = [f for f in includers if f not in other]
            if users and all(f in out for f in users):
                out[header] = f"included by `{os.path.basename(sorted(users)[0])}`, which PyTorch's extension build compiles"
                changed = True
    return out


def _named_by_setup(path: str, setups: dict) -> str:
    """Why a `setup.py` at or above ``path`` builds it as a PyTorch extension's source, or ""."""
    folder = os.path.dirname(path)
    for _ in range(_MAX_UP):
        found = setups.get(folder, 0)
        if found == 0:
            found = setups[folder] = _read_setup(folder)
        if found is not None:
            word, text = found
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            # the file, or one of its folders as a whole string or before a glob (`glob("csrc/*.cu")`)
            folders = [rel.rsplit("/", k)[0] for k in range(1, rel.count("/") + 1)]
            named = [rel] + [f"{q}{d}{end}" for d in folders for q in "\"'" for end in (q, "/" + q)] + \
                [f"{d}/*" for d in folders]
            if any(n.encode() in text for n in named):
                return f"`{os.path.join(folder, 'setup.py')}` builds it with PyTorch's `{word}`"
            return ""
        if os.path.isdir(os.path.join(folder, ".git")):
            return ""
        up = os.path.dirname(folder)
        if up == folder:
            return ""
        folder = up
    return ""


def _read_setup(folder: str) -> tuple[str, bytes] | None:
    """(the extension word, the text) of ``folder``'s `setup.py` when it builds a PyTorch extension, else None."""
    try:
        with open(os.path.join(folder, "setup.py"), "rb") as fh:
            text = fh.read(_MAX_SETUP_BYTES)
    except OSError:
        return None
    found = setup_builds_extension(text)
    return (found[1], text) if found is not None else None


def is_extension_header(header: str) -> bool:
    return load_pytorch().is_extension_header(header)
