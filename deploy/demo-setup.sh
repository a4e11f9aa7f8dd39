#!/usr/bin/env bash
# Creates var/demo/ on first use: a self-signed certificate for 127.0.0.1, a GitHub webhook
# secret, a Standard Webhooks secret, and the folder for the demo database. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=var/demo
mkdir -p "$demo"
chmod 700 "$demo"
if [[ ! -s $demo/tls.crt || ! -s $demo/tls.key ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 \
    -subj "/CN=crcrd demo" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$demo/tls.key" -out "$demo/tls.crt" 2>/dev/null
  echo "demo: made a self-signed certificate in $demo/tls.crt" >&2
fi
if [[ ! -s $demo/webhook.secret ]]; then
  (umask 077; openssl rand -hex 32 > "$demo/webhook.secret")
  echo "demo: made a webhook secret in $demo/webhook.secret" >&2
fi
if [[ ! -s $demo/relay.whsec ]]; then
  (umask 077; echo "whsec_$(openssl rand -base64 32)" > "$demo/relay.whsec")
  echo "demo: made a Standard Webhooks secret in $demo/relay.whsec" >&2
fi
if [[ ! -s $demo/admin.token ]]; then
  # The demo's admin token is fixed (config/demo.yaml holds its SHA-256); the demo listens on
  # 127.0.0.1 only. A real installation makes its own: docs/operations.md.
  (umask 077; printf 'crcrd-demo-admin-token\n' > "$demo/admin.token")
  echo "demo: wrote the demo's admin token to $demo/admin.token" >&2
fi
# The demo's upstream PyTorch: a generated history in var/demo/upstream (no network), that the
# daemon mirrors into var/demo/pytorch.git. main has 24 commits; commit 0 has the header the
# demo's build compiles against (aten/src/ATen/demo/add.h, examples/demo/build.sh); commit 13
# ("culprit") adds demo/regressed, which examples/demo/tests/test_trunk.py fails on. Branch
# pr-clean forks from commit 0 and changes a kernel; pr-on-broken forks from main's tip and
# changes docs; pr-breaks-build forks from main's tip and changes the header's signature, so
# the demo's extension no longer compiles. Branch main-next is main's tip and 6 commits more,
# the third of which (commit 26) changes that signature: pushed as main, the build breaks and
# is bisected.
# var/demo/payloads/ holds the deliveries of the README: the fixtures of tests/fixtures/ with
# their SHAs replaced by these commits.
up=$demo/upstream
# A history made by an older demo (without the build's header or main-next) is made again.
if [[ -d $up/.git ]] && ! command git -C "$up" rev-parse --quiet --verify main-next >/dev/null; then
  rm -rf "$up" "$demo/pytorch.git" "$demo/payloads" "$demo/builds"
  echo "demo: the upstream history predates the build stage; making it again" >&2
fi
if [[ ! -d $up/.git ]]; then
  git() { command git -C "$up" -c user.name=demo -c user.email=demo@example.org "$@"; }
  mkdir -p "$up"
  git init --quiet -b main
  mkdir -p "$up/aten/src/ATen/native" "$up/torch/_inductor" "$up/docs" "$up/demo"
  echo 'int add(int a, int b);' > "$up/aten/src/ATen/native/BinaryOps.cpp"
  echo '# the demo upstream' > "$up/docs/index.rst"
  mkdir -p "$up/aten/src/ATen/demo"
  printf '%s\n' '#pragma once' 'namespace at::demo {' 'inline int add(int a, int b) { return a + b; }' \
    '}  // namespace at::demo' > "$up/aten/src/ATen/demo/add.h"
  for i in $(seq 0 23); do
    echo "step = $i" > "$up/torch/_inductor/step_$i.py"
    [[ $i -eq 13 ]] && echo "commit 13 broke the trunk test" > "$up/demo/regressed"
    git add -A
    msg="inductor: step $i"; [[ $i -eq 13 ]] && msg="inductor: step 13 (the culprit)"
    GIT_COMMITTER_DATE="2026-11-01T00:$(printf %02d "$i"):00Z" GIT_AUTHOR_DATE="2026-11-01T00:$(printf %02d "$i"):00Z" \
      git commit --quiet -m "$msg"
  done
  git checkout --quiet -b pr-clean "$(git rev-list --max-parents=0 HEAD)"
  echo 'int add(int a, int b, int alpha);' > "$up/aten/src/ATen/native/BinaryOps.cpp"
  GIT_COMMITTER_DATE=2026-11-01T01:00:00Z GIT_AUTHOR_DATE=2026-11-01T01:00:00Z git commit --quiet -am "aten: add alpha"
  git checkout --quiet -b pr-on-broken main
  echo '# the demo upstream, better documented' > "$up/docs/index.rst"
  GIT_COMMITTER_DATE=2026-11-01T01:01:00Z GIT_AUTHOR_DATE=2026-11-01T01:01:00Z git commit --quiet -am "docs: say more"
  git checkout --quiet -b pr-breaks-build main
  printf '%s\n' '#pragma once' 'namespace at::demo {' \
    'inline int add(int a, int b, int alpha) { return a + alpha * b; }' '}  // namespace at::demo' \
    > "$up/aten/src/ATen/demo/add.h"
  GIT_COMMITTER_DATE=2026-11-01T01:02:00Z GIT_AUTHOR_DATE=2026-11-01T01:02:00Z git commit --quiet -am "aten: at::demo::add takes alpha"
  git checkout --quiet -b main-next main
  for i in $(seq 24 29); do
    echo "step = $i" > "$up/torch/_inductor/step_$i.py"
    msg="inductor: step $i"
    if [[ $i -eq 26 ]]; then
      printf '%s\n' '#pragma once' 'namespace at::demo {' \
        'inline int add(int a, int b, int scale) { return scale * (a + b); }' '}  // namespace at::demo' \
        > "$up/aten/src/ATen/demo/add.h"
      msg="aten: at::demo::add takes scale (breaks the backend's build)"
    fi
    git add -A
    GIT_COMMITTER_DATE="2026-11-01T02:$(printf %02d "$i"):00Z" GIT_AUTHOR_DATE="2026-11-01T02:$(printf %02d "$i"):00Z" \
      git commit --quiet -m "$msg"
  done
  git checkout --quiet main
  unset -f git
  echo "demo: made an upstream history of $(git -C "$up" rev-list --count main) commits in $up" >&2
fi
if [[ ! -d $demo/payloads ]]; then
  rm -rf "$demo/payloads.part"
  mkdir -p "$demo/payloads.part"
  c0=$(git -C "$up" rev-list --max-parents=0 main)
  python3 - "$demo/payloads.part" "$(git -C "$up" rev-parse pr-clean)" "$c0" <<'PY'
import json, sys
out, head, base = sys.argv[1:4]
# The fixture's head and base SHAs become the demo PR's.
swap = {"ec26c3e57ca3a959ca5aad62de7213c562f8c821": head, "f95f852bd8fca8fcc58a9a2d6c842781e32a215e": base}
for name in ("pull_request-synchronize.dispatch.json", "direct-pytorch-crcr.json"):
    text = open("tests/fixtures/crcr/" + name).read()
    for old, new in swap.items():
        text = text.replace(old, new)
    open(f"{out}/{name}", "w").write(text)
PY
  mv "$demo/payloads.part" "$demo/payloads"
  echo "demo: wrote the README's deliveries for the demo upstream to $demo/payloads/" >&2
fi
