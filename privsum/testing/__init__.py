"""Testing tools shipped for extenders: statistical assertions and the protocol conformance base."""

from privsum.testing.audit import AuditResult, audit_privacy, audit_samples, clopper_pearson
from privsum.testing.conformance import ProtocolConformance
from privsum.testing.stats import (
    FALSE_ALARM_RATE,
    assert_matches_pmf,
    assert_mean,
    assert_same_distribution,
    assert_variance,
    two_sided_z,
)

__all__ = [
    "FALSE_ALARM_RATE",
    "AuditResult",
    "ProtocolConformance",
    "assert_matches_pmf",
    "assert_mean",
    "assert_same_distribution",
    "assert_variance",
    "audit_privacy",
    "audit_samples",
    "clopper_pearson",
    "two_sided_z",
]
