#!/usr/bin/env bash
# The shipped units (deploy/): what docs/operations.md asks of crcrd.service, that it may make no
# namespace now that bubblewrap starts in crcrd-sandbox@.service, what that unit keeps open for
# bubblewrap, and both units' `systemd-analyze security --offline=true` exposure
# (docs/operations.md, "The unit's hardening").
# Usage: unit_security.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: unit_security.sh SOURCE_DIR}
unit=$src/deploy/crcrd.service
sandbox=$src/deploy/crcrd-sandbox@.service
socket=$src/deploy/crcrd-sandbox.socket
# The bounds: at most 2.0 for the daemon's unit, as docs/operations.md promises; the launcher's
# unit keeps what bubblewrap needs, which the kernel and systemd-analyze price at 2.7.
max_daemon=2.0
max_sandbox=2.7

fail=0
problem() { echo "unit_security: $*" >&2; fail=1; }
# value FILE KEY: every value of KEY= in FILE, one a line.
value() { sed -n "s/^$2=//p" "$1"; }
has() { grep -qxF "$2" "$1" || problem "$(basename "$1") lacks '$2'"; }

has "$unit" Type=notify
has "$unit" User=crcrd
has "$unit" NoNewPrivileges=yes
has "$unit" ProtectSystem=strict
has "$unit" StateDirectory=crcrd
has "$unit" CapabilityBoundingSet=
has "$unit" Requires=crcrd-sandbox.socket
value "$unit" WatchdogSec | grep -q . || problem "no WatchdogSec="
value "$unit" ExecReload | grep -q 'kill -HUP' || problem "no ExecReload= sending SIGHUP"
value "$unit" ExecStart | grep -qx '/usr/bin/crcrd --config /etc/crcrd/crcrd.yaml' || problem "ExecStart= is not the packaged binary"
# The daemon makes no namespace and mounts nothing: that is the launcher's.
has "$unit" RestrictNamespaces=yes
value "$unit" SystemCallFilter | grep -q '~.*@mount' || problem "crcrd.service does not refuse @mount"
! value "$unit" RestrictAddressFamilies | grep -qw AF_NETLINK || problem "crcrd.service allows AF_NETLINK"

# The launcher: socket-activated, one instance per job, only the crcrd user may connect, and
# what bubblewrap (src/exec/job_env.cpp, bwrap_prefix) needs.
has "$socket" Accept=yes
has "$socket" SocketUser=crcrd
has "$socket" SocketMode=0600
value "$socket" ListenSequentialPacket | grep -qx /run/crcrd/sandbox.sock || problem "the socket is not /run/crcrd/sandbox.sock"
grep -q 'sandbox_socket: /run/crcrd/sandbox.sock' "$src/config/crcrd.yaml.example" ||
  problem "config/crcrd.yaml.example does not set execution.sandbox_socket to the socket"
has "$sandbox" User=crcrd
has "$sandbox" KillMode=control-group
value "$sandbox" ExecStart | grep -q '^/usr/bin/crcrd --sandbox-serve ' || problem "crcrd-sandbox@.service does not run crcrd --sandbox-serve"
# It serves only the daemon's own client: a peer in crcrd.service's cgroup (docs/security.md).
value "$sandbox" ExecStart | grep -q -- '--peer-cgroup /system.slice/crcrd.service ' ||
  problem "crcrd-sandbox@.service does not require its peers to be in crcrd.service's cgroup"
# No write access to the daemon's state beyond the jobs' folders that bubblewrap binds.
for d in StateDirectory CacheDirectory LogsDirectory RuntimeDirectory; do
  [[ -z $(value "$sandbox" $d) ]] || problem "crcrd-sandbox@.service has $d= (write access to the daemon's state)"
done
[[ $(value "$sandbox" ReadWritePaths) == -/var/lib/crcrd/work/jobs ]] ||
  problem "crcrd-sandbox@.service may write '$(value "$sandbox" ReadWritePaths)', not only -/var/lib/crcrd/work/jobs"
grep -qE '^  work_root: /var/lib/crcrd/work( |$)' "$src/config/crcrd.yaml.example" ||
  problem "config/crcrd.yaml.example's work_root is not /var/lib/crcrd/work, whose jobs/ the launcher's unit may write"
ns=" $(value "$sandbox" RestrictNamespaces | tr '\n' ' ') "
for t in user mnt pid ipc uts net; do
  [[ $ns == *" $t "* ]] || problem "crcrd-sandbox@.service forbids the '$t' namespace, which bubblewrap unshares"
done
value "$sandbox" SystemCallFilter | grep -qE '^@system-service @mount' || problem "crcrd-sandbox@.service lacks @mount (bubblewrap mounts, pivot_root)"
value "$sandbox" RestrictAddressFamilies | grep -qw AF_NETLINK || problem "AF_NETLINK refused: bubblewrap sets up the loopback of --unshare-net"
for d in 'ProtectKernelTunables=(yes|true|1)' 'ProtectKernelLogs=(yes|true|1)' 'ProcSubset=pid'; do
  ! grep -qE "^$d" "$sandbox" || problem "crcrd-sandbox@.service has '$d': it mounts over /proc and the kernel then refuses bubblewrap's /proc"
done

# exposure ROOT UNIT: the overall exposure systemd-analyze reports for UNIT under ROOT.
exposure() {
  local out
  out=$(systemd-analyze security --offline=true --root="$1" "$2" 2>&1) || true
  sed -n "s/.*Overall exposure level for $2: \([0-9.]*\).*/\1/p" <<<"$out" | grep . || { echo "$out" >&2; echo none; }
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/etc/systemd/system"
cp "$unit" "$sandbox" "$socket" "$tmp/etc/systemd/system/"
daemon=$(exposure "$tmp" crcrd.service)
launcher=$(exposure "$tmp" crcrd-sandbox@1.service)
echo "exposure: crcrd.service $daemon (at most $max_daemon), crcrd-sandbox@.service $launcher (at most $max_sandbox)"
awk -v a="$daemon" -v b="$max_daemon" 'BEGIN { exit !(a != "none" && a + 0 <= b + 0) }' ||
  problem "exposure $daemon of crcrd.service is above $max_daemon"
awk -v a="$launcher" -v b="$max_sandbox" 'BEGIN { exit !(a != "none" && a + 0 <= b + 0) }' ||
  problem "exposure $launcher of crcrd-sandbox@.service is above $max_sandbox"
exit $fail
