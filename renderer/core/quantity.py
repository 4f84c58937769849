"""Kubernetes resource quantities (`500m`, `1.5`, `768Mi`, `1e3`, `2G`): parsed exactly, shown the way kubectl does.

Why our own: the `kubernetes` client's parser would cost its whole package import on every render for twenty lines
of grammar (apimachinery's `resource.Quantity`): a signed decimal, an optional exponent, then a binary suffix
(Ki..Ei), a decimal one (n, u, m, k, M..E) or none.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"(\+?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"  # the number (a request is never negative)
                       r"(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?\Z")  # an exponent or a suffix
MAX_EXPONENT = 18  # 1e18 bytes: an exabyte, past any request a cluster can hold
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal(10**3),
            "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}


def parse(text: object) -> Decimal:
    """The quantity's value in base units (cores, bytes); ValueError when it is not a quantity."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a quantity")
    if isinstance(text, int | float):
        if not 0 <= text < 2**63:
            raise ValueError(f"{text!r} is not a quantity from 0 to 2^63")
        return Decimal(str(text))
    found = _QUANTITY.match(str(text).strip()) if isinstance(text, str) else None
    if found is None:
        raise ValueError(f"{text!r} is not a quantity (e.g. 500m, 2, 768Mi, 1Gi)")
    number, exponent, suffix = found.groups()
    if exponent and abs(int(exponent[1:])) > MAX_EXPONENT:
        raise ValueError(f"{text!r} is out of range (Kubernetes keeps quantities within 64 bits)")
    try:
        value = Decimal(number + (exponent or ""))
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a quantity") from None
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    return value * _DECIMAL[suffix] if suffix else value


def millicores(value: Decimal) -> int:
    """CPU in whole millicores, rounded up (Kubernetes keeps CPU to the milli)."""
    return math.ceil(value * 1000)


def whole(value: Decimal) -> int:
    """Bytes, rounded up."""
    return math.ceil(value)


def cpu_text(milli: int) -> str:
    """`2000m` -> `2`, `1500m` -> `1500m`: whole cores as cores, else millicores (as kubectl shows them)."""
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"


def bytes_text(size: int) -> str:
    """`805306368` -> `768Mi`, `2281701376` -> `2176Mi`: exact in the largest binary unit that divides the size, else
    to a tenth of the largest unit it reaches (`1.3Gi`)."""
    exact = bytes_exact(size)
    if exact != str(size) or size < 2**10:
        return exact
    for unit, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if size >= factor:
            return f"{size / factor:.1f}".rstrip("0").rstrip(".") + unit
    return str(size)


def bytes_exact(size: int) -> str:
    """`805306368` -> `768Mi`, `1000` -> `1000`: the largest binary unit that divides the size (an exact quantity,
    for a ResourceQuota)."""
    for unit, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if size and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)
