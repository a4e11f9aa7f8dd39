#!/usr/bin/env bash
# The shipped unit (deploy/crcrd.service): what CONTRACT §8 asks of it, what bubblewrap needs
# kept open, and its `systemd-analyze security --offline=true` exposure, alone and with
# deploy/crcrd-no-bwrap.conf (docs/operations.md, "The unit's hardening").
# Usage: unit_security.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: unit_security.sh SOURCE_DIR}
unit=$src/deploy/crcrd.service
dropin=$src/deploy/crcrd-no-bwrap.conf
# The bounds: the unit as shipped, which must let bubblewrap make its namespaces and mount
# /proc, and the unit on a host that never starts bubblewrap.
max_shipped=2.7
max_without_bwrap=2.0

fail=0
problem() { echo "unit_security: $*" >&2; fail=1; }
# value KEY: every value of KEY= in the unit, one a line.
value() { sed -n "s/^$1=//p" "$unit"; }
has() { grep -qxF "$1" "$unit" || problem "deploy/crcrd.service lacks '$1'"; }
lacks() { ! grep -qE "^$1" "$unit" || problem "deploy/crcrd.service has '$1', which $2"; }

has Type=notify
has User=crcrd
has NoNewPrivileges=yes
has ProtectSystem=strict
has StateDirectory=crcrd
has CapabilityBoundingSet=
value WatchdogSec | grep -q . || problem "no WatchdogSec="
value ExecReload | grep -q 'kill -HUP' || problem "no ExecReload= sending SIGHUP"
value ExecStart | grep -qx '/usr/bin/crcrd --config /etc/crcrd/crcrd.yaml' || problem "ExecStart= is not the packaged binary"

# What bubblewrap (src/exec/job_env.cpp, bwrap_prefix) needs.
ns=" $(value RestrictNamespaces | tr '\n' ' ') "
for t in user mnt pid ipc uts net; do
  [[ $ns == *" $t "* ]] || problem "RestrictNamespaces= forbids '$t', which bubblewrap unshares"
done
value SystemCallFilter | grep -qw '@mount' || problem "SystemCallFilter= lacks @mount (bubblewrap mounts, pivot_root)"
value RestrictAddressFamilies | grep -qw AF_NETLINK || problem "AF_NETLINK refused: bubblewrap sets up the loopback of --unshare-net"
lacks 'ProtectKernelTunables=(yes|true|1)' "mounts over /proc/sys: the kernel then refuses bubblewrap's /proc"
lacks 'ProtectKernelLogs=(yes|true|1)' "mounts over /proc/kmsg: the kernel then refuses bubblewrap's /proc"
lacks 'ProcSubset=pid' "hides /proc/sys, which bubblewrap reads and must see whole to mount /proc"
lacks 'PrivateUsers=(yes|true|1)' "maps other users to nobody (untested with bubblewrap)"

# exposure ROOT: the overall exposure systemd-analyze reports for crcrd.service under ROOT.
exposure() {
  local out
  out=$(systemd-analyze security --offline=true --root="$1" crcrd.service 2>&1) || true
  sed -n 's/.*Overall exposure level for crcrd.service: \([0-9.]*\).*/\1/p' <<<"$out" | grep . ||
    { echo "$out" >&2; echo none; }
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/etc/systemd/system"
cp "$unit" "$tmp/etc/systemd/system/crcrd.service"
shipped=$(exposure "$tmp")
mkdir -p "$tmp/etc/systemd/system/crcrd.service.d"
cp "$dropin" "$tmp/etc/systemd/system/crcrd.service.d/no-bwrap.conf"
without=$(exposure "$tmp")
echo "exposure: shipped $shipped (at most $max_shipped), with crcrd-no-bwrap.conf $without (at most $max_without_bwrap)"
awk -v a="$shipped" -v b="$max_shipped" 'BEGIN { exit !(a != "none" && a + 0 <= b + 0) }' ||
  problem "exposure $shipped of the shipped unit is above $max_shipped"
awk -v a="$without" -v b="$max_without_bwrap" 'BEGIN { exit !(a != "none" && a + 0 <= b + 0) }' ||
  problem "exposure $without with crcrd-no-bwrap.conf is above $max_without_bwrap"
exit $fail
