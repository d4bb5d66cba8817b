#!/usr/bin/env bash
# ns-3 side of the p4cc simulator benchmark: build dctcp_dumbbell.cc against
# Debian 12's ns-3.37 and run the DCTCP dumbbell at 100 Mb/s, 1, 10 and
# 100 Gb/s (RTT 100 µs, 2 flows), one run at a time, printing one JSON line
# per run. Usage: sim/bench/ns3/run.sh [100M] [1G] [10G] [100G] [fig1] [fig1-paper]
# (default: the four rates). Each run's JSON (with the queue histogram) is
# also kept in sim/bench/ns3/build/results/NAME.json.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="${NS3_BENCH_BUILD:-$HERE/build}"
BIN="$BUILD/dctcp_dumbbell"
mkdir -p "$BUILD/results"

# ns-3.37 from Debian 12 (packages libns3-dev + libns3.37).
if [ ! -e /usr/include/ns3/core-module.h ]; then
    echo "run.sh: libns3-dev missing; installing it with apt-get (Debian 12 ships ns-3.37)" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends libns3-dev >&2
fi

# Link the ns-3 libraries by name: Debian's ns3-*.pc files name
# /usr/lib/x86_64-linux-gnu/libgsl.so by absolute path (only libgsl-dev has
# it) and carry a malformed -I flag, so `pkg-config --libs ns3-core` does not
# link on a machine without libgsl-dev.
NS3_LIBS="-lns3-applications -lns3-internet -lns3-traffic-control -lns3-point-to-point -lns3-network -lns3-core"
if [ ! -x "$BIN" ] || [ "$HERE/dctcp_dumbbell.cc" -nt "$BIN" ]; then
    echo "run.sh: building $BIN" >&2
    nice g++ -O2 -std=c++17 -o "$BIN" "$HERE/dctcp_dumbbell.cc" $NS3_LIBS
fi

# name, ns-3 rate, RTT (µs), K (packets), buffer (packets), duration (s), warm-up (s)
#  K: DCTCP paper's 20 at 1 Gb/s and 65 at 10 Gb/s; the seed's 20 at 100 Mb/s;
#     x10 per decade above 10 Gb/s.
#  buffer: 10 K, at least 1000 packets (no drops: the slow-start overshoot
#     stays below it; each run reports drops_total).
#  duration/warm-up: a run stays near two minutes of wall time on the 2-core
#     machine; the warm-up covers slow start and DCTCP's convergence from
#     alpha = 1 (at 100 Gb/s the queue takes ~40 ms to climb to K).
CONFIGS=(
    "100M 100Mbps 100 20 1000 5 1"
    "1G 1Gbps 100 20 1000 2 0.5"
    "10G 10Gbps 100 65 1000 0.5 0.1"
    "100G 100Gbps 100 650 6500 0.06 0.045"
)
# The reference for dctcp-queue's band verdict (DCTCP Fig. 1, two flows),
# run only when named: `fig1` at the experiment's defaults (the seed's
# 100 Mb/s, RTT 500 µs, K = 20, 120 packets) and `fig1-paper` at its paper
# scale (1 Gb/s, RTT 100 µs, K = 20, 466 packets). Their queue p5/p95 are
# NS3_FIG1 in experiments/p4cc_exp/defs/dctcp_queue.py.
# `fig1-bmv2` runs the rates dctcp-queue slows to on bmv2 (runner.FIT_RATES
# up to 100 Mb/s: what bmv2 carries on a given machine), at the defaults'
# RTT, K and buffer.
REFERENCES=(
    "fig1 100Mbps 500 20 120 30 5"
    "fig1-paper 1Gbps 100 20 466 10 1"
    "fig1-80M 80Mbps 500 20 120 30 5"
    "fig1-60M 60Mbps 500 20 120 30 5"
    "fig1-50M 50Mbps 500 20 120 30 5"
    "fig1-40M 40Mbps 500 20 120 30 5"
    "fig1-30M 30Mbps 500 20 120 30 5"
    "fig1-25M 25Mbps 500 20 120 30 5"
    "fig1-20M 20Mbps 500 20 120 30 5"
    "fig1-15M 15Mbps 500 20 120 30 5"
    "fig1-10M 10Mbps 500 20 120 30 5"
)
WANT=("$@")

for cfg in "${CONFIGS[@]}" "${REFERENCES[@]}"; do
    read -r name rate rtt k buffer duration warmup <<<"$cfg"
    if [ ${#WANT[@]} -eq 0 ]; then
        [[ "$name" == fig1* ]] && continue
    elif [[ ! " ${WANT[*]} " == *" $name "* ]] && \
         ! { [[ " ${WANT[*]} " == *" fig1-bmv2 "* ]] && [[ "$name" =~ ^fig1-[0-9]+M$ ]]; }; then
        continue
    fi
    "$BIN" --rate="$rate" --rtt="$rtt" --K="$k" --buffer="$buffer" --senders=2 \
        --duration="$duration" --warmup="$warmup" --out="$BUILD/results/$name.json"
done
