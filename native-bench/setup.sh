#!/bin/sh
# Installs what the bench needs: wrk (Debian package; the load generator) and a built store
# (../dist, from the repository root's own build script). Idempotent.
set -eu
cd "$(dirname "$0")"

if ! command -v wrk >/dev/null 2>&1; then
  echo "setup: installing wrk (apt-get)"
  apt-get update -qq
  apt-get install -y -qq wrk
fi
wrk --version 2>&1 | head -1 || true

if [ ! -f ../dist/src/cli.js ]; then
  echo "setup: building the store (npm run build in the repository root)"
  (cd .. && npm run build --silent)
fi
echo "setup: ready (node $(node --version), $(command -v wrk))"
