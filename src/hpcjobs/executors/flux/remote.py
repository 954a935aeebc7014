"""A Flux instance on another host, reached over ssh (``url='ssh://host[/socket]'``).

Everything but a submit goes through flux-core's bindings, as for a local instance, on
a handle whose ``local://`` socket is a :class:`~hpcjobs.remote.tunnel.StdioTunnel`:
each connection to it is an ssh session (through one multiplexed master) running
``flux relay <socket>`` on the remote host, so the instance sees the remote user,
as if the program ran there. Submits run ``flux job submit`` on the remote host
instead: flux-core signs a jobspec with the uid of the process that submits it, and
the instance refuses a signer that is not the user it talks to (the local uid means
nothing there; a system instance wants a MUNGE credential of that host).

When the executor is made, one round trip surveys the host: ``_SURVEY`` finds
``flux`` and the instance's socket, the shared login probe
(:mod:`hpcjobs.remote.login`) says who the user is and what environment a login gets,
and the same round trip writes the package's files the jobs read
(ranks.sh, cwd.lua, the launchers' scripts: ``jobspec.SHIPPED``) under
``~/.hpcjobs/flux/<digest>/`` there, in the package's layout (they find each other by
relative paths), named by content so that versions side by side never clash. Anything missing is a clear error then, not later.

An instance on a node behind the ssh host (``FluxConfig.node``: a pilot on a compute
node) is reached from the ssh host the way flux-core reaches it: submits run there with
``FLUX_URI=ssh://node/socket`` (flux-core's ssh connector, as the user of the ssh host),
and the relay session runs ``ssh node flux relay <socket>`` there (the ``flux`` command
at the same path on the node, as on a cluster's shared software tree). Both go through
node_ssh.sh, written beside the jobs' files: the site's ssh (or ``$FLUX_SSH`` of a login
there) with one shared connection per node, since flux-core's connector logs in anew
for every command (a submit). Nothing is installed on either host.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from ...errors import InvalidJobException, SubmitException
from ...remote.errors import RemoteCommandError, SshConnectionLost, SshError
from ...remote.login import PROBE, read_login
from ...remote.ops import MakeDirs, Op, Result, Run, WriteFile
from ...remote.shared import CONNECTIONS
from ...remote.tunnel import StdioTunnel, plain_words
from ...remote.url import SshTarget, parse_ssh_url
from .config import FluxConfig
from .jobspec import SHIPPED, FluxSite, shipped_name

__all__ = ["RemoteFlux"]

log = logging.getLogger(__name__)

#: run with ``sh -c`` on the remote host, arguments: the flux command ('' to look for
#: it), the socket ('' for the system instance) and the ``ssh://[user@]node`` the socket
#: is on ('' for this host). Prints the directory a login starts in, the flux command
#: and the socket, one a line.
_SURVEY = r"""
flux=$1 sock=$2 node=$3
if [ -z "$flux" ]; then
  # flux-core's rundir of an instance has a bin/flux beside its socket
  if [ -n "$sock" ] && [ -x "${sock%/*}/bin/flux" ]; then flux=${sock%/*}/bin/flux
  else flux=flux; fi
fi
case $flux in
  */*) [ -x "$flux" ] || { echo "$flux is not an executable file" >&2; exit 127; } ;;
  *) flux=$(command -v "$flux") ||
       { echo "there is no flux command on the PATH ($PATH)" >&2; exit 127; } ;;
esac
if [ -z "$sock" ]; then
  rundir=$("$flux" config builtin rundir) || exit 3
  sock=$rundir/local
fi
if [ -n "$node" ]; then
  # the socket is on the node: the instance answers through flux-core's ssh connector
  FLUX_URI=$node$sock "$flux" uptime >/dev/null ||
    { echo "no Flux instance answers at $node$sock" >&2; exit 4; }
else
  [ -S "$sock" ] || { echo "no Flux instance there: $sock is not a socket" >&2; exit 4; }
fi
pwd && printf '%s\n%s\n' "$flux" "$sock"
"""
#: seconds a round trip of submits may take for each job it carries, above the first 120
_SUBMIT_EACH = 1.0
#: the ssh to a node behind the ssh host (module docstring), written beside the jobs' files
_NODE_SSH = "node_ssh.sh"
_NODE_SSH_BODY = (Path(__file__).parent / _NODE_SSH).read_bytes()
#: the survey's exit codes: the flux command is missing; no instance at the socket
_NO_FLUX, _NO_INSTANCE = 127, 4


class RemoteFlux:
    """The remote host of one executor: its ssh connection, its site (the
    :class:`FluxSite` jobspecs are built for), submits and the relay tunnel."""

    def __init__(self, target: SshTarget, config: FluxConfig, name: str) -> None:
        self.target = target
        self.node = node_target(config.node, target)  # (refused before any login)
        # a relay that logged in but never answers (a frozen broker there) would block
        # flux.Flux() for ever: its session is ended after this long
        self.answer_timeout = config.connect_timeout * 2 + 5
        # the host's one connection in this process (remote/shared.py): a batch executor
        # there (a pilot's) and this one log in once
        self.connection = CONNECTIONS.acquire(target, config.ssh_options,
                                              connect_timeout=config.connect_timeout)
        self._released = False
        try:
            flux = config.flux_command or os.environ.get("FLUX_SSH_RCMD") or ""
            if flux:
                plain_words([flux], f"the flux command for {target}")
            self.site, self.userid, self.socket = self._survey(flux, target.path or "")
            self.tunnel = StdioTunnel(self.connection, self._relay(), f"{name}-tunnel")
        except BaseException:
            self._release()
            raise

    def _flux_env(self) -> list[str]:
        """``env`` and the variables of a flux command run on the ssh host: the
        instance's URI there, and the ssh to the node flux-core's connector runs."""
        if self.node is None:
            return ["env", f"FLUX_URI=local://{self.socket}"]
        uri = dataclasses.replace(self.node, path=self.socket)
        return ["env", *self._node_ssh_env(), f"FLUX_SSH={self._node_ssh}", f"FLUX_URI={uri}"]

    def _node_ssh_env(self) -> list[str]:
        # (flux-core runs $FLUX_SSH as one program: the site's, if set, is one word)
        ssh = self.site.environ.get("FLUX_SSH") or "ssh"
        plain_words([ssh], f"$FLUX_SSH at {self.target}")
        return [f"HPCJOBS_FLUX_SSH={ssh}"]

    @property
    def _node_ssh(self) -> str:
        return f"{self.site.package}/{_NODE_SSH}"

    def _relay(self) -> list[str]:
        """The command the ssh host runs for one relay session: ``flux relay`` there, or
        on the node through node_ssh.sh."""
        relay = [self.site.flux, "relay", self.socket]
        if self.node is None:
            return relay
        return ["env", *self._node_ssh_env(), self._node_ssh, *self.node.ssh_args(), *relay]

    def _survey(self, flux: str, socket: str) -> tuple[FluxSite, str, str]:
        files = {shipped_name(path): path.read_bytes() for path in SHIPPED}
        digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
        folder = f".hpcjobs/flux/{digest}"  # (relative: to the home a login starts in)
        node = str(self.node) if self.node is not None else ""
        ops: list[Op] = [Run(["sh", "-c", _SURVEY, "sh", flux, socket, node]), *PROBE]
        for name in sorted({os.path.dirname(name) for name in files}):
            ops.append(MakeDirs(f"{folder}/{name}", 0o700))
        ops += [WriteFile(f"{folder}/{name}", data, 0o644) for name, data in files.items()]
        if self.node is not None:
            ops.append(WriteFile(f"{folder}/{_NODE_SSH}", _NODE_SSH_BODY, 0o755))
        results = self.connection.batch(ops, timeout=60, retry=True, guard=1)
        survey, probed = results[0], results[1:1 + len(PROBE)]
        if not survey.ok:
            raise self._survey_error(survey, socket)
        for result in results[1 + len(PROBE):]:  # the shell files written
            result.check(str(self.target))
        lines = survey.text.splitlines()
        if len(lines) != 3:
            raise SubmitException(f"{self.target}: unexpected answer from the remote "
                                  f"host's shell: {survey.text[-500:]!r}")
        start, flux_path, socket_path = lines
        plain_words([flux_path, socket_path], f"the Flux instance at {self.target}")
        login = read_login(probed, str(self.target))
        site = FluxSite(login.environ, login.home, start, flux_path, f"{start}/{folder}")
        log.debug("Flux at %s: %s, socket %s, uid %s", self.target, flux_path,
                  socket_path, login.uid)
        return site, str(login.uid), socket_path

    def _survey_error(self, survey: Result, socket: str) -> SubmitException:
        said = survey.stderr.decode("utf-8", "replace").strip()[-1000:]
        if survey.returncode == _NO_FLUX:
            return RemoteCommandError(
                f"{self.target}: no flux command on the remote host ({said}); set "
                "FluxConfig.flux_command (or $FLUX_SSH_RCMD) to its path there", survey)
        if survey.returncode == _NO_INSTANCE and self.node is not None:
            return RemoteCommandError(
                f"{self.target}: {said} (the URL's path on FluxConfig.node "
                f"{self.node.host!r}: the remote host reaches it with its own ssh, by that "
                "name, without a password, and the instance's socket is there)", survey)
        if survey.returncode == _NO_INSTANCE:
            where = ("the system instance's socket" if not socket
                     else "the URL's path")
            return RemoteCommandError(
                f"{self.target}: {said} ({where}; on the remote host, 'flux uri --local "
                "$FLUX_URI' inside the instance prints its socket)", survey)
        return RemoteCommandError(f"{self.target}: surveying the Flux instance failed "
                                  f"(exit {survey.returncode}): {said}", survey)

    # -- what the executor calls ---------------------------------------------------------
    def connect(self, flux: Any) -> Any:
        """A new handle on the remote instance (``flux`` is the bindings' module);
        ConnectionError saying why if there is none."""
        try:
            self.connection.open()
            answered = threading.Event()
            since = time.monotonic()

            def watchdog() -> None:
                if not answered.wait(self.answer_timeout):
                    self.tunnel.end_sessions_since(since, (
                        f"flux relay {self.socket} did not answer within "
                        f"{self.answer_timeout:.0f} s (the instance there does not respond)"))

            threading.Thread(target=watchdog, name=f"{self.tunnel.name}-watchdog",
                             daemon=True).start()
            try:
                return flux.Flux(f"local://{self.tunnel.path}")
            finally:
                answered.set()
        except (OSError, SshError) as e:
            why = self.tunnel.last_error() or str(e)
            raise ConnectionError(f"cannot connect to the Flux instance at {self.target} "
                                  f"({self.socket}): {why}") from e

    def submit(self, jobspec: str, urgency: int) -> str:
        """Submit with ``flux job submit`` on the remote host; the job's id as printed.
        InvalidJobException when Flux refuses the job, SubmitException otherwise."""
        outcome = self.submit_many([(jobspec, urgency)])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def submit_many(self, jobs: Sequence[tuple[str, int]]
                    ) -> list[Union[str, SubmitException, InvalidJobException]]:
        """Submit each (jobspec, urgency) with ``flux job submit`` on the remote host,
        all in ONE round trip: for each, the job's id as printed, or the
        InvalidJobException of a job Flux refuses, or the SubmitException of one it
        did not take (or that may have been taken: the connection broke)."""
        runs: list[Op] = [Run([*self._flux_env(), self.site.flux, "job",
                               "submit", f"--urgency={urgency}"], input=jobspec.encode())
                          for jobspec, urgency in jobs]
        try:
            results = self.connection.batch(runs, timeout=120 + len(runs) * _SUBMIT_EACH)
            lost: Optional[SshConnectionLost] = None
        except SshConnectionLost as e:
            results, lost = list(e.completed), e
        outcomes = [self._outcome(result) for result in results]
        if lost is not None:
            outcomes += [SubmitException(
                f"the connection to {self.target} broke while submitting ({lost}): the "
                "job may have been submitted or not ('flux jobs' there lists it)", lost,
                transient=True) for _ in range(len(runs) - len(results))]
        return outcomes

    def _outcome(self, result: Result) -> Union[str, SubmitException, InvalidJobException]:
        if result.ok:
            return result.text.strip()
        said = result.stderr.decode("utf-8", "replace").strip()[-1000:]
        if result.missing or result.returncode != 1 or "flux_open" in said:
            return SubmitException(f"Flux at {self.target} did not take the job: {said}",
                                   transient=True)
        # flux-job exits 1 with job-ingest's reason for a job it refuses
        return InvalidJobException(f"Flux rejected the job: {said.removeprefix('flux-job: ')}")

    def close(self) -> None:
        """End the relay sessions and let go of the connection (its master ends with
        its last user). Idempotent."""
        tunnel: Optional[StdioTunnel] = getattr(self, "tunnel", None)
        if tunnel is not None:
            tunnel.close()
        self._release()

    def _release(self) -> None:
        if not self._released:  # (released twice, it would take another user's share)
            self._released = True
            CONNECTIONS.release(self.connection)


def node_target(node: Optional[str], target: SshTarget) -> Optional[SshTarget]:
    """FluxConfig.node (checked there) as a target the ssh host connects to (None: no
    node); ValueError without the socket's path."""
    if node is None:
        return None
    if target.path is None:
        raise ValueError(f"FluxConfig.node {node!r}: the URL {target} names no socket; "
                         "an instance on a node is reached at its socket's path there "
                         "(ssh://host/path)")
    return parse_ssh_url(f"ssh://{node}")
