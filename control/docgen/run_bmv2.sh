#!/bin/bash
# The bmv2-specific part of docs/controller.md's transcript: the same CLI
# against simple_switch_grpc (queue knobs and registers go through its
# Thrift runtime). Needs root, simple_switch_grpc/simple_switch_CLI and the
# compiled program.   bash control/docgen/run_bmv2.sh > /tmp/transcript-bmv2.txt
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/p4cc-docgen}; mkdir -p $OUT
for i in 1 2 3; do
  ip link del p4cctc-e${i}a 2>/dev/null
  ip link add p4cctc-e${i}a type veth peer name p4cctc-e${i}b
  ip link set p4cctc-e${i}a up; ip link set p4cctc-e${i}b up
  sysctl -qw net.ipv6.conf.p4cctc-e${i}a.disable_ipv6=1 net.ipv6.conf.p4cctc-e${i}b.disable_ipv6=1
done
simple_switch_grpc --device-id 1 -i 1@p4cctc-e1a -i 2@p4cctc-e2a -i 3@p4cctc-e3a \
  --thrift-port 29090 --no-p4 -- --grpc-server-addr 127.0.0.1:29559 > $OUT/bmv2.log 2>&1 &
SW=$!
sleep 2
export P4CC_ADDR=127.0.0.1:29559 P4CC_THRIFT_PORT=29090 P4CC_TARGET=bmv2
export PYTHONPATH=$PWD/control
c() {
  echo "\$ p4cc ctl $*"
  .venv/bin/python -m p4cc_control "$@" 2>&1
  rc=$?; [ $rc -ne 0 ] && echo "[exit $rc]"
  echo
}
c push
c info
c apply --topology control/docgen/topo-bmv2.yaml
c set-k 3 30000 --unit bytes
.venv/bin/python control/docgen/traffic.py p4cctc-e1b 10.0.0.2 50 500
sleep 0.5
c counters
c read-register postcard_sample_count
c queue 2 --rate-pps 5000 --depth 64
c queue 2 --rate 12M
c set-k 7 20
c queue 2 --delay-us 100
c apply --topology control/docgen/topo.yaml
kill $SW; wait $SW 2>/dev/null
for i in 1 2 3; do ip link del p4cctc-e${i}a; done
