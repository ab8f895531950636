#!/bin/sh
# The paced bench (sweep.js --pace=10) on ext4 with its journal, as Debian, Ubuntu and Raspberry Pi
# OS make it on a box's card: a fresh file system on a loop device, so the figures do not depend on
# how this machine's own disk is mounted (PROFILE.md, "A journaled ext4"). Needs root (losetup,
# mount). Arguments go to sweep.js (--quick, --systems=..., --warmup=N). Writes
# RESULTS.paced-journaled.md.
set -eu
cd "$(dirname "$0")"
mkdir -p .data/ext4-journaled
image=.data/ext4-journaled.img
# 4 GiB holds the largest cell (image events at 10 a second) several times over.
truncate -s 4G "$image"
device=$(losetup --find --show "$image")
cleanup() {
  umount .data/ext4-journaled 2>/dev/null || true
  losetup --detach "$device"
  rm -f "$image"
}
trap cleanup EXIT INT TERM
# mkfs.ext4's defaults (/etc/mke2fs.conf): a journal, extents, 4 KiB blocks. Its inode tables and
# journal are zeroed now, not by the kernel's ext4lazyinit in the background during the runs.
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$device"
mount "$device" .data/ext4-journaled
node sweep.js --pace=10 --data-root=.data/ext4-journaled --results=paced-journaled "$@"
