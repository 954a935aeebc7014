"""Runtime type checks for the passive model's setters.

Plain classes are checked with ``isinstance`` (fast: the model is built thousands of
times per second by workflow systems); parametrised types (``dict[str, str | int]``)
go to typeguard, which is imported on first need so that ``import hpcjobs`` stays light.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, Optional, TypeVar, overload


def check(owner: str, field: str, value: Any, expected: Any) -> None:
    """Raise ``TypeError`` naming ``owner.field`` if ``value`` is not an ``expected``.

    ``expected`` is a class, a tuple of classes, or a typing expression.
    """
    if isinstance(expected, (type, tuple)):
        # bool is an int subclass; an int field given True is almost always a mistake
        if isinstance(value, bool) and expected in (int, (int,)):
            raise TypeError(f"{owner}.{field} must be int, got bool")
        if isinstance(value, expected):
            return
        raise TypeError(f"{owner}.{field} must be {_name(expected)}, "
                        f"got {type(value).__name__}: {value!r:.80}")
    import typeguard

    try:
        typeguard.check_type(value, expected)
    except typeguard.TypeCheckError as e:
        raise TypeError(f"{owner}.{field}: {e}") from None


def _name(expected: type | tuple[type, ...]) -> str:
    if isinstance(expected, tuple):
        return " or ".join(t.__name__ for t in expected)
    return expected.__name__


T = TypeVar("T")


class Field(Generic[T]):
    """A checked, slot-backed attribute of a model class.

    ``Field(int, optional=True)`` accepts an int or None; ``convert`` normalises an
    accepted value (e.g. ``str`` -> ``Path``) after the check. The value lives in the
    slot ``_<name>``, so model classes with ``__slots__`` stay small.
    """

    __slots__ = ("expected", "optional", "convert", "name", "slot", "owner")

    def __init__(self, expected: Any, *, optional: bool = False,
                 convert: Optional[Callable[[Any], T]] = None) -> None:
        self.expected = expected
        self.optional = optional
        self.convert = convert
        self.name = self.slot = self.owner = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot, self.owner = name, "_" + name, owner.__name__

    @overload
    def __get__(self, obj: None, objtype: Any = None) -> "Field[T]": ...
    @overload
    def __get__(self, obj: object, objtype: Any = None) -> T: ...

    def __get__(self, obj: Optional[object], objtype: Any = None) -> "T | Field[T]":
        if obj is None:
            return self
        value: T = getattr(obj, self.slot)
        return value

    def __set__(self, obj: object, value: Any) -> None:
        if value is None:
            if not self.optional:
                raise TypeError(f"{self.owner}.{self.name} must not be None")
        else:
            check(self.owner, self.name, value, self.expected)
            if self.convert is not None:
                value = self.convert(value)
        object.__setattr__(obj, self.slot, value)
