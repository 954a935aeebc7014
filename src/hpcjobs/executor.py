"""``JobExecutor``: the interface every backend implements, and how to get one.

``JobExecutor.get_instance('slurm')`` finds the plugin through entry points (group
``hpcjobs.executors``). A backend implements ``submit``, ``cancel``, ``list`` and
``attach`` and reports what it observes with ``_set_job_status``; the base class does
the rest: validation before anything is submitted, monotonic states with the skipped
ones synthesised, callbacks on one dispatcher thread, and lifecycle (``close()``,
context manager, cleanup when garbage-collected).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import weakref
from abc import ABC, abstractmethod
from contextlib import contextmanager
from pathlib import Path
from typing import (TYPE_CHECKING, Any, ClassVar, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Set, Tuple, Union)

from . import plugins
from .errors import (BulkSubmitException, ExecutorNotFoundError, InvalidJobException,
                     InvalidJobStateError, SubmitException)
from .exec_limits import check_exec_strings
from .job import Job, StatusCallback, as_function
from .private import make_dirs
from .dispatch import CallbackDispatcher
from .spec import JobSpec
from .state import JobState, JobStatus

if TYPE_CHECKING:
    from packaging.version import Version

    from .descriptor import Descriptor
    from .launchers.base import Launcher

__all__ = ["JobExecutor", "JobExecutorConfig"]

log = logging.getLogger(__name__)
_instance_numbers = itertools.count(1)


@dataclasses.dataclass
class JobExecutorConfig:
    """Settings every executor understands; backends subclass it with their own.

    ``work_directory``: where the executor keeps job files (default
    ``~/.hpcjobs/work/<executor>``; for batch systems it must be on a filesystem
    the compute nodes share; with an ``ssh://`` URL, a path on that host, where ``~``
    is the home directory there). ``launcher_log_file``: accepted for psij-python
    compatibility and unused: launcher messages go to the job's stderr.
    ``ssh_options``: extra arguments for the ssh command line of an executor given an
    ``ssh://`` URL, before the destination (e.g. ``["-F", "other_config"]``); the
    user's ssh config applies without them (docs/remote.md).
    """

    #: psij-python's field order, so positional construction means the same
    launcher_log_file: Optional[Path] = None
    work_directory: Optional[Path] = None
    ssh_options: Sequence[str] = ()

    def __post_init__(self) -> None:
        # refused here, before anything is started, naming the setting
        if isinstance(self.ssh_options, (str, bytes)) or not all(
                isinstance(o, str) and "\0" not in o for o in self.ssh_options):
            raise TypeError(f"{type(self).__name__}.ssh_options: a list of str (ssh "
                            f"arguments), got {self.ssh_options!r}")
        self.ssh_options = list(self.ssh_options)

    #: psij-python's names: the default configuration and the parent of the default
    #: work directories
    DEFAULT: ClassVar["JobExecutorConfig"]
    DEFAULT_WORK_DIRECTORY: ClassVar[Path] = Path.home() / ".hpcjobs" / "work"

    @classmethod
    def coerce(cls, value: Union["JobExecutorConfig", Mapping[str, Any], None]) -> "JobExecutorConfig":
        """Accept an instance of this class, a mapping of its fields, or None."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, JobExecutorConfig):  # a base config given to a backend
            return cls(**{f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
        if isinstance(value, Mapping):
            names = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(set(value) - names)
            if unknown:
                raise TypeError(f"{cls.__name__}: unknown setting(s) {', '.join(unknown)} "
                                f"(known: {', '.join(sorted(names))})")
            return cls(**value)
        raise TypeError(f"config must be a {cls.__name__} or a mapping, got {type(value).__name__}")


JobExecutorConfig.DEFAULT = JobExecutorConfig()


class JobExecutor(ABC):
    """The spec's ``JobExecutor``. Subclasses set ``name`` and implement the four
    abstract methods; see docs/executors.md for the contract of each hook."""

    #: the executor's name as used with get_instance (lower case)
    name: ClassVar[str] = ""
    #: the executor's version, as a PEP 440 string
    version_string: ClassVar[str] = "0.1.0"
    #: the configuration class this executor accepts
    config_class: ClassVar[type[JobExecutorConfig]] = JobExecutorConfig
    #: whether the backend starts the job's program (execve(2)), so that Linux's limit
    #: on one argument or environment entry applies (exec_limits.py); a simulator's does not
    execs_programs: ClassVar[bool] = True
    #: whether the backend does the file staging of JobSpec.stage_in, stage_out and
    #: cleanup; one that does not refuses a job that asks for it, rather than ignore it
    supports_staging: ClassVar[bool] = False

    def __init__(self, url: Optional[str] = None,
                 config: Union[JobExecutorConfig, Mapping[str, Any], None] = None) -> None:
        if url is not None and not isinstance(url, str):
            raise TypeError(f"url must be str, got {type(url).__name__}")
        if url is not None:
            self._check_url(url)  # before anything is started: a URL is never ignored
        self.url = url
        self.config = self.config_class.coerce(config)
        self._instance = next(_instance_numbers)
        self._callback: Optional[Any] = None
        self._dispatcher = CallbackDispatcher(f"hpcjobs-{self.name}-{self._instance}-callbacks")
        self._closed = False
        self._launchers: dict[str, "Launcher"] = {}
        self._work_directory: Optional[Path] = None
        # a forgotten executor still ends its threads when collected
        self._finalizer = weakref.finalize(self, self._dispatcher.stop, False)

    # -- discovery ----------------------------------------------------------------------
    @staticmethod
    def get_instance(name: str, version_constraint: Optional[str] = None,
                     url: Optional[str] = None,
                     config: Union[JobExecutorConfig, Mapping[str, Any], None] = None) -> "JobExecutor":
        """A new executor of the named kind (case-insensitive; aliases such as
        ``pbspro`` -> ``pbs``), optionally checked against a PEP 440 version
        constraint such as ``">= 0.1"``."""
        cls = plugins.load("hpcjobs.executors", name)
        if not (isinstance(cls, type) and issubclass(cls, JobExecutor)):
            raise ExecutorNotFoundError(f"plugin {name!r} is not a JobExecutor: {cls!r}")
        plugins.check_version("executor", name, cls.version_string, version_constraint)
        return cls.serving(url)(url=url, config=config)

    @staticmethod
    def get_executor_names() -> Set[str]:
        """The names :meth:`get_instance` accepts (installed and registered executors)."""
        return plugins.names("hpcjobs.executors")

    @staticmethod
    def register_executor(desc: "Descriptor", root: Optional[str] = None) -> None:
        """Make the class ``desc.cls`` available as ``desc.name`` (and its aliases), as in
        psij-python. ``root`` is accepted and not used: nothing is scanned here."""
        plugins.register("hpcjobs.executors", desc)

    @property
    def version(self) -> "Version":
        """The executor's version."""
        from packaging.version import Version
        return Version(self.version_string)

    def get_name(self) -> str:
        """Spec spelling of :attr:`name`."""
        return self.name

    def get_version(self) -> "Version":
        """Spec spelling of :attr:`version`."""
        return self.version

    @property
    def work_directory(self) -> Path:
        """This executor's private directory (mode 0700), created on first use."""
        d = self._work_directory
        if d is None:  # resolved and created once: submit paths ask for it every time
            d = Path(self.config.work_directory
                     or JobExecutorConfig.DEFAULT_WORK_DIRECTORY / self.name)
            d = d.expanduser()
            make_dirs(d)  # ~/.hpcjobs and its work/ too: private, whatever the umask
            self._work_directory = d
        return d

    # -- the API ------------------------------------------------------------------------
    @abstractmethod
    def submit(self, job: Job, hold: bool = False) -> None:
        """Send ``job`` to the backend. On return the job is QUEUED (or later) and has
        its native id. Raises InvalidJobException (bad spec, nothing submitted),
        SubmitException (backend trouble), InvalidJobStateError (not a NEW job).
        ``hold``: the job is queued held and does not start before :meth:`release`
        (NotImplementedError on a backend that cannot hold jobs)."""

    def submit_many(self, jobs: Iterable[Job]) -> None:
        """Submit several jobs; a backend may send them together (the batch schedulers
        make arrays of them, docs/arrays.md). Every job is checked first: an invalid one
        raises InvalidJobException with nothing submitted. On return every job is QUEUED
        (or later), or :class:`BulkSubmitException` pairs each job that was not
        submitted with the reason (those jobs are NEW again). This default submits them
        one by one; a refusal only the backend's submit can make (a Flux jobspec it
        cannot express) is one of those reasons, the InvalidJobException its cause."""
        jobs = self._checked_for_many(jobs)
        failures: list[tuple[Job, SubmitException]] = []
        for job in jobs:
            try:
                self.submit(job)
            except SubmitException as e:
                failures.append((job, e))
            except InvalidJobException as e:  # (the jobs before it are submitted)
                failures.append((job, SubmitException(f"invalid job: {e}", e)))
        if failures:
            raise BulkSubmitException(failures, len(jobs))

    def _checked_for_many(self, jobs: Iterable[Job]) -> list[Job]:
        """``jobs`` as a list, each checked as :meth:`submit_many` says: TypeError or
        InvalidJobException before anything is submitted."""
        jobs = list(jobs)
        for job in jobs:
            if not isinstance(job, Job):
                raise TypeError(f"submit_many() takes Jobs, got {type(job).__name__}")
            if job.spec is None:
                raise InvalidJobException(f"job {job.id} has no spec")
            self._check_spec(job.spec)
        return jobs

    def hold(self, job: Job) -> None:
        """Keep the queued ``job`` from starting until :meth:`release` (the name of
        psij-python's pull request 521). It stays QUEUED, with ``held: True`` in its
        status metadata (and the scheduler's words in ``reason_pending`` once the
        scheduler reports them). A job that has started or ended cannot be held:
        InvalidJobStateError, saying so; holding a held job changes nothing."""
        self._check_hold_request(job, "held")
        self._hold_job(job)
        self._note_held(job, True)

    def release(self, job: Job) -> None:
        """Let a held ``job`` start (psij-python's pull request 521 name). Releasing a
        job that is not held changes nothing; a job that has started or ended:
        InvalidJobStateError."""
        self._check_hold_request(job, "released")
        self._release_job(job)
        self._note_held(job, False)

    def _check_hold_request(self, job: Job, what: str) -> None:
        if not isinstance(job, Job):
            raise TypeError(f"expected a Job, got {type(job).__name__}")
        self._check_open()
        if job.executor is not self or job.native_id is None:
            raise InvalidJobStateError(
                f"job {job.id} is not a job of this {self.name} executor (submit or attach "
                f"it first)")
        state = job.status.state
        if state is not JobState.QUEUED:
            doing = "has started" if state is JobState.ACTIVE else (
                "has ended" if state.final else "is not queued")
            raise InvalidJobStateError(
                f"job {job.id} ({self.name} job {job.native_id}) {doing} ({state.name}): only "
                f"a queued job can be {what}")

    def _note_held(self, job: Job, held: bool) -> None:
        """The status says at once what hold/release did; the backend's next report
        (with the scheduler's reason) replaces the metadata."""
        current = job.status
        metadata = dict(current.metadata or {})
        if held:
            metadata["held"] = True
        elif metadata.pop("held", None):
            metadata.pop("reason_pending", None)  # (the hold's; the scheduler says anew)
        # (kept even when empty: an empty dict is the news that the hold is gone)
        self._set_job_status(job, JobStatus.owning(current.state, current.time,
                                                   current.message, current.exit_code,
                                                   metadata))

    def _hold_job(self, job: Job) -> None:
        """Hook: hold ``job``, a QUEUED job of this executor. InvalidJobStateError if the
        backend says it has started meanwhile."""
        raise NotImplementedError(f"the {self.name} executor cannot hold jobs")

    def _release_job(self, job: Job) -> None:
        """Hook: release ``job``, a QUEUED job of this executor."""
        raise NotImplementedError(f"the {self.name} executor cannot hold or release jobs")

    @abstractmethod
    def cancel(self, job: Job) -> None:
        """Ask the backend to cancel ``job``; it ends CANCELED unless it ended first."""

    @abstractmethod
    def list(self) -> list[str]:
        """Native ids of the jobs this executor can attach to (at least every
        non-final job submitted through this instance)."""

    @abstractmethod
    def attach(self, job: Job, native_id: str) -> None:
        """Bind the NEW ``job`` to the backend job ``native_id``; its status follows
        asynchronously (FAILED if the id cannot be found)."""

    def set_job_status_callback(self, cb: Optional[StatusCallback]) -> None:
        """Call ``cb(job, status)`` for every state change of every job of this executor."""
        self._callback = as_function(cb)

    def close(self) -> None:
        """Stop this executor's threads after delivering pending callbacks. Jobs keep
        running in their backend and can be attached to later. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._close()
        finally:
            self._finalizer.detach()
            self._dispatcher.stop()

    def __enter__(self) -> "JobExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- for subclasses -----------------------------------------------------------------
    def _close(self) -> None:
        """Hook: stop backend-specific threads and processes."""

    @contextmanager
    def _submission(self, job: Job) -> Iterator[JobSpec]:
        """Validate and claim ``job`` for submission; release it if the body raises.

        Checks everything that can be checked before the backend is contacted, so an
        invalid job is refused with nothing submitted.
        """
        spec = self._claim_for_submit(job)
        try:
            yield spec
        except BaseException:
            job.bind(None, None)
            raise

    def _claim_for_submit(self, job: Job) -> JobSpec:
        """:meth:`_submission` without the context manager, for a backend's hot path:
        the caller releases the claim (``job.bind(None, None)``) if its submit fails."""
        if not isinstance(job, Job):
            raise TypeError(f"submit() takes a Job, got {type(job).__name__}")
        self._check_open()
        spec = job.spec
        if spec is None:
            raise InvalidJobException(f"job {job.id} has no spec")
        self._check_spec(spec)
        state = job.claim(self)
        if state is not None:
            raise InvalidJobStateError(f"job {job.id} was already submitted (state {state})")
        return spec

    def _claim_many(self, jobs: Iterable[Job]) -> List[Tuple[Job, JobSpec]]:
        """Check and claim every job of a ``submit_many`` (as :meth:`_claim_for_submit`),
        or none: if one cannot be claimed (invalid, submitted already) the claims made
        are released and its exception raised, nothing submitted."""
        claimed: List[Tuple[Job, JobSpec]] = []
        for job in jobs:
            try:
                claimed.append((job, self._claim_for_submit(job)))
            except BaseException:
                for earlier, _spec in claimed:
                    earlier.bind(None, None)
                raise
        return claimed

    def _check_spec(self, spec: JobSpec) -> None:
        """Every check of ``spec`` before a submit: InvalidJobException naming the field."""
        spec.validate()
        self._launcher(spec)  # an unknown launcher is an invalid job
        if self.execs_programs:
            check_exec_strings(spec)
        if not self.supports_staging and spec.stages_files:
            field = ("stage_in" if spec.stage_in else "stage_out" if spec.stage_out
                     else "cleanup")
            raise InvalidJobException(f"JobSpec.{field}: executor {self.name!r} does not "
                                      "stage files yet; nothing was submitted")
        self._validate(spec)

    @classmethod
    def serving(cls, url: Optional[str]) -> type["JobExecutor"]:
        """The class :meth:`get_instance` makes for ``url``: this one, unless a backend
        serves some URLs with another (``local`` over ``ssh://``: executors/shell)."""
        return cls

    #: whether the backend serves ``ssh://[user@]host[:port]`` (checked by
    #: :meth:`_check_url`; the backend then runs its commands on that host)
    serves_ssh: ClassVar[bool] = False

    def _check_url(self, url: str) -> None:
        """Hook: raise ValueError, naming the URL and this executor, for a URL it cannot
        serve. This default serves ``ssh://[user@]host[:port]`` if :attr:`serves_ssh`,
        and no other (the jobs would run on this machine, wherever the URL points); an
        ``ssh://`` URL is parsed first, so a malformed one says what is wrong with it."""
        from .remote.url import is_ssh_url, parse_ssh_url
        if is_ssh_url(url):
            try:
                target = parse_ssh_url(url)
            except ValueError as e:
                raise ValueError(f"executor {self.name!r}: {e}") from None
            if self.serves_ssh:
                return
            raise ValueError(f"executor {self.name!r} cannot serve url {url!r}: it cannot "
                             f"run jobs over ssh on {target.host} yet; run it on that host")
        raise ValueError(f"executor {self.name!r} cannot serve url {url!r}: it runs jobs "
                         "on this machine and takes no URL")

    def _validate(self, spec: JobSpec) -> None:
        """Hook: backend-specific checks; raise InvalidJobException naming the field."""

    def _claim_for_attach(self, job: Job, native_id: str) -> None:
        """Check and bind ``job`` for attach (the spec's rules: only NEW jobs)."""
        if not isinstance(job, Job):
            raise TypeError(f"attach() takes a Job, got {type(job).__name__}")
        if not isinstance(native_id, str) or not native_id:
            raise TypeError(f"native_id must be a non-empty str, got {native_id!r}")
        self._check_open()
        state = job.claim(self, native_id)
        if state is not None:
            raise InvalidJobException(f"attach() needs a NEW job; job {job.id} is {state}")

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidJobStateError(f"executor {self.name!r} is closed")

    def _launcher(self, spec: JobSpec) -> "Launcher":
        """The spec's launcher (``single`` by default); unknown -> InvalidJobException."""
        name = (spec.launcher or "single").lower()
        launcher = self._launchers.get(name)
        if launcher is None:
            from .launchers.base import Launcher
            try:
                launcher = self._launchers[name] = Launcher.get_instance(name)
            except ExecutorNotFoundError as e:
                raise InvalidJobException(f"JobSpec.launcher: {e}") from None
        return launcher

    def _set_job_status(self, job: Job, status: JobStatus, ran: bool = False) -> None:
        """Report an observed status. A later state is entered, with any skipped states
        synthesised first (``ran``: the job is known to have executed, so a FAILED or
        CANCELED goes through ACTIVE), and callbacks follow on the dispatcher thread.
        The current state again refreshes the status's message and metadata (no
        callback); anything earlier, or anything after a final state, is ignored."""
        job.advance(status, ran, self._hand_off)

    def _hand_off(self, job: Job, entered: List[JobStatus]) -> None:
        # called by Job.advance with the job's lock held: callbacks queue in state order
        if log.isEnabledFor(logging.DEBUG):
            log.debug("job %s (%s): %s", job.id, job.native_id,
                      " -> ".join(s.state.name for s in entered))
        if job._callback is not None or self._callback is not None:
            callbacks = [cb for cb in (job._callback, self._callback) if cb is not None]
            self._dispatcher.deliver(job, entered, callbacks)

    def wait_condition(self, job: Job, lock: threading.Lock) -> threading.Condition:
        """Hook: the condition a client thread blocks on in ``Job.wait()`` for ``job``,
        a job of this executor (created on its first wait, with the job's lock). A backend that must know when its
        client is only waiting (the Batsim executor's virtual time) returns a subclass
        that observes ``wait``/``notify_all``."""
        return threading.Condition(lock)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} #{self._instance}{' closed' if self._closed else ''}>"
