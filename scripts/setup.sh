#!/usr/bin/env bash
# One-time (idempotent) set-up of a fresh Debian/Ubuntu machine for p4cc:
# Debian packages, the Python venvs, and the Rust builds. `make setup` runs
# it, and `make run` / `make test` run `make setup` first.
#
# It installs nothing p4c/bmv2-related: those are in no registry; p4cc
# detects them when present and uses its embedded target otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "p4cc needs root (network namespaces, raw sockets): run as root or with sudo"
[ "$(uname -s)" = Linux ] || die "p4cc needs Linux"

APT_PACKAGES=(
  # namespaces, links and their offloads
  iproute2 ethtool iputils-ping procps psmisc kmod
  # the project's Python runs in a venv made from Debian's python3
  python3 python3-venv python3-dev
  # bmv2's simple_switch_CLI (when bmv2 is installed) imports thrift
  python3-thrift
  # the Mininet prompt (p4cc mininet; p4cc's own switch node, no Open vSwitch)
  mininet iperf
  # the BPF DCTCP (struct_ops) for kernel TCP
  clang llvm libbpf-dev bpftool
  # Rust builds of crates with C parts
  build-essential pkg-config
)

stamp_dir=.venv
want=$(cat scripts/setup.sh requirements.txt pyproject.toml | sha256sum | cut -c1-16)
stamp="$stamp_dir/.p4cc-setup-$want"

if [ ! -f "$stamp" ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi

  if [ ! -x .venv/bin/python ]; then
    log "creating .venv from /usr/bin/python3 (with system site packages)"
    /usr/bin/python3 -m venv --system-site-packages .venv
  fi
  log "installing Python packages into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  rm -f "$stamp_dir"/.p4cc-setup-*
  touch "$stamp"
fi

# finsy (the second P4Runtime client of the tests) in a venv of its own: it
# needs a current protobuf, the p4runtime wheel of .venv an old one. No
# system site packages, so Debian's python3-protobuf cannot shadow finsy's.
finsy_want=$(sha256sum requirements-finsy.txt | cut -c1-16)
finsy_stamp=".venv-finsy/.p4cc-setup-$finsy_want"
if [ ! -f "$finsy_stamp" ] || [ ! -x .venv-finsy/bin/python ]; then
  if [ ! -x .venv-finsy/bin/python ]; then
    log "creating .venv-finsy from /usr/bin/python3 (finsy, for the P4Runtime tests)"
    /usr/bin/python3 -m venv .venv-finsy
  fi
  log "installing finsy into .venv-finsy"
  .venv-finsy/bin/pip install -q --disable-pip-version-check -r requirements-finsy.txt
  rm -f .venv-finsy/.p4cc-setup-*
  touch "$finsy_stamp"
fi

command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs or Debian's cargo)"
export P4CC_PYTHON="$PWD/.venv/bin/python"
log "building the embedded switch (switch/, release)"
cargo build --release --quiet --manifest-path switch/Cargo.toml
log "building the host agents (hosts/, release)"
cargo build --release --quiet --manifest-path hosts/Cargo.toml
log "building the virtual-time simulator (sim/, release)"
bash scripts/build-sim.sh
if [ -f hosts/bpf/Makefile ]; then
  log "building the BPF DCTCP"
  make -s -C hosts/bpf
fi
log "ready"
