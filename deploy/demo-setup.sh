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
