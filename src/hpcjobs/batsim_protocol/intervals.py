"""Batsim interval-set strings ("1 2 4-8") <-> sorted resource-id lists."""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ProtocolError


def parse(text: str, what: str = "interval set", limit: int | None = None) -> list[int]:
    """Parse ``"0 2-4"`` into ``[0, 2, 3, 4]`` (sorted, without duplicates); with ``limit``,
    ids must be below it (checked per range, so "0-999999999" cannot exhaust memory)."""
    ids: set[int] = set()
    for part in text.split():
        if part.isascii() and part.isdigit():  # fast path: schedulers often list single ids
            first = last = int(part)
            _check_limit(what, first, last, limit)
            ids.add(first)
            continue
        lo, sep, hi = part.partition("-")
        if not (sep and lo.isascii() and lo.isdigit() and hi.isascii() and hi.isdigit()):
            raise ProtocolError(f"invalid {what} {text!r}: {part!r} is not an integer or a range a-b")
        first, last = int(lo), int(hi)
        if last < first:
            raise ProtocolError(f"invalid {what} {text!r}: bad range {part!r}")
        _check_limit(what, first, last, limit)
        ids.update(range(first, last + 1))
    if not ids:
        raise ProtocolError(f"invalid {what} {text!r}: empty")
    return sorted(ids)


def _check_limit(what: str, first: int, last: int, limit: int | None) -> None:
    if limit is not None and last >= limit:
        raise ProtocolError(f"{what}: resource {max(first, limit)} does not exist "
                                f"(the platform has compute resources 0-{limit - 1})")


def format_ids(ids: Iterable[int], sep: str = " ") -> str:
    """Format resource ids as Batsim does: sorted, consecutive runs as ``a-b``, space
    separated (``sep=","`` gives Flux's RFC 22 idsets)."""
    if isinstance(ids, list) and len(ids) == 1:
        return str(ids[0])  # the common allocation: one host
    ordered = sorted(set(ids))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return sep.join(parts)
