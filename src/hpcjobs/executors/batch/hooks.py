"""``BatchHooks``: what a batch backend declares and implements.

A backend subclasses :class:`~.executor.BatchSchedulerExecutor`, whose base this is: it
sets the class attributes below (its template, its ids, its scheduler's facts) and
implements the abstract methods (command lines) and, for status, either
``_query_status`` or the per-job ``_records`` and ``_native``; the other methods are
defaults it may override. "For the hooks" has what backends do alike (a status
command's word on unknown ids, a setting read once). docs/batch.md tables what each
backend declares.
"""

from __future__ import annotations

import logging
import re
import time
from abc import abstractmethod
from pathlib import Path
from typing import (Any, Callable, ClassVar, Iterable, Mapping, Optional, Sequence, TypeVar,
                    cast)

from ... import external
from ...errors import CommandError, InvalidJobException
from ...executor import JobExecutor, JobExecutorConfig
from ...spec import JobSpec
from .arrays import ArrayDir, chunks
from .config import BatchConfig
from .jobdir import JobDir
from .native import NativeStatus

__all__ = ["BatchHooks"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
# ids per status command while looking for the job of a timed-out submit (_submit_lines)
_LOOKUP_CHUNK = 100
_SEQUENCE = re.compile(r"[0-9]*")


class BatchHooks(JobExecutor):
    """The backend's part of a batch executor (see the module docstring)."""

    config_class: ClassVar[type[JobExecutorConfig]] = BatchConfig
    config: BatchConfig
    #: the backend's mustache template, kept beside the backend's module
    template: ClassVar[Path]
    #: True if the scheduler hands the submitter's environment to the job itself (as
    #: sbatch does); False: the base captures it in the job directory for the script
    exports_environment: ClassVar[bool] = True
    #: names (a trailing '_' makes a prefix) the scheduler sets in the job, which a
    #: captured environment must not override
    scheduler_variables: ClassVar[tuple[str, ...]] = ()
    #: True: a job's id is linked to its directory before submit() returns, for a
    #: scheduler that keeps no record of a job's exit status (no history, no accounting):
    #: should the submitter die at once, the link is how an attach finds the job's exit
    #: code. Else the monitor links it, off the submit path.
    links_at_submit: ClassVar[bool] = False
    #: what _read_once read, by name (the executor's __init__ makes it)
    _settings: dict[str, Any]

    #: what every native id of this scheduler is (the whole id matches): attach refuses
    #: other ids, and a submit command must print one
    native_id_pattern: ClassVar["re.Pattern[str]"]
    #: texts (of any case) in a failed submit command's output that say the scheduler
    #: was busy or unreachable: the SubmitException is then transient (worth retrying)
    transient_errors: ClassVar[tuple[str, ...]] = ()
    #: texts (of any case) in a failed cancel command's output that say the job has
    #: ended already (or is gone): the cancel came too late, which is no error; the
    #: job's end is then asked for at once
    ended_errors: ClassVar[tuple[str, ...]] = ()
    #: seconds the scheduler keeps finished jobs in its status command's output (a
    #: backend reading it from the scheduler overrides ``_retention_time`` instead)
    retention_time: ClassVar[float]
    #: seconds a job's script may still need, once the scheduler says the job ended, to
    #: write its exit record: the scheduler's delay between SIGTERM and SIGKILL plus
    #: file-system lag (a backend reading it from the scheduler overrides ``_record_grace``)
    record_grace: ClassVar[float] = 10.0
    #: what the scheduler cannot take in the executor's work directory, whose paths go
    #: on its command lines and directives (a pattern), and why: jobs are refused while
    #: the work directory has it
    unusable_in_paths: ClassVar[Optional[tuple["re.Pattern[str]", str]]] = None

    def _validate(self, spec: JobSpec) -> None:
        """Refuse what the scheduler cannot take (``unusable_in_paths``); a backend adds
        the checks of its directives that need no scheduler."""
        if self.unusable_in_paths is not None:
            pattern, why = self.unusable_in_paths
            found = pattern.search(str(self.work_directory))
            if found:
                raise InvalidJobException(f"the executor's work_directory "
                                          f"{str(self.work_directory)!r} contains "
                                          f"{found.group()!r}: {why}")

    @abstractmethod
    def _directives(self, spec: JobSpec, job_dir: JobDir) -> dict[str, Any]:
        """The template context for the scheduler's directives (resources, walltime,
        queue, ...). Raise InvalidJobException naming the field for what cannot be
        expressed. Values are shell-quoted by the renderer."""

    @abstractmethod
    def _submit_command(self, job_dir: JobDir) -> list[str]:
        """The command that submits ``job_dir.script``."""

    def _parse_submit(self, stdout: str) -> str:
        """The native id in the submit command's output (ValueError if there is none):
        by default the whole output, which must be a native id."""
        native_id = stdout.strip()
        if not self.native_id_pattern.fullmatch(native_id):
            raise ValueError(f"not a {self.name} job id: {native_id!r}")
        return native_id

    @abstractmethod
    def _cancel_command(self, native_id: str) -> list[str]:
        """The command that cancels a job."""

    def _query_status(self, native_ids: Sequence[str]) -> dict[str, NativeStatus]:
        """What the scheduler says about these jobs, those it knows (jobs it does not
        know are left out): one status command per ``query_chunk_size`` ids, or for
        more than ``few_ids`` jobs one listing of every live job, then by id only those
        not listed. Raises CommandError when a command fails. By default from the
        per-job records of ``_records`` (below): a backend implements those hooks or
        this one."""
        if self.few_ids is None or len(native_ids) <= self.few_ids:
            records = self._records_by_id(native_ids)
        else:
            records = dict(self._records(()))  # every live job: one request
            gone = [i for i in native_ids if self._record_of(i, records) is None]
            if gone and self.has_history:
                # the history of those not listed; an array's tasks come with the array
                arrays = (self._array_parts(i) for i in gone)
                asked = dict.fromkeys(a[0] if a else i for i, a in zip(gone, arrays))
                records.update(self._records_by_id(list(asked)))
        found = {}
        for native_id in native_ids:
            record = self._record_of(native_id, records)
            if record is not None:
                found[native_id] = self._native(native_id, record)
        return found

    def _records_by_id(self, native_ids: Sequence[str]) -> dict[str, Any]:
        """``_records`` of ``native_ids``, ``query_chunk_size`` ids a command."""
        records: dict[str, Any] = {}
        for chunk in chunks(native_ids, self.config.query_chunk_size):
            records.update(self._records(chunk))
        return records

    def _query_accounting(self, native_ids: Sequence[str]) -> Optional[dict[str, NativeStatus]]:
        """ONE accounting query for jobs gone from the queue; None if the scheduler has
        no accounting (remembered: never asked again). Raises CommandError on failure."""
        return None

    def _describe_final(self, statuses: Sequence[NativeStatus]) -> None:
        """Hook: add details to final statuses from the status command (e.g. who
        cancelled a job) before they are reported; at most one command for all."""

    def _list_command(self) -> list[str]:
        """The command that prints the ids of the current user's jobs known to the
        scheduler, one a line (or override ``_list_ids``)."""
        raise NotImplementedError

    def _list_ids(self) -> list[str]:
        """The ids of the current user's jobs known to the scheduler."""
        result = external.run(self._list_command(), timeout=self.config.command_timeout)
        return [line.strip() for line in result.stdout.splitlines() if line.strip()]

    def _retention_time(self) -> float:
        """Seconds the scheduler keeps finished jobs in its status command's output."""
        return self.retention_time

    def _record_grace(self) -> float:
        """Seconds a job's script may still need to write its exit record once the
        scheduler says the job ended (see ``record_grace``)."""
        return self.record_grace

    def _submit_lines(self) -> Iterable[tuple[str, str]]:
        """(native id, the command line that submitted it, as the scheduler shows it)
        for this user's jobs made while a submit command could have run, finished
        ones too (a short job may have ended before its timed-out submit command was
        given up on: it ran, and must be found all the same), to find a job whose
        submit command timed out (``_find_submitted``). Raises CommandError when the
        scheduler cannot be asked.

        By default from ``_records``' ``submit_line_field`` (none: such a submit then
        failed), newest first, a hundred ids per status command, so that the search
        stops where it succeeds: a minute of a busy user's jobs in one command (3,000
        seen with PBS) outlasts the command timeout, and the job would be lost."""
        field = self.submit_line_field
        if field is None:
            return
        ids = self._recent_ids(time.time() - self.config.command_timeout - 60.0)  # (+ skew)
        if ids is None:
            asks: Iterable[Sequence[str]] = [()]
        else:
            ids.sort(key=_sequence, reverse=True)
            asks = chunks(ids, _LOOKUP_CHUNK)
        for ask in asks:
            for native_id, record in self._records(ask).items():
                yield native_id, str(record.get(field, ""))

    def _check_native_id(self, native_id: str) -> None:
        """Raise InvalidJobException if ``native_id`` cannot be an id of this scheduler."""
        if not isinstance(native_id, str) or not self.native_id_pattern.fullmatch(native_id):
            raise InvalidJobException(f"native_id: {native_id!r} is not a {self.name} job id")

    # -- status from per-job records: a backend whose status command prints a record per
    #    job implements these instead of _query_status ------------------------------------
    #: jobs up to this many are asked about by id; for more, the status command lists
    #: every live job instead (one request) and is asked by id only about those not
    #: listed (ended: the history), for a status command whose cost grows with the ids
    #: named (one request per id, or every job loaded and matched against each id).
    #: None: always by id.
    few_ids: ClassVar[Optional[int]] = None
    #: False: the scheduler forgets a job as it ends, so that there is no history to ask
    #: about a job no longer listed (its files and accounting tell)
    has_history: ClassVar[bool] = True

    #: the field of a ``_records`` record that holds the command line which submitted
    #: the job (for ``_submit_lines``); None: the records do not show it
    submit_line_field: ClassVar[Optional[str]] = None

    def _recent_ids(self, since: float) -> Optional[list[str]]:
        """The ids of this user's jobs created since ``since`` (a POSIX time), finished
        ones included, for ``_submit_lines``; None: the listing of every job
        (``_records(())``) has them all."""
        return None

    def _records(self, native_ids: Sequence[str]) -> dict[str, Any]:
        """ONE status command: the scheduler's record of each of ``native_ids`` it knows
        (finished ones too, if it keeps a history; an array's id: its tasks' records),
        by id; no ids: every live job it shows. Raises CommandError when it fails."""
        raise NotImplementedError

    def _native(self, native_id: str, record: Any) -> NativeStatus:
        """One of ``_records``' records in PSI/J terms (the backend's state table)."""
        raise NotImplementedError

    def _record_of(self, native_id: str, records: Mapping[str, Any]) -> Any:
        """``native_id``'s record among ``records`` (None: it has none); a scheduler that
        answers with another spelling of an id matches it here."""
        return records.get(native_id)

    # -- job arrays (arrays.py): a backend without them leaves these alone -----------------
    #: the environment variables holding an array task's array id and index
    array_variables: ClassVar[Optional[tuple[str, str]]] = None
    #: directives in which the tasks of one array may differ (the array takes the
    #: first task's)
    per_job_directives: ClassVar[tuple[str, ...]] = ()

    def _array_submit_command(self, array: ArrayDir, count: int) -> list[str]:
        """The command that submits ``array.dir.script`` as an array of ``count`` tasks
        (indices 0 to count-1), task i writing its scheduler output to
        ``<array.dir>/<i>.out``."""
        raise NotImplementedError

    def _array_task_id(self, array_id: str, index: int) -> str:
        """The native id of task ``index`` of the array ``array_id``."""
        raise NotImplementedError

    def _array_parts(self, native_id: str) -> Optional[tuple[str, int]]:
        """(array id, index) if ``native_id`` names an array task, else None."""
        return None

    def _max_array_size(self) -> int:
        """The most tasks the scheduler takes in one array."""
        return 1

    # -- for the hooks: what backends do alike ------------------------------------------
    def _run_status(self, argv: Sequence[str], unknown: "re.Pattern[str]",
                    parse: Callable[[str], _T], unknown_exit: tuple[int, ...] = ()) -> _T:
        """Run a status command that names jobs, and return what it printed, read by
        ``parse``. Lines of stderr matching ``unknown`` say only that the scheduler does
        not know some of the ids (it still answers for the others), and so does a
        nonzero exit status: one of ``unknown_exit``, the scheduler's status for that,
        when the backend gives them, else any that comes with such lines only. Any
        other complaint, another failure, or an answer ``parse`` cannot read
        (ValueError) raises CommandError: no job may be judged on that answer."""
        result = external.run(argv, timeout=self.config.command_timeout, check=False)
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
        except ValueError as e:  # (an answer cut short, or not in the format asked for)
            raise CommandError(result.argv, result.returncode, result.stdout,
                               result.stderr) from e

    def _read_once(self, what: str, read: Callable[[], _T], default: _T) -> _T:
        """A scheduler setting (a limit, its configuration): ``read()`` the first time
        ``what`` is asked for, ``default`` if that fails (CommandError or ValueError,
        logged). Either is kept: the scheduler is asked once per executor."""
        if what not in self._settings:
            try:
                value = read()
            except (CommandError, ValueError) as e:
                log.warning("%s: cannot read %s (assuming %s): %s", self.name, what, default, e)
                value = default
            self._settings[what] = value
        return cast(_T, self._settings[what])


def _sequence(native_id: str) -> int:
    """The sequence number a job id starts with (123 of ``123.server``, ``123[].server``,
    ``123_4``): the newest job has the highest."""
    digits = _SEQUENCE.match(native_id)
    return int(digits.group()) if digits and digits.group() else -1
