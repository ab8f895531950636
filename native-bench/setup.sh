#!/bin/sh
# Installs what the bench needs; idempotent:
#   - wrk (Debian package; the load generator),
#   - the FastAPI peer's stack from Debian's packages (python3-fastapi, python3-uvicorn, with
#     uvloop and httptools for uvicorn's fast loop and parser),
#   - this folder's npm dependencies (the Fastify peer: fastify, @fastify/static, better-sqlite3,
#     which compiles its native addon from source here: about 2 minutes the first time),
#   - a built store (../dist, from the repository root's own build script).
set -eu
cd "$(dirname "$0")"

missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
for pkg in python3-fastapi python3-uvicorn python3-uvloop python3-httptools; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing (apt-get)"
  apt-get update -qq
  apt-get install -y -qq $missing
fi
wrk --version 2>&1 | head -1 || true

if ! node -e "require('better-sqlite3')(':memory:'); require('fastify')" 2>/dev/null; then
  echo "setup: installing native-bench's npm dependencies"
  npm install --no-audit --no-fund
  # An addon compiled under another Node line (another ABI) is built again for this one, against
  # this Node's own headers (npm's nodedir may name another Node's: `npm config get nodedir`).
  node -e "require('better-sqlite3')(':memory:')" 2>/dev/null ||
    npm rebuild better-sqlite3 --nodedir="$(node -p "require('node:path').resolve(process.execPath, '..', '..')")"
fi

if [ ! -f ../dist/src/cli.js ]; then
  echo "setup: building the store (npm run build in the repository root)"
  (cd .. && npm run build --silent)
fi
node -e "require('better-sqlite3')(':memory:')" || { echo "setup: the Fastify peer's better-sqlite3 does not load under Node $(node --version)" >&2; exit 1; }
echo "setup: ready (node $(node --version), $(command -v wrk), $(/usr/bin/python3 -c 'import fastapi, uvicorn; print("fastapi", fastapi.__version__, "uvicorn", uvicorn.__version__)'))"
