"""Running a backend's commands and files on another machine, over the system's ssh.

``url.py`` parses ``ssh://[user@]host[:port]`` (the one place URLs are read);
``shscript.py`` turns argument lists, file contents and directories into a POSIX ``sh``
script, byte for byte; ``ops.py`` holds the operations a batch carries and their
results; ``ssh.py`` is the connection: one multiplexed OpenSSH master, a round trip per
batch; ``host.py`` is the batch executors' host (commands and job files) over such a
connection; ``errors.py`` names what can go wrong. Nothing but POSIX ``sh`` and standard tools
runs on the remote side. Users' guide: docs/remote.md.
"""

from .errors import (HostKeyError, HostUnreachableError, LoginError, RemoteCommandError,
                     RemoteCommandNotFound, SshConnectionLost, SshError, SshTimeout)
from ..executors.batch.host import FileData
from .host import RemoteFileError, SshHost
from .ops import (ListDir, MakeDirs, NewDirs, Op, ReadFile, Remove, Result, Run, StatRead,
                  WriteFile)
from .ssh import SshConnection
from .url import SshTarget, parse_ssh_url

__all__ = ["SshConnection", "SshHost", "FileData", "RemoteFileError", "SshTarget",
           "parse_ssh_url", "Op", "Run", "WriteFile", "ReadFile", "StatRead", "ListDir",
           "MakeDirs", "NewDirs", "Remove", "Result", "SshError", "HostKeyError",
           "LoginError", "HostUnreachableError", "SshConnectionLost", "SshTimeout",
           "RemoteCommandError", "RemoteCommandNotFound"]
