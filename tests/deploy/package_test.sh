#!/usr/bin/env bash
# The Debian package (make deb): unpacked into a temporary root with `dpkg -x`, its file list,
# its computed dependencies, the installed binaries' --version, --check-config on the shipped
# example configuration (its secrets, certificate and programs created here), the installed
# unit's `systemd-analyze security` exposure, and lintian (no error).
# Usage: package_test.sh DEB SOURCE_DIR. Exits 77 (ctest: skipped) when DEB does not exist.
set -euo pipefail
deb=${1:?usage: package_test.sh DEB SOURCE_DIR}
src=${2:?usage: package_test.sh DEB SOURCE_DIR}
if [[ ! -f $deb ]]; then
  echo "package_test: no package at $deb (make deb builds it): skipped"
  exit 77
fi
fail=0
problem() { echo "package_test: $*" >&2; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
dpkg -x "$deb" "$root"

# The file list. The unit and the sysusers.d/tmpfiles.d entries are where debhelper puts them
# on this release (/lib on bookworm, /usr/lib later).
files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
find_one() { grep -qxE "$1" <<<"$files" || problem "the package lacks $1"; }
find_one '/usr/bin/crcrd'
find_one '/usr/bin/crcrctl'
find_one '/usr/libexec/crcrd/crcrd-job-init'
find_one '(/usr)?/lib/systemd/system/crcrd.service'
find_one '(/usr)?/lib/sysusers.d/crcrd.conf'
find_one '(/usr)?/lib/tmpfiles.d/crcrd.conf'
find_one '/etc/crcrd/crcrd.yaml.example'
find_one '(/usr)?/lib/systemd/system/crcrd-sandbox.socket'
find_one '(/usr)?/lib/systemd/system/crcrd-sandbox@.service'
find_one '/usr/share/man/man8/crcrd.8.gz'
find_one '/usr/share/man/man1/crcrctl.1.gz'
find_one '/usr/share/man/man5/crcrd.yaml.5.gz'
find_one '/usr/share/doc/crcrd/copyright'
grep -q '^u crcrd ' "$root"/*lib/sysusers.d/crcrd.conf 2>/dev/null ||
  grep -q '^u crcrd ' "$root"/usr/lib/sysusers.d/crcrd.conf || problem "sysusers.d entry does not create the crcrd user"
grep -qE '^d /var/lib/crcrd 0750 crcrd crcrd' "$root"/{lib,usr/lib}/tmpfiles.d/crcrd.conf 2>/dev/null ||
  problem "tmpfiles.d entry does not create /var/lib/crcrd"
for page in man8/crcrd.8 man1/crcrctl.1 man5/crcrd.yaml.5; do
  zcat "$root/usr/share/man/$page.gz" | grep -q '^\.SH' || problem "$page.gz is not a man page"
done

depends=$(dpkg-deb -f "$deb" Depends)
for d in libc6 libssl3 libsqlite3-0 bubblewrap git; do
  grep -qE "(^|, )$d( |,|$)" <<<"$depends" || problem "Depends lacks $d: $depends"
done

# The binaries, as installed.
v=$("$root/usr/bin/crcrd" --version) || problem "crcrd --version failed"
grep -q "$(dpkg-deb -f "$deb" Version | sed 's/-.*//')" <<<"$v" || problem "crcrd --version says '$v'"
"$root/usr/bin/crcrctl" --version >/dev/null || problem "crcrctl --version failed"

# --check-config on the example, its absolute paths moved under $tmp, with what it names.
etc=$tmp/etc/crcrd
mkdir -p "$etc" "$tmp/var/lib/crcrd" "$tmp/var/cache/crcrd" "$tmp/opt/torch-spyre/ci" "$tmp/usr/local/bin"
sed -e "s|/var/lib/crcrd|$tmp/var/lib/crcrd|g" -e "s|/var/cache/crcrd|$tmp/var/cache/crcrd|g" \
    -e "s|/opt/torch-spyre|$tmp/opt/torch-spyre|g" -e "s|/usr/local/bin|$tmp/usr/local/bin|g" \
    "$root/etc/crcrd/crcrd.yaml.example" > "$etc/crcrd.yaml"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=ci.example.org \
  -keyout "$etc/tls.key" -out "$etc/tls.crt" 2>/dev/null
openssl rand -hex 32 > "$etc/webhook.secret"
echo "whsec_$(openssl rand -base64 32)" > "$etc/relay.whsec"
echo "ghp_not_a_real_token" > "$etc/gh.token"
cat > "$etc/selection.yaml" <<'RULES'
tiers:
  - {name: smoke, always: true, tests: [test/test_torch.py], labels: [spyre_pf_x1]}
rules: []
RULES
for p in opt/torch-spyre/ci/run-crcr-tests.sh usr/local/bin/spyre-health usr/local/bin/spyre-smi; do
  printf '#!/bin/sh\nexit 0\n' > "$tmp/$p"
  chmod +x "$tmp/$p"
done
git init -q "$tmp/opt/torch-spyre"
if ! out=$("$root/usr/bin/crcrd" --check-config --config "$etc/crcrd.yaml" 2>&1); then
  problem "crcrd --check-config on the example configuration failed: $out"
fi
# And an error is still an error (exit 2) under the installed binary.
sed 's/^log_level: info/log_level: loud/' "$etc/crcrd.yaml" > "$etc/bad.yaml"
rc=0; "$root/usr/bin/crcrd" --check-config --config "$etc/bad.yaml" >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || problem "--check-config on a bad log_level exited $rc, not 2"

# The installed unit (ExecStart's binary exists in this root).
out=$(systemd-analyze security --offline=true --root="$root" crcrd.service 2>&1) || true
score=$(sed -n 's/.*Overall exposure level for crcrd.service: \([0-9.]*\).*/\1/p' <<<"$out")
echo "installed unit: exposure ${score:-none}"
awk -v a="${score:-99}" 'BEGIN { exit !(a + 0 <= 2.0) }' || problem "installed unit exposure ${score:-none}: $out"

if command -v lintian >/dev/null; then
  lint=$(lintian --info "$deb" 2>&1) || true
  echo "$lint"
  ! grep -q '^E: ' <<<"$lint" || problem "lintian reports errors"
else
  problem "lintian is not installed (deploy/install-deps.sh)"
fi
exit $fail
