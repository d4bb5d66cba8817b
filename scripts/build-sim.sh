#!/usr/bin/env bash
# Builds the virtual-time simulator (sim/, release). When `make sim-pgo`
# has recorded a profile of the simulator at work, the build uses it
# (profile-guided optimization; docs/simulator.md); without one it is the
# plain release build. A profile recorded before later edits still applies
# to the functions that did not change, and the code is correct either way.
set -euo pipefail
cd "$(dirname "$0")/.."

# (the P4Runtime crate's build reads the protocol through the venv's Python)
export P4CC_PYTHON="${P4CC_PYTHON:-$PWD/.venv/bin/python}"
PROFILE=sim/target/pgo/merged.profdata
if [ -f "$PROFILE" ]; then
  echo "  (profile-guided: with $PROFILE, recorded by make sim-pgo)"
  # (--cfg p4cc_pgo: the simulator says in its results that it was built so)
  export RUSTFLAGS="-Cprofile-use=$PWD/$PROFILE --cfg p4cc_pgo -Cllvm-args=-no-pgo-warn-mismatch"
fi
cargo build --release --quiet --manifest-path sim/Cargo.toml
