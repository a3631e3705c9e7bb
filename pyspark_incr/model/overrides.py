"""The names a MODEL block may put in ``safety_overrides``, and the safety rule each one turns off.

They are part of the model's language (a definition is refused when it names
an unknown one), so they live with the model; the safety check reads them here.
"""

from __future__ import annotations

# Override name (safety_overrides key) -> the rule it turns off.
OVERRIDE_RULES = {
    "allow_window_functions": "window",
    "allow_having": "having",
    "allow_limit": "limit",
    "allow_subqueries": "subquery",
    "allow_nondeterministic": "nondeterministic",
    "allow_distinct": "distinct",
    "allow_coarse_time": "coarse_time",
}
OVERRIDES = tuple(OVERRIDE_RULES)
