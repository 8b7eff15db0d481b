"""`hipport rules`: list the rule families, show one mapping, import an installed hipify-perl."""

from __future__ import annotations

import difflib
import fnmatch
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import click

from hipport.cli.options import fail
from hipport.hipify_perl import (
    HEADERS_FILE,
    NAMES_FILE,
    UNSUPPORTED_SUBS,
    hipify_perl_dirs,
    read_hipify_perl,
    script_for,
    to_rule_files,
)
from hipport.rules import NameRule, RuleError, RuleSet, builtin_rules_dir, load_rules
from hipport.semantic import NEVER, Semantic, load_semantic

EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE = 0, 1, 2
_RULE_ID = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$")
_UNSUPPORTED_LABELS = {"unsupported": "by HIP and ROC", "unsupported-hip": "by HIP only",
                       "unsupported-roc": "by ROC only", "unsupported-device": "device functions"}
_VERSION_LABELS = (("hip_added", "added in HIP"), ("hip_changed", "changed in HIP"),
                   ("hip_deprecated", "deprecated in HIP"), ("hip_removed", "removed in HIP"))
_ROC_LABELS = (("roc_added", "added in ROCm"), ("roc_changed", "changed in ROCm"),
               ("roc_deprecated", "deprecated in ROCm"), ("roc_removed", "removed in ROCm"))
_CUDA_LABELS = (("cuda_added", "added in CUDA"), ("cuda_changed", "changed in CUDA"),
                ("cuda_deprecated", "deprecated in CUDA"), ("cuda_removed", "removed in CUDA"))



def _source_options(fn):
    """--rules / --hipify-perl / --no-hipify-perl / --config: the rule sources `hipport convert` would use."""
    fn = click.option("--config", "config_path", type=click.Path(path_type=Path),
                      help="Project settings file whose `rules` and `hipify-perl` settings apply (default: the "
                           "nearest .hipport.toml, or pyproject.toml with [tool.hipport]).")(fn)
    fn = click.option("--no-hipify-perl", is_flag=True,
                      help="Do not look for or use an installed hipify-perl.")(fn)
    fn = click.option("--hipify-perl", "hipify_perl", type=click.Path(path_type=Path), metavar="PATH",
                      help="hipify-perl script whose renames override the bundled ones (default: "
                           "$HIPPORT_HIPIFY_PERL, then /opt/rocm/bin/hipify-perl, then hipify-perl on PATH; "
                           "HIPPORT_HIPIFY_PERL=off stops the search).")(fn)
    fn = click.option("--rules", "rule_dirs", multiple=True, type=click.Path(path_type=Path), metavar="DIR",
                      help="Extra rule directory whose entries win over the built-in ones (repeatable).")(fn)
    return fn


@dataclass
class _Sources:
    rules: RuleSet
    builtin: RuleSet
    layers: list[tuple[str, Path]] = field(default_factory=list)  # (label, directory), in load order


def _load(rule_dirs, hipify_perl, no_hipify_perl, config_path) -> _Sources:
    from hipport.config import ConfigError, find_config, load_config

    try:
        config = load_config(config_path if config_path is not None else find_config())
        hp = hipify_perl_dirs(hipify_perl, no_hipify_perl, config)
        layers = [("hipify-perl", d) for d in hp]
        layers += [("--rules", Path(d)) for d in (*config.paths("rules"), *rule_dirs)]
        rules = load_rules([d for _, d in layers])
        builtin = load_rules([]) if layers else rules
    except (RuleError, ConfigError) as exc:
        fail(str(exc))
    return _Sources(rules, builtin, layers)


def _read_layer(directory: Path) -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(directory.glob("**/*.toml")):
        try:
            with path.open("rb") as fh:
                out.append((path, tomllib.load(fh)))
        except (OSError, tomllib.TOMLDecodeError):
            continue  # load_rules has already validated these; a file gone since is simply not described
    return out


@click.group("rules", invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@_source_options
@click.pass_context
def rules(ctx, rule_dirs, hipify_perl, no_hipify_perl, config_path):
    """List the rule families and their counts; see the subcommands to show or import rules.

    Without a subcommand, lists the built-in families (CUDA names each maps, how many have a HIP name), the
    header table, and each extra rule directory in the order it is loaded: the installed hipify-perl's
    rules first, then --rules directories (and the project's `rules` setting), each winning over the ones before.

    \b
    Exit status:
      0  listed
      2  usage error, malformed rule file, or a hipify-perl that cannot be read
    """
    ctx.ensure_object(dict)
    ctx.obj["sources"] = (rule_dirs, hipify_perl, no_hipify_perl, config_path)
    if ctx.invoked_subcommand is not None:
        return
    src = _load(rule_dirs, hipify_perl, no_hipify_perl, config_path)
    _list(src)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _family_table(names: dict[str, NameRule]) -> dict[str, tuple[int, int]]:
    total: Counter = Counter()
    renamed: Counter = Counter()
    for rule in names.values():
        total[rule.family] += 1
        if rule.hip:
            renamed[rule.family] += 1
    return {fam: (total[fam], renamed[fam]) for fam in total}


def _list(src: _Sources) -> None:
    echo = click.echo
    builtin = src.builtin
    echo(f"built-in rules ({builtin_rules_dir()}):")
    table = _family_table(builtin.names)
    order = list(builtin.family_counts) + [f for f in table if f not in builtin.family_counts]
    for fam in order:
        if fam not in table:
            continue
        total, renamed = table[fam]
        note = "  (reported, not renamed: see `hipport rules show`)" if fam in builtin.family_notes else ""
        echo(f"  {fam:<12} {total:>6,} names, {renamed:>6,} with a HIP name{note}")
    echo(f"  {'headers':<12} {len(builtin.headers):>6,} CUDA headers, {_plural(len(builtin.namespaces), 'namespace')}")
    for label, directory in src.layers:
        _list_layer(label, directory, builtin)
    rules = src.rules
    renamed = sum(1 for r in rules.names.values() if r.hip)
    echo(f"in use: {len(rules.names):,} CUDA names ({renamed:,} with a HIP name, "
         f"{len(rules.names) - renamed:,} reported as unsupported), {len(rules.headers):,} CUDA headers")


def _list_layer(label: str, directory: Path, builtin: RuleSet) -> None:
    echo = click.echo
    files = _read_layer(directory)
    where = f" (rules cached in {directory})" if label == "hipify-perl" else ""
    echo(f"{_layer_name(label, directory, files)}{where}:")
    for path, data in sorted(files, key=lambda pd: ("headers" in pd[1], pd[0])):
        names = data.get("names") if isinstance(data.get("names"), dict) else {}
        headers = data.get("headers") if isinstance(data.get("headers"), dict) else {}
        fam = data.get("family", {}).get("name", path.stem) if isinstance(data.get("family"), dict) else path.stem
        if names:
            with_hip = sum(1 for e in names.values() if isinstance(e, dict) and "hip" in e)
            known = [n for n in names if n in builtin.names]
            changed = sum(1 for n in known if isinstance(names[n], dict) and "hip" in names[n]
                          and names[n]["hip"] != builtin.names[n].hip)
            echo(f"  {fam:<12} {len(names):>6,} names, {with_hip:>6,} with a HIP name; {changed:,} change a "
                 f"built-in target, {len(names) - len(known):,} new")
        if headers:
            new = sum(1 for h in headers if h not in builtin.headers)
            kept = " (built-in headers are kept)" if "import" in data else ""
            echo(f"  {'headers':<12} {len(headers):>6,} CUDA headers, {new:,} new{kept}")
        if not names and not headers:
            echo(f"  {path.name}: no names or headers")


@rules.command("show")
@click.argument("name")
@_source_options
@click.pass_context
def show(ctx, name, rule_dirs, hipify_perl, no_hipify_perl, config_path):
    """Show what hipport does with NAME: a CUDA name, a CUDA header, a namespace, or an audit rule id.

    For a CUDA name: its family and section, HIP and ROC names with the versions that added, changed,
    deprecated or removed them, and where the mapping comes from when it is not the built-in one. Rewrites
    beyond a rename are shown too (warp *_sync built-ins by ROCm release, HIP_SYMBOL and kernel-pointer
    arguments, calls that change with their argument count, __CUDA_ARCH__ and CUDA header-guard macros in
    preprocessor conditions), and the audit rules whose notes name NAME. An unknown NAME prints the closest
    known names.

    \b
    Exit status:
      0  NAME is known
      1  NAME is not known (close matches are suggested)
      2  usage error or malformed rule file
    """
    g_dirs, g_hp, g_no_hp, g_config = (ctx.obj or {}).get("sources", ((), None, False, None))
    src = _load((*g_dirs, *rule_dirs), hipify_perl or g_hp, no_hipify_perl or g_no_hp, config_path or g_config)
    rules = src.rules
    try:
        sem = load_semantic()
    except RuleError as exc:
        fail(str(exc))
    semantic = _semantic_lines(sem, name)
    mentions = _audit_mentions(name)
    if name in rules.names:
        _show_name(src, rules.names[name], semantic)
    elif name in rules.headers:
        _show_header(src, name)
        for line in semantic[1:]:  # a stand-in that replaces the header's include
            click.echo(line)
    elif name in rules.namespaces:
        where = f"`{name}::` is renamed" if "::" in name else f"`{name}::` and `namespace {name}` are renamed"
        click.echo(f"{name}  (namespace)\n  HIP: {rules.namespaces[name]}  ({where})")
    elif semantic:
        for line in semantic:
            click.echo(line)
    elif _pytorch_lines(name):
        for line in _pytorch_lines(name):
            click.echo(line)
    else:
        text, hint = _describe_audit_rule(name)
        if text is not None:
            click.echo(text, nl=not text.endswith("\n"))
            return
        if mentions:
            click.echo(f"{name}  (no rename or rewrite rule)")
            click.echo("  convert:      no rule: left as it is")
        else:
            _not_found(name, rules, sem, hint)
    if mentions:
        click.echo(f"  audit:        rules that name it: {', '.join(mentions)} (`hipport rules show RULE-ID`)")


def _pytorch_lines(name: str) -> list[str]:
    """What convert does with a name or header of PyTorch's own GPU API (rules/pytorch.toml), or []."""
    from hipport.pytorch_data import load_pytorch

    try:
        data = load_pytorch()
    except RuleError as exc:
        fail(str(exc))
    head = f"{name}  (PyTorch extension, rules/pytorch.toml)"
    left = "  convert:      left as it is for PyTorch's build-time hipify, reported (pytorch-name)"
    entry = data.names.get(name) or data.macros.get(name) or data.header(name)
    if entry is not None and entry.kind == "header" and not entry.v1:
        entry = None
    if entry is not None:
        where = {"name": f" behind `{'::`, `'.join(entry.qualifiers)}::`", "macro": "", "header": " where included"}
        lines = [head, left + where[entry.kind] + (" in an extension's files" if entry.extension_only else "")]
        lines.append(f"  hipify v1:    {entry.v1}  (PyTorch 2.10 and older)" + (f"; {entry.v1_note}" if entry.v1_note
                                                                                  else ""))
        lines.append(f"  hipify v2:    {entry.v2}  (PyTorch 2.11 on)")
        if entry.why:
            lines.append(f"  what it is:   {entry.why}")
        return lines
    if name in data.namespaces:
        v1, why = data.namespaces[name]
        return [head, left, f"  hipify v1:    {v1}  (PyTorch 2.10 and older)", f"  hipify v2:    {name}  (PyTorch 2.11 on)",
                f"  what it is:   {why}"]
    kept = data.kept_entry(name)
    if kept is not None:
        lines = [head, f"  convert:      left as it is, not reported: {kept.why}"]
        if kept.roc:
            lines.append(f"  --roc:        a warning (pytorch-roc-handle): {kept.roc}")
        return lines
    return []


def _not_found(name: str, rules: RuleSet, sem: Semantic, hint: str | None) -> None:
    # One name can be in several tables (a rename and a call rewrite): suggested once.
    choices = list(dict.fromkeys([*rules.names, *rules.headers, *rules.namespaces, *_semantic_names(sem)]))
    close = difflib.get_close_matches(name, choices, n=5, cutoff=0.75)
    lowered = [c for c in choices if c.lower() == name.lower() and c not in close]
    close = lowered + close
    if close:
        fail(f"no rule for `{name}`; did you mean {', '.join(close[:5])}?", EXIT_NOT_FOUND)
    if hint and _RULE_ID.match(name):
        fail(hint, EXIT_NOT_FOUND)
    fail(f"no rule for `{name}` ({len(rules.names):,} CUDA names and {len(rules.headers):,} headers known; "
         f"nothing close)", EXIT_NOT_FOUND)


def _describe_audit_rule(rule_id: str) -> tuple[str | None, str | None]:
    """(description, None) when the audit knows ``rule_id``; else (None, its hint). A malformed hazard file is
    a one-line error, not "no such rule"."""
    from hipport.audit import describe_rule
    from hipport.audit.hazards import HazardError

    try:
        text = describe_rule(rule_id)
    except KeyError as exc:
        return None, str(exc.args[0]) if exc.args else None
    except HazardError as exc:
        fail(str(exc))
    if not text:
        return None, None
    return str(text), None


_CODE_SPAN = re.compile(r"`([^`]+)`")


def _audit_mentions(name: str) -> list[str]:
    """Audit rules whose summary or note names ``name`` in a code span: `__syncwarp`, or a pattern such as
    `*_sync` or `__shfl*`."""
    from hipport.audit import load_hazards
    from hipport.audit.hazards import HazardError

    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return []
    word = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")

    def names_it(span: str) -> bool:
        if word.search(span):
            return True
        return "*" in span and re.fullmatch(r"[\w*]+", span) is not None and fnmatch.fnmatchcase(name, span)

    try:
        hazards = load_hazards()
    except HazardError as exc:
        fail(str(exc))
    return sorted(h.id for h in hazards.values()
                  if any(names_it(span) for span in _CODE_SPAN.findall(f"{h.summary}\n{h.note}")))


def _semantic_names(sem: Semantic) -> list[str]:
    return [*sem.warp_sync, *sem.symbol_args, *sem.kernel_args, *sem.by_arity, *sem.rewrites, *sem.defaults,
            *sem.guards,
            *sem.device_pass,
            *sem.version_macros, "HIP_SYMBOL"]


def _op_text(op) -> str:
    """One argument change in words; arguments counted from 1, as a reader counts them."""
    at, to = f"argument {op.pos + 1}", f"argument {op.to + 1}"
    if op.kind == "insert":
        return f"`{op.text}` added as {at}"
    if op.kind == "replace" and not op.text:
        known = ", ".join(f"`{a}` -> `{b}`" for a, b in op.values[:3]) + (", ..." if len(op.values) > 3 else "")
        return f"{at}: {known}; another text is kept"
    if op.kind == "replace":
        return f"{at} becomes `{op.text}`"
    if op.kind == "remove":
        return f"{at} is dropped"
    if op.kind == "move":
        what = f"arguments {op.pos + 1}-{op.pos + op.count}" if op.count > 1 else at
        return f"{what} move before {to} (or to the end)"
    if op.kind == "copy":
        what = f"arguments {op.pos + 1}-{op.pos + op.count} are" if op.count > 1 else f"{at} is"
        return f"{what} written again before {to} (or at the end)"
    return f"{at} is cast: `{op.cast_as}<{op.text}>(...)`"


def _ordinal(pos: int) -> str:
    return {0: "first", 1: "second", 2: "third", 3: "fourth", 4: "fifth"}.get(pos, f"argument {pos + 1}")


def _semantic_lines(sem: Semantic, name: str) -> list[str]:
    """What convert does with ``name`` beyond a rename, from rules/warp.toml, calls.toml and macros.toml. For a
    name in the rename tables these lines follow its mapping; for another, they are all that is shown."""
    v = lambda t: ".".join(map(str, t))  # noqa: E731
    lines: list[str] = []
    if name in sem.warp_sync:
        plain = sem.warp_sync[name]
        opt_in, enabled = v(sem.sync_opt_in), v(sem.sync_enabled)
        lines += [
            f"{name}  (warp built-in, rules/warp.toml)",
            "  convert:      depends on the targeted ROCm (--rocm-version):",
            f"                before {enabled}: `{plain}(...)`, the mask argument dropped; a mask that is not all "
            f"lanes is reported (warp-sync-mask): before {opt_in} there is no *_sync form, and from {opt_in} "
            f"until {enabled} they are undeclared without -DHIP_ENABLE_WARP_SYNC_BUILTINS",
            f"                {enabled} and later: `{name}(...)` kept; a 32-bit all-lanes mask (`0xffffffff`, `~0u`, "
            f"...) becomes `{sem.full64_spelling}`, a 64-bit one stays, any other mask is reported (warp-sync-mask): "
            f"HIP takes 64-bit masks",
        ]
    if name in sem.symbol_args:
        lines += [f"{name}  (call rewrite, rules/calls.toml)",
                  f"  convert:      the {_ordinal(sem.symbol_args[name])} argument, the device symbol, is "
                  f"wrapped: `{'HIP_SYMBOL(&sym)' if name in sem.symbol_address else 'HIP_SYMBOL(sym)'}` "
                  f"(left alone when already wrapped)"]
    if name in sem.kernel_args:
        pos, min_args = sem.kernel_args[name]
        when = f", when the call has at least {min_args} arguments" if min_args else ""
        lines += [f"{name}  (call rewrite, rules/calls.toml)",
                  f"  convert:      the {_ordinal(pos)} argument, the kernel, is cast: "
                  f"`reinterpret_cast<const void*>(kernel)`{when} (left alone when already cast)"]
    if name in sem.by_arity:
        count, hip = sem.by_arity[name]
        lines += [f"{name}  (call rewrite, rules/calls.toml)",
                  f"  convert:      a call with {count} arguments becomes `{hip}(...)`"]
    if name in sem.defaults:
        params, values = sem.defaults[name]
        lines += [f"{name}  (call rewrite, rules/calls.toml)",
                  f"  convert:      a call with fewer than {params} arguments gets the CUDA defaults HIP's declaration "
                  f"lacks (the last parameters: `{', '.join(values)}`)"]
    for rw in sem.rewrites.get(name, ()):
        mode = {"hip": "without --roc", "roc": "with --roc", "any": "with or without --roc"}[rw.mode]
        when = "".join([f", {rw.args} arguments" if rw.args is not None else "",
                        f", ROCm {'.'.join(map(str, rw.rocm_min))} and later" if rw.rocm_min else "",
                        f", before ROCm {'.'.join(map(str, rw.rocm_before))}" if rw.rocm_before else ""])
        lines += [f"{name}  (call rewrite, rules/calls.toml)",
                  f"  convert:      {mode}{when}: "
                  + ("; ".join(_op_text(op) for op in rw.ops) or "renamed only, arguments left as written")
                  + (f" (reported: {rw.note})" if rw.note else "")]
    for shim in (sem.shims or {}).values():
        if shim.include and name in (shim.name, shim.include, *shim.cuda):
            lines += [f"{name}  (stand-in for <{shim.include}>, rules/shims.toml)",
                      f"  convert:      the include of `<{shim.include}>` becomes a definition of "
                      f"{', '.join(f'`{c}`' for c in shim.cuda)} under `#if {shim.guard}`"
                      + (f", or `<{shim.hip_header}>` where HIP has it" if shim.hip_header else "")
                      + f" (shim-added); {shim.note}"]
        elif name == shim.name or name in shim.cuda:
            never = shim.hip_from >= NEVER
            when = "always (HIP has no form of it)" if never else f"when targeting a ROCm older than {v(shim.hip_from)}"
            lines += [f"{name}  (stand-in definition, rules/shims.toml)",
                      f"  convert:      {when}: a definition of `{shim.name}` is written into the file before the "
                      f"first declaration calling it, under `#if {shim.guard}` (shim-added); {shim.note}"]
    if name in (sem.location or {}):
        count, pos, flags, hip, declared = sem.location[name]
        lines += [f"{name}  (call rewrite, rules/calls.toml [location])",
                  f"  convert:      a call with {count} arguments becomes `{hip}(...)` with the device ordinal of the "
                  f"{_ordinal(pos)} argument, a cudaMemLocation"
                  + (f", the flags ({_ordinal(flags)}) dropped" if flags is not None else "")
                  + (" (only where the file shows it is a location)" if declared else "")]
    if name in sem.guards:
        lines += [f"{name}  (CUDA header-guard macro, rules/macros.toml)",
                  f"  convert:      `{sem.guards[name]}` in #if, #ifdef, #ifndef, #elif and defined(); "
                  f"left alone elsewhere"]
    if name in sem.device_pass:
        lines += [f"{name}  (device-pass macro, rules/macros.toml)",
                  f"  convert:      `{sem.device_pass[name]}` where only its presence is tested (#ifdef, #ifndef, "
                  f"defined(...)); left alone outside preprocessor conditions"]
    if name in sem.version_macros:
        lines += [f"{name}  (version macro, rules/macros.toml)",
                  f"  convert:      never rewritten; in an #if or #elif value test it is reported "
                  f"(cuda-version-macro): {sem.version_macros[name]}"]
    if name == "HIP_SYMBOL":
        users = ", ".join(f"{n} ({_ordinal(p)} argument)" for n, p in sem.symbol_args.items())
        lines += ["HIP_SYMBOL  (HIP macro written by convert, rules/calls.toml)",
                  f"  convert:      wraps the device-symbol argument of {users}"]
    # One heading (the first) and one `convert:` label; the lines of a second rule follow the first's.
    out = []
    for line in lines:
        if out and not line.startswith(" "):
            continue
        if line.startswith("  convert:") and any(o.startswith("  convert:") for o in out):
            line = " " * len("  convert:      ") + line[len("  convert:      "):]
        out.append(line)
    return out


def _versions(rule: NameRule, labels) -> str:
    return "; ".join(f"{label} {rule.versions[key]}" for key, label in labels if key in rule.versions)


def _layer_name(label: str, directory: Path, files: list[tuple[Path, dict]]) -> str:
    """`hipify-perl /opt/rocm/bin/hipify-perl` for an imported table, else `--rules DIR`."""
    source = script_for(directory) or next(
        (d["import"].get("source") for _, d in files if isinstance(d.get("import"), dict)), None)
    if source:
        return f"hipify-perl {source}"
    return f"{label} {directory}"


def _origin(src: _Sources, name: str, table: str) -> str | None:
    """The last extra layer that has ``name`` in ``table`` (or, for names, in `[versions]`), if any."""
    found = None
    for label, directory in src.layers:
        files = _read_layer(directory)
        for _, data in files:
            entries = data.get(table)
            if isinstance(entries, dict) and name in entries:
                found = _layer_name(label, directory, files)
            elif table == "names" and isinstance(data.get("versions"), dict) and name in data["versions"]:
                found = found or _layer_name(label, directory, files)
    return found


def _show_name(src: _Sources, rule: NameRule, semantic: list[str]) -> None:
    echo = click.echo
    rules = src.rules
    section = f", {rule.section}" if rule.section else ""
    echo(f"{rule.cuda}  ({rule.family}{section})")
    note = rules.family_notes.get(rule.family)
    hip_v = _versions(rule, _VERSION_LABELS)
    if rule.hip:
        echo(f"  HIP:          {rule.hip}" + (f"  ({hip_v})" if hip_v else ""))
        if rule.cuda in rules.overrides and rules.overrides[rule.cuda][0] != rule.hip:
            hipify, why = rules.overrides[rule.cuda]
            echo(f"                not HIPIFY's {hipify} (rules/overrides.toml): {why}" if hipify else
                 f"                a name HIPIFY's tables lack (rules/overrides.toml): {why}")
        if note:
            echo(f"                not renamed without --roc: {note}")
    elif semantic:
        echo("  HIP:          no plain rename (HIPIFY's table lists none); rewritten as below")
    else:
        kind = "removed from CUDA" if "cuda_removed" in rule.versions else "unsupported"
        echo(f"  HIP:          none ({kind}: reported, never renamed)" + (f"  ({hip_v})" if hip_v else ""))
    for line in semantic[1:]:
        echo(line)
    roc_v = _versions(rule, _ROC_LABELS)
    if rule.roc:
        echo(f"  ROC (--roc):  {rule.roc}" + (f"  ({roc_v})" if roc_v else ""))
    elif rule.hip:
        echo("  ROC (--roc):  none; --roc writes the HIP name")
    cuda_v = _versions(rule, _CUDA_LABELS)
    if cuda_v:
        echo(f"  CUDA:         {cuda_v}")
    if "experimental" in rule.versions:
        v = rule.versions["experimental"]
        echo(f"  experimental: {'in HIP ' + v if v != 'unknown' else 'yes (hipify-perl lists it so)'}")
    origin = _origin(src, rule.cuda, "names")
    if origin is not None:
        base = src.builtin.names.get(rule.cuda)
        if base is None:
            echo(f"  from:         {origin} (not in the built-in rules)")
        elif (base.hip, base.roc) != (rule.hip, rule.roc):
            was = f"{base.hip or 'unsupported'}" + (f", ROC {base.roc}" if base.roc else "")
            echo(f"  from:         {origin} (built-in: {was})")
        else:
            echo(f"  from:         built-in rules; {origin} agrees")


def _show_header(src: _Sources, name: str) -> None:
    echo = click.echo
    h = src.rules.headers[name]
    echo(f"{name}  (CUDA header)")
    if h.remove:
        echo("  HIP:          none: the #include is removed")
    elif h.unsupported:
        echo(f"  HIP:          none: {h.unsupported}")
    else:
        echo(f"  HIP:          {h.hip}")
    if h.roc:
        echo(f"  ROC (--roc):  {h.roc}")
    if name not in src.builtin.headers:
        origin = _origin(src, name, "headers")
        if origin is not None:
            echo(f"  from:         {origin}")


@rules.command("import-hipify-perl")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("-o", "--output-dir", type=click.Path(path_type=Path), default=Path("hipify-perl-rules"),
              metavar="DIR", help="Directory to write the rule files into (default: ./hipify-perl-rules; created "
                                  f"if missing; its {NAMES_FILE} and {HEADERS_FILE} are replaced).")
def import_hipify_perl(path, output_dir):
    """Turn the hipify-perl script at PATH into a hipport rules directory, and print what it holds.

    Reads the subst(...) lines of simpleSubstitutions (HIP names), rocSubstitutions (--roc names) and
    experimentalSubstitutions, the include substitutions (headers), the %deprecated_funcs, %removed_funcs and
    %experimental_funcs hashes, and the unsupported-function lists. Use the result with
    `hipport convert --rules DIR`: its renames override the bundled ones, while built-in families, versions and
    the header table stay. (`hipport convert` also reads an installed hipify-perl by itself; see --hipify-perl.)

    \b
    Exit status:
      0  written
      2  PATH is missing or not a hipify-perl script, or DIR cannot be written
    """
    try:
        parsed, digest = read_hipify_perl(path)
    except RuleError as exc:
        fail(str(exc))
    if output_dir.exists() and not output_dir.is_dir():
        fail(f"{output_dir}: --output-dir must be a directory, and this is a file")
    try:
        written = to_rule_files(parsed, output_dir, str(path.resolve()), digest)
    except OSError as exc:
        fail(f"{output_dir}: cannot write rule files ({exc.strerror or exc})")
    names, versions, headers = parsed.rule_entries()
    echo = click.echo
    echo(f"read {path} (sha256 {digest[:12]}...)")
    echo(f"wrote {written[0]} ({_plural(len(names), 'name')}, {_plural(len(versions), 'version-only entry')}) "
         f"and {written[1]} ({_plural(len(headers), 'header')})".replace("entrys", "entries"))
    counts = parsed.counts()
    for kind in ("rename", "roc rename", "experimental rename"):
        cats = sorted(((c, n) for (k, c), n in counts.items() if k == kind), key=lambda cn: (-cn[1], cn[0]))
        if cats:
            total = sum(n for _, n in cats)
            echo(f"  {kind + 's':<21} {total:>6,}: " + ", ".join(f"{c} {n:,}" for c, n in cats))
    echo(f"  {'headers':<21} {counts[('header', 'hip')]:>6,} HIP, {counts[('header', 'roc')]:,} ROC")
    echo(f"  {'versions':<21} {counts[('version', 'deprecated')]:>6,} deprecated, "
         f"{counts[('version', 'removed')]:,} removed, {counts[('version', 'experimental')]:,} experimental")
    unsupported = [(kind, counts[("unsupported", kind)]) for kind in UNSUPPORTED_SUBS.values()]
    echo(f"  {'unsupported':<21} {sum(n for _, n in unsupported):>6,}: "
         + ", ".join(f"{_UNSUPPORTED_LABELS[k]} {n:,}" for k, n in unsupported))
    if parsed.skipped:
        echo(f"  {'ignored':<21} {len(parsed.skipped):>6,} subst line(s) that are not a plain name or header "
             f"(first: {parsed.skipped[0]})")
    echo(f"use it with: hipport convert --rules {output_dir} ...")
