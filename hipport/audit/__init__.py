"""`hipport audit`: wave64, mask, warpSize and atomics hazards in CUDA or HIP sources, each finding with a
suggested fix where one can be given. `engine` audits one file's bytes with the `checks`; `hazards` loads the rule
data; `suggest` applies the fixes to a conversion. Never writes sources; nothing here imports `convert`.

The names below are imported on first use, not with the package: importing `hipport.audit.hazards` (the command
line does, to check rule ids) must not load every check, which a cached run never calls."""

from hipport.rocm import DEFAULT_ARCHS, NEWEST_ROCM

__all__ = ["CHECKS", "DEFAULT_ARCHS", "NEWEST_ROCM", "AuditOptions", "apply_suggestions", "audit_source",
           "describe_rule", "load_hazards"]


def __getattr__(name: str):
    if name in ("CHECKS", "audit_source"):
        from hipport.audit import engine as module
    elif name == "AuditOptions":
        from hipport.audit import options as module
    elif name in ("describe_rule", "load_hazards"):
        from hipport.audit import hazards as module
    elif name == "apply_suggestions":
        from hipport import model as module
    else:
        raise AttributeError(f"module 'hipport.audit' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value  # found once; then an ordinary attribute
    return value
