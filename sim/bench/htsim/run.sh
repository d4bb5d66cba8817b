#!/usr/bin/env bash
# htsim side of the p4cc simulator benchmark: runs the DCTCP dumbbell in
# htsim (Broadcom/csg-htsim), one run per rate, printing one JSON line per
# run, when an htsim dumbbell binary is present. htsim is built outside
# the repository (README.md here: what the binary runs and prints); this
# script only runs it. Usage: sim/bench/htsim/run.sh [100M] [1G] [10G] [100G]
# (default: the four rates). Without the binary it prints why on stderr and
# exits 0 with no JSON: the benchmark skips htsim and says so.
#
# HTSIM_DUMBBELL: the binary (default /opt/htsim/bin/htsim_dctcp_dumbbell).
# HTSIM_PACKET_BYTES: its packet size (default 1500, the other simulators').
set -euo pipefail

BIN="${HTSIM_DUMBBELL:-/opt/htsim/bin/htsim_dctcp_dumbbell}"
if [ ! -x "$BIN" ]; then
    echo "run.sh: htsim skipped: no executable at $BIN (build htsim outside the repository and point HTSIM_DUMBBELL at its dumbbell; sim/bench/htsim/README.md)" >&2
    exit 0
fi

# name, rate (Gb/s), RTT (µs), K (packets), buffer (packets), duration (s),
# warm-up (s): the scenarios of ../ns3/run.sh and ../bench.py.
CONFIGS=(
    "100M 0.1 100 20 1000 5 1"
    "1G 1 100 20 1000 2 0.5"
    "10G 10 100 65 1000 0.5 0.1"
    "100G 100 100 650 6500 0.06 0.045"
)
WANT=("$@")
for cfg in "${CONFIGS[@]}"; do
    read -r name rate rtt k buffer duration warmup <<<"$cfg"
    if [ ${#WANT[@]} -gt 0 ] && [[ ! " ${WANT[*]} " == *" $name "* ]]; then
        continue
    fi
    "$BIN" --rate-gbps "$rate" --rtt-us "$rtt" --K "$k" --buffer "$buffer" --senders 2 \
        --duration "$duration" --warmup "$warmup" --packet-bytes "${HTSIM_PACKET_BYTES:-1500}"
done
