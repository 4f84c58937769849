"""The property tests' Hypothesis profiles, chosen by `$DEVLANE_HYPOTHESIS` (issue 41: no flaky property).

- `default` (a local run): 50 random examples a test; a failure is saved in `.hypothesis/` and replayed first
  until it passes, so keep it as an explicit `@example` once found.
- `ci` (the default where `$CI` is set): the same 50, derandomized: each test draws from a seed derived from its
  own source, so a CI run is deterministic (same code, same examples, same verdict) and reads no saved examples.
- `random` (CI's second pass over the property tests, `-m "hypothesis and not e2e"`): 200 examples from a fresh
  seed, nothing saved; a failure prints its example (and `@reproduce_failure` blob) to keep as an `@example`.
- `thorough`: 500 random examples a test.

No per-example deadline in any: speed is the benchmark's business, not a test's. A test that sets
`max_examples` itself keeps its own count in every profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILES = ("default", "ci", "random", "thorough")


def load() -> str:
    """Register the profiles and load the one `$DEVLANE_HYPOTHESIS` names (else `ci` under `$CI`, else
    `default`); returns its name."""
    settings.register_profile("default", max_examples=50, deadline=None)
    settings.register_profile("ci", settings.get_profile("default"), derandomize=True, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])  # derandomize: no database
    settings.register_profile("random", settings.get_profile("default"), max_examples=200, database=None,
                              print_blob=True, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("thorough", settings.get_profile("default"), max_examples=500)
    name = os.environ.get("DEVLANE_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "default")
    if name not in PROFILES:
        raise SystemExit(f"DEVLANE_HYPOTHESIS={name!r} names no Hypothesis profile: use one of {', '.join(PROFILES)}")
    settings.load_profile(name)
    return name
