#!/usr/bin/env bash
# The Debian package under a real systemd: a Debian 12 root (debootstrap, cached) booted with
# systemd-nspawn, the package installed there with dpkg, crcrd started by its shipped unit, a
# signed push delivered with crcrctl, and its job run to the end: bubblewrap inside the unit's
# hardening, pytest inside bubblewrap checking the sandbox from the inside. Then reload, the
# watchdog, stop, and the unit's exposure as that systemd computes it.
# The job is also the attacker of issue 30: it asks the sandbox launcher for `bwrap --bind / /`
# with crcrd's own client and with a minimal client of the wire protocol, through a second
# path to the launcher's socket (the hidden one it cannot see), and looks for the mirror; the
# run passes only when every attempt is refused. While it runs, the launcher's unit is checked
# to have no write access to the daemon's state but the job's folder; a second run checks
# that a hook planted in the mirror never runs.
# Usage: systemd_test.sh DEB SOURCE_DIR. Exits 77 (ctest: skipped) when DEB does not exist or
# this host cannot boot a container (not root, no systemd-nspawn or debootstrap).
# CRCRD_TEST_ROOTFS: where the cached root lives (default /var/cache/crcrd-test).
# CRCRD_TEST_DROPIN: a unit drop-in installed before the first start (to try directives).
set -euo pipefail
deb=${1:?usage: systemd_test.sh DEB SOURCE_DIR}
src=${2:?usage: systemd_test.sh DEB SOURCE_DIR}
skip() { echo "systemd_test: $*: skipped"; exit 77; }
[[ -f $deb ]] || skip "no package at $deb (make deb builds it)"
[[ $(id -u) == 0 ]] || skip "not root"
command -v systemd-nspawn >/dev/null || skip "no systemd-nspawn (Debian systemd-container)"

fail=0
problem() { echo "systemd_test: FAILED: $*" >&2; fail=1; }
step() { echo "== $*"; }

# The root: minbase, systemd, what the package depends on (so that dpkg -i needs no network),
# and what the test's job uses. Its name is the hash of that list: a new dependency makes a new
# root. Made once by debootstrap from Debian's archive, then only read (--volatile=overlay).
# A virtual package (libspdlog1.10-fmt9) is replaced by the package that provides it.
deps=
for d in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/ //g' | grep -v '^$' | sort -u); do
  if [[ $(apt-cache show "$d" 2>/dev/null | grep -c "^Package: $d\$") == 0 ]]; then
    d=$(apt-cache showpkg "$d" | sed -n '/^Reverse Provides:/{n;p}' | cut -d' ' -f1)
  fi
  deps+="$d,"
done
include="systemd,systemd-sysv,dbus,ca-certificates,python3,python3-pytest,openssl,${deps%,}"
cache=${CRCRD_TEST_ROOTFS:-/var/cache/crcrd-test}
rootfs=$cache/bookworm-$(sha256sum <<<"$include" | cut -c1-12)
if [[ ! -x $rootfs/usr/bin/python3 ]]; then
  command -v debootstrap >/dev/null || skip "no root at $rootfs and no debootstrap to make it"
  step "debootstrap into $rootfs ($include)"
  mkdir -p "$cache"
  rm -rf "$rootfs.tmp"
  debootstrap --variant=minbase --include="$include" bookworm "$rootfs.tmp" http://deb.debian.org/debian \
    > "$cache/debootstrap.log" 2>&1 || { tail -20 "$cache/debootstrap.log" >&2; echo "systemd_test: debootstrap failed" >&2; exit 1; }
  rm -f "$rootfs.tmp/var/cache/apt/archives/"*.deb
  mv "$rootfs.tmp" "$rootfs"
fi

tmp=$(mktemp -d)
nspawn_pid=
cleanup() {
  if [[ -n $nspawn_pid ]] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid" 2>/dev/null || true
    wait "$nspawn_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# What the container gets, read-only at /srv/systest: the package, the configuration, its
# secrets, the CI script and its pytest file, an upstream history and a push delivery of it.
stage=$tmp/stage
mkdir -p "$stage/etc" "$stage/ci"
cp "$deb" "$stage/crcrd.deb"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$stage/etc/tls.key" -out "$stage/etc/tls.crt" 2>/dev/null
openssl rand -hex 32 > "$stage/etc/webhook.secret"
token=$(openssl rand -hex 24)
echo "$token" > "$stage/admin.token"
token_sha=$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)
cat > "$stage/etc/selection.yaml" <<'RULES'
tiers:
  - {name: smoke, always: true, tests: [test_sandbox.py], timeout: 5m}
rules: []
RULES
cat > "$stage/etc/crcrd.yaml" <<YAML
log_level: info
server:
  listen: "127.0.0.1:8443"
  tls: {cert: tls.crt, key: tls.key}
  public_url: "https://127.0.0.1:8443"
storage:
  path: /var/lib/crcrd/crcrd.db
ingest:
  secrets: [{id: current, file: webhook.secret}]
trust:
  upstream_repo: pytorch/pytorch
  downstream_repo: torch-spyre/torch-spyre
  fork_policy: ignore
upstream:
  mirror: /var/lib/crcrd/pytorch.git
  remote: /srv/upstream
selection:
  rules: selection.yaml
runners:
  - {name: card-0, labels: [card], health_check: ["/bin/true"], device_model: "none"}
execution:
  command: [/opt/systest-ci/run-tests.sh]
  work_root: /var/lib/crcrd/work
  isolation: bwrap
  network: none
  sandbox_socket: /run/crcrd/sandbox.sock
  stall_timeout: 120s
  min_free_bytes: 1MiB
report:
  context_prefix: crcr/systest
  file: /var/lib/crcrd/statuses.jsonl
admin:
  tokens: [{name: ops, role: admin, sha256: $token_sha}]
YAML
cat > "$stage/ci/run-tests.sh" <<'SH'
#!/bin/sh
set -eu
cd "$(dirname "$0")"
exec /usr/bin/python3 -m pytest -q -rA -p no:cacheprovider --junitxml="$CRCR_JUNIT_DIR/results.xml" test_sandbox.py
SH
chmod +x "$stage/ci/run-tests.sh"
# The job checks its own sandbox: what a test could otherwise reach of the daemon and the host.
cat > "$stage/ci/test_sandbox.py" <<'PY'
import os, socket, subprocess, time

def test_the_daemons_secrets_are_out_of_reach():
    for path in ("/etc/crcrd/webhook.secret", "/etc/crcrd/tls.key", "/var/lib/crcrd/crcrd.db"):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        assert not data, path + " is readable from the job"

def test_its_own_pid_namespace():
    comms = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                comms.append(open(f"/proc/{pid}/comm").read().strip())
            except OSError:
                pass
    assert "crcrd" not in comms and "systemd" not in comms, comms
    assert os.getpid() < 10

def test_no_network_and_not_the_daemons_loopback():
    s = socket.socket()
    s.settimeout(2)
    try:
        assert s.connect_ex(("127.0.0.1", 8443)) != 0, "the daemon's port is reachable from the job"
    finally:
        s.close()
    assert [n for _, n in socket.if_nameindex()] == ["lo"]

def test_the_system_is_read_only():
    for path in ("/usr/bin/systest-was-here", "/etc/systest-was-here"):
        try:
            open(path, "w").close()
        except OSError:
            continue
        raise AssertionError(path + " was writable")

def test_the_job_folder_is_writable():
    with open(os.path.join(os.environ["CRCR_JUNIT_DIR"], "..", "scratch.txt"), "w") as f:
        f.write("ok")

def test_no_capabilities():
    caps = [l for l in open("/proc/self/status") if l.startswith("CapEff:")]
    assert caps == ["CapEff:\t0000000000000000\n"], caps

# The escape of issue 30: what the launcher would start for the job, with the host's view.
REACHABLE = "/opt/systest-ci/launcher.sock"  # the launcher's socket, bound here by the test
PAYLOAD = ("cat /etc/crcrd/webhook.secret > /var/lib/crcrd/stolen; "
           "printf '#!/bin/sh\\ntouch /var/lib/crcrd/hook-ran\\n' > /var/lib/crcrd/pytorch.git/hooks/post-checkout; "
           "chmod +x /var/lib/crcrd/pytorch.git/hooks/post-checkout; echo ESCAPED")
BWRAP = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/sh", "-c", PAYLOAD]

def test_the_launchers_own_socket_is_hidden():
    assert not os.path.exists("/run/crcrd/sandbox.sock")
    assert os.path.exists(REACHABLE), "the test did not bind the socket where the job can reach it"

def test_the_launcher_refuses_crcrds_own_client():
    r = subprocess.run(["/usr/bin/crcrd", "--sandbox-connect", REACHABLE, "--", *BWRAP],
                       capture_output=True, text=True, timeout=60)
    print("crcrd --sandbox-connect:", r.returncode, r.stdout, r.stderr)
    assert "ESCAPED" not in r.stdout
    assert r.returncode == 125 and "the sandbox launcher refused" in r.stderr, r.stderr

def test_the_launcher_refuses_a_minimal_client_of_its_protocol():
    replies = []
    for version, fds in (("crcrd-sandbox/2", [0, 1, 2, os.pidfd_open(os.getpid())]), ("crcrd-sandbox/1", [0, 1, 2])):
        env = [k + "=" + v for k, v in os.environ.items()]
        fields = [version, str(len(BWRAP)), *BWRAP, str(len(env)), *env, os.getcwd()]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(60)
        s.connect(REACHABLE)
        socket.send_fds(s, [b"".join(f.encode() + b"\0" for f in fields)], fds)
        replies.append(s.recv(4096).decode())
        s.close()
    print("launcher replies:", replies)
    assert all(r.startswith("error ") for r in replies), replies

def test_the_mirror_is_out_of_reach():
    assert not os.path.exists("/var/lib/crcrd/pytorch.git/HEAD")

def test_the_system_bus_is_hidden():
    assert os.listdir("/run/dbus") == [], os.listdir("/run/dbus")

def test_a_journal_entry_from_the_job_is_the_jobs_own():
    # The journal's socket stays reachable (a read-only mount still connects); journald takes
    # the sender's unit from the kernel, so the fields a client may set cannot make this line
    # crcrd.service's. The test script looks for it outside.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"MESSAGE=forged by the job\nSYSLOG_IDENTIFIER=crcrd\nUNIT=crcrd.service\n_SYSTEMD_UNIT=crcrd.service\n",
             "/run/systemd/journal/socket")
    s.close()

def test_zz_hold_while_the_launchers_unit_is_checked():
    # Last: the job waits (when asked to) until the test script has looked at the launcher's
    # mount namespace from outside.
    if not os.path.exists("/opt/systest-ci/hold") or os.environ["CRCR_ATTEMPT"] != "1":
        return
    job = os.path.dirname(os.environ["CRCR_JUNIT_DIR"])
    open(os.path.join(job, "waiting"), "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(job, "go")):
        assert time.monotonic() < deadline, "the test script never said go"
        time.sleep(0.05)
PY
# The upstream: a commit the push names.
git init -q -b main "$stage/upstream"
echo 'int add(int a, int b);' > "$stage/upstream/ops.cpp"
git -C "$stage/upstream" add -A
git -C "$stage/upstream" -c user.name=t -c user.email=t@example.org commit -qm "systest: one commit"
sha=$(git -C "$stage/upstream" rev-parse HEAD)
sed "s/6113728f27ae82c7b1a177c8d03f9e96e0adf246/$sha/g" "$src/tests/fixtures/crcr/push.dispatch.json" > "$stage/push.json"
# A second commit, for the run after a hook was planted in the mirror.
echo 'int sub(int a, int b);' >> "$stage/upstream/ops.cpp"
git -C "$stage/upstream" -c user.name=t -c user.email=t@example.org commit -qam "systest: a second commit"
sha2=$(git -C "$stage/upstream" rev-parse HEAD)
sed -e "s/6113728f27ae82c7b1a177c8d03f9e96e0adf246/$sha2/g" -e "s/0000000000000000000000000000000000000000/$sha/" \
  -e "s/6d1c2a70-5a1b-11f0-8d4e-2f1c9a1b7e03/6d1c2a70-5a1b-11f0-8d4e-2f1c9a1b7e04/" \
  "$src/tests/fixtures/crcr/push.dispatch.json" > "$stage/push2.json"
if [[ -n ${CRCRD_TEST_DROPIN:-} ]]; then cp "$CRCRD_TEST_DROPIN" "$stage/dropin.conf"; fi

# What runs inside, as root of the container, through nsenter.
cat > "$stage/inside.sh" <<'SH'
#!/bin/bash
set -euo pipefail
s=/srv/systest
case $1 in
install)
  dpkg -i $s/crcrd.deb
  install -d -m 0755 /opt/systest-ci
  cp $s/ci/* /opt/systest-ci/
  cp -r $s/upstream /srv/upstream
  chown -R crcrd:crcrd /srv/upstream
  install -m 0644 $s/etc/crcrd.yaml $s/etc/selection.yaml $s/etc/tls.crt /etc/crcrd/
  install -m 0640 -g crcrd $s/etc/tls.key $s/etc/webhook.secret /etc/crcrd/
  if [[ -f $s/dropin.conf ]]; then install -D -m 0644 $s/dropin.conf /etc/systemd/system/crcrd.service.d/test.conf; fi
  systemctl daemon-reload
  ;;
*) exec "$@" ;;
esac
SH
chmod +x "$stage/inside.sh"

step "boot $rootfs"
log=$tmp/console.log
systemd-nspawn -q -D "$rootfs" --volatile=overlay -b --register=no --keep-unit --private-network \
  --bind-ro="$stage:/srv/systest" > "$log" 2>&1 < /dev/null &
nspawn_pid=$!
# The container's PID 1, seen from here: the descendant of nspawn whose innermost pid is 1.
leader=
for _ in $(seq 600); do
  for p in $(pgrep -P "$nspawn_pid" 2>/dev/null) $(pgrep -P "$(pgrep -P "$nspawn_pid" | head -1)" 2>/dev/null); do
    if awk '/^NSpid:/ { exit !($NF == 1 && NF > 2) }' "/proc/$p/status" 2>/dev/null; then leader=$p; fi
  done
  [[ -n $leader ]] && break
  kill -0 "$nspawn_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n $leader ]] || { cat "$log" >&2; echo "systemd_test: the container did not start" >&2; exit 1; }
cx() { nsenter -t "$leader" -m -u -i -n -p -C -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
# Until its systemd answers on its bus and has finished booting (running, or degraded).
state=
for _ in $(seq 600); do
  state=$(cx systemctl is-system-running --wait 2>/dev/null) || true
  [[ $state == running || $state == degraded ]] && break
  sleep 0.1
done
echo "container: ${state:-no answer}"
[[ $state == running || $state == degraded ]] || problem "the container's systemd did not finish booting"

step "dpkg -i the package, the configuration"
cx /srv/systest/inside.sh install > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; problem "installing failed"; }
grep -q "Creating user 'crcrd'" "$tmp/install.log" || problem "the package did not create the crcrd user: $(cat "$tmp/install.log")"

step "systemctl start crcrd (Type=notify: returns once the daemon said READY=1)"
if ! cx systemctl start crcrd; then
  cx journalctl -u crcrd --no-pager -n 60 >&2 || true
  problem "crcrd did not start"
fi
cx systemctl show crcrd -p ActiveState -p SubState -p User -p WatchdogUSec -p NRestarts
[[ $(cx systemctl show crcrd -p ActiveState --value) == active ]] || problem "crcrd is not active"

ctl() { cx crcrctl --url https://127.0.0.1:8443 --cacert /etc/crcrd/tls.crt --token-file /srv/systest/admin.token "$@"; }
# push FILE: sends the signed push FILE; run_end: waits until the newest run, newer than
# $run, has ended (the deadline is the tier's timeout, not a guess of its duration), sets $run
# and $conclusion, and says what went wrong when it did not pass.
push() {
  cx crcrctl --url https://127.0.0.1:8443 --cacert /etc/crcrd/tls.crt send --scheme github \
    --secret-file /srv/systest/etc/webhook.secret "$1" || problem "the push $1 was refused"
}
run=0
run_end() {
  local newest=
  conclusion=
  for _ in $(seq 3000); do
    newest=$(ctl runs list --json 2>/dev/null | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
if items and items[0]["id"] > int(sys.argv[1]):
    i = items[0]
    print(i["id"], (i.get("conclusion") or "none") if i["state"] in ("completed", "cancelled") else "")' "$run" || true)
    [[ $newest == *" "?* ]] && break
    sleep 0.1
  done
  ctl runs list || true
  run=${newest%% *}
  conclusion=${newest#* }
  [[ -n $run ]] && ctl runs show "$run" > "$tmp/run.txt" 2>&1 || true
  if [[ $conclusion != passed ]]; then
    cat "$tmp/run.txt" >&2 || true
    job=$(ctl runs show "$run" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["id"])' 2>/dev/null || true)
    [[ -n $job ]] && ctl jobs log "$job" >&2 || true
    cx journalctl -u crcrd -u 'crcrd-sandbox@*' --no-pager -n 80 >&2 || true
    problem "run ${run:-none} ended '${conclusion:-not at all}', not passed"
  fi
}

step "a signed push, then its run: the job attacks the launcher, which refuses it"
# The launcher's socket at a second path the job's sandbox shows (the command's folder): the
# launcher must refuse a job that reaches it, not only hide it. The job holds at its end.
cx sh -c 'touch /opt/systest-ci/launcher.sock /opt/systest-ci/hold && mount --bind /run/crcrd/sandbox.sock /opt/systest-ci/launcher.sock' ||
  problem "cannot bind the launcher's socket into the command's folder"
push /srv/systest/push.json
# While the job holds: the launcher instance's mount namespace may write the job's folder and
# nothing else of the daemon's state.
waiting=
for _ in $(seq 1200); do
  waiting=$(cx sh -c 'ls /var/lib/crcrd/work/jobs/*/waiting 2>/dev/null' | head -1 || true)
  [[ -n $waiting ]] && break
  sleep 0.1
done
if [[ -z $waiting ]]; then
  problem "the job never reached its hold"
else
  unit=$(cx systemctl list-units --plain --no-legend --state=running 'crcrd-sandbox@*.service' | awk '{print $1}' | head -1)
  lpid=$(cx systemctl show -p MainPID --value "$unit")
  echo "the job's launcher: $unit, pid $lpid"
  jobdir=$(dirname "$waiting")
  for f in /var/lib/crcrd/launcher-wrote /var/lib/crcrd/pytorch.git/launcher-wrote /var/lib/crcrd/work/launcher-wrote \
           /var/cache/crcrd/launcher-wrote /etc/crcrd/launcher-wrote; do
    if cx nsenter -t "$lpid" -m touch "$f" 2>/dev/null; then problem "the launcher's unit can write $f"; fi
  done
  cx nsenter -t "$lpid" -m touch "$jobdir/launcher-wrote" || problem "the launcher's unit cannot write the job's folder $jobdir"
  cx touch "$jobdir/go"
fi
run_end
cx rm -f /opt/systest-ci/hold
for f in /var/lib/crcrd/stolen /var/lib/crcrd/hook-ran; do
  if cx test -e "$f"; then problem "$f exists: the job escaped through the launcher"; fi
done
hooks=$(cx find /var/lib/crcrd/pytorch.git/hooks -type f ! -name '*.sample' 2>/dev/null || true)
[[ -z $hooks ]] || problem "a hook was written into the mirror: $hooks"
ctl jobs log "$(ctl runs show "$run" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["id"])')" \
  > "$tmp/job.log" 2>&1 || true
grep -qF "crcrd --sandbox-connect: the sandbox launcher refused: the peer" "$tmp/job.log" ||
  problem "the job's log does not show crcrd's client refused: $(head -c 3000 "$tmp/job.log")"
grep -F "launcher replies:" "$tmp/job.log" | grep -qF "error the peer" ||
  problem "the job's log does not show the minimal client refused: $(head -c 3000 "$tmp/job.log")"
# The job's journal entry is there, and it is its own unit's, not crcrd.service's.
forged=$(cx journalctl --no-pager -o verbose MESSAGE="forged by the job" | grep -E '^ *_SYSTEMD_UNIT=' | head -1 || true)
echo "the job's journal entry: ${forged:-none}"
[[ $forged == *"_SYSTEMD_UNIT=crcrd-sandbox@"* ]] || problem "the job's journal entry is not attributed to its crcrd-sandbox@ unit: '${forged:-none}'"
if cx journalctl --no-pager -u crcrd | grep -q "forged by the job"; then problem "a job wrote a line into crcrd.service's journal"; fi
refusals=$(cx journalctl --no-pager -u 'crcrd-sandbox@*' | grep -c 'refused: the peer .* runs in a pid namespace of its own' || true)
echo "launcher refusals in the journal: $refusals"
[[ $refusals -ge 2 ]] || problem "the journal does not show the launcher refusing the job's two clients"

step "a hook planted in the mirror never runs in the next job's checkout"
cx sh -c 'printf "#!/bin/sh\ntouch /var/lib/crcrd/hook-ran\n" > /var/lib/crcrd/pytorch.git/hooks/post-checkout &&
  chmod 0755 /var/lib/crcrd/pytorch.git/hooks/post-checkout && chown crcrd:crcrd /var/lib/crcrd/pytorch.git/hooks/post-checkout'
push /srv/systest/push2.json
run_end
if cx test -e /var/lib/crcrd/hook-ran; then problem "the daemon's checkout ran a hook planted in its mirror"; fi
cx cat /var/lib/crcrd/statuses.jsonl | grep -q '"state":"success"' || problem "no success status in the file sink"
[[ $(cx systemctl is-active crcrd-sandbox.socket) == active ]] || problem "crcrd-sandbox.socket is not active"
cx journalctl --no-pager -u 'crcrd-sandbox@*' | grep -q 'Started crcrd-sandbox@' ||
  problem "the job's bubblewrap did not start in a crcrd-sandbox@ instance"

step "systemctl reload crcrd (ExecReload: --check-config, then SIGHUP)"
cx systemctl reload crcrd || { cx journalctl -u crcrd --no-pager -n 20 >&2; problem "reload failed"; }
cx sh -c "sed -i 's/^log_level: info/log_level: loud/' /etc/crcrd/crcrd.yaml"
if cx systemctl reload crcrd 2>/dev/null; then problem "reload of a broken configuration succeeded"; fi
[[ $(cx systemctl show crcrd -p ActiveState --value) == active ]] || problem "a refused reload stopped crcrd"
cx sh -c "sed -i 's/^log_level: loud/log_level: info/' /etc/crcrd/crcrd.yaml"
# A configuration from before the launcher (no sandbox_socket): bubblewrap cannot start under
# crcrd.service, and --check-config (ExecReload's first step, in the unit) says so.
cx sh -c "sed -i 's|^  sandbox_socket:|  #sandbox_socket:|' /etc/crcrd/crcrd.yaml"
if cx systemctl reload crcrd 2>/dev/null; then problem "reload without sandbox_socket succeeded under crcrd.service"; fi
cx journalctl -u crcrd --no-pager | grep -q "bubblewrap cannot make the jobs' sandbox here" ||
  problem "the refused reload does not say that bubblewrap cannot run under the unit"
cx sh -c "sed -i 's|^  #sandbox_socket:|  sandbox_socket:|' /etc/crcrd/crcrd.yaml"
cx systemctl reload crcrd || problem "reload with sandbox_socket back failed"

step "the watchdog: a stopped daemon is killed and restarted"
pid=$(cx systemctl show crcrd -p MainPID --value)
cx sh -c "kill -STOP $pid"
for _ in $(seq 900); do
  [[ $(cx systemctl show crcrd -p NRestarts --value) -ge 1 ]] && break
  sleep 0.1
done
[[ $(cx systemctl show crcrd -p NRestarts --value) -ge 1 ]] || problem "a stopped daemon was not restarted by the watchdog"
# journald writes what PID 1 logged asynchronously: until the line is there, or ten seconds.
seen_timeout=
for _ in $(seq 100); do
  cx journalctl -u crcrd --no-pager | grep -q "Watchdog timeout" && { seen_timeout=1; break; }
  sleep 0.1
done
[[ -n $seen_timeout ]] || problem "the journal does not tell of a watchdog timeout"
cx systemctl is-active --wait crcrd >/dev/null 2>&1 || cx systemctl start crcrd || true
[[ $(cx systemctl show crcrd -p ActiveState --value) == active ]] || problem "crcrd did not come back after the watchdog"
ctl runs list >/dev/null || problem "the restarted daemon does not answer"

step "systemctl stop crcrd"
cx systemctl stop crcrd || problem "stop failed"
result=$(cx systemctl show crcrd -p Result --value)
[[ $result == success ]] || problem "stop ended with Result=$result"

step "the journal (warnings and worse)"
cx journalctl -u crcrd --no-pager -p warning | grep -vE 'Watchdog timeout|Killing process|Main process exited, code=dumped|Failed with result .watchdog.|^-- ' || true

step "systemd-analyze security, as this systemd computes it"
score=$(cx systemd-analyze security crcrd.service 2>&1 | sed -n 's/.*Overall exposure level for crcrd.service: \([0-9.]*\).*/\1/p')
echo "crcrd.service exposure in the container: ${score:-none}"
awk -v a="${score:-99}" 'BEGIN { exit !(a + 0 <= 2.0) }' || problem "crcrd.service exposure ${score:-none} is above 2.0"

cx systemctl poweroff || true
wait "$nspawn_pid" 2>/dev/null || true
nspawn_pid=
[[ $fail == 0 ]] && echo "systemd_test: passed"
exit $fail
