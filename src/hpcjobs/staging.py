"""File staging, psij-python's model: what to copy into a job's directory before it
runs, what to bring back after it ends, and what to delete then.

``StageIn(source, target)``: ``source`` is a file or directory where the client runs
(a path, exactly as given: a relative one is taken from the current directory when the
object is made), or a :class:`URI` (a ``str`` with a scheme, ``file:///...``);
``target`` is where the job sees it (relative: in the job's directory).
``StageOut(source, target, flags)``: the reverse, done once the job has ended, when
``flags`` say so for the way it ended. ``JobSpec.cleanup``: paths (relative: in the
job's directory) deleted after stage-out, when ``JobSpec.cleanup_flags`` say so. A job
passes through the states STAGE_IN, STAGE_OUT and CLEANUP on the way (hpcjobs.state).
"""

from __future__ import annotations

import enum
import os
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:
    from pathlib import Path
    from urllib.parse import ParseResult

    from .state import JobState

__all__ = ["URI", "StagingMode", "StageOutFlags", "StageIn", "StageOut"]


class URI:
    """A file named by a URI (RFC 3986) or by a plain path (no scheme): the parts as
    ``urllib.parse`` splits them."""

    __slots__ = ("_parts",)

    def __init__(self, urlstring: str) -> None:
        if not isinstance(urlstring, str):
            raise TypeError(f"URI takes a str, got {type(urlstring).__name__}")
        from urllib.parse import urlparse  # (not at import hpcjobs: it is slow to import)
        self._parts: "ParseResult" = urlparse(urlstring)

    @classmethod
    def from_path(cls, path: str) -> "URI":
        """The file ``path`` on the client, exactly: nothing in it is taken for a URI's
        query (``?``), fragment (``#``) or parameters (``;``)."""
        from urllib.parse import ParseResult
        uri = cls.__new__(cls)
        uri._parts = ParseResult("", "", path, "", "", "")
        return uri

    @property
    def scheme(self) -> str:
        """The scheme (``file``, ``ssh``, ...), or '' for a plain path."""
        return self._parts.scheme

    @property
    def netloc(self) -> str:
        """User, host and port as written, or ''."""
        return self._parts.netloc

    @property
    def hostname(self) -> Optional[str]:
        """The host, or None."""
        return self._parts.hostname

    @property
    def port(self) -> Optional[int]:
        """The port, or None."""
        return self._parts.port

    @property
    def username(self) -> Optional[str]:
        """The user name, or None."""
        return self._parts.username

    @property
    def password(self) -> Optional[str]:
        """The password written in the URI, or None (hpcjobs never uses one)."""
        return self._parts.password

    @property
    def path(self) -> str:
        """The path, or ''."""
        return self._parts.path

    @property
    def params(self) -> str:
        """The ``;`` parameters, or ''."""
        return self._parts.params

    @property
    def query(self) -> str:
        """The query, or ''."""
        return self._parts.query

    @property
    def fragment(self) -> str:
        """The fragment, or ''."""
        return self._parts.fragment

    @property
    def is_local(self) -> bool:
        """True for a file on the client's machine: a plain path, or ``file://`` with
        no host or ``localhost``."""
        return (self.scheme in ("", "file")
                and (self.hostname is None or self.hostname in ("", "localhost")))

    def __str__(self) -> str:
        return self._parts.geturl()

    def __repr__(self) -> str:
        return f"URI({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URI) and self._parts == other._parts

    def __hash__(self) -> int:
        return hash(self._parts)


class StagingMode(enum.Enum):
    """How a file is staged. Executors that cannot link or move copy instead."""

    #: like ``cp`` (``cp -r`` for a directory)
    COPY = 1
    #: a symbolic link to the source
    LINK = 2
    #: like ``mv``: the source is gone afterwards
    MOVE = 3


class StageOutFlags(enum.Flag):
    """When a stage-out (or the cleanup) happens. With none of ON_SUCCESS, ON_ERROR and
    ON_CANCEL, it happens when the job succeeded (ON_SUCCESS, psij-python's meaning);
    IF_PRESENT makes a missing source no error (without it, a missing source fails the
    job)."""

    NONE = 0
    #: a missing source is skipped, not an error
    IF_PRESENT = 1
    #: when the job COMPLETED (exit code 0)
    ON_SUCCESS = 2
    #: when the job FAILED
    ON_ERROR = 4
    #: when the job was CANCELED
    ON_CANCEL = 8
    ALWAYS = ON_SUCCESS | ON_ERROR | ON_CANCEL

    def normalized(self) -> "StageOutFlags":
        """These flags, with ON_SUCCESS added if no end condition is set."""
        if not self & StageOutFlags.ALWAYS:
            return self | StageOutFlags.ON_SUCCESS
        return self

    def applies_to(self, final: "JobState") -> bool:
        """Whether a job that ended in ``final`` is covered by these flags."""
        from .state import JobState
        wanted = {JobState.COMPLETED: StageOutFlags.ON_SUCCESS,
                  JobState.FAILED: StageOutFlags.ON_ERROR,
                  JobState.CANCELED: StageOutFlags.ON_CANCEL}.get(final)
        if wanted is None:
            raise ValueError(f"{final} is not a final state")
        return bool(self.normalized() & wanted)


def uri_text(uri: URI) -> str:
    """``str(uri)`` for a job document, or ``ValueError`` if that text would read back
    as another URI (``URI('file:////x')`` prints as ``file://x``, whose host is x)."""
    text = str(uri)
    back = URI(text)
    if back != uri:
        raise ValueError(
            f"a URI with host part {uri.netloc!r} and path {uri.path!r} is written "
            f"{text!r}, which reads back as host part {back.netloc!r} and path {back.path!r}")
    return text


def flags_from_number(number: int) -> StageOutFlags:
    """The ``StageOutFlags`` a job document's number stands for (``ValueError`` if it is
    not a sum of them: ``StageOutFlags(-1)`` alone would take it as all four)."""
    every = StageOutFlags.IF_PRESENT | StageOutFlags.ALWAYS
    if type(number) is not int or not 0 <= number <= every.value:
        raise ValueError(f"{number!r} is not a sum of StageOutFlags (IF_PRESENT 1, "
                         "ON_SUCCESS 2, ON_ERROR 4, ON_CANCEL 8)")
    return StageOutFlags(number)


def _local_uri(value: Union[URI, str, "os.PathLike[str]"], what: str) -> URI:
    if isinstance(value, URI):
        return value
    if isinstance(value, os.PathLike):
        return URI.from_path(os.path.abspath(os.fspath(value)))
    if isinstance(value, str):
        from urllib.parse import urlsplit
        if urlsplit(value).scheme == "":  # a path: from the current directory, now
            return URI.from_path(os.path.abspath(value))
        return URI(value)
    raise TypeError(f"{what} must be a URI, str or path, got {type(value).__name__}")


def _path(value: Union[str, "os.PathLike[str]"], what: str) -> "Path":
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what} must be a str or path, got {type(value).__name__}")
    from pathlib import Path
    return Path(value)


def _mode(mode: Any) -> StagingMode:
    if not isinstance(mode, StagingMode):
        raise TypeError(f"mode must be a StagingMode, got {type(mode).__name__}")
    return mode


class StageIn:
    """Copy (link, move) ``source`` from the client to ``target`` before the job runs."""

    __slots__ = ("source", "target", "mode")

    def __init__(self, source: Union[URI, str, "os.PathLike[str]"],
                 target: Union[str, "os.PathLike[str]"],
                 mode: StagingMode = StagingMode.COPY) -> None:
        self.source = _local_uri(source, "StageIn.source")
        self.target = _path(target, "StageIn.target")
        self.mode = _mode(mode)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, StageIn) and self.source == other.source
                and self.target == other.target and self.mode is other.mode)

    def __hash__(self) -> int:
        return hash((self.source, self.target, self.mode))

    def __repr__(self) -> str:
        return f"StageIn({str(self.source)!r}, {str(self.target)!r}, {self.mode})"


class StageOut:
    """Copy (link, move) ``source`` back to ``target`` at the client after the job,
    when ``flags`` cover the way it ended."""

    __slots__ = ("source", "target", "mode", "_flags")

    def __init__(self, source: Union[str, "os.PathLike[str]"],
                 target: Union[URI, str, "os.PathLike[str]"],
                 flags: StageOutFlags = StageOutFlags.ON_SUCCESS,
                 mode: StagingMode = StagingMode.COPY) -> None:
        self.source = _path(source, "StageOut.source")
        self.target = _local_uri(target, "StageOut.target")
        self.flags = flags
        self.mode = _mode(mode)

    @property
    def flags(self) -> StageOutFlags:
        """When this stage-out happens (normalized: ON_SUCCESS if no end condition)."""
        return self._flags

    @flags.setter
    def flags(self, flags: StageOutFlags) -> None:
        if not isinstance(flags, StageOutFlags):
            raise TypeError(f"StageOut.flags must be StageOutFlags, got {type(flags).__name__}")
        self._flags = flags.normalized()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, StageOut) and self.source == other.source
                and self.target == other.target and self.mode is other.mode
                and self.flags == other.flags)

    def __hash__(self) -> int:
        return hash((self.source, self.target, self.mode, self.flags))

    def __repr__(self) -> str:
        return (f"StageOut({str(self.source)!r}, {str(self.target)!r}, {self.flags}, "
                f"{self.mode})")
