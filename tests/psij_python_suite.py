"""Run psij-python 0.9.11's own test suite against hpcjobs through the ``psij`` alias
(:mod:`hpcjobs.psij_alias`).

psij-python's tests are not part of this repository: like a test dependency, the
psij-python 0.9.11 sdist (which holds them) is fetched with pip into a cache folder the
first time, checked against its pinned sha256, and only its ``tests/`` folder is
unpacked, into the test's temporary folder. Offline, the tests that need it skip (and
fail under ``CI=true``). The suite runs in a pytest of its own, started as
``python -m hpcjobs.psij_alias -m pytest`` (the real psij-python, installed in the test
environment for tests/serialize, would otherwise answer ``import psij``), with the
stand-ins and the table of expected outcomes in tests/psij_python_harness/.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import pytest

import hpcjobs

VERSION = "0.9.11"
SDIST = f"psij-python-{VERSION}.tar.gz"
SHA256 = "de069062d96e6a75a646594cecac67dfa090ab9a0f13a112c0efb97526286e37"
HARNESS = Path(__file__).resolve().parent / "psij_python_harness"
#: files psij-python's tests read that its sdist lacks, supplied by the harness
SUPPLIED = ("test_nodefile.sh",)
IN_CI = os.environ.get("CI", "").lower() == "true"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpcjobs-tests"


def _unavailable(message: str) -> None:
    if IN_CI:
        pytest.fail(message + " (CI=true: psij-python's suite must run, not skip)")
    pytest.skip(message)


def fetch_sdist() -> Path:
    """The cached sdist, downloaded by pip if missing or not the pinned file (pip
    checks the pinned hash before it runs anything of the package)."""
    cache = _cache_dir()
    sdist = cache / SDIST
    if sdist.exists():
        if hashlib.sha256(sdist.read_bytes()).hexdigest() == SHA256:
            return sdist
        sdist.unlink()  # a partial or altered download: fetch it again
    cache.mkdir(parents=True, exist_ok=True)
    requirement = cache / "psij-python.txt"
    requirement.write_text(f"psij-python=={VERSION} --hash=sha256:{SHA256}\n")
    try:
        p = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "--require-hashes", "-r", str(requirement), "-d", str(cache),
             "--timeout", "20", "--retries", "1", "--disable-pip-version-check"],
            capture_output=True, text=True, timeout=300)
        problem = "" if p.returncode == 0 and sdist.exists() else p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        problem = str(e)
    if problem:
        _unavailable(f"could not fetch psij-python {VERSION}'s sdist: {problem[-2000:]}")
    return sdist


def unpack_tests(sdist: Path, into: Path) -> Path:
    """Only the sdist's ``tests/`` files, written into ``into/tests``."""
    prefix = f"psij-python-{VERSION}/tests/"
    tests = into / "tests"
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            name = member.name
            # regular files right under tests/ only: no links, no '..', no subfolders
            if not (member.isfile() and name.startswith(prefix)
                    and "/" not in name[len(prefix):] and name[len(prefix):] != ".."):
                continue
            source = tar.extractfile(member)
            assert source is not None
            tests.mkdir(parents=True, exist_ok=True)
            (tests / name[len(prefix):]).write_bytes(source.read())
    assert any(tests.glob("test_*.py")), f"no tests in {sdist}"
    for name in SUPPLIED:
        shutil.copyfile(HARNESS / name, tests / name)
    return tests


#: the bound on one psij-python test (a job waits up to 20 minutes for a busy batch
#: queue: _test_tools._get_timeout) and on the whole run, which the callers' own
#: pytest timeout must exceed (a batch queue shared with other work may be slow)
TEST_TIMEOUT = 1300
RUN_TIMEOUT = 3600


def run_suite(tmp_path: Path, executors: list[str], *pytest_args: str) -> dict[str, dict[str, str]]:
    """Run the suite with ``execparams`` set to each ``EXECUTOR:LAUNCHER`` in
    ``executors``; returns each test's outcome and reason, after checking that none
    failed (an expected failure that passes is a failure: EXPECTED is strict)."""
    tests = unpack_tests(fetch_sdist(), tmp_path)
    results = tmp_path / "results.json"
    src = Path(hpcjobs.__file__).resolve().parents[1]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(src), str(HARNESS)] + [p for p in [env.get("PYTHONPATH")] if p])
    # psij-python's tests write under ~/.psij and the executors under ~/.hpcjobs
    env["HOME"] = str(tmp_path / "home")
    (tmp_path / "home").mkdir()
    cmd = [sys.executable, "-m", "hpcjobs.psij_alias", "-m", "pytest", "-p", "psij_suite_plugin",
           "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-ra",
           "--timeout", str(TEST_TIMEOUT),
           "--psij-executors", ",".join(executors), "--psij-results", str(results),
           *pytest_args, str(tests)]
    p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=RUN_TIMEOUT)
    print(p.stdout[-20000:], p.stderr[-5000:])
    assert results.exists(), "psij-python's suite did not run"
    outcomes: dict[str, dict[str, str]] = json.loads(results.read_text())
    counts = Counter(o["outcome"] for o in outcomes.values())
    print("psij-python", VERSION, "suite on", executors, dict(counts))
    bad = {k: o for k, o in outcomes.items() if o["outcome"] in ("failed", "error", "xpassed")}
    assert not bad and p.returncode == 0, (p.returncode, bad)
    return outcomes


#: the skips psij-python's tests make themselves, for a launcher or executor they do
#: not apply to
THEIR_SKIPS = ("This test requires mpirun", "Unsupported executor/launcher combination",
               "This test does not work with")


def unexplained_skips(outcomes: dict[str, dict[str, str]]) -> dict[str, str]:
    """Skips that are neither psij-python's own nor listed in the harness's EXPECTED."""
    return {k: o["reason"] for k, o in outcomes.items() if o["outcome"] == "skipped"
            and not o["listed"] and not o["reason"].startswith(THEIR_SKIPS)}


def check_suite(tmp_path: Path, executor: str, launchers: list[str],
                *pytest_args: str) -> None:
    """Run the suite on ``executor`` with each of ``launchers``: nothing fails, nothing
    skips unexplained, and each launcher ran a job."""
    outcomes = run_suite(tmp_path, [f"{executor}:{name}" for name in launchers], *pytest_args)
    assert not unexplained_skips(outcomes)
    for name in launchers:
        key = f"tests/test_executor.py::test_simple_job[{executor}:{name}]"
        assert outcomes[key]["outcome"] == "passed"


def check_executor_tests(tmp_path: Path, executor: str, launchers: list[str]) -> None:
    """:func:`check_suite` for the tests that take an executor only (the others are
    the local run's)."""
    check_suite(tmp_path, executor, launchers, "--psij-execparams-only")


#: the marks of a test module that runs the suite: it takes minutes, more on a busy queue
SUITE_MARKS = [pytest.mark.slow, pytest.mark.timeout(RUN_TIMEOUT + 60)]
