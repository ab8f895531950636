#!/bin/sh
# Runs a command chrooted into a platform root (scripts/platform-root.sh), in a mount namespace of
# its own so that nothing stays mounted after it: `scripts/platform-exec.sh ROOT [--bind DIR]...
# COMMAND...`. /proc, /dev and /sys are bound in, each `--bind DIR` at its own path (a checkout the
# command runs from), and the root's /opt/node/bin leads PATH; the caller's TMPDIR and
# NODE_OPTIONS (a test runner's preloads) are left out, as on a box. The process execs in place from
# `unshare` to the command, so its pid is the command's: a caller's kill -9 reaches it.
set -eu
root=$1
shift
binds=""
while [ "${1:-}" = "--bind" ]; do
  binds="$binds $2"
  shift 2
done
exec unshare --mount --propagation private sh -c '
  set -eu
  root=$1 binds=$2
  shift 2
  for d in proc dev sys; do mount --rbind "/$d" "$root/$d"; done
  for b in $binds; do mkdir -p "$root$b"; mount --bind "$b" "$root$b"; done
  chmod 1777 "$root/tmp"
  exec chroot "$root" env -u TMPDIR -u NODE_OPTIONS PATH=/opt/node/bin:/usr/local/bin:/usr/bin:/bin HOME=/root "$@"
' platform-exec "$root" "$binds" "$@"
