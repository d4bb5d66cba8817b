"""Rebuilds the command transcript section of docs/controller.md from the
output of run.sh (embedded target) and run_bmv2.sh (bmv2):

    bash control/docgen/run.sh > /tmp/t-embedded.txt
    bash control/docgen/run_bmv2.sh > /tmp/t-bmv2.txt
    .venv/bin/python control/docgen/mkdoc.py /tmp/t-embedded.txt /tmp/t-bmv2.txt docs/controller.md

The bmv2 transcript is optional (`mkdoc.py EMBEDDED.txt DOC`): without it
the doc says bmv2 was not captured. It replaces what lies between
<!-- transcript:begin --> and <!-- transcript:end -->.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BEGIN, END = "<!-- transcript:begin -->", "<!-- transcript:end -->"

TITLES = {
    "push": "push — install the pipeline",
    "info": "info — connection, pipeline, entities",
    "apply": "apply — a topology's or plan's switch configuration: switch id, routes, "
             "per-port K and link model, postcards",
    "route": "route — forwarding entries from a topology or plan",
    "set-k": "set-k — ECN threshold K per egress port",
    "set-loss": "set-loss — random loss per egress port (P4 `port_loss`)",
    "switch-id": "switch-id",
    "postcards": "postcards — sampled queue reports to a collector",
    "add-entry": "add-entry / read-table / del-entry — any table by names",
    "read-table": None, "del-entry": None,
    "show": "show — the lab state on the switch",
    "reset-counters": "reset-counters / counters — per-port counters",
    "counters": None,
    "read-register": "read-register",
    "watch": "watch — live per-port rates",
    "queue": "queue — target knobs (here the embedded target's admin API)",
}

EMBEDDED_INTRO = """Captured on this machine against the embedded target
(`switch/target/release/p4cc-switch`, three ports on veth pairs
`p4cctc-d1a..d3a`) running the committed `p4src/build/` program, by
`control/docgen/run.sh` (which sets `P4CC_ADDR=127.0.0.1:19559
P4CC_ADMIN_ADDR=127.0.0.1:19560 P4CC_TARGET=embedded`; `mkdoc.py` puts its
output here). Traffic came from a raw socket on the far end of port 1's veth
(`control/docgen/traffic.py`, 1042-byte ECT(0) UDP frames): 200 frames to h2
plus 3 to an unrouted address before `counters`; 1000 frames/s to h3 during
`watch`; 1000 frames at 1000/s into port 3 after it was slowed to 4 Mbit/s,
before the last `counters` (hence the CE marks: its queue passed K = 20
packets; frames that found the queue full were tail-dropped before egress, so
they are in neither `tx` nor the P4 drop counters but in the target's
`tail_drops`). The `loss` shown is the probability the switch really applies,
655/65536.

The topology file used by `apply` and `route` (`control/docgen/topo.yaml`):
"""

NO_BMV2 = """### The same CLI on bmv2

bmv2 (`simple_switch_grpc`) was not installed when this transcript was
captured, so it has no bmv2 part; `control/docgen/run_bmv2.sh` captures the
same commands against it (see "Target knobs" for what differs).
"""

BMV2_INTRO = """### The same CLI on bmv2

Captured against `simple_switch_grpc` (bmv2 1.15, three veth ports, Thrift on
29090) by `control/docgen/run_bmv2.sh`, with `P4CC_TARGET=bmv2`. Queue knobs
and `read-register` go through the Thrift runtime (bmv2's P4Runtime server
answers UNIMPLEMENTED for registers); `--rate` in bits/s becomes packets/s at
MTU-sized packets; delay is refused with the reason. `apply` first used
`control/docgen/topo-bmv2.yaml` (port 3: K 20, 8000 packets/s, 64 packets);
50 frames were sent to h2 before `counters`.
"""


def blocks(text):
    parts = re.split(r"(?m)^(?=\$ p4cc ctl )", text)
    return [b.replace("\n# errors", "").rstrip() for b in parts if b.startswith("$ p4cc ctl")]


def main(embedded_txt, bmv2_txt, doc_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    help_out = subprocess.run([sys.executable, "-m", "p4cc_control", "--help"],
                              capture_output=True, text=True, env=env).stdout.rstrip()
    topo = open(os.path.join(HERE, "topo.yaml")).read().rstrip()
    out = [EMBEDDED_INTRO, "```yaml", topo, "```", "",
           "### --help", "", "```", "$ p4cc ctl --help", help_out, "```", ""]
    seen, errors = set(), []
    for b in blocks(open(embedded_txt).read()):
        if "[exit" in b:
            errors.append(b)
            continue
        words = b.splitlines()[0].split()[3:]
        cmd = next((w for w in words if not w.startswith("-")), "")
        title = TITLES.get(cmd, cmd)
        if title and cmd not in seen:
            out += [f"### {title}", ""]
        seen.add(cmd)
        out += ["```", b, "```", ""]
    if bmv2_txt:
        out += [BMV2_INTRO, "```", "\n\n".join(blocks(open(bmv2_txt).read())), "```", ""]
    else:
        out += [NO_BMV2]
    out += ["### Errors: one line, a distinct exit code", "",
            "On the embedded target; the last one ran while another client (election "
            "id 10) was primary.", "", "```", "\n\n".join(errors), "```"]
    doc = open(doc_path).read()
    a, b = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    open(doc_path, "w").write(doc[:a] + "\n" + "\n".join(out) + "\n" + doc[b:])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 3 else None, sys.argv[-1])
