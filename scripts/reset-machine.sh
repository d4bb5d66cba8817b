#!/usr/bin/env bash
# Puts this machine in the state of a fresh boot as far as p4cc is concerned,
# and says what it reset: no p4cc struct_ops registered (the BPF DCTCP), no
# p4cc processes, network namespaces or links, no run state or locks left by
# an earlier run. It uninstalls nothing and leaves the machine's own tools
# alone. CI runs it before the README's test command (.ci/run).
set -uo pipefail
cd "$(dirname "$0")/.."
say() { printf '[reset] %s\n' "$*"; }
[ "$(id -u)" = 0 ] || { say "needs root"; exit 1; }

# Processes of p4cc runs and p4cc's own binaries (switches, agents, the
# bmv2 a run started, PTF runners).
pids=$(grep -lsa 'P4CC_RUN_ID=' /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -vx "$$" || true)
pids="$pids $(pgrep -f 'p4cc-switch|p4cc-host|p4cc-sim|ptf-tests/run.py' 2>/dev/null || true)"
pids=$(echo $pids | tr ' ' '\n' | grep -vx "$$" | sort -u | tr '\n' ' ')
if [ -n "${pids// /}" ]; then
  say "stopping p4cc processes: $pids"
  kill -TERM $pids 2>/dev/null; sleep 1; kill -KILL $pids 2>/dev/null
else
  say "no p4cc processes"
fi

# Network namespaces and links of every p4cc naming scheme (runs, PTF,
# the bmv2 differential test, docs generators).
ns=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^p4cc' || true)
for n in $ns; do ip netns del "$n" 2>/dev/null; done
say "network namespaces removed: $(echo ${ns:-none})"
links=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^p4cc' || true)
for l in $links; do ip link del "$l" 2>/dev/null; done
say "links removed: $(echo ${links:-none})"

# The BPF DCTCP lasts until reboot: a fresh machine has none.
if grep -qw p4cc_dctcp /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null; then
  if command -v bpftool >/dev/null; then
    bpftool struct_ops unregister name p4cc_dctcp >/dev/null 2>&1
    for _ in $(seq 50); do
      grep -qw p4cc_dctcp /proc/sys/net/ipv4/tcp_available_congestion_control || break
      sleep 0.1
    done
  fi
  if grep -qw p4cc_dctcp /proc/sys/net/ipv4/tcp_available_congestion_control; then
    say "p4cc_dctcp is still registered (sockets still use it?)"; exit 1
  fi
  say "struct_ops p4cc_dctcp unregistered"
else
  say "no p4cc struct_ops registered"
fi

# Run state, logs and locks of earlier runs.
rm -rf /run/p4cc /tmp/p4cc /run/lock/p4cc-*.lock
say "run state removed (/run/p4cc, /tmp/p4cc, /run/lock/p4cc-*.lock)"
