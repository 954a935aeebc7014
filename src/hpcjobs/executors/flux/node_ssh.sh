#!/bin/sh
# ssh from the ssh host (a login node) to the node a Flux instance runs on, for
# flux-core's ssh connector ($FLUX_SSH, which it runs as one program) and the relay:
# every submit is a flux command that logs in to the node anew, so the logins share
# one connection (OpenSSH's ControlMaster, lasting 60 s after its last session) in a
# directory of this user's own. $HPCJOBS_FLUX_SSH: the ssh to run (the site's).
# BatchMode: a password prompt nobody answers would hang a submit; it fails instead.
ssh=${HPCJOBS_FLUX_SSH:-ssh}
dir=${TMPDIR:-/tmp}/hpcjobs-node-ssh-$(id -u)
mkdir -m 700 "$dir" 2>/dev/null
if [ -d "$dir" ] && [ -O "$dir" ] && [ ! -h "$dir" ]; then
  exec "$ssh" -o BatchMode=yes -o ControlMaster=auto -o "ControlPath=$dir/%C" \
    -o ControlPersist=60 "$@"
fi
# (a directory someone else made there: no shared connection, a login each)
exec "$ssh" -o BatchMode=yes "$@"
