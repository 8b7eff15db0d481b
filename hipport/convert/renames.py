"""The rename pass: every CUDA name a rule knows becomes its HIP name, unless the name is the user's own
(`usernames.py` decides that, for this pass, the argument rewrites and the summary); names HIP lacks are
reported."""

from __future__ import annotations

import re

from hipport import directives as dirs
from hipport import rocm
from hipport.convert.context import ConversionContext
from hipport.convert.includes import has_device_code
from hipport.convert.usernames import CUDA_PREFIX
from hipport.model import Finding
from hipport.semantic import parse_version

# `cuda_column` is a user's snake_case name; CUDA's own API is camelCase (`cudaX`, `cuX`) or upper case.
_CUDA_LOOKING = re.compile(rb"^(?:cuda[A-Z0-9]|cu[A-Z]|CU_|CUDA_|__nv)")


def rename_identifiers(ctx: ConversionContext) -> None:
    tokens, rules, roc = ctx.tokens, ctx.rules, ctx.options.roc
    skip = ctx.skip
    starts, ends, src = tokens.starts, tokens.ends, ctx.src
    names, namespaces = rules.names, rules.namespaces
    n = len(tokens)
    claimed = ctx.claimed
    target_rocm = ctx.options.rocm_version
    users = ctx.user_names  # members, names in the user's namespaces or scopes, the file's own declarations
    roc_types = _roc_library_types(ctx) if roc else {}
    hip_families = _roc_kept_families(ctx) if roc else frozenset()
    for i in ctx.candidates:
        if skip[i] or i in claimed or users.is_users(i):
            continue
        word = src[starts[i] : ends[i]]
        prev = tokens.text(i - 1) if i else b""
        name = word.decode("latin-1")
        nxt = tokens.text(i + 1) if i + 1 < n else b""
        if name in namespaces and (nxt == b"::" or prev == b"namespace"):
            ctx.convert(starts[i], ends[i], namespaces[name].encode(), name, "namespace")
            continue
        if nxt == b"::" and prev == b"::" and i >= 2:  # `thrust::cuda::par`: a namespace known only inside another
            qualified = f"{tokens.text(i - 2).decode('latin-1')}::{name}"
            if qualified in namespaces:
                ctx.convert(starts[i], ends[i], namespaces[qualified].rsplit("::", 1)[-1].encode(), qualified,
                            "namespace")
                continue
        if name in roc_types:
            roc_name, host_only = roc_types[name]
            if not host_only or not has_device_code(ctx):
                ctx.convert(starts[i], ends[i], roc_name.encode(), name, "roc")
                continue
            if f"roc-kept:{name}" not in ctx.once:
                ctx.once.add(f"roc-kept:{name}")
                ctx.finding("roc-name-kept", "info", starts[i],
                            f"`{name}` stays: `{roc_name}` is a storage type without `{name}`'s device arithmetic "
                            f"and this file has device code; cast the pointers you pass to the ROC library "
                            f"(`({roc_name}*)p`)", subject=name)
        rule = names.get(name)
        if rule is None:
            if _CUDA_LOOKING.match(word):
                line, col = ctx.lines.line_col(starts[i])
                ctx.result.unknown.append((name, line, col))
            continue
        family_roc = roc and rule.family not in hip_families
        target = rule.target(family_roc)
        if not family_roc:
            target = ctx.rules.for_release("names", name, target_rocm) or target
            if target is not None:  # the name the targeted release spells it by (no hipBLAS `_v2` on 7.0+)
                target = ctx.semantic.forward.current(target, target_rocm)
        if target is not None and rule.family in ctx.rules.family_notes and not (roc and rule.roc):
            # cuDNN's "HIP" names are hipDNN's, which ROCm does not ship: without a MIOpen name the use is reported
            # under --roc too (hipify-clang: unsupported in ROC), never renamed to hipDNN.
            ctx.result.findings.append(_unsupported(ctx, rule, starts[i]))
            continue
        if target is None and f"shim:{name}" in ctx.once:
            continue  # defined in the file by the stand-ins pass (`__vadd4`)
        if target is None and (name in ctx.defines or ctx.platform.defines(name)):
            continue  # the project defines it itself, here or in a header it includes (a compat header's `__vsub4`)
        if target is None and _declared_as_cuda(name, target_rocm):
            continue  # HIP declares it by CUDA's name in the targeted release (`make_half2`, `__isnanf`)
        if target is None:
            # Names from the device tables that are ordinary words (`saturate`, `umax`): only a call to one that
            # the file does not declare (declared ones are the user's, above) is worth reporting as unsupported.
            if not CUDA_PREFIX.match(name) and nxt != b"(":
                continue
            later = ctx.rules.later_release(name, target_rocm)
            if later is not None:  # `__nv_bfloat162` before 6.0: a later release has it (as `__hip_bfloat162`)
                v = ".".join(map(str, later[0]))
                ctx.finding("needs-newer-rocm", "warning", starts[i],
                            f"`{later[1]}` is in ROCm {v} and later, not in {'.'.join(map(str, target_rocm))}: "
                            f"`{name}` left as it is; target ROCm {v} or port it by hand", subject=name)
                continue
            ctx.result.findings.append(_unsupported(ctx, rule, starts[i]))
        elif target != name:
            lacks = None if f"shim:{target}" in ctx.once else _release_lacks(target, name, target_rocm)
            if lacks is not None:
                # Never write a name the targeted release lacks: the CUDA name stays where a person can see it.
                ctx.finding("needs-newer-rocm", "warning", starts[i], lacks, subject=name)
                continue
            ctx.convert(starts[i], ends[i], target.encode(), name, rule.family)
            added = rule.versions.get("roc_added" if family_roc and rule.roc else "hip_added")
            if added and parse_version(added)[:2] > target_rocm and not _installed_has(target, target_rocm) \
                    and f"shim:{target}" not in ctx.once:
                ctx.finding("needs-newer-rocm", "warning", starts[i],
                             f"`{target}` needs ROCm {added} or newer (targeting "
                             f"{'.'.join(map(str, target_rocm))}); it is renamed anyway", subject=name)
    ctx.defines |= users.declared  # for the summary: the tree's own names are never "unknown"


def _unsupported(ctx: ConversionContext, rule, offset: int) -> Finding:
    line, col = ctx.lines.line_col(offset)
    what = "removed" if "cuda_removed" in rule.versions else "unsupported"
    message = f"`{rule.cuda}` has no HIP equivalent ({rule.family}); port it by hand"
    if rule.family in ctx.rules.family_notes:
        message = f"`{rule.cuda}`: {ctx.rules.family_notes[rule.family]}"
    if ctx.options.roc and rule.hip and not rule.roc:
        message = f"`{rule.cuda}` has no ROC equivalent; `{rule.hip}` is the HIP name"
        if rule.family in ctx.rules.family_notes:  # the HIP name is hipDNN's, which ROCm does not ship
            message = f"`{rule.cuda}` has no MIOpen equivalent ({rule.family}); port it by hand"
    return Finding(f"{what}-api", "warning", line, col, message, subject=rule.cuda)


def _release_lacks(target: str, name: str, target_rocm: tuple) -> str | None:
    """Why ``target`` cannot be written for ``target_rocm``, where the release data read from the real headers says
    that release lacks it (rules/rocm/releases.toml); None where it has it or the data says nothing."""
    from hipport.releases import release_data

    data = release_data()
    if data.has_name(target, target_rocm) is not False or _installed_has(target, target_rocm):
        return None
    v = lambda r: ".".join(map(str, r))  # noqa: E731
    answered_by = data.data_release(target_rocm)
    having = data.releases_with(target)
    later = [r for r in having if r > answered_by]
    if later:
        return (f"`{target}` is in ROCm {v(later[0])} and later, not in {v(target_rocm)} (its headers): `{name}` "
                f"left as it is; target ROCm {v(later[0])} or port it by hand")
    return (f"`{target}` is gone from ROCm {v(target_rocm)} (its headers; last in {v(having[-1])}): `{name}` left "
            f"as it is; port it by hand")


def _declared_as_cuda(name: str, target_rocm: tuple) -> bool:
    """rules/rocm/same_names.toml: HIPIFY's tables give ``name`` no HIP name, yet the release's headers declare it."""
    from hipport.releases import same_names

    return same_names().declares(name, target_rocm)


def _installed_has(name: str, target_rocm: tuple) -> bool:
    return rocm.detect_installed() == target_rocm[:2] and name in rocm.installed_names()


def _included(ctx: ConversionContext) -> set[str]:
    return {t[2].decode("latin-1") for d in ctx.structure.directives
            if (t := dirs.include_target(ctx.tokens, d)) is not None}


def _roc_kept_families(ctx: ConversionContext) -> frozenset:
    """For --roc: the families that keep their HIP names because the file includes a header of `[keep_hip]`
    (cuBLASLt code: hipBLASLt takes hipBLAS's enums), reported once."""
    keep = ctx.semantic.roc_keep_hip or {}
    families: set[str] = set()
    for header in sorted(_included(ctx) & set(keep)):
        fams, why = keep[header]
        families |= fams
        if f"roc-keep:{header}" not in ctx.once:
            ctx.once.add(f"roc-keep:{header}")
            ctx.finding("roc-name-kept", "info", 0, f"--roc: this file includes `{header}`, so "
                        f"{', '.join(sorted(fams))} names keep their HIP forms: {why}", subject=header)
    return frozenset(families)


def _roc_library_types(ctx: ConversionContext) -> dict:
    """For --roc: the `[types.LIBRARY]` names of rules/roc.toml for the libraries whose CUDA headers the file
    includes (rocBLAS's complex and half types in rocBLAS code, rocSPARSE's in rocSPARSE code); for a name two
    libraries give, the one listed first in `[libraries]` wins."""
    sem = ctx.semantic
    included = set()
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if target is not None:
            included.add(target[2].decode("latin-1"))
    found: dict = {}
    for header, lib in sem.roc_libraries.items():
        if header in included:
            for name, entry in sem.roc_types.get(lib, {}).items():
                found.setdefault(name, entry)
    return found

