"""What the fuzz scripts of bench/ share: hypothesis run as a seeded generator of `count` examples (no
shrinking, no example database, no deadline or health checks), so a large run is repeatable from its seed."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, seed, settings


def generated(count: int, seed_: int):
    """Decorator for a @given test: draw exactly `count` examples from seed `seed_`, generation only."""

    def wrap(test):
        return seed(seed_)(
            settings(
                max_examples=count,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )(test)
        )

    return wrap
