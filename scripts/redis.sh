#!/usr/bin/env bash
# redis.sh up|down - a private Redis for the tests of Batsim's legacy protocol (its job
# data live in Redis): Debian's redis-server on a Unix socket in a 0700 directory, no
# TCP port, nothing saved to disk. Idempotent. `up` prints the line to eval:
#   eval "$(scripts/redis.sh up)"   # exports HPCJOBS_TEST_REDIS=unix://.../redis.sock
set -euo pipefail
dir=${TMPDIR:-/tmp}/hpcjobs-redis-$(id -u)
sock=$dir/redis.sock
case ${1:-up} in
  up)
    command -v redis-server >/dev/null || { echo "redis.sh: no redis-server (Debian package redis-server)" >&2; exit 1; }
    mkdir -p "$dir" && chmod 700 "$dir"
    if ! { [ -S "$sock" ] && [ -f "$dir/redis.pid" ] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; }; then
      redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$dir" --save "" \
        --appendonly no --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
      for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
      [ -S "$sock" ] || { echo "redis.sh: redis-server did not start (log: $dir/redis.log)" >&2; exit 1; }
    fi
    echo "export HPCJOBS_TEST_REDIS=unix://$sock" ;;
  down)
    [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true ;;
  *) echo "usage: redis.sh up|down" >&2; exit 2 ;;
esac
