"""ssh URLs: the one parser, and executors that refuse the URLs they cannot serve."""

from __future__ import annotations

import pytest

from hpcjobs import JobExecutor
from hpcjobs.remote import HostUnreachableError, SshTarget, parse_ssh_url


@pytest.mark.parametrize("url, target", [
    ("ssh://login", SshTarget("login")),
    ("ssh://alice@login.example.org", SshTarget("login.example.org", "alice")),
    ("ssh://alice@10.0.0.1:2222", SshTarget("10.0.0.1", "alice", 2222)),
    ("ssh://[::1]:22/", SshTarget("[::1]", None, 22)),
    ("SSH://h", SshTarget("h")),
])
def test_parse(url: str, target: SshTarget) -> None:
    assert parse_ssh_url(url) == target
    assert parse_ssh_url(str(target)) == target


@pytest.mark.parametrize("url, words", [
    ("ssh://alice:secret@login", "password"),
    ("ssh://login:0", "port"),
    ("ssh://login:65536", "port"),
    ("ssh://login:ab", "port"),
    ("ssh://-oProxyCommand=x", "host"),
    ("ssh://-l@login", "user name"),
    ("ssh://login/home/alice", "path"),
    ("ssh://login?x=1", "host"),
    ("ssh://", "host"),
    ("ssh://a b", "host"),
    ("ssh://lo'gin", "host"),
    ("http://login", "not an ssh URL"),
])
def test_bad_urls_say_what_is_wrong(url: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_ssh_url(url)


@pytest.mark.parametrize("url, target", [
    ("ssh://login/run/flux/local", SshTarget("login", path="/run/flux/local")),
    ("ssh://u@login:2222/tmp/flux-Ab_1/local-0/", SshTarget("login", "u", 2222, "/tmp/flux-Ab_1/local-0")),
    ("ssh://login/", SshTarget("login")),
])
def test_a_path_only_where_the_executor_asks_for_one(url: str, target: SshTarget) -> None:
    assert parse_ssh_url(url, path=True) == target
    assert parse_ssh_url(str(target), path=True) == target
    if target.path is not None:
        with pytest.raises(ValueError, match="no path"):
            parse_ssh_url(url)


@pytest.mark.parametrize("url", ["ssh://login/tmp/a b", "ssh://login/tmp/$(id)", "ssh://login/a'b",
                                 "ssh://login/tmp/x?y", "ssh://login/a\nb", "ssh://login//x",
                                 "ssh://login/tmp/`id`", "ssh://login/tmp/~x"])
def test_a_path_any_shell_could_read_otherwise_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="path"):
        parse_ssh_url(url, path=True)


def test_ssh_args_keep_the_host_out_of_ssh_options() -> None:
    assert SshTarget("h", "u", 2).ssh_args() == ["-l", "u", "-p", "2", "--", "h"]
    assert SshTarget("[::1]").ssh_args() == ["--", "::1"]


@pytest.mark.parametrize("name", ["local", "slurm", "pbs", "torque"])
@pytest.mark.parametrize("url", ["ssh://login", "ssh://u@login:2222", "file:///tmp", "login"])
def test_a_url_is_never_ignored(name: str, url: str) -> None:
    if url.startswith("ssh://"):
        # served: the executor goes there at once, and this host does not exist
        with pytest.raises(HostUnreachableError, match="cannot connect to ssh://"):
            JobExecutor.get_instance(name, url=url, config={"ssh_options": ["-o", "ConnectTimeout=5"]})
        return
    with pytest.raises(ValueError) as e:
        JobExecutor.get_instance(name, url=url)
    assert repr(url) in str(e.value) and repr(JobExecutor.get_instance(name).name) in str(e.value)


@pytest.mark.parametrize("name", ["local", "slurm", "pbs", "torque"])
def test_a_path_is_refused_by_the_executors_that_take_none(name: str) -> None:
    with pytest.raises(ValueError, match="no path"):
        JobExecutor.get_instance(name, url="ssh://login/run/flux/local")


def test_a_malformed_ssh_url_names_the_executor_and_the_fault() -> None:
    with pytest.raises(ValueError, match="executor 'slurm'.*password"):
        JobExecutor.get_instance("slurm", url="ssh://u:pw@login")


def test_no_url_is_still_fine() -> None:
    JobExecutor.get_instance("local", url=None).close()
