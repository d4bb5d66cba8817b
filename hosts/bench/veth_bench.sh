#!/usr/bin/env bash
# Benchmark of the p4cc host datapaths over two network namespaces joined
# by a veth pair (no switch). Prints figures; it is not a pass/fail test.
#
#   sudo hosts/bench/veth_bench.sh            # all parts, 5 s each
#   DUR=10 PARTS="udp pacing" hosts/bench/veth_bench.sh
#
# Parts: udp (max throughput, one user-space sender; default scheduling,
# then --rt-prio 10 on both ends), pacing (100 Mb/s fixed-rate:
# inter-packet gap accuracy; default, then --rt-prio 10 --spin-us 50), tcp
# (kernel cubic), dctcp (the BPF DCTCP registered through struct_ops).
# Figures depend on what else runs on the machine: the load average is
# printed after each part.
# Creates namespaces p4cctest-a (10.99.0.1) and p4cctest-b (10.99.0.2) and
# deletes them on exit, Ctrl-C included. Needs root, iproute2, ethtool;
# the dctcp part also needs clang, bpftool, libbpf-dev and kernel BTF.
set -euo pipefail

HOSTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DUR="${DUR:-5}"
PARTS="${PARTS:-udp pacing tcp dctcp}"
UDP_CC="${UDP_CC:-cubic}"
PACE_MBPS="${PACE_MBPS:-100}"
NS_A=p4cctest-a
NS_B=p4cctest-b
IF_A=p4ct-a
IF_B=p4ct-b
IP_A=10.99.0.1
IP_B=10.99.0.2
WORK="$(mktemp -d /tmp/p4cc-veth-bench.XXXXXX)"
PIDS=()

log() { printf '%s\n' "$*" >&2; }

cleanup() {
    set +e
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] && kill -TERM "$p" 2>/dev/null
    done
    sleep 0.3
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] && kill -KILL "$p" 2>/dev/null
    done
    ip netns del "$NS_A" 2>/dev/null
    ip netns del "$NS_B" 2>/dev/null
    if [ -n "${KEEP:-}" ]; then log "outputs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

[ "$(id -u)" = 0 ] || { log "must run as root (network namespaces)"; exit 1; }
command -v ethtool >/dev/null || { log "ethtool missing (apt-get install ethtool)"; exit 1; }

log "== building p4cc-host (release)"
(cd "$HOSTS_DIR" && nice -n 5 cargo build --release -q -p p4cc-host)
BIN="${CARGO_TARGET_DIR:-$HOSTS_DIR/target}/release/p4cc-host"

log "== namespaces $NS_A ($IP_A) <-veth-> $NS_B ($IP_B)"
ip netns del "$NS_A" 2>/dev/null || true
ip netns del "$NS_B" 2>/dev/null || true
ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$NS_B"
for pair in "$NS_A $IF_A $IP_A" "$NS_B $IF_B $IP_B"; do
    set -- $pair
    ip -n "$1" link set lo up
    ip -n "$1" link set "$2" mtu 1500 up
    ip -n "$1" addr add "$3/24" dev "$2"
    ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 || true
    ip netns exec "$1" sysctl -qw net.ipv4.tcp_ecn=1
done
ip netns exec "$NS_A" ping -c1 -W1 "$IP_B" >/dev/null

A() { ip netns exec "$NS_A" "$@"; }
B() { ip netns exec "$NS_B" "$@"; }

start_bg() { # start_bg NAME NS cmd... ; sets LAST_PID (the program itself, no subshell)
    local name="$1" ns="$2"; shift 2
    ip netns exec "$ns" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    LAST_PID=$!
    PIDS+=("$LAST_PID")
    sleep 0.3
}
run_fg() { # runs a command in the background and waits, so a signal reaches the traps at once
    "$@" &
    local p=$!
    PIDS+=("$p")
    wait "$p" || true
}
stop_bg() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

json() { # json FILE python-expr-on-d
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

cpu_note() { log "   (load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores)"; }

for part in $PARTS; do
case "$part" in
udp)
    # twice: default scheduling, then sender and receiver at SCHED_FIFO
    # (this 2-core machine is shared with other jobs; see the load average)
    for rt in "" "--rt-prio 10"; do
    log "== udp: one user-space sender, --cc $UDP_CC, ${DUR}s, 1336-byte payloads (1420-byte IP packets), options: ${rt:-(defaults)} ${UDP_OPTS:-}"
    rm -rf "$WORK/udp" "$WORK/udp-recv"
    start_bg recv-udp "$NS_B" "$BIN" recv --listen "$IP_B:7360" --out "$WORK/udp-recv" $rt ${RECV_OPTS:-}
    R=$LAST_PID
    run_fg ip netns exec "$NS_A" "$BIN" send --dst "$IP_B" --duration-s "$DUR" --cc "$UDP_CC" --out "$WORK/udp" --rtt-every 100 --run-s $((DUR + 20)) $rt ${UDP_OPTS:-} >/dev/null
    stop_bg "$R"
    S="$WORK/udp/sender_summary.json"
    echo "udp[$UDP_CC ${rt:-defaults}] goodput_mbps=$(json "$S" "round(d['goodput_mbps'],1)") wire_mbps=$(json "$S" "round(d['goodput_mbps']*1420/1336,1)") pkts=$(json "$S" "d['pkts_sent']") retx=$(json "$S" "d['retx_pkts']") status=$(tail -n1 "$WORK/udp/flows.csv" | cut -d, -f13) receiver_status=$(tail -n1 "$WORK/udp-recv/recv_flows.csv" | cut -d, -f6) receiver_bytes=$(tail -n1 "$WORK/udp-recv/recv_flows.csv" | cut -d, -f5) acked_bytes=$(tail -n1 "$WORK/udp/flows.csv" | cut -d, -f12)"
    cpu_note
    done
    ;;
pacing)
    # twice: default scheduling, then SCHED_FIFO + a longer spin (what
    # precise pacing on a loaded 2-core machine needs); PACE_OPTS overrides
    for popts in "${PACE_OPTS:-}" "${PACE_OPTS_RT:---rt-prio 10 --spin-us 50}"; do
    log "== pacing: fixed-rate $PACE_MBPS Mb/s, ${DUR}s, options: ${popts:-(defaults)}"
    start_bg recv-pace "$NS_B" "$BIN" recv --listen "$IP_B:7360" --out "$WORK/pace-recv"
    R=$LAST_PID
    rm -rf "$WORK/pace"
    run_fg ip netns exec "$NS_A" "$BIN" send --dst "$IP_B" --duration-s "$DUR" --cc fixed-rate --cc-param "rate_mbps=$PACE_MBPS" --out "$WORK/pace" --rtt-every 100 --run-s $((DUR + 20)) $popts >/dev/null
    stop_bg "$R"
    S="$WORK/pace/sender_summary.json"
    echo "pacing[${popts:-defaults}] target_gap_us=$(json "$S" "round(d['pacing']['mean_target_ns']/1e3,2)") mean_gap_us=$(json "$S" "round(d['pacing']['mean_achieved_ns']/1e3,2)") mean_err_pct=$(json "$S" "round(d['pacing']['mean_error_pct'],3)") abs_err_pct_p50/p90/p99=$(json "$S" "'%.2f/%.2f/%.2f' % (d['pacing']['abs_err_p50_pct'], d['pacing']['abs_err_p90_pct'], d['pacing']['abs_err_p99_pct'])") gaps=$(json "$S" "d['pacing']['samples']")"
    echo "pacing[${popts:-defaults}] achieved_wire_mbps=$(json "$S" "round(d['goodput_mbps']*1420/1336,2)") goodput_mbps=$(json "$S" "round(d['goodput_mbps'],2)") gap_us_p1/p50/p99=$(json "$S" "'%.1f/%.1f/%.1f' % (d['pacing']['achieved_p1_ns']/1e3, d['pacing']['achieved_p50_ns']/1e3, d['pacing']['achieved_p99_ns']/1e3)")"
    cpu_note
    done
    ;;
tcp)
    log "== kernel tcp cubic, ${DUR}s"
    start_bg recv-tcp "$NS_B" "$BIN" tcp-recv --listen "$IP_B:7361" --out "$WORK/tcp-recv"
    R=$LAST_PID
    run_fg ip netns exec "$NS_A" "$BIN" tcp-send --dst "$IP_B" --duration-s "$DUR" --cc cubic --out "$WORK/tcp" --run-s $((DUR + 20)) >/dev/null
    stop_bg "$R"
    S="$WORK/tcp/sender_summary.json"
    echo "tcp cubic goodput_mbps=$(json "$S" "round(d['goodput_mbps'],1)") status=$(tail -n1 "$WORK/tcp/flows.csv" | cut -d, -f13) ecn=$(tail -n1 "$WORK/tcp/flows.csv" | cut -d, -f24) receiver=$(tail -n1 "$WORK/tcp-recv/recv_flows.csv" | cut -d, -f6)"
    cpu_note
    ;;
dctcp)
    log "== kernel tcp with the BPF DCTCP, ${DUR}s"
    "$BIN" bpf-dctcp load
    echo "$(sysctl net.ipv4.tcp_available_congestion_control)"
    start_bg recv-dctcp "$NS_B" "$BIN" tcp-recv --listen "$IP_B:7361" --cc dctcp --out "$WORK/dctcp-recv"
    R=$LAST_PID
    ip netns exec "$NS_A" "$BIN" tcp-send --dst "$IP_B" --duration-s "$DUR" --cc dctcp --out "$WORK/dctcp" --run-s $((DUR + 20)) >/dev/null &
    SND=$!
    PIDS+=("$SND")
    sleep 1
    echo "ss during the flow: $(A ss -tin dst "$IP_B" | grep -o 'p4cc_dctcp\|cwnd:[0-9]*\|rtt:[0-9./]*' | sort -u | tr '\n' ' ')"
    wait "$SND" || true
    stop_bg "$R"
    S="$WORK/dctcp/sender_summary.json"
    echo "tcp dctcp cc=$(json "$S" "d['cc']") goodput_mbps=$(json "$S" "round(d['goodput_mbps'],1)") status=$(tail -n1 "$WORK/dctcp/flows.csv" | cut -d, -f13) ecn=$(tail -n1 "$WORK/dctcp/flows.csv" | cut -d, -f24) receiver=$(tail -n1 "$WORK/dctcp-recv/recv_flows.csv" | cut -d, -f6)"
    cpu_note
    ;;
*) log "unknown part '$part'"; exit 2 ;;
esac
done
