"""Operations as one POSIX ``sh`` script, and the script's output split back per operation.

The remote side runs the constant command ``exec /bin/sh -s`` and reads this script on
its stdin. Everything variable (arguments, paths, file contents) travels inside the
script, never in the command line ssh hands to the user's login shell, so the login
shell (bash, tcsh, ...) interprets nothing of ours: one round of ``sh`` parsing, and
every value in it is single-quoted (``'`` as ``'\\''``); file contents are written by
the ``printf`` builtin from one such word, or, if they hold a NUL (which no shell word
can), from octal escapes. The only refusal is a NUL byte in an argument or path: the
operating system cannot pass one either.

Each operation writes its stdout and stderr to files of its own in a private temporary
directory. The results come back in groups: a header ``<marker> <first index> <z|s>
<exit codes...>``, then (``s``: some output) the sizes of the group's stdout and stderr
files, one a line (one ``stat``), and the files (one ``cat``), so the client splits the
stream exactly whatever the commands print (and whatever a login script printed
before). The marker is random per script. A group of one operation that prints nothing
costs no process; a group of many costs two in all, not three an operation. Operations
in a group may also run side by side (``parallel``), each with its own files.

A round trip that streams raw bytes (a stage-in's tar) to its last operation runs the
constant command :data:`STREAM_COMMAND` instead: the script comes first on its stdin as
one line (:func:`one_line`), then the bytes, never encoded.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
from typing import Iterator, Optional, Sequence

from .ops import (ListDir, MakeDirs, NewDirs, Op, ReadFile, ReadNotes, Remove, Result, Run, StatRead,
                  StatReadMany, Text, WriteFile)

__all__ = ["quote", "render", "parse", "one_line", "REMOTE_COMMAND", "STREAM_COMMAND", "Parsed"]

#: what ssh asks the remote login shell to run: the same words for every batch
REMOTE_COMMAND = "exec /bin/sh -s"
#: the same for a batch whose last operation reads raw bytes (a tar stream) from the
#: session's stdin: the script is the first line there (:func:`one_line`), read by the
#: ``read`` builtin, which takes no byte past the newline (``sh -s`` reads ahead in
#: blocks, so raw data cannot follow its script). One single-quoted word with no ``'``,
#: ``!``, backslash or newline: read the same by sh, bash, zsh, csh, tcsh and fish
STREAM_COMMAND = "exec /bin/sh -c 'IFS= read -r s && eval \"$(printf \"$s\")\"'"

_MISSING = b"nf"  # in place of the exit code: the command is not on the remote PATH
_PRINTF_CHUNK = 2048  # bytes per printf of octal escapes (a line of ~8 KiB)
# binary data larger than this goes as base64: a process there, where octal escapes
# cost none, but a third more bytes, not four times as many (a burst's 50 kB of gzip
# output: 67 kB of script, not 200 kB, over what may be a slow link)
_BASE64_ABOVE = 8 * 1024
_HEREDOC_END = b"_HJ_END_OF_DATA_"  # (no line of base64 can be this: '_' is not in it)
#: a file's status line: "<mtime> <device> <inode> <size> <kind>"
_STAT = b"stat -L -c '%.9Y %d %i %s %F'"


def as_bytes(value: Text, what: str) -> bytes:
    """``value`` as the bytes that must arrive; ValueError for what cannot."""
    if isinstance(value, str):
        try:
            value = os.fsencode(value)
        except UnicodeEncodeError as e:
            raise ValueError(f"{what} {value!r} cannot be encoded for the remote side: {e}") from None
    elif not isinstance(value, bytes):
        raise TypeError(f"{what} must be str or bytes, got {type(value).__name__}")
    if b"\0" in value:
        raise ValueError(f"{what} {value!r} contains a NUL byte, which no command can receive")
    return value


def quote(value: Text, what: str = "argument") -> bytes:
    """``value`` as one POSIX sh word that expands to exactly its bytes."""
    return b"'" + as_bytes(value, what).replace(b"'", b"'\\''") + b"'"


_ESCAPES = [b"\\%03o" % c for c in range(256)]


def _octal(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), _PRINTF_CHUNK):
        chunk = data[i:i + _PRINTF_CHUNK]
        yield b"printf '" + b"".join(map(_ESCAPES.__getitem__, chunk)) + b"'\n"


def emit(data: bytes) -> bytes:
    """Commands that write exactly ``data`` to their stdout (a brace group). ``printf``
    is a builtin of every sh in use (dash, bash, BusyBox ash): writing a file costs no
    process. Data with a NUL byte (no shell word can hold one) goes as octal escapes
    when small, as a base64 here-document for ``base64 -d`` when large (a tar stream of
    staged files: octal escapes took 22 s for 100 MB, the here-document 1 s)."""
    if b"\0" in data:
        if len(data) > _BASE64_ABOVE:
            return (b"{ base64 -d <<'" + _HEREDOC_END + b"'\n" + base64.b64encode(data) + b"\n"
                    + _HEREDOC_END + b"\n}")
        return b"{ :\n" + b"".join(_octal(data)) + b"}"
    return b"{ printf '%s' " + b"'" + data.replace(b"'", b"'\\''") + b"'; }"


def _body(op: Op, i: int) -> bytes:
    """Operation ``i`` as a compound command; its exit status is the operation's."""
    if isinstance(op, Run):
        if not op.argv:
            raise ValueError("Run: empty argument list")
        words = [quote(a) for a in op.argv]
        if as_bytes(op.argv[0], "command").startswith(b"-"):
            raise ValueError(f"Run: command name {op.argv[0]!r} starts with '-'")
        cd = b"cd " + quote(op.cwd, "directory") + b" && " if op.cwd is not None else b""
        stdin = b' <"$d/%d.i"' % i if op.input is not None else b""
        fill = emit(op.input) + b' >"$d/%d.i" && ' % i if op.input is not None else b""
        # a missing command is told apart from one that exits 127 by asking first; the
        # subshell keeps a cd to this operation
        return (b"if command -v " + words[0] + b" >/dev/null 2>&1; then (" + fill + cd
                + b" ".join(words) + stdin + b'); else : >"$d/%d.nf"; (exit 127); fi' % i)
    if isinstance(op, WriteFile):
        path = as_bytes(op.path, "path")
        target = quote(path, "path")
        part = quote(path + b".hpcjobs-part.", "path") + b"$$"
        chmod = b" && chmod %o " % op.mode + part if op.mode is not None else b""
        # exclusive: a hard link fails if the target exists (rename would replace it)
        place = (b" && ln " + part + b" " + target + b" && rm -f " + part if op.exclusive
                 else b" && mv -f " + part + b" " + target)
        unzip = b" | gzip -dc" if op.gzipped else b""
        return (b"if " + emit(op.data) + unzip + b" >" + part + chmod + place
                + b"; then :; else rc=$?; rm -f " + part + b"; (exit $rc); fi")
    if isinstance(op, ReadFile):
        return b"cat " + quote(op.path, "path")
    if isinstance(op, StatRead):
        path = quote(op.path, "path")
        if op.offset < 0 or op.limit < 0:
            raise ValueError(f"StatRead: negative offset or limit: {op!r}")
        skip = str(op.offset + 1).encode()
        return (b"s=$(" + _STAT + b" " + path + b") && printf '%s\\n' \"$s\" && "
                + b"case $s in *directory) ;; *) tail -c +" + skip + b" " + path
                + b" | head -c " + str(op.limit).encode() + b";; esac")
    if isinstance(op, StatReadMany):
        if len(op.paths) != len(op.offsets) or any(o < 0 for o in op.offsets):
            raise ValueError("StatReadMany: one offset (>= 0) per path")
        words = [quote(p, "path") for p in op.paths]
        # the tests are builtins: a path costs no process unless it is read from an offset
        lines = [b"set --"]
        lines += [b"if [ -d " + w + b" ]; then set -- \"$@\" " + w + b"; printf 2; "
                  b"elif [ -e " + w + b" ]; then set -- \"$@\" " + w + b"; printf 1; "
                  b"else printf 0; fi" for w in words]
        lines.append(b"printf '\\n'")
        lines.append(b"if [ $# -gt 0 ]; then " + _STAT + b" -- \"$@\"; fi")
        whole = [w for w, o in zip(words, op.offsets) if o == 0]
        if whole:
            lines.append(b"cat -- " + b" ".join(whole) + b" 2>/dev/null")
        lines += [b"if [ -f " + w + b" ]; then tail -c +" + str(o + 1).encode() + b" " + w
                  + b"; fi" for w, o in zip(words, op.offsets) if o > 0]
        lines.append(b":")
        return b"\n".join(lines)
    if isinstance(op, ReadNotes):
        return _read_notes(op, i)
    if isinstance(op, ListDir):
        # the glob patterns match every name but . and ..; a pattern matching nothing
        # stays as itself and is skipped by the existence test
        return (b"(cd " + quote(op.path, "path") + b" && for f in * .[!.]* ..?*; do "
                b"if [ -e \"$f\" ] || [ -L \"$f\" ]; then printf '%s\\000' \"$f\"; fi; done)")
    if isinstance(op, MakeDirs):
        path = quote(op.path, "path")
        chmod = b" && chmod %o " % op.mode + path if op.mode is not None else b""
        return b"mkdir -p " + path + chmod
    if isinstance(op, NewDirs):
        return _new_dirs(op)
    if isinstance(op, Remove):
        return (b"rm -rf " if op.recursive else b"rm -f ") + quote(op.path, "path")
    raise TypeError(f"not a remote operation: {op!r}")


def _new_dirs(op: NewDirs) -> bytes:
    """:class:`NewDirs` in a subshell (its umask and ``set -C`` stay there): ``set -C``
    makes every ``>`` create its file or fail, umask 077 makes it 0600."""
    dirs: list[bytes] = []
    writes: list[bytes] = []
    modes: dict[int, list[bytes]] = {}
    for directory, files in op.directories:
        d = as_bytes(directory, "path")
        dirs.append(quote(d, "path"))
        for name, data, mode, *gzipped in files:
            path = quote(d + b"/" + as_bytes(name, "file name"), "path")
            if gzipped and gzipped[0]:
                writes.append(emit(data) + b" | gzip -dc >" + path)
            elif b"\0" in data:
                raise ValueError(f"NewDirs: the data of {path!r} holds a NUL byte")
            else:
                writes.append(emit(data) + b" >" + path)
            if mode != 0o600:
                modes.setdefault(mode, []).append(path)
    if not dirs:
        raise ValueError("NewDirs: no directory")
    steps = [b"umask 077", b"set -C", b"mkdir -m 700 -- " + b" ".join(dirs), *writes]
    steps += [b"chmod %o -- " % mode + b" ".join(paths) for mode, paths in modes.items()]
    return b"(" + b" &&\n".join(steps) + b")"


def _read_notes(op: ReadNotes, i: int) -> bytes:
    """:class:`ReadNotes` as operation ``i`` (its output: :func:`hpcjobs.remote.notes.split_notes`).
    The new bytes of the ``k``-th notes file are kept in ``$d/<i>.t<k>``: what is sent is
    what the names are read from, and stat of that copy gives its length."""
    follow = op.follow
    if follow.most < 0 or any(o < 0 for _, o in op.offsets):
        raise ValueError(f"ReadNotes: negative offset or count: {op!r}")
    directory = quote(op.directory, "path")
    jobs = quote(follow.jobs, "path")
    files = [quote(f, "file name") for f in follow.files]
    given = [quote(p, "path") for p in follow.paths]
    given += [jobs + b"/" + quote(n, "name") + b"/" + f for n in follow.names for f in files]
    offsets = [quote(n, "name") + b") o=%d ;;" % o for n, o in op.offsets]
    copy = b'"$d/%d.t' % i  # (a notes file's copy: its number and a quote follow)
    return b"\n".join([
        b"if [ -d " + directory + b" ]; then",
        b"printf '1\\n'; k=0; set --",
        # every name but . and ..; a pattern matching nothing is no regular file
        b"for f in " + directory + b"/* " + directory + b"/.[!.]* " + directory + b"/..?*; do",
        b"if [ -f \"$f\" ]; then",
        b"case ${f##*/} in", *offsets, b"*) o=0 ;;", b"esac",
        b"k=$((k+1)); tail -c +$((o+1)) \"$f\" >" + copy + b"$k\" 2>/dev/null",
        b"printf '%s\\000' \"${f##*/}\"; set -- \"$@\" \"$f\" " + copy + b"$k\"",
        b"fi; done",
        # the names, a '/' (which no name holds), the directory's and each file's status
        # with its copy's, then the copies
        b"printf '/\\n'; " + _STAT + b" -- " + directory + b" \"$@\"",
        b"c=$k; while [ $c -gt 0 ]; do set -- \"$@\" \"$2\"; shift 2; c=$((c-1)); done",
        b"if [ $# -gt 0 ]; then cat -- \"$@\"; fi",
        # the job files to read: given, then those of the names on whole lines (read
        # gives a line without its newline no turn); the count of such names
        b"set -- " + b" ".join(given) + b"; m=0; i=1",
        b"while [ $i -le $k ]; do",
        b"while IFS= read -r n; do",
        b"case $n in '' | . | .. | */*) continue ;; esac",
        b"if [ $m -ge %d ]; then break 2; fi" % follow.most,
        b"m=$((m+1)); set -- \"$@\" " + b" ".join(jobs + b'/"$n"/' + f for f in files),
        b"done <" + copy + b"$i\"; i=$((i+1))",
        b"done",
        b"printf '%s\\n' \"$m\"",
        # then as StatReadMany: a digit a path, the status lines, the bytes
        b"c=$#; while [ $c -gt 0 ]; do p=$1; shift; c=$((c-1))",
        b"if [ -d \"$p\" ]; then set -- \"$@\" \"$p\"; printf 2; "
        b"elif [ -e \"$p\" ]; then set -- \"$@\" \"$p\"; printf 1; else printf 0; fi",
        b"done; printf '\\n'",
        b"if [ $# -gt 0 ]; then " + _STAT + b" -- \"$@\"; cat -- \"$@\" 2>/dev/null; fi",
        b"else printf '0\\n'; fi; :",
    ])


def render(ops: Sequence[Op], marker: Optional[bytes] = None, guard: int = 0,
           group: int = 1, parallel: int = 1, stream: bool = False) -> tuple[bytes, bytes]:
    """The script running ``ops`` in order, and its marker. Raises ValueError or
    TypeError (nothing sent) for an operation that cannot be expressed.
    ``guard``: if one of the first ``guard`` operations fails, the script stops there
    (their results come back one by one). The results of the others come back in
    groups of ``group`` (fewer processes, results later: a broken connection loses a
    whole group), and up to ``parallel`` of a group run at once (commands that do not
    depend on each other, such as independent submits).
    ``stream``: the last operation, a :class:`Run` without ``input``, reads the script's
    own stdin (what follows the script there: :data:`STREAM_COMMAND`); the others read
    nothing. It runs alone, after the others."""
    if group < 1 or parallel < 1:
        raise ValueError(f"render: group ({group}) and parallel ({parallel}) must be >= 1")
    if stream and not (ops and isinstance(ops[-1], Run) and ops[-1].input is None):
        raise ValueError("only a Run without input can read the stream, and it must be last")
    marker = marker or b"HPCJOBS-" + secrets.token_hex(12).encode()
    lines = [
        b'd=$(mktemp -d "${TMPDIR:-/tmp}/hpcjobs.XXXXXXXX") || exit 97',
        b"trap 'rm -rf \"$d\"' EXIT",
        # a group's results: _e <first index> <exit code of each>; "nf" for a command
        # not found; the sizes and the output only if some operation printed something
        b"_e() {",
        b'  _f=$1; shift; _i=$_f; _h=; _s=z',
        b'  for _c in "$@"; do',
        b'    if [ -e "$d/$_i.nf" ]; then _c=' + _MISSING + b"; fi",
        b'    _h="$_h $_c"',
        b'    if [ -s "$d/$_i.o" ] || [ -s "$d/$_i.e" ]; then _s=s; fi',
        b"    _i=$((_i + 1))",
        b"  done",
        b"  printf '%s %s %s%s\\n' " + marker + b' "$_f" "$_s" "$_h"',
        b'  if [ "$_s" = s ]; then',
        b"    _n=$_i; _i=$_f; set --",
        b'    while [ "$_i" -lt "$_n" ]; do set -- "$@" "$d/$_i.o" "$d/$_i.e"; _i=$((_i + 1)); done',
        b'    stat -c %s -- "$@"; cat -- "$@"',
        b"  fi",
        b"}",
    ]

    def start(i: int, background: bool) -> bytes:
        stdin = b"" if stream and i == len(ops) - 1 else b" </dev/null"
        redirect = b"}" + stdin + b' >"$d/%d.o" 2>"$d/%d.e"' % (i, i)
        tail = b" & _p%d=$!" % i if background else b"; _c%d=$?" % i
        return b"{ " + _body(ops[i], i) + b"\n" + redirect + tail

    def emit_group(first: int, end: int) -> bytes:
        return b"_e %d" % first + b"".join(b' "$_c%d"' % i for i in range(first, end))

    for i in range(min(guard, len(ops))):
        lines.append(start(i, False))
        lines.append(emit_group(i, i + 1))
        lines.append(b'[ "$_c%d" = 0 ] || { printf \'%%s stop\\n\' %s; exit 0; }' % (i, marker))
    first_free = min(guard, len(ops))
    # (the stream's reader in a group of its own, in the foreground: a command put in
    # the background reads /dev/null)
    alone = stream and len(ops) > first_free
    stop = len(ops) - 1 if alone else len(ops)
    groups = [(first, min(first + group, stop)) for first in range(first_free, stop, group)]
    for first, end in groups + ([(stop, len(ops))] if alone else []):
        if parallel == 1 or end - first == 1:
            lines += [start(i, False) for i in range(first, end)]
        else:
            # a window of ``parallel``: the oldest is waited for before the next starts
            for i in range(first, end):
                if i - first >= parallel:
                    lines.append(b'wait "$_p%d"; _c%d=$?' % (i - parallel, i - parallel))
                lines.append(start(i, True))
            lines += [b'wait "$_p%d"; _c%d=$?' % (i, i) for i in range(max(first, end - parallel), end)]
        lines.append(emit_group(first, end))
    lines.append(b"printf '%s end\\n' " + marker)
    lines.append(b"exit 0")
    return b"\n".join(lines) + b"\n", marker


# the bytes a printf format gives back as themselves: printable ASCII but % and backslash
_NOT_AS_ITSELF = re.compile(rb"[^ -$&-\[\]-~]")


def one_line(script: bytes) -> bytes:
    """``script`` as one line ending in a newline, from which :data:`STREAM_COMMAND`
    gets it back exactly: the line is ``printf``'s format, every byte that would not
    come out as itself (a newline, ``%``, a backslash, control and non-ASCII bytes)
    written as a three-digit octal escape."""
    return _NOT_AS_ITSELF.sub(lambda m: b"\\%03o" % m.group()[0], script) + b"\n"


class Parsed:
    """The results split out of a script's output, whether it ran to its end, and
    whether it stopped early at a failed operation (the last result)."""

    def __init__(self, results: list[Result], complete: bool, stopped: bool = False) -> None:
        self.results = results
        self.complete = complete
        self.stopped = stopped


def parse(ops: Sequence[Op], marker: bytes, out: bytes) -> Parsed:
    """Split the output of :func:`render`'s script into one Result per operation.
    Output before the first header (a login script's chatter) is skipped."""
    results: list[Result] = []
    head = marker + b" "
    pos = out.find(head)
    while pos >= 0:
        eol = out.find(b"\n", pos)
        if eol < 0:
            break
        fields = out[pos + len(head):eol].split()
        if fields == [b"end"]:
            return Parsed(results, len(results) == len(ops))
        if fields == [b"stop"]:
            return Parsed(results, True, stopped=True)
        codes = fields[2:]
        if (len(fields) < 3 or fields[0] != b"%d" % len(results) or fields[1] not in (b"z", b"s")
                or len(results) + len(codes) > len(ops)
                or not all(c == _MISSING or c.isdigit() for c in codes)):
            break
        start = eol + 1
        sizes = [0] * (2 * len(codes))
        if fields[1] == b"s":
            for k in range(len(sizes)):
                eol = out.find(b"\n", start)
                if eol < 0 or not out[start:eol].isdigit():
                    return Parsed(results, False)
                sizes[k], start = int(out[start:eol]), eol + 1
        if len(out) < start + sum(sizes):
            break
        for k, code in enumerate(codes):
            n_out, n_err = sizes[2 * k], sizes[2 * k + 1]
            missing = code == _MISSING
            results.append(Result(ops[len(results)], 127 if missing else int(code),
                                  out[start:start + n_out], out[start + n_out:start + n_out + n_err],
                                  missing))
            start += n_out + n_err
        pos = start
        if not out.startswith(head, pos):
            pos = out.find(head, pos)
    return Parsed(results, False)
