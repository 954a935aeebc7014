#!/usr/bin/env bash
# sshd.sh up|node|down - a private OpenSSH server standing for a cluster's login node in the
# tests of remote executors: Debian's openssh-server (installed when missing; root only)
# on a loopback port, its own host key, key-only login for the test user hpcjobs-remote
# (not the user running the client, so a job that did not go through ssh shows), all its
# files in one root-owned directory. Idempotent. `up` prints the lines to eval:
#   eval "$(scripts/sshd.sh up)"
# which export HPCJOBS_TEST_SSH_HOST (a host name defined in the client config),
# HPCJOBS_TEST_SSH_CONFIG (that config: port, user, identity file, known_hosts),
# HPCJOBS_TEST_SSH_USER, HPCJOBS_TEST_SSH_PORT, HPCJOBS_TEST_SSH_DIR and
# HPCJOBS_TEST_SSH_NODE (the node's name, below).
# It also gives the test user a compute node behind the login node: from a login, `ssh
# hpcjobs-test-node` reaches the same server again (the user's own key and ~/.ssh/config
# entry), as a cluster's login node reaches its nodes. `node` adds just that to a server
# already up (the user's files and the authorized key; the server is not restarted).
set -euo pipefail
dir=${TMPDIR:-/tmp}/hpcjobs-sshd-$(id -u)
user=hpcjobs-remote
alias=hpcjobs-test-login
node=hpcjobs-test-node

# the test user's way to the "node": a key of its own, authorized beside the client's
# (written whole, then renamed: a login meanwhile reads the old file or the new), and a
# host entry in a file its ~/.ssh/config includes
node_alias() {
  home=$(getent passwd "$user" | cut -d: -f6)
  install -d -m 700 -o "$user" -g "$user" "$home/.ssh"
  key=$home/.ssh/hpcjobs_node_ed25519
  if [ ! -f "$key" ]; then
    ssh-keygen -q -t ed25519 -N '' -C "$node" -f "$key"
    chown "$user:$user" "$key" "$key.pub"
  fi
  cat "$dir/client_ed25519.pub" "$key.pub" >"$dir/authorized_keys/$user.tmp"
  mv -f "$dir/authorized_keys/$user.tmp" "$dir/authorized_keys/$user"
  install -m 644 -o "$user" -g "$user" "$dir/known_hosts" "$home/.ssh/hpcjobs_known_hosts"
  cat >"$home/.ssh/$node.conf" <<CONF
Host $node
  HostName 127.0.0.1
  Port $(cat "$dir/port")
  IdentityFile ~/.ssh/hpcjobs_node_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile ~/.ssh/hpcjobs_known_hosts
  StrictHostKeyChecking yes
  PasswordAuthentication no
  BatchMode yes
CONF
  chown "$user:$user" "$home/.ssh/$node.conf"
  touch "$home/.ssh/config"
  if ! grep -qx "Include $node.conf" "$home/.ssh/config"; then
    # (first: an Include after a Host line would belong to that host)
    { echo "Include $node.conf"; cat "$home/.ssh/config"; } >"$home/.ssh/config.tmp"
    mv -f "$home/.ssh/config.tmp" "$home/.ssh/config"
  fi
  chown "$user:$user" "$home/.ssh/config" && chmod 600 "$home/.ssh/config"
}

case ${1:-up} in
  node)
    [ "$(id -u)" = 0 ] && [ -f "$dir/known_hosts" ] \
      || { echo "sshd.sh: node needs root and a server set up by 'up'" >&2; exit 1; }
    node_alias ;;
  up)
    [ "$(id -u)" = 0 ] || { echo "sshd.sh: needs root (installs openssh-server, adds the user $user)" >&2; exit 1; }
    if [ ! -x /usr/sbin/sshd ]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server >&2 \
        || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server >&2; }
    fi
    # '*' as password: no password can match, and the account is not locked (sshd
    # refuses locked accounts even for key logins)
    id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash --password '*' "$user"
    # 0711: sshd reads the authorized keys as the test user, who may pass through but not
    # list; the keys themselves are 0600 root
    mkdir -p "$dir" /run/sshd && chmod 711 "$dir"
    [ -f "$dir/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C hpcjobs-test-host -f "$dir/host_ed25519"
    [ -f "$dir/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C hpcjobs-test-client -f "$dir/client_ed25519"
    # authorized keys owned by root: the test user can read but not change them
    mkdir -p "$dir/authorized_keys"
    if [ ! -f "$dir/port" ]; then
      python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' >"$dir/port"
    fi
    port=$(cat "$dir/port")
    cat >"$dir/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_ed25519
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys/%u
# the key files are root's and read-only to the user; the check would refuse them
# because /tmp above them is world-writable
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin no
AllowUsers $user
AllowTcpForwarding no
AllowAgentForwarding no
X11Forwarding no
PermitTunnel no
MaxStartups 64:30:128
MaxSessions 64
LogLevel VERBOSE
CONF
    echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$dir/host_ed25519.pub")" >"$dir/known_hosts"
    cat >"$dir/ssh_config" <<CONF
Host $alias
  HostName 127.0.0.1
  Port $port
  User $user
  IdentityFile $dir/client_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking yes
  PasswordAuthentication no
CONF
    node_alias
    if ! { [ -f "$dir/sshd.pid" ] && kill -0 "$(cat "$dir/sshd.pid")" 2>/dev/null; }; then
      /usr/sbin/sshd -t -f "$dir/sshd_config"
      /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
      for _ in $(seq 100); do [ -f "$dir/sshd.pid" ] && break; sleep 0.05; done
      [ -f "$dir/sshd.pid" ] || { echo "sshd.sh: sshd did not start (log: $dir/sshd.log)" >&2; exit 1; }
    fi
    echo "export HPCJOBS_TEST_SSH_HOST=$alias HPCJOBS_TEST_SSH_CONFIG=$dir/ssh_config" \
         "HPCJOBS_TEST_SSH_USER=$user HPCJOBS_TEST_SSH_PORT=$port HPCJOBS_TEST_SSH_DIR=$dir" \
         "HPCJOBS_TEST_SSH_NODE=$node" ;;
  down)
    [ -f "$dir/sshd.pid" ] && kill "$(cat "$dir/sshd.pid")" 2>/dev/null || true
    rm -f "$dir/sshd.pid" ;;
  *) echo "usage: sshd.sh up|node|down" >&2; exit 2 ;;
esac
