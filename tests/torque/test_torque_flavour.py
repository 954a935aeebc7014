"""Which flavour ``get_instance('pbs')`` runs: the setting, else PBS's configuration
file, else what ``qstat --version`` prints (stand-in qstat scripts printing what the real
ones print: OpenPBS's recorded in tests/fixtures/openpbs-23.06, Slurm's wrapper's in
tests/fixtures/slurm-torque-22.05/raw/11-qstat-version.stderr). Needs no scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcjobs import JobExecutor
from hpcjobs.executors.pbs import PBSJobExecutor, TorqueJobExecutor

WRAPPER_SAYS = (Path(__file__).resolve().parents[1] / "fixtures" / "slurm-torque-22.05" /
                "raw" / "11-qstat-version.stderr")


def qstat_printing(tmp_path: Path, stdout: str, stderr: str, code: int) -> Path:
    where = tmp_path / "bin"
    where.mkdir()
    (where / "out").write_text(stdout)
    (where / "err").write_text(stderr)
    (where / "qstat").write_text(f'#!/bin/sh\ncat "{where}/out"; cat "{where}/err" >&2; '
                                 f'exit {code}\n')
    (where / "qstat").chmod(0o755)
    return where


@pytest.mark.parametrize("stdout, stderr, code, flavour", [
    ("pbs_version = 23.06.06\n", "", 0, PBSJobExecutor),
    ("Version: 6.1.2\nCommit: 661e092552de43a785c15d39a3634a541d86898e\n", "", 0,
     TorqueJobExecutor),
    ("", WRAPPER_SAYS.read_text(), 2, TorqueJobExecutor),
    # a qstat failing (a shim, a broken install) is no sign of Torque
    ("", "qstat: cannot connect to server vm (errno=15010)\n", 2, PBSJobExecutor),
])
def test_detected_from_qstat_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     stdout: str, stderr: str, code: int,
                                     flavour: type) -> None:
    monkeypatch.setenv("PBS_CONF_FILE", str(tmp_path / "no-pbs.conf"))
    where = qstat_printing(tmp_path, stdout, stderr, code)
    ex = JobExecutor.get_instance("pbs", config={"bin_directory": where,
                                                 "work_directory": tmp_path / "work"})
    assert type(ex) is flavour
    assert ex.name == ("torque" if flavour is TorqueJobExecutor else "pbs")
    ex.close()


def test_the_setting_and_the_name_decide_without_asking(tmp_path: Path) -> None:
    # a qstat that would say OpenPBS, were it asked
    where = qstat_printing(tmp_path, "pbs_version = 23.06.06\n", "", 0)
    ex = JobExecutor.get_instance("pbs", config={"bin_directory": where, "flavour": "torque"})
    assert type(ex) is TorqueJobExecutor
    ex.close()
    ex = JobExecutor.get_instance("torque", config={"bin_directory": where})
    assert type(ex) is TorqueJobExecutor
    ex.close()
    with pytest.raises(ValueError, match="torque flavour"):
        JobExecutor.get_instance("torque", config={"flavour": "openpbs"})
    with pytest.raises(ValueError, match="not one of"):
        JobExecutor.get_instance("pbs", config={"flavour": "sge"})
