"""Kubernetes quantities: parsed exactly as apimachinery reads them, and shown exactly where a quota needs it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.core import quantity

SUFFIXES = {"": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
            "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


@given(st.integers(0, 10**6), st.sampled_from(sorted(SUFFIXES)))
def test_a_whole_number_and_a_suffix(n, suffix):
    assert quantity.parse(f"{n}{suffix}") == n * SUFFIXES[suffix]


@given(st.integers(0, 2**50))
def test_an_exact_byte_size_reads_back_as_itself(size):
    assert quantity.parse(quantity.bytes_exact(size)) == size
    shown = quantity.bytes_text(size)  # exact when a unit divides it, else within a twentieth of a unit
    assert abs(quantity.parse(shown) - size) <= max(Decimal(size) / 20, 0)


@given(st.integers(0, 10**7))
def test_millicores_read_back(milli):
    assert quantity.millicores(quantity.parse(quantity.cpu_text(milli))) == milli


@pytest.mark.parametrize(("text", "value"), [
    ("1.5", Decimal("1.5")), (".5", Decimal("0.5")), ("1e3", 1000), ("2E-3", Decimal("0.002")), ("+7Mi", 7 * 2**20),
    (3, 3), (0.25, Decimal("0.25")),
])
def test_decimals_and_exponents(text, value):
    assert quantity.parse(text) == value


@pytest.mark.parametrize("text", ["", "Mi", "1.2.3", "1 Gi", "1gi", "1KiB", "-", "1e", True, None, "0x10",
                                  "-100m", -1, "1e19", "1e5000", 2**63])
def test_not_quantities(text):
    with pytest.raises(ValueError):
        quantity.parse(text)
