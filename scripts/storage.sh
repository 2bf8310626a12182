#!/usr/bin/env bash
# A storage rig: a file system of a chosen kind, mounted where a test or a replay can use it,
# with a count of what its device served. Each rig has its own loop device, so the counts are
# its own whatever else the machine does.
#
#   storage.sh up NAME PROFILE     create the rig NAME, print its mount point
#   storage.sh down NAME           unmount, remove throttle rules, loop device and backing file
#   storage.sh stats NAME          bytes and I/Os the device served since up
#   storage.sh throttle NAME BPS[:IOPS]   change (0 = remove) the throttle of a rig that is up
#   storage.sh list                the rigs that are up
#
# Profiles:
#   tmpfs                 memory; no device, so no stats and no throttle
#   ext4                  ext4 on a loop device of its own
#   throttled[:BPS[:IOPS]]  that device throttled, read and write, by the root blkio cgroup
#                         (default 40M:400; BPS takes K/M/G suffixes, powers of 1024)
#   sync                  the ext4 device mounted -o sync
# IOTREX_STORAGE_SIZE sets the file system's size (default 128M), IOTREX_STORAGE_DIR where
# rigs live (default /dev/shm/iotrex-storage: backing files in memory, so that the device is
# as fast as its throttle says and no faster or slower; see docs/rigs.md).
set -euo pipefail

# In memory: a backing file on the machine's own disk made the device as slow as that disk at
# times (a virtual disk shared with other machines, whose flushes every fsync waits for), and
# the throttled rig's run times swung by up to 7x between consecutive runs.
BASE=${IOTREX_STORAGE_DIR:-/dev/shm/iotrex-storage}
SIZE=${IOTREX_STORAGE_SIZE:-128M}
# The root blkio cgroup (cgroup v1). Throttling there also throttles write-back, which the
# kernel's flusher threads issue from the root cgroup; a child cgroup's rules would not.
BLKIO=${IOTREX_BLKIO:-/sys/fs/cgroup/blkio}
THROTTLE_FILES="read_bps_device write_bps_device read_iops_device write_iops_device"

die() {
  echo "storage.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '5,19p' "${BASH_SOURCE[0]:-$0}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

require_root() {
  [ "$(id -u)" -eq 0 ] ||
    die "needs root: it sets up loop devices, mounts file systems and writes blkio cgroup rules"
}

check_name() {
  [[ ${1:-} =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] ||
    die "NAME must be letters, digits, '.', '_' or '-', got '${1:-}'"
}

# "40M" -> 41943040; plain numbers stay.
bytes() {
  local v=$1 n m=1
  [[ $v =~ ^([0-9]+)([KMG]?)$ ]] || die "not a byte rate: '$v' (e.g. 40M, 512K, 1000000)"
  n=${BASH_REMATCH[1]}
  case ${BASH_REMATCH[2]} in K) m=1024 ;; M) m=$((1024 * 1024)) ;; G) m=$((1024 * 1024 * 1024)) ;; esac
  echo $((n * m))
}

# The rig's recorded state, as shell assignments: PROFILE, DEV (/dev/loopN or empty), MNT.
load() {
  local d=$BASE/$1
  [ -f "$d/state" ] || return 1
  # shellcheck disable=SC1091
  . "$d/state"
}

# Sets the four throttle rules of device MAJ:MIN; 0 removes a rule.
set_throttle() {
  local majmin=$1 bps=$2 iops=$3 f v
  [ -w "$BLKIO/blkio.throttle.read_bps_device" ] ||
    die "no blkio throttling here: $BLKIO/blkio.throttle.read_bps_device is missing (cgroup v1 blkio controller not mounted)"
  for f in $THROTTLE_FILES; do
    case $f in *bps*) v=$bps ;; *) v=$iops ;; esac
    echo "$majmin $v" >"$BLKIO/blkio.throttle.$f" ||
      die "cannot write '$majmin $v' to $BLKIO/blkio.throttle.$f"
  done
}

majmin_of() {
  cat "/sys/block/$(basename "$1")/dev"
}

cmd_up() {
  local name=${1:-} profile=${2:-}
  [ -n "$name" ] && [ -n "$profile" ] || die "up: usage: storage.sh up NAME PROFILE"
  check_name "$name"
  require_root
  local kind=${profile%%:*} bps=0 iops=0 rest
  case $kind in
  tmpfs | ext4 | sync) [ "$kind" = "$profile" ] || die "profile '$kind' takes no parameters, got '$profile'" ;;
  throttled)
    rest=${profile#throttled}
    rest=${rest#:}
    bps=${rest%%:*}
    bps=$(bytes "${bps:-40M}")
    iops=400
    if [[ $rest == *:* ]]; then iops=${rest#*:}; fi
    [[ $iops =~ ^[0-9]+$ ]] || die "throttled: IOPS must be a number, got '$iops'"
    [ "$bps" -gt 0 ] && [ "$iops" -gt 0 ] || die "throttled: BPS and IOPS must be positive (use the ext4 profile for none)"
    ;;
  *) die "unknown profile '$profile' (tmpfs, ext4, throttled[:BPS[:IOPS]], sync)" ;;
  esac
  local d=$BASE/$name
  if load "$name"; then
    # A second up of the same rig reuses it; another profile under the same name is a mistake.
    [ "$PROFILE" = "$profile" ] || die "$name is already up with profile '$PROFILE' (down it first)"
    mountpoint -q "$MNT" || die "$name is recorded as up but $MNT is not mounted (run: storage.sh down $name)"
    echo "$MNT"
    return
  fi
  mkdir -p "$d/mnt"
  local mnt=$d/mnt dev=""
  # Recorded before each step, so that down undoes a half-made rig too.
  printf 'PROFILE=%q\nDEV=\nMNT=%q\n' "$profile" "$mnt" >"$d/state"
  if [ "$kind" = tmpfs ]; then
    mount -t tmpfs -o "size=$SIZE" "iotrex-$name" "$mnt" || die "cannot mount a tmpfs on $mnt"
  else
    command -v mkfs.ext4 >/dev/null || die "needs mkfs.ext4 (e2fsprogs)"
    [ -e /dev/loop-control ] || modprobe loop 2>/dev/null || true
    [ -e /dev/loop-control ] || die "no loop devices: /dev/loop-control is missing (modprobe loop, or a container without /dev/loop*)"
    # Allocated now, not sparse: a backing directory without room for the whole file (a small
    # /dev/shm) is an error here rather than I/O errors on the device later.
    local why
    why=$(fallocate -l "$SIZE" "$d/disk.img" 2>&1) ||
      die "no room for a $SIZE backing file in $d (free: $(df -h --output=avail "$BASE" | tail -1 | tr -d ' '); ${why#fallocate: }); set IOTREX_STORAGE_DIR to a directory with room, or IOTREX_STORAGE_SIZE smaller"
    # Inode tables and journal written now, not by ext4lazyinit in the background, whose
    # writes would show in the device's counts.
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$d/disk.img" ||
      die "mkfs.ext4 on $d/disk.img failed"
    dev=$(losetup --find --show "$d/disk.img") ||
      die "no free loop device (losetup --find failed; is the loop module loaded?)"
    printf 'PROFILE=%q\nDEV=%q\nMNT=%q\n' "$profile" "$dev" "$mnt" >"$d/state"
    # Direct I/O on the backing file where its file system allows it: the host's page cache
    # would otherwise hold the device's blocks a second time. Set after attaching, so that a
    # refusal leaves no device behind.
    losetup --direct-io=on "$dev" 2>/dev/null || true
    local opts=defaults
    [ "$kind" = sync ] && opts=sync
    mount -o "$opts" "$dev" "$mnt" || die "cannot mount $dev on $mnt"
    if [ "$kind" = throttled ]; then
      set_throttle "$(majmin_of "$dev")" "$bps" "$iops"
    fi
  fi
  echo "$mnt"
}

cmd_down() {
  local name=${1:-}
  [ -n "$name" ] || die "down: usage: storage.sh down NAME"
  check_name "$name"
  require_root
  local d=$BASE/$name
  if ! load "$name"; then
    # Nothing to undo: down is idempotent, so an RAII guard may call it after a failed up.
    [ -d "$d" ] && rm -rf "$d"
    return 0
  fi
  if mountpoint -q "$MNT"; then
    umount "$MNT" || die "cannot unmount $MNT (in use? see: fuser -vm $MNT)"
  fi
  if [ -n "$DEV" ] && [ -e "/sys/block/$(basename "$DEV")" ]; then
    # Rules are keyed by major:minor, and the next rig may get the same loop device.
    local mm
    mm=$(majmin_of "$DEV")
    if [ -w "$BLKIO/blkio.throttle.read_bps_device" ]; then
      local f
      for f in $THROTTLE_FILES; do
        grep -q "^$mm " "$BLKIO/blkio.throttle.$f" && echo "$mm 0" >"$BLKIO/blkio.throttle.$f"
      done
    fi
    # Only our backing file's device: the number may have been reused after a crash.
    if losetup -n -O BACK-FILE "$DEV" 2>/dev/null | grep -qF "$d/disk.img"; then
      losetup -d "$DEV"
    fi
  fi
  rm -rf "$d"
  rmdir "$BASE" 2>/dev/null || true
}

cmd_stats() {
  local name=${1:-}
  [ -n "$name" ] || die "stats: usage: storage.sh stats NAME"
  check_name "$name"
  load "$name" || die "$name is not up (storage.sh list)"
  [ -n "$DEV" ] || die "$name is a tmpfs: it has no device, so nothing to count"
  local s
  # /sys/block/loopN/stat: reads, merges, sectors, ticks, then the same for writes; sectors
  # are 512 bytes whatever the device's block size.
  read -r -a s <"/sys/block/$(basename "$DEV")/stat"
  echo "device $DEV"
  echo "read_bytes $((s[2] * 512))"
  echo "read_ios ${s[0]}"
  echo "write_bytes $((s[6] * 512))"
  echo "write_ios ${s[4]}"
}

cmd_throttle() {
  local name=${1:-} spec=${2:-}
  [ -n "$name" ] && [ -n "$spec" ] || die "throttle: usage: storage.sh throttle NAME BPS[:IOPS]"
  check_name "$name"
  require_root
  load "$name" || die "$name is not up (storage.sh list)"
  [ -n "$DEV" ] || die "$name is a tmpfs: it has no block device, so it cannot be throttled (use ext4 or throttled)"
  local bps iops=0
  bps=$(bytes "${spec%%:*}")
  if [[ $spec == *:* ]]; then iops=${spec#*:}; fi
  [[ $iops =~ ^[0-9]+$ ]] || die "throttle: IOPS must be a number, got '$iops'"
  set_throttle "$(majmin_of "$DEV")" "$bps" "$iops"
}

cmd_list() {
  local d
  [ -d "$BASE" ] || return 0
  for d in "$BASE"/*/; do
    [ -f "$d/state" ] || continue
    (
      . "$d/state"
      echo "$(basename "$d") $PROFILE ${DEV:-none} $MNT"
    )
  done
}

case ${1:-} in
up) shift; cmd_up "$@" ;;
down) shift; cmd_down "$@" ;;
stats) shift; cmd_stats "$@" ;;
throttle) shift; cmd_throttle "$@" ;;
list) cmd_list ;;
*) usage ;;
esac
