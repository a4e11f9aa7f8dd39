#!/usr/bin/env bash
# Installs every Debian package that building, testing and running the crcrd demo needs.
# Idempotent: when everything is present it only runs dpkg-query and exits.
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config git ca-certificates openssl
  libboost1.81-dev nlohmann-json3-dev libssl-dev libspdlog-dev libfmt-dev
  libsqlite3-dev sqlite3 libsimdjson-dev libzstd-dev libpugixml-dev libre2-dev libyaml-cpp-dev libcli11-dev libgtest-dev libgmock-dev libsystemd-dev
  bubblewrap python3 python3-pytest curl nginx-light jq
  # tests/lint/format.sh (ctest Lint.Formatted) checks the code against .clang-format.
  clang-format
  # bench/run-match-peers.sh: ripgrep beside grep as a peer of the log classification.
  ripgrep
  # The integration tests validate real API responses against docs/openapi.yaml
  # (tests/support/openapi_check.py: JSON Schema 2020-12, as OpenAPI 3.1 uses).
  python3-jsonschema python3-yaml
  # tests/integration/metrics_test.cpp checks a real scrape with `promtool check metrics`.
  prometheus
  # The Slurm executor's tests start a real one-node cluster (tests/support/slurm_cluster.hpp).
  slurmctld slurmd slurm-client munge
  # The dashboard's tests load every page in a real headless Chromium (tests/support/webdriver.hpp).
  chromium chromium-driver
  # `make deb` (debian/): Debian's packaging tools, scdoc for the man pages, lintian on the
  # result; systemd-analyze scores the unit (tests/deploy/unit_security.sh).
  debhelper dpkg-dev fakeroot lintian scdoc systemd
  # `make test-system` boots the package's units under a real systemd in a Debian 12 root
  # (tests/deploy/systemd_test.sh); systemd's own systemd-socket-activate starts the sandbox
  # launcher in the integration tests.
  systemd-container debootstrap
  # `make bench`: wrk, a load generator the project does not own, beside bench_ingest.
  wrk
)
# `install-deps.sh fuzz`: also what `make fuzz` needs (clang's libFuzzer and sanitizers).
if [[ ${1:-} == fuzz ]]; then
  packages+=(clang-14 libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root or install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
