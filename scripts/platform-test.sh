#!/bin/sh
# `scripts/platform-test.sh SUITE ARCH NODE_MAJOR PACKAGES 'COMMAND LINE'`: runs a shell command
# line from this checkout, as built here, inside a platform root with PACKAGES
# (scripts/platform-root.sh, made or taken from its cache) with that root's Node first on PATH:
# the checkout is bound in at its own path (scripts/platform-exec.sh). For the same ARCH only:
# the checkout's native modules are this machine's. `npm run test:debian13` runs the HTTP-engine files this way on Debian 13 (glibc
# 2.41), where the native uWebSockets.js engine loads on Node 24 (docs/OPERATIONS.md, "Platforms").
set -eu
suite=$1 arch=$2 node_major=$3 packages=$4 line=$5
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(sh "$here/scripts/platform-root.sh" "$suite" "$arch" "$node_major" "$packages")
exec sh "$here/scripts/platform-exec.sh" "$root" --bind "$here" sh -c 'cd "$1" && eval "$2"' platform-test "$here" "$line"
