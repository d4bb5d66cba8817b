#!/usr/bin/env bash
# `make test`: every suite this machine can run. A suite whose target is
# not installed (bmv2) skips with the reason; any failure fails the run.
set -uo pipefail
cd "$(dirname "$0")/.."
export P4CC_PYTHON="$PWD/.venv/bin/python"
failed=()
passed=0
step() {
  local name=$1; shift
  printf '\n\033[1m== %s\033[0m\n' "$name"
  if "$@"; then passed=$((passed + 1)); else failed+=("$name"); fi
}

step "p4 output is fresh"       python3 tools/p4build.py check
step "tofino program type-checks" python3 tools/p4build.py tna-check
step "rust: host agents"        cargo test --release --manifest-path hosts/Cargo.toml
step "rust: embedded switch"    cargo test --release --manifest-path switch/Cargo.toml
step "rust: simulator"          cargo test --release --manifest-path sim/Cargo.toml
step "python: unit + integration" .venv/bin/python -m pytest -q
step "ptf: embedded target"     .venv/bin/python ptf-tests/run.py --target embedded
step "ptf: bmv2"                .venv/bin/python ptf-tests/run.py --target bmv2 --skip-if-absent
step "ptf: tofino-model"        .venv/bin/python ptf-tests/run.py --target tofino --skip-if-absent

echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
fi
echo "suites: $passed passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
