//! The simulated network and its discrete-event clock.
//!
//! Time is nanoseconds from the start of the arm's traffic. Events with the
//! same time run in the order they were scheduled, so a plan and its seed
//! always give the same run. A switch is advanced exactly at its next
//! departure or release; a host's NIC serialises at its link's rate (the
//! link's propagation delay is the switch's, as in the namespace lab:
//! delays are applied where a switch sends); agents run when a datagram
//! arrives or when their pacers and timers ask.

use crate::agent::{self, Agent, Outgoing};
use crate::frame::{self, Mac};
use crate::plan::{Arm, PerEnd, Plan};
use crate::switch::SimSwitch;
use crate::SimError;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};

/// Unix time of virtual time 0 in the logs: fixed, so results are
/// byte-identical run to run (2023-11-14T22:13:20Z).
pub const UNIX_BASE_NS: u64 = 1_700_000_000_000_000_000;
/// A host's transmit queue (Linux's default txqueuelen): beyond it the
/// NIC drops, as a full qdisc would.
const NIC_QUEUE_PKTS: usize = 1000;
/// Frame buffers kept for reuse (a few MB at most).
const FRAME_POOL_MAX: usize = 4096;

#[derive(Debug, Clone, Copy)]
enum Peer {
    Host(usize),
    Switch(usize, u32),
    Nothing,
}

enum Ev {
    SwitchWake(usize),
    SwitchRx(usize, u32, Vec<u8>),
    HostRx(usize, Vec<u8>),
    NicDone(usize),
    AgentWake(usize, usize),
}

/// An event for a later time: a wake-up or a NIC's frame done, never a
/// frame (a frame is handed on at the time it arrives, through
/// `World::due_now`). It travels in the heap's entry itself, packed into
/// one word (`code`), so scheduling it stores 24 bytes and nothing else.
/// (The slab of events the entries once pointed into wrote each event a
/// second time, where a CPU profile put most of the scheduling's time.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timed {
    SwitchWake(usize),
    NicDone(usize),
    AgentWake(usize, usize),
}

/// Indices `Timed::code` packs: 30 bits each (checked when the world is built).
const INDEX_BITS: u32 = 30;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;

impl Timed {
    fn code(self) -> u64 {
        let (kind, a, b) = match self {
            Timed::SwitchWake(s) => (0u64, s, 0),
            Timed::NicDone(h) => (1, h, 0),
            Timed::AgentWake(h, a) => (2, h, a),
        };
        kind << (2 * INDEX_BITS) | (a as u64) << INDEX_BITS | b as u64
    }

    fn decode(code: u64) -> Timed {
        let (a, b) = ((code >> INDEX_BITS & INDEX_MASK) as usize, (code & INDEX_MASK) as usize);
        match code >> (2 * INDEX_BITS) {
            0 => Timed::SwitchWake(a),
            1 => Timed::NicDone(a),
            _ => Timed::AgentWake(a, b),
        }
    }

    fn event(self) -> Ev {
        match self {
            Timed::SwitchWake(s) => Ev::SwitchWake(s),
            Timed::NicDone(h) => Ev::NicDone(h),
            Timed::AgentWake(h, a) => Ev::AgentWake(h, a),
        }
    }
}

/// A scheduled event in the heap: its time, its order among events of the
/// same time, and the event (`Timed::code`).
struct Entry {
    t: u64,
    seq: u64,
    code: u64,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.t, self.seq).cmp(&(o.t, o.seq))
    }
}

pub struct SimHost {
    pub name: String,
    ip: Ipv4Addr,
    mac: Mac,
    gateway_mac: Mac,
    attach: (usize, u32),
    rate_bps: Option<u64>,
    nic: VecDeque<Vec<u8>>,
    nic_busy: bool,
    /// When the frame the NIC is sending is done (while `nic_busy`).
    nic_done_at: u64,
    /// The NIC's last frame really ended this far before the whole
    /// nanosecond it is done at, in ns × bit/s (as a switch port's link:
    /// ports::queue), so back-to-back frames leave at exactly the line rate.
    nic_short_nb: u64,
    pub nic_drops: u64,
    pub rx_drops: u64,
    agents: Vec<Agent>,
    ports: BTreeMap<u16, usize>,
    ip_id: u16,
}

/// Counts of what the run did.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub events: u64,
    pub frames: u64,
}

pub struct World {
    pub now: u64,
    heap: BinaryHeap<Reverse<Entry>>,
    /// Events scheduled for the current time, in the order they were
    /// scheduled. About half of a run's events are frames handed on
    /// without delay; they skip the heap. Every heap entry due now was
    /// scheduled before any of these (it was scheduled while time was
    /// earlier), so running the heap's due entries first keeps the
    /// (time, order scheduled) order exactly.
    due_now: VecDeque<Ev>,
    seq: u64,
    pub stats: Stats,
    pub switches: Vec<SimSwitch>,
    pub hosts: Vec<SimHost>,
    peers: Vec<Vec<Peer>>,
    out: Outgoing,
    /// Frame buffers to reuse: a frame's vector goes back here once its
    /// receiver has read it, so sending allocates only while the pool fills.
    pool: Vec<Vec<u8>>,
    pub arm_dir: PathBuf,
    /// Senders whose workload is not over yet.
    senders_left: usize,
}

fn parse_port(ep: &str) -> (String, Option<u32>) {
    match ep.split_once(':') {
        Some((n, p)) => (n.to_string(), p.parse().ok()),
        None => (ep.to_string(), None),
    }
}

fn host_ip(cidr: &str) -> Result<Ipv4Addr, SimError> {
    cidr.split('/').next().unwrap_or("").parse().map_err(|_| SimError::Plan(format!("host address '{cidr}' is not IPv4")))
}

/// The fixed MAC of a switch port (p4cc_topo.model.port_mac).
fn port_mac(switch_id: u32, port: u32) -> Mac {
    [0x02, 0xcc, (switch_id >> 8) as u8, switch_id as u8, (port >> 8) as u8, port as u8]
}

/// Checks what would make a run meaningless before anything starts.
fn check_arm(arm: &Arm) -> Result<(), SimError> {
    let bad = |what: String| Err(SimError::Plan(format!("arm {}: {what}", arm.name)));
    for (i, l) in arm.topology.links.iter().enumerate() {
        if l.rate_bps == Some(0) {
            return bad(format!("links[{i}] ({}--{}): a rate of 0 carries nothing", l.endpoints[0], l.endpoints[1]));
        }
        let zero_buffer = match &l.buffer_pkts {
            Some(PerEnd::All(0)) => true,
            Some(PerEnd::Each(m)) => m.values().any(|v| *v == 0),
            _ => false,
        };
        if zero_buffer {
            return bad(format!("links[{i}] ({}--{}): a buffer of 0 packets drops everything", l.endpoints[0], l.endpoints[1]));
        }
    }
    let most = arm.topology.switches.len().max(arm.topology.hosts.len()).max(arm.agents.len());
    if most as u64 > INDEX_MASK {
        return bad(format!("{most} switches, hosts or agents: the simulator takes at most {INDEX_MASK}"));
    }
    if !(arm.duration_s > 0.0) {
        return bad(format!("duration_s {} must be greater than 0", arm.duration_s));
    }
    for a in &arm.agents {
        if a.role == "sender" {
            agent::algorithm(a)?;
        }
    }
    Ok(())
}

impl World {
    /// Builds the arm's switches (bare, serving P4Runtime and the admin API
    /// on `rt`), hosts and agents; nothing runs until [`run_until`](Self::run_until).
    pub fn build(plan: &Plan, arm: &Arm, out_dir: &Path, rt: &tokio::runtime::Runtime) -> Result<World, SimError> {
        check_arm(arm)?;
        let topo = &arm.topology;
        let mut sw_index: BTreeMap<String, usize> = BTreeMap::new();
        for (i, s) in topo.switches.iter().enumerate() {
            sw_index.insert(s.name.clone(), i);
        }
        let host_names: BTreeMap<String, usize> = topo.hosts.iter().enumerate().map(|(i, h)| (h.name.clone(), i)).collect();

        // Ports per switch and what each connects to.
        let mut ports: Vec<BTreeMap<u32, (Peer, String)>> = vec![BTreeMap::new(); topo.switches.len()];
        let mut host_attach: Vec<Option<(usize, u32, Option<u64>)>> = vec![None; topo.hosts.len()];
        for l in &topo.links {
            let (a, pa) = parse_port(&l.endpoints[0]);
            let (b, pb) = parse_port(&l.endpoints[1]);
            let end = |n: &str, p: Option<u32>| -> Result<(Option<usize>, Option<usize>, Option<u32>), SimError> {
                if let Some(&s) = sw_index.get(n) {
                    let p = p.ok_or_else(|| SimError::Plan(format!("link end '{n}' has no port (the plan's topology is canonical)")))?;
                    Ok((Some(s), None, Some(p)))
                } else if let Some(&h) = host_names.get(n) {
                    Ok((None, Some(h), None))
                } else {
                    Err(SimError::Plan(format!("link end '{n}' is neither a host nor a switch")))
                }
            };
            let (sa, ha, pa) = end(&a, pa)?;
            let (sb, hb, pb) = end(&b, pb)?;
            match (sa, ha, sb, hb) {
                (Some(s1), None, Some(s2), None) => {
                    let (p1, p2) = (pa.unwrap_or(0), pb.unwrap_or(0));
                    ports[s1].insert(p1, (Peer::Switch(s2, p2), format!("sim:{b}")));
                    ports[s2].insert(p2, (Peer::Switch(s1, p1), format!("sim:{a}")));
                }
                (Some(s), None, None, Some(h)) | (None, Some(h), Some(s), None) => {
                    let p = pa.or(pb).unwrap_or(0);
                    ports[s].insert(p, (Peer::Host(h), format!("sim:{}", topo.hosts[h].name)));
                    host_attach[h] = Some((s, p, l.rate_bps));
                }
                _ => return Err(SimError::Plan(format!("link {a}--{b}: every link joins a switch to a host or a switch"))),
            }
        }

        let mut switches = Vec::new();
        let mut peers = Vec::new();
        for (i, s) in topo.switches.iter().enumerate() {
            let list: Vec<(u32, String)> = ports[i].iter().map(|(p, (_, n))| (*p, n.clone())).collect();
            // Per-switch seed as the lab's p4cc-switch gets one (--seed).
            let sw = SimSwitch::start(rt, &s.name, u64::from(s.id), &list, plan.seed)?;
            peers.push(sw.core.ports.iter().map(|cp| ports[i].get(&cp.num).map(|(p, _)| *p).unwrap_or(Peer::Nothing)).collect());
            switches.push(sw);
        }

        let ip_of: BTreeMap<String, Ipv4Addr> =
            topo.hosts.iter().map(|h| Ok((h.name.clone(), host_ip(&h.ip)?))).collect::<Result<_, SimError>>()?;
        let addr = |name: &str| -> Result<SocketAddr, SimError> {
            ip_of
                .get(name)
                .map(|ip| SocketAddr::V4(SocketAddrV4::new(*ip, agent::DATA_PORT)))
                .ok_or_else(|| SimError::Plan(format!("destination '{name}' is not a host")))
        };
        std::fs::create_dir_all(out_dir).map_err(|e| SimError::Output(format!("{}: {e}", out_dir.display())))?;
        let agents_of = agent::by_host(&arm.agents);
        let mut hosts = Vec::new();
        for (i, h) in topo.hosts.iter().enumerate() {
            let (s, p, rate) = host_attach[i].ok_or_else(|| SimError::Plan(format!("host {} has no link", h.name)))?;
            let mac = frame::parse_mac(&h.mac).ok_or_else(|| SimError::Plan(format!("host {}: bad MAC '{}'", h.name, h.mac)))?;
            let ip = ip_of[&h.name];
            let mut agents = Vec::new();
            let mut by_port = BTreeMap::new();
            for (k, spec) in agents_of.get(&h.name).map(|v| v.as_slice()).unwrap_or(&[]).iter().enumerate() {
                let a = Agent::new(spec, k, ip, &addr, out_dir, UNIX_BASE_NS)?;
                if by_port.insert(a.port, agents.len()).is_some() {
                    return Err(SimError::Plan(format!("host {}: two agents listen on UDP {}", h.name, a.port)));
                }
                agents.push(a);
            }
            hosts.push(SimHost {
                name: h.name.clone(),
                ip,
                mac,
                gateway_mac: port_mac(topo.switches[s].id, p),
                attach: (s, p),
                rate_bps: rate,
                nic: VecDeque::new(),
                nic_busy: false,
                nic_done_at: 0,
                nic_short_nb: 0,
                nic_drops: 0,
                rx_drops: 0,
                agents,
                ports: by_port,
                ip_id: 0,
            });
        }
        let mut w = World {
            now: 0,
            heap: BinaryHeap::new(),
            due_now: VecDeque::new(),
            seq: 0,
            stats: Stats::default(),
            switches,
            hosts,
            peers,
            out: Outgoing::default(),
            pool: Vec::new(),
            arm_dir: out_dir.to_path_buf(),
            senders_left: 0,
        };
        w.senders_left = w.hosts.iter().flat_map(|h| &h.agents).filter(|a| !a.is_sender_done()).count();
        // Every agent runs once at time 0 (senders start their workloads).
        for h in 0..w.hosts.len() {
            for a in 0..w.hosts[h].agents.len() {
                w.wake_agent(h, a, 0);
            }
        }
        Ok(w)
    }

    /// Schedules `ev` at `t` (not before now): in the heap, as the
    /// `self.seq`th event, or behind what is due now.
    fn push(&mut self, t: u64, ev: Timed) {
        if t == self.now {
            self.due_now.push_back(ev.event());
            return;
        }
        self.seq += 1;
        self.heap.push(Reverse(Entry { t, seq: self.seq, code: ev.code() }));
    }

    /// The heap's first event, with the clock moved to its time.
    fn pop_heap(&mut self) -> Option<Ev> {
        let Reverse(e) = self.heap.pop()?;
        self.now = e.t;
        Some(Timed::decode(e.code).event())
    }

    fn wake_agent(&mut self, h: usize, a: usize, t: u64) {
        let ag = &mut self.hosts[h].agents[a];
        if ag.scheduled.is_none_or(|s| t < s) {
            ag.scheduled = Some(t);
            self.push(t, Timed::AgentWake(h, a));
        }
    }

    fn wake_switch(&mut self, s: usize) {
        let Some(t) = self.switches[s].core.next_event_ns() else { return };
        let t = t.max(self.now);
        let sw = &mut self.switches[s];
        if sw.scheduled.is_none_or(|x| t < x) {
            sw.scheduled = Some(t);
            self.push(t, Timed::SwitchWake(s));
        }
    }

    /// Picks up what the controller changed while time stood still (a
    /// pipeline, settings), then wakes every switch that has work.
    pub fn sync_switches(&mut self) {
        for s in 0..self.switches.len() {
            self.switches[s].core.sync();
            self.switches[s].core.publish();
            self.wake_switch(s);
        }
    }

    /// When a frame of `len` bytes the NIC starts at `start` (a whole ns;
    /// back to back, really `nic_short_nb` before it) is on the wire: the
    /// first whole ns after its exact end. Rounding each frame's time down
    /// instead sent more than the line rate (1.7 frames in 10 000 of 1454
    /// bytes at 10 Gbit/s).
    fn nic_end(host: &mut SimHost, start: u64, len: usize) -> u64 {
        match host.rate_bps {
            Some(r) if r > 0 => {
                let r = r as u128;
                let end_nb = start as u128 * r - host.nic_short_nb as u128 + len as u128 * 8 * 1_000_000_000;
                let end = end_nb.div_ceil(r);
                host.nic_short_nb = (end * r - end_nb) as u64;
                end as u64
            }
            _ => start,
        }
    }

    /// How long each switch port's link has spent serializing frames by
    /// now, to the nanosecond: {switch: {port: ns}} (`EgressPort::busy_ns`).
    /// Read at the same paused instant as the counters, two readings give
    /// a utilisation that cannot exceed 1.
    pub fn busy_ns(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for s in &self.switches {
            let ports: serde_json::Map<String, serde_json::Value> =
                s.core.ports.iter().map(|p| (p.num.to_string(), p.egress.busy_ns(self.now).into())).collect();
            out.insert(s.name.clone(), ports.into());
        }
        out.into()
    }

    /// An agent's datagrams leave through its host's NIC.
    fn send(&mut self, h: usize) {
        let t = self.now;
        let outs = std::mem::take(&mut self.out);
        for o in &outs.list {
            let host = &mut self.hosts[h];
            host.ip_id = host.ip_id.wrapping_add(1);
            if host.nic.len() >= NIC_QUEUE_PKTS {
                host.nic_drops += 1;
                continue;
            }
            let mut f = self.pool.pop().unwrap_or_default();
            frame::build(
                host.mac,
                host.gateway_mac,
                SocketAddrV4::new(host.ip, o.from_port),
                o.dst,
                o.tos,
                host.ip_id,
                outs.payload(o),
                &mut f,
            );
            let len = f.len();
            host.nic.push_back(f);
            if !host.nic_busy {
                host.nic_busy = true;
                host.nic_short_nb = 0;
                let end = Self::nic_end(host, t, len);
                host.nic_done_at = end;
                self.push(end, Timed::NicDone(h));
            }
        }
        self.out = outs;
        self.out.clear();
    }

    fn recycle(&mut self, f: Vec<u8>) {
        if self.pool.len() < FRAME_POOL_MAX {
            self.pool.push(f);
        }
    }

    fn poll_agent(&mut self, h: usize, a: usize) -> Result<(), SimError> {
        let t = self.now;
        // A sender that arbitrates may fill the NIC's queue to a few frames
        // (the rest wait in the stack), and learns when a frame leaves.
        let host = &self.hosts[h];
        self.out.nic_room = (datapath::nic::BACKLOG_FRAMES as usize).saturating_sub(host.nic.len());
        self.out.nic_room_at = if host.nic_busy { host.nic_done_at } else { t };
        let ag = &mut self.hosts[h].agents[a];
        let was_done = ag.is_sender_done();
        let next = ag.poll(t, &mut self.out)?;
        if !was_done && ag.is_sender_done() {
            self.senders_left -= 1;
        }
        self.send(h);
        if let Some(w) = next {
            // Whatever was due by now has just run.
            self.wake_agent(h, a, w.max(t + 1));
        }
        Ok(())
    }

    fn host_rx(&mut self, h: usize, f: &[u8]) -> Result<(), SimError> {
        let host = &mut self.hosts[h];
        let d = match frame::parse(f, &host.mac, host.ip) {
            Ok(d) => d,
            Err(_) => {
                host.rx_drops += 1;
                return Ok(());
            }
        };
        let Some(&a) = host.ports.get(&d.to_port) else {
            host.rx_drops += 1;
            return Ok(());
        };
        let unix = UNIX_BASE_NS + self.now;
        host.agents[a].on_datagram(self.now, unix, d.from, d.tos, d.payload, &mut self.out)?;
        self.send(h);
        self.poll_agent(h, a)
    }

    fn deliver(&mut self, peer: Peer, f: Vec<u8>) {
        match peer {
            Peer::Host(h) => self.due_now.push_back(Ev::HostRx(h, f)),
            Peer::Switch(s, p) => self.due_now.push_back(Ev::SwitchRx(s, p, f)),
            Peer::Nothing => {}
        }
    }

    fn step(&mut self, ev: Ev) -> Result<(), SimError> {
        match ev {
            Ev::SwitchWake(s) => {
                if self.switches[s].scheduled != Some(self.now) {
                    return Ok(());
                }
                self.switches[s].scheduled = None;
                let t = self.now;
                self.switches[s].core.advance_all(t);
                for i in 0..self.switches[s].core.ports.len() {
                    while let Some(f) = self.switches[s].core.pop_released(i, t) {
                        let st = &mut self.switches[s].core.ports[i].egress.stats;
                        st.tx_pkts += 1;
                        st.tx_bytes += f.len() as u64;
                        self.stats.frames += 1;
                        self.deliver(self.peers[s][i], f);
                    }
                }
                self.wake_switch(s);
            }
            Ev::SwitchRx(s, port, f) => {
                let core = &mut self.switches[s].core;
                if let Some(i) = core.port_index(port) {
                    let st = &mut core.ports[i].egress.stats;
                    st.rx_pkts += 1;
                    st.rx_bytes += f.len() as u64;
                }
                // The frame becomes the packet's buffer, and the one it
                // replaces the switch's egress writes into next (a frame
                // in, a frame out: the pools stay level).
                core.receive_owned(f, port, self.now);
                self.wake_switch(s);
            }
            Ev::HostRx(h, f) => {
                self.host_rx(h, &f)?;
                self.recycle(f);
            }
            Ev::NicDone(h) => {
                let t = self.now;
                let host = &mut self.hosts[h];
                if let Some(f) = host.nic.pop_front() {
                    let (s, p) = host.attach;
                    self.stats.frames += 1;
                    self.due_now.push_back(Ev::SwitchRx(s, p, f));
                }
                let host = &mut self.hosts[h];
                match host.nic.front().map(|f| f.len()) {
                    Some(len) => {
                        let end = Self::nic_end(host, t, len);
                        host.nic_done_at = end;
                        self.push(end, Timed::NicDone(h));
                    }
                    None => host.nic_busy = false,
                }
            }
            Ev::AgentWake(h, a) => {
                if self.hosts[h].agents[a].scheduled != Some(self.now) {
                    return Ok(());
                }
                self.hosts[h].agents[a].scheduled = None;
                self.poll_agent(h, a)?;
            }
        }
        Ok(())
    }

    /// Runs every event up to `until` (inclusive), or only until every
    /// sender is done with `until_senders_done`; `check` is called every few
    /// thousand events and stops the run early by returning false.
    pub fn run_until(
        &mut self,
        until: u64,
        until_senders_done: bool,
        check: &mut dyn FnMut(&World) -> bool,
    ) -> Result<bool, SimError> {
        let mut n = 0u64;
        loop {
            if until_senders_done && self.senders_left == 0 {
                break;
            }
            // The heap's entries due now first, then what was scheduled for
            // now since, then time moves to the heap's next entry.
            let heap_due = self.heap.peek().map(|Reverse(top)| top.t);
            let ev = if heap_due.is_some_and(|t| t <= self.now) {
                self.pop_heap()
            } else if let Some(ev) = self.due_now.pop_front() {
                Some(ev)
            } else if heap_due.is_some_and(|t| t <= until) {
                self.pop_heap()
            } else {
                break;
            };
            let Some(ev) = ev else { continue };
            self.stats.events += 1;
            self.step(ev)?;
            n += 1;
            if n % 4096 == 0 && !check(self) {
                return Ok(false);
            }
        }
        if !(until_senders_done && self.senders_left == 0) {
            // The loop ends with nothing due now: time may move on.
            debug_assert!(self.due_now.is_empty());
            self.now = self.now.max(until);
        }
        for s in &self.switches {
            s.core.publish();
        }
        Ok(true)
    }

    /// Whether every sender's workload is done.
    pub fn senders_done(&self) -> bool {
        self.senders_left == 0
    }

    /// Ends the run at the current time: flows still running are
    /// interrupted, every agent writes its files. Returns a summary.
    pub fn finish(self) -> Result<serde_json::Value, SimError> {
        let mut agents = Vec::new();
        let mut hosts = serde_json::Map::new();
        let now = self.now;
        for h in self.hosts {
            hosts.insert(h.name.clone(), serde_json::json!({"nic_drops": h.nic_drops, "rx_drops": h.rx_drops}));
            for a in h.agents {
                let folder = a.folder.clone();
                let mut v = a.finish(now, &self.arm_dir)?;
                v["host"] = h.name.clone().into();
                v["folder"] = folder.into();
                agents.push(v);
            }
        }
        Ok(serde_json::json!({"agents": agents, "hosts": hosts}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timed_event_survives_its_packing() {
        let big = INDEX_MASK as usize;
        for ev in [Timed::SwitchWake(0), Timed::SwitchWake(big), Timed::NicDone(7), Timed::NicDone(big),
                   Timed::AgentWake(0, 0), Timed::AgentWake(big, 3), Timed::AgentWake(5, big)] {
            assert_eq!(Timed::decode(ev.code()), ev);
        }
    }
}

