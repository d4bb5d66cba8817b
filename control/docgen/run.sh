#!/bin/bash
# Regenerates the command transcript of docs/controller.md: runs every
# `p4cc ctl` command against a real embedded switch (p4cc-switch) on three
# veth pairs p4cctc-d*, with some traffic, and prints what a user sees.
# Needs root, the built switch and the compiled program.
#   bash control/docgen/run.sh > /tmp/transcript.txt
#   .venv/bin/python control/docgen/mkdoc.py /tmp/transcript.txt > /tmp/cli.md
set -u
cd "$(dirname "$0")/../.."
D=control/docgen
OUT=${OUT:-/tmp/p4cc-docgen}; mkdir -p $OUT
P4INFO=${P4CC_P4INFO:-p4src/build/cc_switch.p4info.bin}
JSON=${P4CC_BMV2_JSON:-p4src/build/cc_switch.json}
BIN=${BIN:-switch/target/release/p4cc-switch}
[ -x $BIN ] || BIN=switch/target/debug/p4cc-switch
for i in 1 2 3; do
  ip link del p4cctc-d${i}a 2>/dev/null
  ip link add p4cctc-d${i}a type veth peer name p4cctc-d${i}b
  ip link set p4cctc-d${i}a up; ip link set p4cctc-d${i}b up
  sysctl -qw net.ipv6.conf.p4cctc-d${i}a.disable_ipv6=1 net.ipv6.conf.p4cctc-d${i}b.disable_ipv6=1
done
$BIN -i 1@p4cctc-d1a -i 2@p4cctc-d2a -i 3@p4cctc-d3a --grpc-addr 127.0.0.1:19559 \
  --admin-addr 127.0.0.1:19560 --device-id 1 --log-level error > $OUT/switch.log 2>&1 &
SW=$!
sleep 1.5
export P4CC_ADDR=127.0.0.1:19559 P4CC_ADMIN_ADDR=127.0.0.1:19560 P4CC_TARGET=embedded
export P4CC_P4INFO=$P4INFO P4CC_BMV2_JSON=$JSON
export PYTHONPATH=$PWD/control
# A P4Info that differs from the switch's (as if the program had changed).
.venv/bin/python - "$P4INFO" "$OUT/other.p4info.bin" <<'PY'
import sys, p4cc_control
from p4cc_control.p4info import load_p4info
m = load_p4info(sys.argv[1]).msg
next(a for a in m.actions if a.preamble.alias == "set_threshold").params[0].bitwidth = 19
open(sys.argv[2], "wb").write(m.SerializeToString())
PY
c() {  # print the command as a user types it, then its output and exit code
  echo "\$ p4cc ctl $*"
  .venv/bin/python -m p4cc_control "$@" 2>&1
  rc=$?; [ $rc -ne 0 ] && echo "[exit $rc]"
  echo
}
c push
c info
c apply --topology $D/topo.yaml
c route --topology $D/topo.yaml
c set-k 2 20
c set-k 1,3 30000 --unit bytes
c set-loss 2 1%
c switch-id 7
c postcards --collector-port 3 --collector-ip 10.0.0.3 --collector-mac 02:00:0a:00:00:03 --switch-ip 10.0.0.254 --sample 10
c add-entry ipv4_lpm --match dst_addr=10.1.0.0/16 --action forward --param port=2 --param dst_mac=02:00:0a:00:00:02
c read-table ipv4_lpm
c del-entry ipv4_lpm --match dst_addr=10.1.0.0/16
c show
c --json show
c reset-counters
.venv/bin/python $D/traffic.py p4cctc-d1b 10.0.0.2 200 2000
.venv/bin/python $D/traffic.py p4cctc-d1b 10.9.9.9 3 100
sleep 0.5
c counters
c --json counters --port 2
c read-register postcard_sample_count
(.venv/bin/python $D/traffic.py p4cctc-d1b 10.0.0.3 3000 1000 &)
c watch --interval 1 --count 3 --port 1,3
sleep 2
c queue 3 --rate 4M --delay-us 500 --depth 100
c queue --show
c reset-counters --port 3
.venv/bin/python $D/traffic.py p4cctc-d1b 10.0.0.3 1000 1000
sleep 1
c counters --port 3
c queue --show
c set-k 1 --clear
echo "# errors"
c --addr 127.0.0.1:1 --timeout 1 counters
c set-k 9 20
c set-k 600 20
c set-k 2 5000000000
c set-loss 2 150%
c add-entry ipv4_lpm --match dst_addr=10.0.0.0/8 --action forward --param port=512 --param dst_mac=02:00:0a:00:00:02
c add-entry ipv4_lpm --match dst_addr=10.0.0.1/32 --action drop
c add-entry no_such_table --action drop
c add-entry ipv4_lpm --match dst_addr=10.0.0.0/8 --action forward --param port=1
c read-register postcard_count
c queue 2 --loss 2
c --p4info $OUT/other.p4info.bin counters
c --p4info $OUT/other.p4info.bin push
c --device-id 5 show
.venv/bin/python - <<'PY' &
import time, p4cc_control
from p4cc_control import Switch
sw = Switch.connect("127.0.0.1:19559", election_id=10)  # P4CC_P4INFO etc. from the env
time.sleep(4)
sw.close()
PY
PRIMARY=$!
sleep 1.5
c set-k 2 20
wait $PRIMARY
kill $SW; wait $SW 2>/dev/null
for i in 1 2 3; do ip link del p4cctc-d${i}a; done
