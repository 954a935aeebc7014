"""``SshHost`` through the real sshd: the batch host's calls with the local host's
meanings, file changes travelling with the next command (one round trip for a
submit's directory, script and command), a failed change stopping what follows; files
staged there and back byte for byte, in order with the changes queued before them."""

from __future__ import annotations

import filecmp
import os
import random
from pathlib import Path

import pytest

from ssh_login import Login
from hpcjobs.errors import CommandError
from hpcjobs.remote import RemoteFileError, SshConnection, SshHost
from hpcjobs.remote.errors import SshError
from hpcjobs.remote.login import PROBE, RemoteLogin, read_login
from hpcjobs.remote.ops import Result
from hpcjobs.remote.shared import SharedConnections
from hpcjobs.staging import StagingMode

#: a file name no shell may touch: quotes, expansions, a newline, a tab, bytes not UTF-8
HOSTILE_NAME = os.fsdecode(b"it's \"$HOME\" `id` $(id) a\nb\tc \\ \xff\xfe*")


@pytest.fixture
def work(conn: SshConnection):  # type: ignore[no-untyped-def]
    home = conn.run(["sh", "-c", 'printf %s "$HOME"'], check=True).text
    d = f"{home}/hpcjobs-host-{os.getpid()}"
    conn.run(["rm", "-rf", d])
    conn.run(["mkdir", "-m", "700", d], check=True)
    yield d
    conn.run(["rm", "-rf", d])


def test_a_submit_is_one_round_trip(conn: SshConnection, work: str, login: Login) -> None:
    host = SshHost(conn)
    before = conn.round_trips
    job = f"{work}/job 'quoted' $HOME"
    host.make_dir(job)
    host.write_file(f"{job}/script", b"#!/bin/sh\necho ran as $(id -un)\n", mode=0o700)
    host.hard_link(f"{job}/script", f"{work}/ids/1")
    r = host.run([f"{job}/script"], timeout=60)
    assert r.stdout == f"ran as {login.user}\n"
    assert conn.round_trips == before + 1
    st = os.stat(f"{job}/script")
    assert st.st_mode & 0o777 == 0o700 and st.st_nlink == 2
    assert os.stat(job).st_mode & 0o777 == 0o700


def test_reads_in_one_round_trip(conn: SshConnection, work: str) -> None:
    host = SshHost(conn)
    host.write_file(f"{work}/a", b"0123456789")
    host.write_file(f"{work}/b\nnewline", b"\xff\x00x")
    host.flush()
    before = conn.round_trips
    a, b, missing, d = host.read_files([f"{work}/a", f"{work}/b\nnewline", f"{work}/none", work],
                                       offsets=[3, 0, 0, 0], limit=4)
    assert conn.round_trips == before + 1
    assert a is not None and a.data == b"3456" and a.size == 10 and not a.is_dir
    st = os.stat(f"{work}/a")
    assert a.identity == (st.st_dev, st.st_ino) and a.mtime == pytest.approx(st.st_mtime, abs=1e-6)
    assert b is not None and b.data == b"\xff\x00x"
    assert missing is None
    assert d is not None and d.is_dir and d.data == b""
    assert sorted(host.list_dir(work) or []) == ["a", "b\nnewline"]
    assert host.list_dir(f"{work}/none") is None


def test_exclusive_writes_refuse_an_existing_file(conn: SshConnection, work: str) -> None:
    host = SshHost(conn)
    host.write_file(f"{work}/f", b"first")
    host.write_file(f"{work}/f", b"second", exclusive=False)
    host.flush()
    assert Path(f"{work}/f").read_bytes() == b"second"
    host.write_file(f"{work}/f", b"third")  # exclusive by default
    host.write_file(f"{work}/after", b"never")
    with pytest.raises(RemoteFileError, match="WriteFile"):
        host.run(["true"], timeout=60)
    assert Path(f"{work}/f").read_bytes() == b"second"
    assert not Path(f"{work}/after").exists()  # nothing after the failed change ran
    assert [n for n in os.listdir(work) if "hpcjobs-part" in n] == []


def test_a_failed_change_stops_the_command_it_travels_with(conn: SshConnection, work: str) -> None:
    host = SshHost(conn)
    host.make_dir(f"{work}/no/such/parent")
    host.write_file(f"{work}/no/such/parent/script", b"x")
    with pytest.raises(RemoteFileError, match="mkdir"):
        host.run(["touch", f"{work}/submitted"], timeout=60)
    assert not Path(f"{work}/submitted").exists()
    host.make_dir(work, exist_ok=True)
    host.run(["true"], timeout=60)  # the queue was emptied by the failure


def test_a_burst_of_new_directories_is_one_change(conn: SshConnection, work: str) -> None:
    host = SshHost(conn)
    names = ["plain", "it's \"q\" $HOME `id`", "new\nline", os.fsdecode(b"caf\xe9")]
    for n in names:
        host.make_dir(f"{work}/{n}")
        host.write_file(f"{work}/{n}/batch.out", b"")
        host.write_file(f"{work}/{n}/job.sh", os.fsencode(f"#!/bin/sh\necho '{n}'\n"), mode=0o700)
    host.remove(f"{work}/{names[0]}/environment")  # (never written: nothing to do)
    before = conn.round_trips
    assert host.run(["cat", f"{work}/{names[1]}/job.sh"], timeout=60).stdout.endswith(f"'{names[1]}'\n")
    assert conn.round_trips == before + 1
    for n in names:
        d = os.fsencode(f"{work}/{n}")
        assert os.stat(d).st_mode & 0o777 == 0o700
        assert sorted(os.listdir(d)) == [b"batch.out", b"job.sh"]
        assert os.stat(d + b"/job.sh").st_mode & 0o777 == 0o700
        assert os.stat(d + b"/batch.out").st_mode & 0o777 == 0o600
    # one that exists already fails the change, naming it; the command after it never runs
    host.make_dir(f"{work}/fresh")
    host.make_dir(f"{work}/{names[0]}")
    host.write_file(f"{work}/{names[0]}/job.sh", b"replaced?")
    with pytest.raises(RemoteFileError, match="plain.*File exists"):
        host.run(["touch", f"{work}/submitted"], timeout=60)
    assert not Path(f"{work}/submitted").exists()
    assert Path(f"{work}/plain/job.sh").read_bytes() == b"#!/bin/sh\necho 'plain'\n"


def test_flush_reports_a_failed_change(conn: SshConnection, work: str) -> None:
    host = SshHost(conn)
    host.write_file(f"{work}/missing-dir/f", b"x")
    host.write_file(f"{work}/g", b"never")
    with pytest.raises(RemoteFileError, match="missing-dir"):
        host.flush()
    assert not Path(f"{work}/g").exists()


def test_a_lost_connection_is_the_error_the_local_host_would_raise(login: Login, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = SshHost(login.connection(login.config_with(tmp_path, UserKnownHostsFile=str(empty))))
    with pytest.raises(CommandError, match="host key"):
        host.run(["true"], timeout=60)
    with pytest.raises(ConnectionError, match="host key"):
        host.read_files(["/etc/hostname"])
    host.connection.close()


def test_run_keeps_the_external_contract(conn: SshConnection) -> None:
    host = SshHost(conn)
    with pytest.raises(CommandError, match="not found"):
        host.run(["sbatch-not-here"], timeout=60)
    with pytest.raises(CommandError) as e:
        host.run(["sh", "-c", "echo out; echo err >&2; exit 4"], timeout=60)
    assert (e.value.returncode, e.value.stdout, e.value.stderr) == (4, "out\n", "err\n")
    assert host.run(["sh", "-c", "exit 4"], timeout=60, check=False).returncode == 4
    seen = []
    host.run(["true"], timeout=60, meanwhile=lambda: seen.append(1))
    assert seen == [1]


def test_remove_and_rename(conn: SshConnection, work: str) -> None:
    host = SshHost(conn)
    host.make_dir(f"{work}/tree")
    host.write_file(f"{work}/tree/f", b"x")
    host.rename(f"{work}/tree/f", f"{work}/g")
    host.remove(f"{work}/tree")
    host.remove(f"{work}/gone-already")
    host.flush()
    assert sorted(os.listdir(work)) == ["g"]


def test_executors_share_one_connection_per_destination(login: Login) -> None:
    shared = SharedConnections()
    a = shared.acquire(login.connection().target, ["-F", str(login.config)])
    b = shared.acquire(login.connection().target, ["-F", str(login.config)])
    assert a is b and shared.users(a) == 2
    a.run(["true"], check=True)
    pid = a.master_pid
    shared.release(a)
    assert a.master_pid == pid  # still in use by the other
    shared.release(b)
    assert a.master_pid is None and shared.users(a) == 0


def test_a_tick_over_many_files_costs_a_constant_number_of_processes(conn: SshConnection,
                                                                     work: str) -> None:
    host = SshHost(conn)
    for i in range(300):
        host.write_file(f"{work}/f{i}", b"%d" % i * (i % 7))
    host.make_dir(f"{work}/sub")
    host.flush()
    paths = [p for i in range(300) for p in (f"{work}/f{i}", f"{work}/missing{i}")] + [f"{work}/sub"]
    offsets = [1 if i % 50 == 0 else 0 for i in range(len(paths))]
    before = conn.round_trips
    found = host.read_files(paths, offsets, limit=5)
    assert conn.round_trips == before + 1  # no fallback: nothing changed meanwhile
    for path, offset, got in zip(paths, offsets, found):
        if "missing" in path:
            assert got is None
            continue
        assert got is not None
        st = os.stat(path)
        assert (got.size, got.identity, got.is_dir) == (st.st_size, (st.st_dev, st.st_ino),
                                                        os.path.isdir(path))
        if not got.is_dir:
            assert got.data == Path(path).read_bytes()[offset:offset + 5]


def test_bytes_that_do_not_add_up_fall_back_to_reading_each_file() -> None:
    from hpcjobs.remote.host import split_many
    out = b"102\n1.5 1 2 3 regular file\n2.5 1 3 4096 directory\nabc"
    got = split_many(out, [0, 0, 0], limit=10)
    assert got is not None and got[0] is not None and got[0].data == b"abc" and got[1] is None
    assert got[2] is not None and got[2].is_dir
    assert split_many(out + b"d", [0, 0, 0], 10) is None  # grew between stat and cat
    assert split_many(out[:-1], [0, 0, 0], 10) is None    # shrank, or vanished
    assert split_many(b"11\n" + out[4:], [0, 0], 10) is None  # a file where stat saw a directory


def test_the_login_probe_is_one_round_trip_and_says_who_is_there(conn: SshConnection,
                                                                 login: Login) -> None:
    host = SshHost(conn)
    before = conn.round_trips
    found = host.login()
    assert (found.name, found.home) == (login.user, os.path.expanduser(f"~{login.user}"))
    assert host.user() == (found.uid, login.user) and found.uid != os.getuid()
    assert host.expand_user("~/x") == f"{found.home}/x"
    assert conn.round_trips == before + 1


def test_a_login_without_env_0_is_read_a_line_a_variable() -> None:
    # (results as an old ``env`` without -0 prints them: no remote host shows this)
    out = Result(PROBE[0], 0, b"HOME=/home/u\nPATH=/bin:/usr/bin\n")
    found = read_login([out, *found_ids()], "h")
    assert found == RemoteLogin({"HOME": "/home/u", "PATH": "/bin:/usr/bin"}, 1001, "u")
    with pytest.raises(SshError, match="no HOME in the environment on h"):
        read_login([Result(PROBE[0], 0, b"PATH=/bin\n"), *found_ids()], "h")


def found_ids() -> list[Result]:
    return [Result(PROBE[1], 0, b"1001\n"), Result(PROBE[2], 0, b"u\n"), Result(PROBE[3], 0, b"")]


def _same_tree(a: Path, b: Path) -> None:
    """``a`` and ``b`` hold the same names, kinds and bytes (recursively)."""
    cmp = filecmp.dircmp(a, b)
    assert not (cmp.left_only or cmp.right_only or cmp.funny_files), (cmp.left_only, cmp.right_only)
    for name in cmp.common_files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    for name in cmp.common_dirs:
        _same_tree(a / name, b / name)


def test_staged_files_go_there_and_back_byte_for_byte(conn: SshConnection, work: str,
                                                      tmp_path: Path) -> None:
    host = SshHost(conn)
    rng = random.Random(32)
    binary = bytes(rng.randrange(256) for _ in range(300_000)) + b"\0" * 70_000  # NULs, > 64 KiB
    src = tmp_path / "src"
    (src / HOSTILE_NAME).mkdir(parents=True)
    (src / HOSTILE_NAME / HOSTILE_NAME).write_bytes(binary)
    (src / HOSTILE_NAME / ("long " * 30 + HOSTILE_NAME)).write_bytes(b"")  # (a pax header)
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o750)
    target = f"{work}/{HOSTILE_NAME}/in"
    before = conn.round_trips
    host.put(str(src), target, StagingMode.COPY)
    host.put(str(src / HOSTILE_NAME / HOSTILE_NAME), f"{work}/{HOSTILE_NAME}.bin", StagingMode.COPY)
    assert conn.round_trips == before + 2
    _same_tree(src, Path(target))  # (read on this machine, past the connection)
    assert Path(f"{work}/{HOSTILE_NAME}.bin").read_bytes() == binary
    assert os.stat(f"{target}/run.sh").st_mode & 0o777 == 0o750
    before = conn.round_trips
    host.get(target, str(tmp_path / "back"), StagingMode.COPY)
    host.get(f"{work}/{HOSTILE_NAME}.bin", str(tmp_path / HOSTILE_NAME), StagingMode.COPY)
    assert conn.round_trips == before + 2
    _same_tree(src, tmp_path / "back")
    assert (tmp_path / HOSTILE_NAME).read_bytes() == binary
    assert [n for n in os.listdir(f"{work}/{HOSTILE_NAME}") if "hpcjobs-part" in n] == []


def test_a_get_streams_what_it_brings_back(conn: SshConnection, work: str,
                                           tmp_path: Path) -> None:
    # 256 MiB come back through a process whose memory stays far below that: the tar
    # stream is unpacked as it arrives, never held whole
    import subprocess
    import sys
    conn.run(["truncate", "-s", "256M", f"{work}/big"], check=True)
    # (the peak of this process's own memory, VmHWM: getrusage's ru_maxrss keeps the
    # peak of the process it was forked from, a test runner of any size)
    code = ("import re, sys\n"
            "from hpcjobs.remote import SshConnection, SshHost\n"
            "from hpcjobs.remote.url import parse_ssh_url\n"
            "from hpcjobs.staging import StagingMode\n"
            "conn = SshConnection(parse_ssh_url(sys.argv[1]), sys.argv[2:-2])\n"
            "SshHost(conn).get(sys.argv[-2] + '/big', sys.argv[-1], StagingMode.COPY)\n"
            "conn.close()\n"
            "status = open('/proc/self/status').read()\n"
            "print(re.search(r'VmHWM:\\s*(\\d+) kB', status).group(1))\n")
    out = subprocess.run([sys.executable, "-c", code, str(conn.target), *conn.options,
                          work, str(tmp_path / "big")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert os.path.getsize(tmp_path / "big") == 256 << 20
    assert int(out.stdout) < 128 << 10, f"peak memory {int(out.stdout) >> 10} MiB"


def test_a_get_that_fails_leaves_the_target_as_it_was(conn: SshConnection, work: str,
                                                      tmp_path: Path) -> None:
    from hpcjobs.stage_files import StagingError
    host = SshHost(conn)
    (tmp_path / "t").write_bytes(b"before")
    with pytest.raises(StagingError, match="no-such"):
        host.get(f"{work}/no-such", str(tmp_path / "t"), StagingMode.COPY)
    conn.run(["truncate", "-s", "8M", f"{work}/f"], check=True)

    def failing(stream: object) -> None:  # (a reader failing after a first block)
        assert stream.read(65536)  # type: ignore[attr-defined]
        raise OSError("the disk is full")

    with pytest.raises(OSError, match="the disk is full"):
        conn.stream_out(b"cat " + f"{work}/f".encode(), failing, timeout=60)
    assert (tmp_path / "t").read_bytes() == b"before"
    assert os.listdir(tmp_path) == ["t"]


def test_launcher_scripts_are_written_once_for_each_version(conn: SshConnection,
                                                            work: str) -> None:
    from hpcjobs.launchers.base import SCRIPTS
    first = SshHost(conn)
    directory = first.launcher_scripts(work)
    first.flush()
    for p in SCRIPTS.glob("*.sh"):
        assert Path(directory, p.name).read_bytes() == p.read_bytes(), p.name
    Path(directory, "lib.sh").write_bytes(b"# kept\n")
    second = SshHost(conn)  # (another client of this version: it finds them there)
    assert second.launcher_scripts(work) == directory
    second.flush()
    assert Path(directory, "lib.sh").read_bytes() == b"# kept\n"
    assert [n for n in os.listdir(work) if ".part." in n] == []


def test_large_files_go_compressed_and_arrive_whole(conn: SshConnection, work: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from hpcjobs.remote.ops import NewDirs, WriteFile
    sent: list[object] = []
    batch = conn.batch

    def spy(ops: list[object], **kwargs: object) -> object:
        sent.extend(ops)
        return batch(ops, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(conn, "batch", spy)
    host = SshHost(conn)
    host.environ()  # (the login, which says whether gzip is there)
    assert host.login().gzip
    rng = random.Random(5)
    data = b"".join(b"#!/bin/sh\necho %d\n" % rng.randrange(10) for _ in range(100_000))
    host.make_dir(f"{work}/new")
    host.write_file(f"{work}/new/tasks", data, 0o700)  # (in a new directory: NewDirs)
    host.write_file(f"{work}/tasks", data)
    host.flush()
    assert Path(f"{work}/new/tasks").read_bytes() == data
    assert Path(f"{work}/tasks").read_bytes() == data
    assert os.stat(f"{work}/new/tasks").st_mode & 0o777 == 0o700
    packed = [len(f[1]) for op in sent if isinstance(op, NewDirs) for _, files in op.directories
              for f in files if f[3:] == (True,)]
    packed += [len(op.data) for op in sent if isinstance(op, WriteFile) and op.gzipped]
    assert len(packed) == 2 and max(packed) < len(data) // 10, packed


def test_a_put_goes_after_the_changes_queued_before_it(conn: SshConnection, work: str,
                                                       tmp_path: Path) -> None:
    host = SshHost(conn)
    (tmp_path / "f").write_bytes(b"staged")
    host.make_dir(f"{work}/job")
    host.write_file(f"{work}/job/script", b"queued")
    before = conn.round_trips
    host.put(str(tmp_path / "f"), f"{work}/job/f", StagingMode.COPY)  # (into the queued mkdir)
    assert conn.round_trips == before + 1
    assert sorted(os.listdir(f"{work}/job")) == ["f", "script"]
    # a failed queued change stops the put that travels with it, and says so
    host.write_file(f"{work}/no-dir/x", b"x")
    with pytest.raises(RemoteFileError, match="no-dir"):
        host.put(str(tmp_path / "f"), f"{work}/never", StagingMode.COPY)
    assert not Path(f"{work}/never").exists()
    # queued changes too big to ride in the stream's one-line script go just before it
    host.write_file(f"{work}/job/big", bytes(200_000))
    host.put(str(tmp_path / "f"), f"{work}/job/after-big", StagingMode.COPY)
    assert Path(f"{work}/job/big").read_bytes() == bytes(200_000)
    assert Path(f"{work}/job/after-big").read_bytes() == b"staged"


def test_a_put_that_cannot_read_its_source_whole_changes_nothing_there(
        conn: SshConnection, work: str) -> None:
    # a file whose size says more than a read gives: sysfs files say 4096 bytes
    short = "/sys/kernel/mm/transparent_hugepage/enabled"
    if not os.path.exists(short) or os.path.getsize(short) <= len(Path(short).read_bytes()):
        pytest.skip(f"no file here reads shorter than its size ({short})")
    host = SshHost(conn)
    host.write_file(f"{work}/target", b"as it was")
    with pytest.raises(OSError, match="unexpected end of data"):
        host.put(short, f"{work}/target", StagingMode.COPY)
    assert Path(f"{work}/target").read_bytes() == b"as it was"
    assert os.listdir(work) == ["target"]
    with pytest.raises(FileNotFoundError, match="no-such-source"):
        host.put(f"{work}/no-such-source", f"{work}/target", StagingMode.COPY)


def _notes(host: SshHost, work: str) -> tuple[str, dict[str, int]]:
    """A notes directory of three host files (one name hostile; one line being written),
    job directories a, b (started, ended), c (started), and the offsets taken so far."""
    notes = f"{work}/changes/1-x"
    host.make_dirs(notes)
    host.write_file(f"{notes}/node1", b"old\na\nb\nc")  # (c: being written)
    host.write_file(f"{notes}/node 'q' $x\n2", b"b\n..\nq/r\n\nd\n")
    host.write_file(f"{notes}/.new", b"a\n")  # a host file the client does not know yet
    for job, files in (("a", {"started": b"1\n", "exitcode": b"0 - -\n"}),
                       ("b", {"started": b"2\n", "exitcode": b"143 TERM -\n"}),
                       ("c", {"started": b"3\n"})):
        host.make_dirs(f"{work}/{job}")
        for name, data in files.items():
            host.write_file(f"{work}/{job}/{name}", data)
    host.flush()
    return notes, {"node1": 4, "node 'q' $x\n2": 0}


def test_a_tick_that_sees_changes_is_one_round_trip(conn: SshConnection, work: str) -> None:
    # the notes and the files of the jobs they name, read in one round trip, as the
    # local host reads them (that one in several reads: the same files, seen from here)
    from hpcjobs.executors.batch import LOCAL
    from hpcjobs.executors.batch.host import Follow
    host = SshHost(conn)
    notes, offsets = _notes(host, work)
    follow = Follow(work, ("started", "exitcode"), names=("c", "../x"), paths=(f"{work}/a/started",))
    before = conn.round_trips
    remote = host.read_notes(notes, offsets, lambda here: False, follow)
    assert conn.round_trips == before + 1
    local = LOCAL.read_notes(notes, offsets, lambda here: True, follow)
    assert remote is not None and local is not None
    assert (remote.directory, remote.files) == (local.directory, local.files)
    assert remote.followed == dict(zip(remote.followed, LOCAL.read_files(list(remote.followed))))
    assert remote.listed and sorted(remote.files) == [".new", "node 'q' $x\n2", "node1"]
    assert remote.files["node1"] is not None and remote.files["node1"].data == b"a\nb\nc"
    # the given path, the given name's files, then those of the names on whole lines
    assert set(remote.followed) == {f"{work}/{j}/{f}" for j in "abcd" for f in ("started", "exitcode")}
    found = remote.followed
    assert found[f"{work}/b/exitcode"] is not None and found[f"{work}/b/exitcode"].data == b"143 TERM -\n"
    assert found[f"{work}/c/exitcode"] is None and found[f"{work}/d/started"] is None


def test_names_past_the_most_followed_are_left_to_a_read_of_their_own(conn: SshConnection,
                                                                       work: str) -> None:
    from hpcjobs.executors.batch.host import Follow
    host = SshHost(conn)
    notes, offsets = _notes(host, work)
    follow = Follow(work, ("started",), most=2)
    before = conn.round_trips
    read = host.read_notes(notes, offsets, lambda here: False, follow)
    assert conn.round_trips == before + 1
    assert read is not None and len(read.followed) == 2


def test_notes_read_over_ssh_of_a_directory_gone_are_none(conn: SshConnection, work: str) -> None:
    from hpcjobs.executors.batch.host import Follow
    host = SshHost(conn)
    assert host.read_notes(f"{work}/none", {"node1": 3}, lambda here: True,
                           Follow(work, ("started",))) is None


def test_notes_output_that_does_not_add_up_is_read_again_another_way() -> None:
    from hpcjobs.executors.batch.host import Follow
    from hpcjobs.remote.notes import Unreadable, split_notes
    follow = Follow("/w", ("started",))
    out = (b"1\nh\0/\n1.5 1 2 4096 directory\n2.5 1 3 4 regular file\n3.5 1 4 2 regular file\n"
           b"a\n1\n1\n2.5 1 5 2 regular file\n7\n")
    read = split_notes(out, follow)
    assert read is not None and read.files["h"] is not None and read.files["h"].data == b"a\n"
    assert read.followed["/w/a/started"] is not None
    assert read.followed["/w/a/started"].data == b"7\n"
    # a job file that grew between stat and cat: the notes, and no job files
    grown = split_notes(out + b"8", follow)
    assert grown is not None and grown.files == read.files and grown.followed == {}
    # the script took another count of names than these lines give: no job files
    assert split_notes(out.replace(b"a\n1\n1\n", b"a\n2\n1\n"), follow).followed == {}  # type: ignore[union-attr]
    assert split_notes(b"0\n", follow) is None
    with pytest.raises(Unreadable):  # a notes file vanished before its status line
        split_notes(out.replace(b"3.5 1 4 2 regular file\n", b""), follow)
