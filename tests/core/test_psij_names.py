"""psij-python 0.9.11's public names exist here, so changing the import is the only edit.

Each test is what psij-python code writes (docs/psij-compat.md has the table).
"""

from __future__ import annotations

import importlib
from datetime import timedelta
from pathlib import Path

import pytest
from packaging.version import Version

import hpcjobs
from hpcjobs import (InvalidJobException, Job, JobAttributes, JobExecutor, JobExecutorConfig,
                     JobSpec, JobState, Launcher, SubmitException)


def test_get_executor_names_lists_what_get_instance_accepts() -> None:
    names = JobExecutor.get_executor_names()
    assert isinstance(names, set) and {"local", "slurm", "flux", "batsim"} <= names
    ex = JobExecutor.get_instance("local")
    try:
        assert ex.name == "local" and isinstance(ex.version, Version)
        assert isinstance(ex.config, JobExecutorConfig)
    finally:
        ex.close()
    assert {"single", "multiple", "mpirun", "srun"} <= Launcher.get_launcher_names()
    assert Launcher.DEFAULT_LAUNCHER_NAME == "single"


def test_register_executor_and_launcher_through_a_descriptor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hpcjobs import plugins
    from hpcjobs.descriptor import Descriptor

    monkeypatch.setattr(plugins, "_registered", {})  # the names vanish after the test

    JobExecutor.register_executor(
        Descriptor(name="my-local", version=Version("1.2"),
                   cls="hpcjobs.executors.local.LocalJobExecutor", aliases=["mine"]), "/")
    assert {"my-local", "mine"} <= JobExecutor.get_executor_names()
    ex = JobExecutor.get_instance("mine", config={"work_directory": tmp_path})
    ex.close()
    Launcher.register_launcher(
        Descriptor(name="my-single", version="1.0",
                   cls="hpcjobs.launchers.single.SingleLauncher"), "/")
    assert type(Launcher.get_instance("my-single")).__name__ == "SingleLauncher"
    JobExecutor.register_executor(Descriptor("broken", "1", "no.such.Module"), "/")
    with pytest.raises(ValueError, match="broken"):
        JobExecutor.get_instance("broken")


@pytest.mark.parametrize("module,names", [
    ("job", ["Job", "JobStatusCallback"]),
    ("job_spec", ["JobSpec"]),
    ("job_attributes", ["JobAttributes"]),
    ("job_state", ["JobState", "JobStateOrder"]),
    ("job_status", ["JobStatus"]),
    ("job_executor", ["JobExecutor"]),
    ("job_executor_config", ["JobExecutorConfig"]),
    ("resource_spec", ["ResourceSpec", "ResourceSpecV1"]),
    ("exceptions", ["InvalidJobException", "SubmitException"]),
    ("serialize", ["JSONSerializer", "PSIJSerializable"]),
    ("descriptor", ["Descriptor"]),
    ("executors", ["LocalJobExecutor", "SlurmJobExecutor", "PBSJobExecutor",
                   "FluxJobExecutor", "BatsimJobExecutor"]),
    ("executors.local", ["LocalJobExecutor"]),
    ("executors.batch.batch_scheduler_executor", ["BatchSchedulerExecutor"]),
    ("launchers", ["SingleLauncher", "MultipleLauncher", "MPILauncher", "SrunLauncher"]),
])
def test_psij_module_paths_exist(module: str, names: list[str]) -> None:
    mod = importlib.import_module(f"hpcjobs.{module}")
    for name in names:
        obj = getattr(mod, name)
        top = getattr(hpcjobs, name, None)
        assert top is None or top is obj  # one class, whichever path imports it


def test_config_and_exception_attributes() -> None:
    assert hpcjobs.Descriptor is importlib.import_module("hpcjobs.descriptor").Descriptor
    assert isinstance(JobExecutorConfig.DEFAULT, JobExecutorConfig)
    assert isinstance(JobExecutorConfig.DEFAULT_WORK_DIRECTORY, Path)
    c = JobExecutorConfig(Path("/tmp/launcher.log"), Path("/tmp/work"))
    assert c.launcher_log_file == Path("/tmp/launcher.log") and c.work_directory == Path("/tmp/work")
    cause = OSError("boom")
    e = SubmitException("no", cause, True)
    assert (e.message, e.exception, e.transient) == ("no", cause, True)
    i = InvalidJobException("bad", cause)
    assert (i.message, i.exception) == ("bad", cause)


def test_state_order_and_walltimes() -> None:
    from hpcjobs.job_state import JobStateOrder

    assert JobStateOrder.prev(JobState.COMPLETED) is JobState.CLEANUP
    assert JobStateOrder.prev(JobState.ACTIVE) is JobState.STAGE_IN
    assert JobStateOrder.prev(JobState.STAGE_IN) is JobState.QUEUED
    assert JobState.from_name("STAGE_OUT") is JobState.STAGE_OUT
    assert JobStateOrder.prev(JobState.QUEUED) is JobState.NEW
    assert JobStateOrder.prev(JobState.FAILED) is None
    p = JobAttributes.parse_walltime
    assert p("01:02:03") == timedelta(hours=1, minutes=2, seconds=3)
    assert p("01:02") == timedelta(hours=1, minutes=2)
    assert p("90") == timedelta(minutes=90)
    assert (p("2h"), p("5m"), p("30s")) == (timedelta(hours=2), timedelta(minutes=5),
                                            timedelta(seconds=30))
    with pytest.raises(ValueError):
        p("1:2:3:4")


def test_job_spec_environment_as_psij() -> None:
    spec = JobSpec()
    assert spec.environment is None and spec.executable is None
    spec.environment = {"foo": "biz", "bar": 42}  # type: ignore[dict-item]
    assert spec.environment == {"foo": "biz", "bar": "42"}
    job = Job(spec)
    assert job.executor is None and job.native_id is None and job.status.state is JobState.NEW


def test_version_constraints(tmp_path: Path) -> None:
    ex = JobExecutor.get_instance("local", version_constraint=">= 0.0.1",
                                  config={"work_directory": tmp_path})
    ex.close()
    with pytest.raises(ValueError, match="does not satisfy"):
        JobExecutor.get_instance("local", version_constraint="< 0.0.1")
    assert Launcher.get_instance("single", ">= 0.0.1").config is JobExecutorConfig.DEFAULT
    with pytest.raises(ValueError, match="launcher 'multiple'"):
        Launcher.get_instance("multiple", "< 0.0.1")
