"""Runtime type checks for the passive model's setters.

Plain classes are checked with ``isinstance`` (fast: the model is built thousands of
times per second by workflow systems); parametrised types (``dict[str, str | int]``)
go to typeguard, which is imported on first need so that ``import hpcjobs`` stays light.
"""

from __future__ import annotations

import operator
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
    if _plainly(value, expected):
        return
    import typeguard

    try:
        # every item: typeguard's default looks at the first item of a collection only
        typeguard.check_type(value, expected,
                             collection_check_strategy=typeguard.CollectionCheckStrategy.ALL_ITEMS)
    except typeguard.TypeCheckError as e:
        raise TypeError(f"{owner}.{field}: {e}") from None


def _plainly(value: Any, expected: Any) -> bool:
    """The common case, decided without typeguard: a list of str for a list field, a
    dict of str to str for a dict field whose values may be str (exact types only;
    anything else, e.g. ints to convert, goes through the full check)."""
    origin = getattr(expected, "__origin__", None)
    if origin is list:
        return type(value) is list and all(type(v) is str for v in value)
    if origin is dict:
        if type(value) is not dict or not all(type(k) is str for k in value):
            return False
        if expected.__args__[1] is Any:
            return True
        return str in _members(expected.__args__[1]) and all(type(v) is str
                                                              for v in value.values())
    return False


def _members(t: Any) -> tuple[Any, ...]:
    return tuple(getattr(t, "__args__", ())) or (t,)


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
        # At run time the attribute becomes a property with a C-level getter: reading
        # model fields is the hot path (a Python __get__ is a function call per read).
        # Type checkers still see this Field and its typed __get__/__set__.
        setattr(owner, name, property(operator.attrgetter(self.slot), self.__set__,
                                      doc=f"{owner.__name__}.{name} (checked on set)"))

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
