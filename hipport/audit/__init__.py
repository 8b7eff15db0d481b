"""`hipport audit`: wave64, mask, warpSize and atomics hazards in CUDA or HIP sources, each finding with a
suggested fix where one can be given. `engine` audits one file's bytes with the `checks`; `hazards` loads the rule
data; `suggest` applies the fixes to a conversion. Never writes sources; nothing here imports `convert`.

The names below are imported on first use, not with the package: importing `hipport.audit.hazards` (the command
line does, to check rule ids) must not load every check, which a cached run never calls."""

from hipport.lazy import lazy_names
from hipport.rocm import DEFAULT_ARCHS, NEWEST_ROCM

__all__ = ["CHECKS", "DEFAULT_ARCHS", "NEWEST_ROCM", "AuditOptions", "apply_suggestions", "audit_source",
           "describe_rule", "load_hazards"]


__getattr__ = lazy_names(__name__, {
    "CHECKS": "hipport.audit.engine", "audit_source": "hipport.audit.engine",
    "AuditOptions": "hipport.audit.options",
    "describe_rule": "hipport.audit.hazards", "load_hazards": "hipport.audit.hazards",
    "apply_suggestions": "hipport.model",
}, globals())
