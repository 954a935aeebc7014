"""The ssh connection against a real OpenSSH server (scripts/sshd.sh): byte-exact
arguments and files, one round trip per batch, clear errors for each way a connection
fails, a new master after the old one is killed mid-use, and raw streams to a command
(a stage-in's tar) that arrive whole or leave nothing a reader takes for whole."""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import socket
import subprocess
import tarfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssh_login import Login
from hpcjobs.remote import (HostKeyError, HostUnreachableError, LoginError, MakeDirs, ReadFile,
                            RemoteCommandNotFound, Remove, Run, SshConnection, SshConnectionLost,
                            NewDirs, SshTarget, WriteFile)

#: the bytes a POSIX shell is most likely to mangle: quotes, expansions, line breaks,
#: and dash's internal control bytes (0x81-0x8a)
HOSTILE = [b"it's", b'"$HOME"', b"`id`", b"$(id)", b"a\nb", b"\t", b"\\", b"-n", b"*",
           b"~", b"#", b";", b"|&", b"\xff\xfe", bytes(range(0x80, 0x8b)), b"", b" ", b"'", b"''"]
NO_NUL = st.binary(max_size=40).map(lambda b: b.replace(b"\0", b"x"))


def _args_arrive(conn: SshConnection, args: list[bytes]) -> None:
    # /usr/bin/printf is exec'd: what it prints is the argv that reached execve
    # (a first argument of our own: printf with none prints its format once)
    r = conn.run([b"/usr/bin/printf", b"%s\\000", b"argv", *args], check=True)
    assert r.stdout == b"".join(a + b"\0" for a in [b"argv", *args])


def test_runs_as_the_remote_user_in_one_round_trip(conn: SshConnection, login: Login) -> None:
    r = conn.run(["id", "-un"], check=True)
    assert r.text.strip() == login.user != os.environ.get("USER", "root")
    assert (conn.round_trips, conn.logins) == (1, 1)


def test_hostile_arguments_arrive_byte_for_byte(conn: SshConnection) -> None:
    _args_arrive(conn, HOSTILE)
    _args_arrive(conn, [b"".join(HOSTILE)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(NO_NUL, max_size=6))
def test_generated_arguments_arrive_byte_for_byte(conn: SshConnection, args: list[bytes]) -> None:
    _args_arrive(conn, args)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=20).filter(lambda s: "\0" not in s), max_size=4))
def test_str_arguments_arrive_as_their_utf8(conn: SshConnection, args: list[str]) -> None:
    try:
        encoded = [os.fsencode(a) for a in args]
    except UnicodeEncodeError:  # a lone surrogate: refused before sending
        with pytest.raises(ValueError, match="cannot be encoded"):
            conn.run(["true", *args])
        return
    r = conn.run(["/usr/bin/printf", "%s\\000", "argv", *args], check=True)
    assert r.stdout == b"".join(a + b"\0" for a in [b"argv", *encoded])


def test_undecodable_file_names_as_str_round_trip(conn: SshConnection) -> None:
    name = os.fsdecode(b"caf\xe9")  # surrogate-escaped, as os.listdir gives it
    _args_arrive(conn, [os.fsencode(name)])
    assert conn.run(["/usr/bin/printf", "%s", name]).stdout == b"caf\xe9"


def test_a_nul_is_refused_before_anything_is_sent(conn: SshConnection) -> None:
    for op in (Run(["echo", "a\0b"]), WriteFile(b"/tmp/x\0y", b""), Run(["a\0"])):
        with pytest.raises(ValueError, match="NUL"):
            conn.batch([Run(["true"]), op])
    assert conn.round_trips == 0


@pytest.fixture
def remote_dir(conn: SshConnection, login: Login):  # type: ignore[no-untyped-def]
    home = conn.run(["sh", "-c", 'printf %s "$HOME"'], check=True).stdout
    d = home + b"/hpcjobs-tests-%d" % os.getpid()
    conn.run(["mkdir", "-p", d], check=True)
    yield d
    conn.run(["rm", "-rf", d])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NO_NUL.filter(lambda b: b not in (b"", b".", b"..")).map(lambda b: b.replace(b"/", b"_")),
       data=st.binary(max_size=3000) | st.binary(min_size=8000, max_size=9000)
       | st.sampled_from(HOSTILE))
def test_written_files_hold_exactly_the_bytes_sent(conn: SshConnection, remote_dir: bytes,
                                                   name: bytes, data: bytes) -> None:
    path = remote_dir + b"/" + name
    r = conn.batch([WriteFile(path, data, 0o640), ReadFile(path)])
    assert [x.returncode for x in r] == [0, 0]
    assert r[1].stdout == data
    # read on this machine (the same one), past the connection: what arrived
    assert Path(os.fsdecode(path)).read_bytes() == data
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert [p for p in os.listdir(remote_dir) if b".hpcjobs-part." in p] == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(NO_NUL.filter(lambda b: b not in (b"", b".", b"..")).map(
           lambda b: b.replace(b"/", b"_")), min_size=1, max_size=4, unique=True),
       data=NO_NUL | st.sampled_from(HOSTILE))
def test_new_directories_hold_exactly_the_files_sent(conn: SshConnection, remote_dir: bytes,
                                                     names: list[bytes], data: bytes) -> None:
    top = remote_dir + b"/" + os.urandom(8).hex().encode()  # (hypothesis seeds random)
    dirs = [top + b"/" + n for n in names]
    r = conn.batch([MakeDirs(top), NewDirs(tuple(
        (d, ((b"script", data, 0o700), (b"out", b"", 0o600), (names[0], data[::-1], 0o640)))
        for d in dirs))])
    assert [x.returncode for x in r] == [0, 0], r
    for d in dirs:
        assert os.stat(d).st_mode & 0o777 == 0o700
        for name, want, mode in ((b"script", data, 0o700), (b"out", b"", 0o600),
                                 (names[0], data[::-1], 0o640)):
            assert Path(os.fsdecode(d + b"/" + name)).read_bytes() == want
            assert os.stat(d + b"/" + name).st_mode & 0o777 == mode
    # made already: refused (the directory is not reused), and its files left as they were
    again = conn.batch([NewDirs(((dirs[0], ((b"script", b"other", 0o700),)),))])[0]
    assert again.returncode != 0 and b"exists" in again.stderr
    assert Path(os.fsdecode(dirs[0] + b"/script")).read_bytes() == data


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=20_000) | st.sampled_from(HOSTILE),
       repeat=st.integers(min_value=1, max_value=300))
def test_files_sent_compressed_arrive_as_they_were(conn: SshConnection, remote_dir: bytes,
                                                   data: bytes, repeat: int) -> None:
    # (gzip's output, small and large: as octal escapes or as base64, NULs in both)
    import gzip
    whole = data * repeat
    packed = gzip.compress(whole, 1, mtime=0)
    top = remote_dir + b"/" + os.urandom(8).hex().encode()
    r = conn.batch([WriteFile(top + b".file", packed, 0o640, gzipped=True),
                    NewDirs(((top, ((b"plain", b"x", 0o600), (b"packed", packed, 0o700, True))),))])
    assert [x.returncode for x in r] == [0, 0], r
    assert Path(os.fsdecode(top + b".file")).read_bytes() == whole
    assert Path(os.fsdecode(top + b"/packed")).read_bytes() == whole
    assert os.stat(top + b"/packed").st_mode & 0o777 == 0o700
    assert Path(os.fsdecode(top + b"/plain")).read_bytes() == b"x"


def test_a_batch_is_one_round_trip_whatever_its_size(conn: SshConnection, remote_dir: bytes) -> None:
    ops = []
    for i in range(200):
        d = remote_dir + b"/job%d" % i
        ops += [MakeDirs(d, 0o700), WriteFile(d + b"/script", b"#!/bin/sh\necho %d\n" % i, 0o700),
                Run([d + b"/script"])]
    before = conn.round_trips
    results = conn.batch(ops)
    assert conn.round_trips == before + 1 and conn.logins == 1
    assert [r.stdout for r in results[2::3]] == [b"%d\n" % i for i in range(200)]
    assert os.stat(remote_dir + b"/job7").st_mode & 0o777 == 0o700


def test_each_operation_has_its_own_result(conn: SshConnection, remote_dir: bytes) -> None:
    r = conn.batch([Run(["sh", "-c", "echo out; echo err >&2; exit 3"]), ReadFile(remote_dir + b"/none"),
                    Run(["pwd"], cwd=remote_dir), Run(["pwd"]), Run(["cat"], input=b"no newline"),
                    Run(["cat"]), Remove(remote_dir + b"/none"), Run(["sh", "-c", "exit 127"])])
    assert (r[0].returncode, r[0].stdout, r[0].stderr) == (3, b"out\n", b"err\n")
    assert r[1].returncode != 0 and b"No such file" in r[1].stderr
    assert r[2].stdout == remote_dir + b"\n" and r[3].stdout != r[2].stdout  # cd stays in its op
    assert r[4].stdout == b"no newline" and r[5].stdout == b""  # stdin is empty, not the script
    assert r[6].ok and r[7].returncode == 127 and not r[7].missing


@pytest.mark.parametrize("group, parallel", [(1, 1), (4, 1), (3, 2), (16, 4)])
def test_grouped_and_parallel_commands_keep_their_own_results_in_order(
        conn: SshConnection, group: int, parallel: int) -> None:
    # the first commands sleep longest: run side by side, the later ones end first
    ops = [Run(["sh", "-c", f"sleep 0.{9 - i}; echo out{i}; echo err{i} >&2; exit {i}"])
           for i in range(8)]
    ops[5:5] = [Run(["no-such-command-here", "x"]), Run(["cat"], input=b"in\0put"),
                Run(["true"]), Run(["sh", "-c", "exit 127"])]
    before = conn.round_trips
    r = conn.batch(ops, guard=1, group=group, parallel=parallel)
    assert conn.round_trips == before + 1 and len(r) == len(ops)
    runs = r[:5] + r[9:]
    assert [(x.returncode, x.stdout, x.stderr) for x in runs] == [
        (i, b"out%d\n" % i, b"err%d\n" % i) for i in range(8)]
    assert r[5].missing and r[5].returncode == 127
    assert (r[6].stdout, r[7].returncode, r[7].stdout) == (b"in\0put", 0, b"")
    assert r[8].returncode == 127 and not r[8].missing


def test_a_missing_remote_command_is_named(conn: SshConnection) -> None:
    r = conn.run(["sbatch-not-here", "x"])
    assert r.missing and r.returncode == 127
    with pytest.raises(RemoteCommandNotFound, match="sbatch-not-here.*not found"):
        conn.run(["sbatch-not-here"], check=True)


def test_login_script_chatter_does_not_confuse_the_results(conn: SshConnection, login: Login) -> None:
    bashrc = Path(os.path.expanduser(f"~{login.user}")) / ".bashrc"
    before = bashrc.read_bytes() if bashrc.exists() else None
    bashrc.write_bytes((before or b"") + b"\necho 'Welcome!'; echo noise >&2\n")
    try:
        assert conn.run(["echo", "hi"], check=True).stdout == b"hi\n"
    finally:
        if before is None:
            bashrc.unlink()
        else:
            bashrc.write_bytes(before)


def test_close_ends_the_master(login: Login) -> None:
    c = login.connection()
    c.run(["true"])
    pid = c.master_pid
    assert pid is not None
    c.close()
    _wait_dead(pid)
    with pytest.raises(Exception, match="closed"):
        c.run(["true"])


def _wait_dead(pid: int) -> None:
    for _ in range(200):
        if not _alive(pid):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} outlived SIGKILL")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


# -- failures --------------------------------------------------------------------------
def test_a_refused_login_raises_login_error(login: Login, tmp_path: Path) -> None:
    key = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    c = login.connection(login.config_with(tmp_path, IdentityFile=str(key)))
    with pytest.raises(LoginError, match="refused") as e:
        c.run(["true"])
    assert not e.value.transient and c.round_trips == 0
    c.close()


def test_a_changed_host_key_is_refused(login: Login, tmp_path: Path) -> None:
    other = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = tmp_path / "known_hosts"
    pub = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    known.write_text(f"[127.0.0.1]:{login.port} {pub}\n")
    c = login.connection(login.config_with(tmp_path, UserKnownHostsFile=str(known)))
    with pytest.raises(HostKeyError, match="host key") as e:
        c.run(["true"])
    assert "CHANGED" in e.value.stderr and not e.value.transient
    c.close()


def test_an_unknown_host_key_is_refused_not_accepted(login: Login, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    c = login.connection(login.config_with(tmp_path, UserKnownHostsFile=str(empty)))
    with pytest.raises(HostKeyError):
        c.run(["true"])
    assert empty.read_text() == ""  # nothing was added
    c.close()


def test_an_unreachable_host_raises_a_transient_error(login: Login) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    c = SshConnection(SshTarget("127.0.0.1", login.user, port), ["-F", str(login.config)],
                      connect_timeout=5)
    with pytest.raises(HostUnreachableError, match="cannot connect") as e:
        c.run(["true"])
    assert e.value.transient
    c.close()


def test_an_unknown_host_name_raises_unreachable(login: Login) -> None:
    c = SshConnection(SshTarget("no-such-host.invalid"), ["-F", str(login.config)], connect_timeout=5)
    with pytest.raises(HostUnreachableError):
        c.run(["true"])
    c.close()


# -- faults ------------------------------------------------------------------------------
def test_a_killed_master_is_replaced(conn: SshConnection) -> None:
    conn.run(["true"], check=True)
    pid = conn.master_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    _wait_dead(pid)
    assert conn.run(["echo", "again"], check=True).stdout == b"again\n"
    assert conn.logins == 2 and conn.master_pid not in (None, pid)


def test_killed_mid_use_the_round_trip_fails_and_the_next_reconnects(conn: SshConnection,
                                                                    login: Login) -> None:
    conn.run(["true"], check=True)
    master = conn.master_pid
    assert master is not None
    outcome: list[BaseException | object] = []

    # (a duration of its own: other tests and runs use the login node's user meanwhile,
    # and only this session's processes may be killed)
    mine = f"60.{os.getpid()}{threading.get_ident() % 1000}"

    def use() -> None:
        try:
            outcome.append(conn.batch([Run(["echo", "first"]), Run(["sleep", mine]),
                                       Run(["echo", "never"])]))
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    t = threading.Thread(target=use)
    t.start()
    sleeper = None
    for _ in range(200):  # until the remote sleep runs
        sleeper = _own_process(login.user, ["sleep", mine])
        if sleeper is not None:
            break
        time.sleep(0.05)
    assert sleeper is not None
    # the server's child serving the session there (found while the session lives)
    server = None
    with contextlib.suppress(psutil.NoSuchProcess):
        server = next((p for p in sleeper.parents()
                       if p.name() == "sshd" and p.username() == login.user), None)
    # the multiplexing master here, then that child there
    os.kill(master, signal.SIGKILL)
    if server is not None:
        with contextlib.suppress(psutil.NoSuchProcess):
            server.kill()
    t.join(60)
    assert not t.is_alive()
    with contextlib.suppress(psutil.NoSuchProcess):
        sleeper.kill()
    (e,) = outcome
    assert isinstance(e, SshConnectionLost) and e.transient
    assert [r.stdout for r in e.completed] == [b"first\n"]
    assert conn.run(["echo", "back"], check=True).stdout == b"back\n"
    assert conn.logins == 2


def test_retry_runs_a_safe_batch_again_on_a_new_connection(conn: SshConnection, login: Login,
                                                          remote_dir: bytes) -> None:
    # the first run leaves a marker and hangs until its connection is killed; the retry
    # finds the marker and answers at once
    marker = os.fsdecode(remote_dir) + "/first-run"
    mine = f"30.{os.getpid()}"  # (only this test's sleep is killed afterwards)
    script = f'if [ -e "$1" ]; then echo retried; else touch "$1"; exec sleep {mine}; fi'
    master = conn.master_pid
    assert master is not None

    def kill_when_first_runs() -> None:
        for _ in range(600):
            if os.path.exists(marker):
                break
            time.sleep(0.05)
        os.kill(master, signal.SIGKILL)
        _wait_dead(master)

    t = threading.Thread(target=kill_when_first_runs)
    t.start()
    before = conn.round_trips
    r = conn.batch([Run(["sh", "-c", script, "sh", marker])], retry=True)
    t.join()
    sleeper = _own_process(login.user, ["sleep", mine])
    if sleeper is not None:
        sleeper.kill()
    assert r[0].stdout == b"retried\n"
    assert conn.round_trips == before + 2 and conn.logins == 2


def test_large_files_arrive_whole(conn: SshConnection, remote_dir: bytes) -> None:
    rng = random.Random(7)
    text = bytes(rng.randrange(1, 256) for _ in range(2_000_000))   # no NUL: one printf
    binary = bytes(rng.randrange(0, 256) for _ in range(200_000))   # NULs: octal escapes
    r = conn.batch([WriteFile(remote_dir + b"/text", text), WriteFile(remote_dir + b"/bin", binary)])
    assert all(x.ok for x in r)
    assert Path(os.fsdecode(remote_dir + b"/text")).read_bytes() == text
    assert Path(os.fsdecode(remote_dir + b"/bin")).read_bytes() == binary


def _own_process(user: str, cmdline: list[str]) -> "psutil.Process | None":
    """The process of ``user`` running exactly ``cmdline``, if there is one."""
    for p in psutil.process_iter(["username", "cmdline"]):
        if p.info["username"] == user and p.info["cmdline"] == cmdline:
            return p
    return None



def test_a_stream_reaches_the_last_operation_raw(conn: SshConnection, remote_dir: bytes) -> None:
    data = random.Random(3).randbytes(3_000_000) + b"\0" * 100_000
    path = remote_dir + b"/" + b"".join(HOSTILE[:-4])
    before = conn.round_trips
    r = conn.batch([WriteFile(path + b".first", b"before"), Run(["cat"]),
                    Run(["sh", "-c", 'cat >"$1" && printf %s "$1"', "sh", path])],
                   stdin=lambda out: out.write(data))
    assert conn.round_trips == before + 1
    assert [x.returncode for x in r] == [0, 0, 0]
    assert r[1].stdout == b""  # (the stream is the last operation's alone)
    assert r[2].stdout == path
    assert Path(os.fsdecode(path)).read_bytes() == data
    assert Path(os.fsdecode(path + b".first")).read_bytes() == b"before"


def test_a_stream_its_writer_cut_short_is_not_taken_for_whole(conn: SshConnection,
                                                              remote_dir: bytes) -> None:
    # a tar of one whole member and no end: GNU tar alone takes it for the whole archive
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("first")
        info.size = 1000
        tar.addfile(info, io.BytesIO(b"x" * 1000))
    whole_member = buffer.getvalue()[:512 + 1024]

    def writer(out: BinaryIO) -> None:
        out.write(whole_member)
        raise OSError("the next file could not be read")

    unpack = Run(["sh", "-c", 'mkdir -p "$1" && tar -xf - -C "$1" && touch "$1.ok"', "sh",
                  remote_dir + b"/x"])
    with pytest.raises(OSError, match="could not be read"):
        conn.batch([unpack], stdin=writer)
    assert not os.path.exists(remote_dir + b"/x.ok")
    # the same bytes whole: unpacked
    r = conn.batch([unpack], stdin=lambda out: out.write(buffer.getvalue()))
    assert r[0].ok and os.path.exists(remote_dir + b"/x.ok")


def test_a_command_that_reads_none_of_its_stream_ends_the_round_trip(conn: SshConnection) -> None:
    written = []

    def writer(out: BinaryIO) -> None:
        for _ in range(400):  # 100 MB, more than any pipe holds
            out.write(bytes(256 * 1024))
            written.append(1)

    r = conn.batch([Run(["sh", "-c", "echo done"])], stdin=writer, timeout=60)
    assert r[0].stdout == b"done\n"
    assert len(written) < 400  # (a broken pipe ended the writer, no error)
    with pytest.raises(ValueError, match="retried"):
        conn.batch([Run(["true"])], stdin=writer, retry=True)
