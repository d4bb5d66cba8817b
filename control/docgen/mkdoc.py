"""Turns the transcript run.sh prints into the markdown of docs/controller.md."""
import re, subprocess, os
import sys
t = open(sys.argv[1]).read()
blocks = re.split(r"(?m)^(?=\$ p4cc ctl )", t)
blocks = [b.rstrip() for b in blocks if b.startswith("$ p4cc ctl")]
HERE = os.path.dirname(os.path.abspath(__file__))
env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
help_out = subprocess.run([sys.executable, "-m", "p4cc_control", "--help"],
                          capture_output=True, text=True, env=env).stdout.rstrip()
titles = {
 "push": "push — install the pipeline",
 "info": "info — connection, pipeline, entities",
 "apply": "apply — a topology: routes, switch id, per-port K and knobs",
 "route": "route — forwarding entries from a topology",
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
out = ["### --help", "", "```", "$ p4cc ctl --help", help_out, "```", ""]
seen = set()
errors = []
in_errors = False
for b in blocks:
    first = b.splitlines()[0]
    if "# errors" in b:
        b = b.replace("\n# errors", "")
    if "[exit" in b or in_errors:
        if "[exit" in b:
            errors.append(b)
            continue
    words = first.split()[3:]
    cmd = next((w for w in words if not w.startswith("-")), "")
    title = titles.get(cmd, cmd)
    if title and cmd not in seen:
        out += [f"### {title}", ""]
    seen.add(cmd)
    out += ["```", b, "```", ""]
out += ["### Errors: one line, a distinct exit code", "",
        "The last one ran while another client (election id 10) was primary.", "", "```"]
for e in errors:
    out += [e, ""]
out[-1] = "```"
print("\n".join(out))
