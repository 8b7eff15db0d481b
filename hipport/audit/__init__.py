"""`hipport audit`: wave64, mask, warpSize and atomics hazards in CUDA or HIP sources, each finding with a
suggested fix where one can be given. `engine` audits one file's bytes with the `checks`; `hazards` loads the rule
data; `suggest` applies the fixes to a conversion. Never writes sources; nothing here imports `convert`."""

from hipport.audit.engine import CHECKS, DEFAULT_ARCHS, AuditOptions, audit_source
from hipport.audit.hazards import describe_rule, load_hazards
from hipport.model import apply_suggestions
from hipport.rocm import NEWEST_ROCM

__all__ = ["CHECKS", "DEFAULT_ARCHS", "NEWEST_ROCM", "AuditOptions", "apply_suggestions", "audit_source",
           "describe_rule", "load_hazards"]
