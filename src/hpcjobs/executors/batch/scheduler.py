"""``Scheduler``: the public contract of a batch backend (docs/writing-a-backend.md).

A backend is a subclass that states its scheduler's facts as class attributes and
implements a few methods: the command lines (submit, cancel, status), the parsing of
their output, its state table (inside :meth:`Scheduler.native`) and the template's
directives. Everything else, the job directory, the script's body, the monitor that
follows jobs through their files and one bulk status query per tick, job arrays for
bursts, attach, is the executor's (:class:`~.executor.BatchSchedulerExecutor`), which
owns one instance of the backend and calls only the names below.

The defaults make a backend without arrays, accounting or history work: a backend
overrides what its scheduler has. Its commands run through :meth:`Scheduler.run` (on
the executor's :class:`~.host.Host`), never through :mod:`subprocess` directly.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import Path
from typing import (Any, Callable, ClassVar, Iterable, Mapping, Optional, Sequence, TypeVar,
                    cast)

from ...errors import CommandError, InvalidJobException
from ...external import CommandResult
from ...spec import JobSpec
from .arrays import ArrayDir, chunks
from .config import BatchConfig
from .host import Host
from .jobdir import JobDir
from .native import NativeStatus

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
# ids per status command while looking for the job of a timed-out submit (submit_lines)
_LOOKUP_CHUNK = 100
_SEQUENCE = re.compile(r"[0-9]*")


class _Stopped(BaseException):
    """Raised by :meth:`Scheduler.run` for :meth:`Scheduler.first_command` (a
    BaseException: no backend's handler of errors may take it)."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__()
        self.argv = argv


class Scheduler:
    """A batch scheduler as the batch executor uses it (see the module docstring).

    ``config`` is the executor's configuration (a :class:`BatchConfig`, or the
    backend's subclass of it), ``host`` where commands run and files live.
    """

    # -- facts --------------------------------------------------------------------------
    #: the name of the executor (``get_instance(name)``), used in messages
    name: ClassVar[str]
    #: the mustache template of the job script (its directives, then ``{{> batch_body}}``)
    template: ClassVar[Path]
    #: what every native id matches (wholly): attach refuses others, a submit prints one
    native_id_pattern: ClassVar["re.Pattern[str]"]
    #: texts (any case) in a failed submit's output that make it worth retrying
    transient_errors: ClassVar[tuple[str, ...]] = ()
    #: texts (any case) in a failed cancel's output that say the job has ended already
    ended_errors: ClassVar[tuple[str, ...]] = ()
    #: True if the scheduler hands the submitter's environment to the job (sbatch);
    #: False: the executor captures it in the job directory for the script to source
    exports_environment: ClassVar[bool] = True
    #: names the scheduler sets in the job, which a captured environment leaves alone
    #: (a trailing '_' makes a prefix)
    scheduler_variables: ClassVar[tuple[str, ...]] = ()
    #: True: link a job's id to its directory before submit() returns (a scheduler that
    #: keeps no exit status anywhere: the files are all an attach can read)
    links_at_submit: ClassVar[bool] = False
    #: seconds the status command keeps showing finished jobs (or override retention())
    retention_time: ClassVar[float] = 300.0
    #: seconds a script may need, after the scheduler says its job ended, to write its
    #: exit record (SIGTERM-to-SIGKILL delay plus file-system lag; or override grace())
    record_grace: ClassVar[float] = 10.0
    #: (pattern, why): what the scheduler cannot take in the work directory's path
    unusable_in_paths: ClassVar[Optional[tuple["re.Pattern[str]", str]]] = None
    #: for more ids than this, query() lists every live job (one request) and asks by id
    #: only about those not listed; None: always by id
    few_ids: ClassVar[Optional[int]] = None
    #: False: the scheduler forgets a job as it ends (no history to ask by id)
    has_history: ClassVar[bool] = True
    #: the field of a records() record holding the command line that submitted the job
    submit_line_field: ClassVar[Optional[str]] = None
    #: the environment variables of an array task's array id and index; None: no arrays
    array_variables: ClassVar[Optional[tuple[str, str]]] = None
    #: directives in which the tasks of one array may differ (the job name)
    per_job_directives: ClassVar[tuple[str, ...]] = ()
    #: the submit command's option that queues a job held, put right after the program
    #: (``submit(job, hold=True)``); None: the scheduler cannot hold jobs
    hold_submit_option: ClassVar[Optional[str]] = None

    def __init__(self, config: BatchConfig, host: Host) -> None:
        self.config = config
        self.host = host
        self._settings: dict[str, Any] = {}
        self._accounting: Optional[bool] = None  # None: not asked yet
        self._looking = threading.local()  # (first_command: in this thread only)

    # -- the job script -----------------------------------------------------------------
    def validate(self, spec: JobSpec) -> None:
        """Refuse what the scheduler cannot take, before anything is submitted:
        InvalidJobException naming the field."""

    def directives(self, spec: JobSpec, job_dir: JobDir) -> dict[str, Any]:
        """The template context of the scheduler's directives (resources, walltime,
        queue, ...). The renderer shell-quotes every value."""
        raise NotImplementedError

    # -- commands -----------------------------------------------------------------------
    def submit_command(self, job_dir: JobDir) -> list[str]:
        """The command that submits ``job_dir.script``, its output to
        ``job_dir.batch_output``."""
        raise NotImplementedError

    def parse_submit(self, stdout: str) -> str:
        """The native id in the submit command's output (ValueError if none); by
        default the whole output."""
        native_id = stdout.strip()
        if not self.native_id_pattern.fullmatch(native_id):
            raise ValueError(f"not a {self.name} job id: {native_id!r}")
        return native_id

    def cancel_command(self, native_id: str) -> list[str]:
        """The command that cancels a job."""
        raise NotImplementedError

    def hold_command(self, native_id: str) -> list[str]:
        """The command that holds a queued job (``hold()``; psij-python's pull request
        521 calls it ``get_hold_command``). By default the scheduler cannot:
        NotImplementedError, which ``hold()`` raises."""
        raise NotImplementedError(f"the {self.name} executor cannot hold jobs")

    def release_command(self, native_id: str) -> list[str]:
        """The command that releases a held job (``release()``; ``get_release_command``
        there). By default NotImplementedError, as :meth:`hold_command`."""
        raise NotImplementedError(f"the {self.name} executor cannot release jobs")

    def list_ids(self) -> list[str]:
        """The ids of the current user's live jobs (``list()``)."""
        raise NotImplementedError

    # -- status -------------------------------------------------------------------------
    def records(self, native_ids: Sequence[str]) -> dict[str, Any]:
        """ONE status command: the scheduler's record of each of ``native_ids`` it knows
        (finished ones too while it shows them; an array's id: its tasks' records), by
        id; no ids: every live job. Unknown ids are left out; a failed command raises
        CommandError (see :meth:`run_status`)."""
        raise NotImplementedError

    def native(self, native_id: str, record: Any) -> NativeStatus:
        """One record in PSI/J terms: the backend's state table (an unknown native
        state gives ``state=None``, logged and ignored)."""
        raise NotImplementedError

    def record_of(self, native_id: str, records: Mapping[str, Any]) -> Any:
        """``native_id``'s record among ``records`` (None: none); a scheduler that
        spells ids otherwise in its answer matches them here."""
        return records.get(native_id)

    def query(self, native_ids: Sequence[str]) -> dict[str, NativeStatus]:
        """What the scheduler says about these jobs, those it knows: by id, in chunks of
        ``query_chunk_size``, or for more than ``few_ids`` a listing of every live job
        and then by id those not listed. Built on :meth:`records`."""
        if self.few_ids is None or len(native_ids) <= self.few_ids:
            records = self._records_by_id(native_ids)
        else:
            records = dict(self.records(()))
            gone = [i for i in native_ids if self.record_of(i, records) is None]
            if gone and self.has_history:  # (an array's tasks come with the array)
                parts = (self.array_parts(i) for i in gone)
                asked = dict.fromkeys(p[0] if p else i for i, p in zip(gone, parts))
                records.update(self._records_by_id(list(asked)))
        found = {}
        for native_id in native_ids:
            record = self.record_of(native_id, records)
            if record is not None:
                found[native_id] = self.native(native_id, record)
        return found

    def _records_by_id(self, native_ids: Sequence[str]) -> dict[str, Any]:
        records: dict[str, Any] = {}
        for chunk in chunks(native_ids, self.config.query_chunk_size):
            records.update(self.records(chunk))
        return records

    def accounting(self, native_ids: Sequence[str]) -> Optional[dict[str, NativeStatus]]:
        """ONE accounting query for jobs gone from the status command; None if the
        scheduler has no accounting (never asked again). CommandError on failure."""
        return None

    def describe_final(self, statuses: Sequence[NativeStatus]) -> None:
        """Add details to final statuses before they are reported (who cancelled),
        with at most one command for all."""

    def retention(self) -> float:
        """Seconds the status command shows finished jobs (``retention_time``)."""
        return self.retention_time

    def grace(self) -> float:
        """Seconds a script may still need to write its record (``record_grace``)."""
        return self.record_grace

    # -- a submit command that timed out ------------------------------------------------
    def submit_lines(self) -> Iterable[tuple[str, str]]:
        """(native id, the command line that submitted it) of this user's recent jobs,
        finished ones too, to find the job of a submit command that timed out. By
        default from ``submit_line_field`` of :meth:`records` (None: not found),
        newest first, a hundred ids a command (of :meth:`recent_ids`)."""
        field = self.submit_line_field
        if field is None:
            return
        ids = self.recent_ids(time.time() - self.config.command_timeout - 60.0)  # (+ skew)
        if ids is None:
            asks: Iterable[Sequence[str]] = [()]
        else:
            ids.sort(key=_sequence, reverse=True)
            asks = chunks(ids, _LOOKUP_CHUNK)
        for ask in asks:
            for native_id, record in self.records(ask).items():
                yield native_id, str(record.get(field, ""))

    def recent_ids(self, since: float) -> Optional[list[str]]:
        """Ids of this user's jobs created since ``since`` (POSIX time), finished ones
        too; None: ``records(())`` lists them all."""
        return None

    # -- job arrays ---------------------------------------------------------------------
    def array_submit_command(self, array: ArrayDir, count: int) -> list[str]:
        """The command that submits ``array.dir.script`` as ``count`` tasks (indices 0
        to count-1), task i writing its output to ``<array.dir.path>/<i>.out``."""
        raise NotImplementedError

    def array_task_id(self, array_id: str, index: int) -> str:
        """The native id of task ``index`` of the array ``array_id``."""
        raise NotImplementedError

    def array_parts(self, native_id: str) -> Optional[tuple[str, int]]:
        """(array id, index) if ``native_id`` is an array task, else None."""
        return None

    def max_array_size(self) -> int:
        """The most tasks the scheduler takes in one array."""
        return 1

    # -- for backends: what they do alike ----------------------------------------------
    def run(self, argv: Sequence[str], check: bool = True) -> CommandResult:
        """Run a scheduler command on the host, within ``command_timeout``."""
        if getattr(self._looking, "on", False):
            raise _Stopped([str(a) for a in argv])
        return self.host.run(argv, timeout=self.config.command_timeout, check=check)

    def run_status(self, argv: Sequence[str], unknown: "re.Pattern[str]",
                   parse: Callable[[str], _T], unknown_exit: tuple[int, ...] = ()) -> _T:
        """Run a status command naming jobs and return ``parse(stdout)``. Stderr lines
        matching ``unknown`` only say some ids are unknown, and so does an exit status
        in ``unknown_exit`` (when given; else any nonzero one with such lines only).
        Any other complaint or failure, or an answer ``parse`` cannot read
        (ValueError), raises CommandError: no job is judged on it."""
        result = self.run(argv, check=False)
        complaints = [line for line in result.stderr.splitlines()
                      if line.strip() and not unknown.search(line)]
        if unknown_exit:
            explained = result.returncode in (0, *unknown_exit)
        else:
            explained = result.returncode == 0 or bool(result.stderr.strip())
        if complaints or not explained:
            raise CommandError(result.argv, result.returncode, result.stdout, result.stderr)
        try:
            return parse(result.stdout)
        except ValueError as e:
            raise CommandError(result.argv, result.returncode, result.stdout,
                               result.stderr) from e

    def first_command(self, call: Callable[[], object]) -> Optional[list[str]]:
        """The first command ``call()`` runs through :meth:`run`, which stops it there
        (nothing runs); None if it ends without running one. The monitor sends a due
        query's command ahead with its read of the notes (:meth:`Host.run_ahead`)."""
        self._looking.on = True
        try:
            call()
        except _Stopped as stopped:
            return stopped.argv
        except Exception:  # (the query itself will meet it and say so)
            return None
        finally:
            self._looking.on = False
        return None

    def read_once(self, what: str, read: Callable[[], _T], default: _T) -> _T:
        """A scheduler setting: ``read()`` the first time, ``default`` if that fails
        (CommandError or ValueError, logged); kept for the executor's life."""
        if what not in self._settings:
            try:
                value = read()
            except (CommandError, ValueError) as e:
                log.warning("%s: cannot read %s (assuming %s): %s", self.name, what, default, e)
                value = default
            self._settings[what] = value
        return cast(_T, self._settings[what])

    def accounting_records(self, native_ids: Sequence[str]) -> Optional[dict[str, NativeStatus]]:
        """:meth:`accounting`, None when it failed or there is none (remembered)."""
        if self._accounting is False:
            return None
        try:
            records = self.accounting(native_ids)
        except CommandError as e:
            log.warning("%s accounting query failed (retrying later): %s", self.name, e)
            return None
        if records is None:
            log.info("%s has no job accounting: vanished jobs end FAILED after the "
                     "retention time", self.name)
        self._accounting = records is not None
        return records

    @property
    def has_accounting(self) -> Optional[bool]:
        """False once the scheduler said it has no accounting; None: not asked yet."""
        return self._accounting

    def check_native_id(self, native_id: str) -> None:
        """InvalidJobException if ``native_id`` cannot be an id of this scheduler."""
        if not isinstance(native_id, str) or not self.native_id_pattern.fullmatch(native_id):
            raise InvalidJobException(f"native_id: {native_id!r} is not a {self.name} job id")

    @staticmethod
    def says(error: CommandError, texts: Sequence[str]) -> bool:
        """True if the failed command's output names one of ``texts``, in any case."""
        said = f"{error.stderr} {error.stdout}".lower()
        return any(text.lower() in said for text in texts)


def _sequence(native_id: str) -> int:
    """The number a job id starts with (123 of ``123.server``, ``123_4``)."""
    digits = _SEQUENCE.match(native_id)
    return int(digits.group()) if digits and digits.group() else -1
