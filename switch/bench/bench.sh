#!/usr/bin/env bash
# Benchmarks of the p4cc embedded target. Prints figures; asserts nothing.
#
#   (a) the pipeline alone, in process (cc_switch.json, forwarding entries;
#       a 2 s round per -n round, and their median)
#   (b) end to end: host ns -> p4cc-switch -> host ns (UDP packets/s)
#   (c) the same path through a trivial AF_PACKET forwarder (physical limit)
#   (d) the same path through bmv2 simple_switch_grpc, when it is installed
#   (e) CPU time per forwarded packet of (b) and (c) at a fixed, moderate
#       rate (-e PPS, default 40000): what each costs, independent of how
#       the shared cores are scheduled at saturation
#   and the shaping accuracy of p4cc-switch (a 20 Mbit/s port under overload)
#
# usage: sudo [P4CC_PYTHON=/path/to/repo/.venv/bin/python] switch/bench/bench.sh
#            [-t SECONDS] [-n ROUNDS] [-s "PAYLOAD..."] [-r PPS] [-e PPS] [--no-pin]
#            [--json FILE --p4info FILE.bin] [--only a,b,c,d,e,r] [--udp]
# P4CC_PYTHON: a Python with the p4runtime package (the build reads the
# P4Runtime protobufs from it). Unset, the script takes the project's own:
# REPO/.venv/bin/python, else that of the main checkout of a git worktree.
# On 2+ cores the forwarder runs on CPU 1 and the hosts on CPU 0, so each
# forwarder has one core to itself (--no-pin: wherever the scheduler puts
# them; with three busy parties on two cores its placement, not the
# forwarder, then moved the rate by up to a third from round to round).
# bmv2 is never pinned: its threads may use both cores, as it runs best.
# Endpoints: frames written to h1's interface with an AF_PACKET socket and
# counted and dropped by an XDP program on h2's (raw_pkt), so the hosts'
# network stacks, which would run on the same 2 cores, stay out of the
# figures; --udp: UDP sockets on both hosts instead (udp_pkt), the kernel's
# whole socket path included.
# Defaults: 4 s runs, 3 rounds (b, c, d interleaved; the best of each is
# reported, the machine being shared), UDP payloads of 64 and 1400 bytes,
# the sender as fast as it goes. Needs root (network namespaces), iproute2
# and ethtool. Namespaces are named p4ccbench-*, addresses are 10.98.x.y
# inside them only; everything is removed on exit, Ctrl-C included.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# bmv2: the simple_switch_grpc on PATH, or the one named by SIMPLE_SWITCH_GRPC.
SSG=${SIMPLE_SWITCH_GRPC:-simple_switch_grpc}
SWITCH_DIR=$(cd "$HERE/.." && pwd)
REPO=$(cd "$SWITCH_DIR/.." && pwd)
SECS=4
ROUNDS=3
SIZES="64 1400"
PPS=0
PIN=$([ "$(nproc)" -ge 2 ] && echo 1 || echo 0)
EPPS=40000
ONLY=a,b,c,d,e,r
ENDPOINTS=raw
JSON=""
P4INFO=""
while [ $# -gt 0 ]; do
    case "$1" in
        -t) SECS=$2; shift 2 ;;
        -n) ROUNDS=$2; shift 2 ;;
        -s) SIZES=$2; shift 2 ;;
        -r) PPS=$2; shift 2 ;;
        --pin) PIN=1; shift ;;
        --no-pin) PIN=0; shift ;;
        -e) EPPS=$2; shift 2 ;;
        --json) JSON=$2; shift 2 ;;
        --p4info) P4INFO=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --udp) ENDPOINTS=udp; shift ;;
        -h|--help) sed -n 2,33p "$0"; exit 0 ;;
        *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
for c in "$REPO/p4src/build/cc_switch.json" /tmp/cc/cc_switch.json; do
    if [ -z "$JSON" ] && [ -f "$c" ]; then JSON=$c; fi
done
if [ -z "$P4INFO" ] && [ -n "$JSON" ] && [ -f "${JSON%.json}.p4info.bin" ]; then P4INFO=${JSON%.json}.p4info.bin; fi
[ "$(id -u)" = 0 ] || { echo "bench.sh: needs root (network namespaces)" >&2; exit 1; }
command -v ethtool >/dev/null || { echo "bench.sh: needs ethtool (apt-get install ethtool)" >&2; exit 1; }

# sudo drops the caller's environment and PATH: find the project's Python
# (with p4runtime) rather than the system's, which has none.
has_p4runtime() {
    [ -x "$1" ] && PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python "$1" -c 'import p4.v1.p4runtime_pb2' 2>/dev/null
}
if [ -z "${P4CC_PYTHON:-}" ]; then
    MAIN=$(cd "$REPO" && git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    for py in "$REPO/.venv/bin/python" "${MAIN:+${MAIN%/.git}/.venv/bin/python}"; do
        if [ -n "$py" ] && has_p4runtime "$py"; then P4CC_PYTHON=$py; break; fi
    done
fi
if [ -z "${P4CC_PYTHON:-}" ]; then
    echo "bench.sh: no Python with p4runtime in $REPO/.venv (make setup); set P4CC_PYTHON=/path/to/repo/.venv/bin/python" >&2
    exit 1
fi
export P4CC_PYTHON

echo "== building (release)"
(cd "$SWITCH_DIR" && nice -n 5 cargo build --release -q -p p4cc-switch -p p4cc-bench --bins --examples)
BIN=$SWITCH_DIR/target/release
EX=$BIN/examples

H1=p4ccbench-h1; H2=p4ccbench-h2; SW=p4ccbench-sw
MAC_H1=02:98:00:00:01:01; MAC_H2=02:98:00:00:02:01
PIDS=()
RPID=""
cleanup() {
    set +e
    [ -n "$RPID" ] && kill "$RPID" 2>/dev/null
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
    sleep 0.2
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && { kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; }; done
    PIDS=()
    for n in $H1 $H2 $SW; do ip netns del $n 2>/dev/null; done
    rm -f /tmp/p4ccbench-recv.$$
}
trap cleanup EXIT
trap 'exit 130' INT TERM

setup_net() {
    cleanup
    for n in $H1 $H2 $SW; do ip netns add $n; ip -n $n link set lo up; done
    ip link add p4ccb-h1 netns $H1 type veth peer name p4ccb-s1 netns $SW
    ip link add p4ccb-h2 netns $H2 type veth peer name p4ccb-s2 netns $SW
    ip -n $H1 link set p4ccb-h1 address $MAC_H1
    ip -n $H2 link set p4ccb-h2 address $MAC_H2
    local d
    for d in "$H1 p4ccb-h1" "$H2 p4ccb-h2" "$SW p4ccb-s1" "$SW p4ccb-s2"; do
        set -- $d
        ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
        ip -n "$1" link set "$2" up
    done
    ip -n $H1 addr add 10.98.1.1/24 dev p4ccb-h1
    ip -n $H2 addr add 10.98.2.1/24 dev p4ccb-h2
    ip -n $H1 route add default via 10.98.1.254
    ip -n $H2 route add default via 10.98.2.254
    # The gateway's MAC is the far host's: frames are right for a forwarder
    # that rewrites nothing and for the P4 program alike.
    ip -n $H1 neigh replace 10.98.1.254 lladdr $MAC_H2 dev p4ccb-h1 nud permanent
    ip -n $H2 neigh replace 10.98.2.254 lladdr $MAC_H1 dev p4ccb-h2 nud permanent
}

# traffic PAYLOAD: blast h1 -> h2 for SECS; RESULT = packets/s received.
RESULT=0
OFFERED=0
traffic() {
    local sent
    if [ "$ENDPOINTS" = raw ]; then
        ip netns exec $H2 $HOST_CPU "$EX/raw_pkt" sink p4ccb-h2 $((SECS + 2)) > /tmp/p4ccbench-recv.$$ &
        RPID=$!
        sleep 0.3
        sent=$(ip netns exec $H1 $HOST_CPU "$EX/raw_pkt" send p4ccb-h1 $MAC_H2 10.98.1.1 10.98.2.1:5001 "$SECS" "$1" "$PPS")
    else
        ip netns exec $H2 $HOST_CPU "$EX/udp_pkt" recv 5001 $((SECS + 2)) > /tmp/p4ccbench-recv.$$ &
        RPID=$!
        sleep 0.3
        sent=$(ip netns exec $H1 $HOST_CPU "$EX/udp_pkt" send 10.98.2.1:5001 "$SECS" "$1" "$PPS")
    fi
    local rc=0
    wait $RPID || rc=$?
    RPID=""
    if [ "$ENDPOINTS" = raw ] && [ "$rc" != 0 ]; then
        echo "bench.sh: the XDP sink on h2 failed (above); --udp measures with UDP sockets instead" >&2
        exit 1
    fi
    OFFERED=$(echo "$sent" | sed -n 's/.*= \([0-9]*\) pps.*/\1/p')
    RESULT=$(sed -n 's/.*= \([0-9]*\) pps/\1/p' /tmp/p4ccbench-recv.$$)
    RESULT=${RESULT:-0}
}

FWD_CPU=""; HOST_CPU=""
if [ "$PIN" = 1 ]; then FWD_CPU="taskset -c 1"; HOST_CPU="taskset -c 0"; fi
start_bg() { # start_bg CMD... (in the switch namespace, on the forwarder's CPU)
    ip netns exec $SW $FWD_CPU "$@" &
    PIDS+=($!)
}
start_bg_unpinned() { # bmv2: its threads may use every core, its best case
    FWD_CPU="" start_bg "$@"
}

setup_p4rt() {
    ip netns exec $SW "$EX/p4rt_setup" 127.0.0.1:9559 "$JSON" "$P4INFO" \
        10.98.2.0/24=2,$MAC_H2 10.98.1.0/24=1,$MAC_H1 >/dev/null
}

# sorted_median "V1 V2 ..." FORMAT: the values sorted, then their median,
# each printed with FORMAT (a printf format).
sorted_median() {
    echo "$1" | awk -v fmt="$2" '{
        n = NF; for (i = 1; i <= n; i++) r[i] = $i
        for (i = 2; i <= n; i++) { v = r[i]; for (j = i - 1; j >= 1 && r[j] > v; j--) r[j + 1] = r[j]; r[j + 1] = v }
        out = ""; for (i = 1; i <= n; i++) out = out sprintf(fmt " ", r[i])
        med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
        printf "%s-> median " fmt, out, med }'
}

# round_ratios "B1 B2 ..." "C1 C2 ..." pct|times: each round's B/C, sorted,
# and their median. b and c run back to back in a round, so a round's
# ratio compares like with like; the median of them is steadier than best
# against best.
round_ratios() {
    local scale=1 fmt="%.2fx"
    if [ "$3" = pct ]; then scale=100; fmt="%.0f%%"; fi
    sorted_median "$(echo "$1" "|" "$2" | awk -v k=$scale '{
        n = 0; for (i = 1; $i != "|"; i++) n++
        for (i = 1; i <= n; i++) printf "%s ", ($(n + 1 + i) > 0) ? k * $i / $(n + 1 + i) : 0 }')" "$fmt"
}

# cpu_ticks PID: user + system clock ticks of a process (all its threads).
cpu_ticks() { awk '{print $14 + $15}' /proc/"$1"/stat 2>/dev/null || echo 0; }

# run KIND PAYLOAD: one measurement through forwarder KIND (b, c or d);
# TICKS = CPU ticks the forwarder used during the traffic.
TICKS=0
run() {
    setup_net
    case $1 in
        c) start_bg "$EX/afpacket_fwd" p4ccb-s1 p4ccb-s2 2>/dev/null; sleep 0.5 ;;
        b) start_bg "$BIN/p4cc-switch" -i 1@p4ccb-s1 -i 2@p4ccb-s2 --log-level error; setup_p4rt ;;
        d) start_bg_unpinned "$SSG" --device-id 1 --no-p4 -i 1@p4ccb-s1 -i 2@p4ccb-s2 --log-level off -- \
               --grpc-server-addr 127.0.0.1:9559 >/dev/null 2>&1; sleep 1; setup_p4rt ;;
    esac
    local t0
    t0=$(cpu_ticks "${PIDS[0]}")
    traffic "$2"
    TICKS=$(( $(cpu_ticks "${PIDS[0]}") - t0 ))
    cleanup
}

declare -A BEST ALL NAME
NAME[b]="p4cc-switch"; NAME[c]="trivial AF_PACKET forwarder"; NAME[d]="bmv2 simple_switch_grpc"
KINDS=""
[[ $ONLY == *c* ]] && KINDS="$KINDS c"
if [[ $ONLY == *b* ]]; then
    if [ -n "$JSON" ] && [ -n "$P4INFO" ]; then KINDS="$KINDS b"
    else echo "(b) skipped: needs cc_switch.json and cc_switch.p4info.bin (--json/--p4info)"; fi
fi
if [[ $ONLY == *d* ]]; then
    if command -v "$SSG" >/dev/null && [ -n "$JSON" ] && [ -n "$P4INFO" ]; then KINDS="$KINDS d"
    else echo "(d) skipped: simple_switch_grpc is not on PATH (or no JSON/P4Info)"; fi
fi

CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
echo "== CPU: ${CPU_MODEL:-unknown} ($(uname -m)), kernel $(uname -r)"
echo "== p4cc benchmarks on $(nproc) cores: ${SECS}s runs, best of $ROUNDS rounds, UDP payloads: $SIZES bytes, sender rate: $([ "$PPS" = 0 ] && echo 'as fast as it goes' || echo "$PPS pps")"
echo "== placement: $([ "$PIN" = 1 ] && echo 'forwarder on CPU 1, hosts on CPU 0; bmv2 unpinned' || echo 'unpinned')"
echo "== endpoints: $([ "$ENDPOINTS" = raw ] && echo 'AF_PACKET sender on h1, XDP sink on h2 (raw_pkt)' || echo 'UDP sockets on h1 and h2 (udp_pkt)')"
if [[ $ONLY == *a* ]]; then
    echo "-- (a) pipeline alone, in process"
    if [ -n "$JSON" ]; then
        # A round per ROUNDS, 2 s each, and their median: one round moved
        # by up to a third with what else the shared machine was doing.
        for s in $SIZES; do
            US=""
            for r in $(seq 1 "$ROUNDS"); do
                line=$("$EX/pipeline_pps" "$JSON" 2 $((s + 42)))
                echo "$line" | sed 's/^/   /'
                US="$US $(echo "$line" | sed -n 's/.*(\([0-9.]*\) µs\/packet.*/\1/p')"
            done
            echo "   $((s + 42))-byte frames, µs/packet per round: $(sorted_median "$US" "%.3f")"
        done
    else
        echo "   skipped: no cc_switch.json (compile p4src/v1model/cc_switch.p4 or pass --json)"
    fi
fi

if [ -n "$KINDS" ]; then
    echo "-- (b, c, d) end to end h1 -> forwarder -> h2, packets/s received"
    for s in $SIZES; do
        for r in $(seq 1 "$ROUNDS"); do
            for k in $KINDS; do
                run "$k" "$s"
                printf '   payload %4s B  round %s  %-28s %7s pps (offered %s)\n' "$s" "$r" "${NAME[$k]}" "$RESULT" "$OFFERED"
                ALL[$k,$s]="${ALL[$k,$s]:-} $RESULT"
                if [ "$RESULT" -gt "${BEST[$k,$s]:-0}" ]; then BEST[$k,$s]=$RESULT; fi
            done
        done
    done
fi

if [[ $ONLY == *e* ]]; then
    echo "-- (e) CPU per forwarded packet at $EPPS pps, 64-byte payload"
    HZ=$(getconf CLK_TCK)
    SAVE=$PPS; PPS=$EPPS
    declare -A CPU ROUND_CPU
    for r in $(seq 1 "$ROUNDS"); do
        for k in $KINDS; do
            [ "$k" = d ] && continue
            run "$k" 64
            us=$(awk "BEGIN{ if ($RESULT > 0) printf \"%.2f\", $TICKS / $HZ * 1e6 / ($RESULT * $SECS); else print 0 }")
            printf '   round %s  %-28s %7s pps  %5s µs CPU/packet\n' "$r" "${NAME[$k]}" "$RESULT" "$us"
            if [ -z "${CPU[$k]:-}" ] || awk "BEGIN{exit !($us < ${CPU[$k]})}"; then CPU[$k]=$us; fi
            ROUND_CPU[$k]="${ROUND_CPU[$k]:-} $us"
        done
    done
    PPS=$SAVE
    if [ -n "${CPU[b]:-}" ] && [ -n "${CPU[c]:-}" ]; then
        echo "   best: trivial ${CPU[c]} µs, p4cc-switch ${CPU[b]} µs per packet -> capacity ratio $(awk "BEGIN{printf \"%.0f%%\", 100*${CPU[c]}/${CPU[b]}}")"
        echo "   p4cc-switch / trivial, per round: $(round_ratios "${ROUND_CPU[b]}" "${ROUND_CPU[c]}" times)"
    fi
fi

if [[ $ONLY == *r* ]] && [ -n "$JSON" ] && [ -n "$P4INFO" ]; then
    echo "-- shaping: p4cc-switch port 2 at 20 Mbit/s, depth 64, sender as fast as it goes"
    setup_net
    start_bg "$BIN/p4cc-switch" -i 1@p4ccb-s1 -i 2@p4ccb-s2 --log-level error --rate 2=20M
    setup_p4rt
    SAVE=$PPS; PPS=0
    traffic 64
    PPS=$SAVE
    echo "   $RESULT pps of 106-byte frames = $(awk "BEGIN{printf \"%.2f\", $RESULT*106*8/1e6}") Mbit/s (line rate 20; offered $OFFERED pps)"
    echo "   port 2: $(ip netns exec $SW curl -s 127.0.0.1:9560/ports/2)"
    cleanup
fi

if [ -n "$KINDS" ]; then
    echo "== summary: best packets/s forwarded h1 -> h2 (all rounds)"
    for s in $SIZES; do
        for k in $KINDS; do
            printf '   payload %4s B  %-28s %7s pps   (%s)\n' "$s" "${NAME[$k]}" "${BEST[$k,$s]:-0}" "${ALL[$k,$s]# }"
        done
        if [ -n "${BEST[b,$s]:-}" ] && [ "${BEST[c,$s]:-0}" -gt 0 ]; then
            echo "   payload $s B: p4cc-switch / trivial forwarder = $(awk "BEGIN{printf \"%.0f%%\", 100*${BEST[b,$s]}/${BEST[c,$s]}}")"
            echo "   payload $s B: per-round ratios $(round_ratios "${ALL[b,$s]}" "${ALL[c,$s]}" pct)"
        fi
        if [ -n "${BEST[b,$s]:-}" ] && [ "${BEST[d,$s]:-0}" -gt 0 ]; then
            echo "   payload $s B: p4cc-switch / bmv2 = $(awk "BEGIN{printf \"%.1fx\", ${BEST[b,$s]}/${BEST[d,$s]}}")"
        fi
    done
fi
