"""Hypothesis settings for a property test that draws its examples against an engine.

Such a test takes the engine's session or table from function-scoped fixtures (one fixture value
serves every example, which the test expects), and each example sends requests, so neither a
deadline nor the speed of input generation means anything on a shared machine. A test's own
``suppress_health_check`` replaces the suite profile's list instead of adding to it, so the one
definition here names both checks.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def engine_examples(max_examples: int) -> settings:
    """Settings for an engine test of ``max_examples`` examples, without a deadline."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
