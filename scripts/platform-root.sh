#!/bin/sh
# A Debian root for another platform's runs (docs/OPERATIONS.md, "Platforms"), made once and kept
# in a cache: `scripts/platform-root.sh SUITE ARCH NODE_MAJOR [PACKAGES]` prints the path of a
# root of Debian SUITE (bookworm, trixie) for ARCH (amd64, arm64), made by debootstrap's minbase
# variant with PACKAGES (comma-separated: the servers a test starts), and the official Node
# NODE_MAJOR build for ARCH from the npm registry (package node-linux-<arch>, the same builds
# nodejs.org ships) in /opt/node. A foreign ARCH runs under qemu-user-static
# through binfmt_misc, both set up here when missing (binfmt_misc(4)); debootstrap then runs the
# root's own maintainer scripts emulated.
#
# Cache: $EDGE_EVENTS_ROOT_CACHE, default ~/.cache/edge-event-store/roots; a root is kept when it
# was finished (its .done file), so a second run takes no time. Needs root and the network reach
# of the machine's apt sources and npm registry. Progress goes to stderr, the path to stdout.
set -eu

suite=$1 arch=$2 node_major=$3 packages=${4:-}
# Debian's architecture names, Node's (node-linux-<arch>) and qemu's for each this script knows.
case "$arch" in
  amd64) node_arch=x64 qemu=qemu-x86_64 ;;
  arm64) node_arch=arm64 qemu=qemu-aarch64 ;;
  *) echo "platform-root: ARCH is amd64 or arm64, not $arch" >&2; exit 2 ;;
esac
cache=${EDGE_EVENTS_ROOT_CACHE:-$HOME/.cache/edge-event-store/roots}
root="$cache/$suite-$arch-node$node_major${packages:+-$(echo "$packages" | tr , -)}"
if [ -f "$root/.done" ]; then
  echo "$root"
  exit 0
fi

say() { echo "platform-root: $*" >&2; }

missing=""
command -v debootstrap >/dev/null || missing="$missing debootstrap"
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
  command -v update-binfmts >/dev/null || missing="$missing binfmt-support"
  command -v "$qemu-static" >/dev/null || missing="$missing qemu-user-static"
fi
if [ -n "$missing" ]; then
  say "installing$missing"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
  [ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable "$qemu" >/dev/null 2>&1 || true
  [ -e "/proc/sys/fs/binfmt_misc/$qemu" ] || { say "binfmt_misc has no $qemu entry: install qemu-user-static"; exit 1; }
fi

# The machine's own Debian mirror, as apt reads it (deb822 or one-line sources).
mirror=$(sed -nE 's/^URIs: *([^ ]+).*/\1/p; s/^deb +(\[[^]]*\] +)?([^ ]+) .*/\2/p' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1)
mirror=${mirror:-http://deb.debian.org/debian}

# A root debootstrap finished is kept in $work when a later step fails, for the next run.
work="$root.tmp"
rm -rf "$root"
if [ ! -f "$work/debootstrapped" ]; then
  rm -rf "$work"
  mkdir -p "$work"
  say "debootstrap $suite $arch from $mirror (about 1 minute native, 3 emulated)"
  start=$(date +%s)
  if ! debootstrap --variant=minbase --arch="$arch" "$suite" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log" >&2
    exit 1
  fi
  say "debootstrap took $(($(date +%s) - start)) s"
  touch "$work/debootstrapped"
fi
# apt, not debootstrap's --include, which cannot choose among a dependency's alternatives.
if [ -n "$packages" ] && [ ! -f "$work/packaged" ]; then
  say "apt-get install $packages in the root"
  start=$(date +%s)
  sh "$(dirname "$0")/platform-exec.sh" "$work/root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(echo "$0" | tr , " ") >/dev/null && apt-get clean' "$packages" >&2
  say "apt-get took $(($(date +%s) - start)) s"
  touch "$work/packaged"
fi

say "node-linux-$node_arch@$node_major from the npm registry"
# Packed, not installed: npm refuses to install a package for another cpu.
rm -rf "$work/npm" && mkdir -p "$work/npm"
tgz=$(npm pack --silent --pack-destination "$work/npm" "node-linux-$node_arch@$node_major")
tar -xzf "$work/npm/$tgz" -C "$work/npm"
rm -rf "$work/root/opt/node" && mkdir -p "$work/root/opt"
mv "$work/npm/package" "$work/root/opt/node"

mv "$work/root" "$root"
rm -rf "$work"
touch "$root/.done"
echo "$root"
