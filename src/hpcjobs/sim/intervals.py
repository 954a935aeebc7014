"""Batsim interval-set strings ("1 2 4-8") <-> sorted resource-id lists."""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ProtocolViolation


def parse(text: str, what: str = "interval set") -> list[int]:
    """Parse ``"0 2-4"`` into ``[0, 2, 3, 4]`` (sorted, without duplicates)."""
    ids: set[int] = set()
    for part in text.split():
        lo, sep, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise ProtocolViolation(f"invalid {what} {text!r}: {part!r} is not an integer or a range a-b") from None
        if first < 0 or last < first:
            raise ProtocolViolation(f"invalid {what} {text!r}: bad range {part!r}")
        ids.update(range(first, last + 1))
    if not ids:
        raise ProtocolViolation(f"invalid {what} {text!r}: empty")
    return sorted(ids)


def format_ids(ids: Iterable[int]) -> str:
    """Format resource ids as Batsim does: sorted, consecutive runs as ``a-b``, space separated."""
    ordered = sorted(set(ids))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return " ".join(parts)
