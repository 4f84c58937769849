"""Checks: the isolation invariants and the routing proof, computed from the objects."""
