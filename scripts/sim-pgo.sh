#!/usr/bin/env bash
# `make sim-pgo`: a profile-guided build of the virtual-time simulator.
# Builds it instrumented, runs two experiments in virtual time with it
# (dctcp-queue and dc-fct at their default scale: a dumbbell and the
# fabric, every algorithm), merges what it recorded into
# sim/target/pgo/merged.profdata, and rebuilds the simulator with that
# profile (scripts/build-sim.sh, which `make setup` runs too). Needs the
# llvm-profdata of rustc's own LLVM. `rm -r sim/target/pgo` and `make
# setup` go back to the plain build.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m[sim-pgo]\033[0m %s\n' "$*"; }
die() { printf '[sim-pgo] error: %s\n' "$*" >&2; exit 1; }

# llvm-profdata must read the format of rustc's LLVM: rustup's llvm-tools
# first, then a Debian llvm-N of the same major version.
version=$(rustc -vV)
major=$(sed -n 's/^LLVM version: \([0-9]*\).*/\1/p' <<<"$version")
[ -n "$major" ] || die "cannot tell rustc's LLVM version (rustc -vV)"
profdata=""
for c in "$(rustc --print sysroot)/lib/rustlib/$(sed -n 's/^host: //p' <<<"$version")/bin/llvm-profdata" \
         "$(command -v "llvm-profdata-$major" || true)" "/usr/lib/llvm-$major/bin/llvm-profdata" \
         "$(command -v llvm-profdata || true)"; do
  if [ -n "$c" ] && [ -x "$c" ] && "$c" --version 2>/dev/null | grep -q "LLVM version $major\."; then
    profdata=$c
    break
  fi
done
[ -n "$profdata" ] || die "no llvm-profdata of LLVM $major (rustc's): run \`rustup component add llvm-tools\`, or \`apt-get install llvm-$major\` where Debian has it"
log "llvm-profdata: $profdata"

export P4CC_PYTHON="$PWD/.venv/bin/python"
pgo=$PWD/sim/target/pgo
rm -rf "$pgo/raw"
mkdir -p "$pgo/raw"
log "building the simulator instrumented (sim/target/pgo-gen; a few minutes)"
CARGO_TARGET_DIR=sim/target/pgo-gen RUSTFLAGS="-Cprofile-generate=$pgo/raw" \
  nice cargo build --release --quiet --manifest-path sim/Cargo.toml

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for exp in dctcp-queue dc-fct; do
  log "recording: p4cc run $exp --target sim"
  P4CC_SIM_BIN=$PWD/sim/target/pgo-gen/release/p4cc-sim .venv/bin/p4cc run "$exp" --target sim --out "$work/$exp" >"$work/$exp.log" 2>&1 \
    || { tail -5 "$work/$exp.log" >&2; die "the recording run of $exp failed"; }
done
ls "$pgo"/raw/*.profraw >/dev/null 2>&1 || die "the instrumented simulator wrote no profile into $pgo/raw"
"$profdata" merge -o "$pgo/merged.profdata" "$pgo"/raw/*.profraw
rm -rf "$pgo/raw"
log "rebuilding the simulator with the profile"
bash scripts/build-sim.sh
log "done: sim/target/release/p4cc-sim is the profile-guided build"
