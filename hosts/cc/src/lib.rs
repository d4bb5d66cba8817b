//! Congestion-control algorithms as pure state machines.
//!
//! An algorithm never touches a socket or a clock: the datapath feeds it
//! events (sends, ACK samples, losses, timeouts, ticks) stamped with the
//! datapath's clock, and reads back a window and/or a pacing rate. The same
//! code is therefore unit-tested with scripted events and run unchanged on
//! every datapath.

use std::collections::BTreeMap;

pub mod bbr;
pub mod cubic;
pub mod dcqcn;
pub mod dctcp;
pub mod hpcc;
pub mod oracle;
mod params;
pub mod pcc;
pub mod powertcp;
mod registry;
pub mod reno;
pub mod signal;
pub mod swift;
pub mod timely;
pub mod vegas;
mod window;

pub use params::{AlgoInfo, ParamInfo};
pub use registry::{by_name, for_flow, list, reads_int};

/// What the datapath learned from one ACK.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AckSample {
    /// Datapath clock, nanoseconds (monotonic, arbitrary origin).
    pub now_ns: u64,
    /// Bytes newly acknowledged by this ACK (cumulative + selective).
    pub acked_bytes: u64,
    /// Of `acked_bytes`, how many arrived at the receiver CE-marked.
    pub ce_bytes: u64,
    /// RTT measured from the echoed send timestamp, if this ACK gives one.
    pub rtt_ns: Option<u64>,
    /// Path maximum queue depth echoed from the switch telemetry shim,
    /// already normalised to packets by the datapath (hosts never guess
    /// units: the shim says which unit it carries).
    pub path_qdepth_pkts: Option<u32>,
    /// Bytes in flight after this ACK was processed.
    pub inflight_bytes: u64,
    /// Number of packets this ACK completed (for per-completion rules
    /// such as TIMELY's "one update per completion").
    pub acked_pkts: u32,
    /// The per-hop queue reports of the data packet that triggered this
    /// ACK, newest hop first, depths normalised to packets (empty when the
    /// packet carried no hop records). Oracle TIMELY uses them to tell the
    /// hops apart; `path_qdepth_pkts` is their maximum as the shim kept it.
    pub hops: Vec<QueueReport>,
    /// The in-band telemetry of the data packet that triggered this ACK,
    /// one record per switch hop, newest hop first (empty when the packet
    /// carried no version-2 shim). HPCC and PowerTCP read these; Swift
    /// takes their number as the path's hop count.
    pub int_hops: Vec<IntHop>,
}

/// One switch hop's in-band telemetry for INT-based congestion control:
/// what HPCC (SIGCOMM 2019, §3.2 and Fig. 4: qLen, txBytes, ts, B) and
/// PowerTCP (NSDI 2022, §3) read of the egress port a data packet left on.
/// The datapath has already converted the switch's units (docs/wire-format.md,
/// shim version 2).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IntHop {
    /// Which queue: `switch_id << 16 | egress_port` (as [`QueueReport::hop`]).
    pub hop: u32,
    /// Bytes queued at the egress port when the packet left it.
    pub qlen_bytes: u64,
    /// The egress port's transmitted bytes, a counter that wraps at 2^32:
    /// compare two records of one hop with [`IntHop::tx_bytes_since`].
    pub tx_bytes: u32,
    /// The switch's egress timestamp, ns (its own clock, arbitrary origin).
    pub ts_ns: u64,
    /// The port's line rate as the controller loaded it, bits/s.
    pub rate_bps: u64,
}

impl IntHop {
    /// Bytes the port transmitted between `earlier` and this record (the
    /// counter's wrap-around taken into account).
    pub fn tx_bytes_since(&self, earlier: &IntHop) -> u64 {
        u64::from(self.tx_bytes.wrapping_sub(earlier.tx_bytes))
    }
}

/// One switch hop's queue as a packet found it: in-band (a hop record the
/// receiver echoed) or out of band (a postcard the collector returned).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueueReport {
    /// Which queue: `switch_id << 16 | egress_port`.
    pub hop: u32,
    /// Queue depth the packet found at enqueue, packets.
    pub depth_pkts: f64,
    /// The switch's clock when the packet was enqueued (egress timestamp
    /// minus queueing delay), µs; 0 when unknown.
    pub at_us: u64,
}

impl QueueReport {
    /// The hop key of switch `switch_id`'s port `egress_port`.
    pub fn hop_key(switch_id: u16, egress_port: u16) -> u32 {
        u32::from(switch_id) << 16 | u32::from(egress_port)
    }
}

/// Static facts about the path/datapath an algorithm may use.
#[derive(Debug, Clone, PartialEq)]
pub struct PathInfo {
    /// Maximum segment (payload) size in bytes.
    pub mss: u32,
    /// Bottleneck line rate in bits/s when known (oracle TIMELY converts
    /// queue depth to time with it; PCC uses it only as an upper bound).
    pub line_rate_bps: Option<u64>,
    /// Initial window in packets.
    pub init_cwnd_pkts: u32,
}

impl Default for PathInfo {
    fn default() -> Self {
        PathInfo { mss: 1400, line_rate_bps: None, init_cwnd_pkts: 10 }
    }
}

/// One monitor interval as a PCC sender scored it, for the sender's
/// `mi.csv` (docs/hosts.md): what it sent and measured, what the utility
/// made of it and where the controller went next.
#[derive(Debug, Clone, PartialEq)]
pub struct MiRecord {
    /// When it was scored, on the datapath's clock.
    pub t_ns: u64,
    pub mi: u64,
    /// The controller's phase when it was scored: 0 starting, 1 probing,
    /// 2 moving.
    pub phase: u8,
    pub rate_bps: f64,
    pub duration_ns: f64,
    pub sent_pkts: u64,
    /// Lost over sent bytes, as charged (after start-up's allowance).
    pub loss: f64,
    /// dRTT/dT as charged (after start-up's tolerance), before the
    /// utility's own filter.
    pub rtt_gradient: f64,
    /// None: void (too few RTT samples) or not a finite number.
    pub utility: Option<f64>,
    /// The controller's rate after the result.
    pub next_rate_bps: f64,
}

/// A congestion-control algorithm. All times are the datapath's clock in ns.
pub trait CongestionControl: Send {
    /// Registry name, e.g. "dctcp".
    fn name(&self) -> &'static str;
    /// A data packet of `bytes` payload left the sender.
    fn on_send(&mut self, _now_ns: u64, _bytes: u64) {}
    fn on_ack(&mut self, sample: &AckSample);
    /// The datapath declared `lost_bytes` lost (dup-ACK/SACK detection).
    fn on_loss(&mut self, now_ns: u64, lost_bytes: u64);
    /// Retransmission timeout fired.
    fn on_rto(&mut self, now_ns: u64);
    /// One transmission newly delivered, named by its send time (the
    /// `now_ns` of the `on_send` that sent it). Called for each packet an
    /// ACK settles, before that ACK's `on_ack`, so algorithms that account
    /// per interval of sending (PCC's monitor intervals) charge delivery to
    /// the interval that sent the packet, not to the one running when the
    /// ACK arrives. Default: ignored.
    fn on_packet_acked(&mut self, _now_ns: u64, _sent_ns: u64, _bytes: u64) {}
    /// One transmission newly declared lost (SACK/RACK detection or RTO),
    /// named by its send time; called before the matching `on_loss` /
    /// `on_rto`. Default: ignored.
    fn on_packet_lost(&mut self, _now_ns: u64, _sent_ns: u64, _bytes: u64) {}
    /// Called periodically (at least every millisecond while a flow is
    /// active) for algorithms with timers or monitor intervals.
    fn on_tick(&mut self, _now_ns: u64) {}
    /// The sender ran out of data: the window and the pacing rate would
    /// let it send, yet it has nothing new to send and no retransmission
    /// pending (draft-cheng-iccrg-delivery-rate-estimation §3.4, Linux's
    /// `tcp_rate_check_app_limited`). Call it when the application's data
    /// runs dry, before the next `on_send`. BBR marks the delivery-rate
    /// samples of the next round trip application-limited, so an idle
    /// spell does not drag its bandwidth estimate down. Default: ignored.
    fn on_app_limited(&mut self, _now_ns: u64) {}
    /// A queue report delivered out of band (a postcard the collector
    /// returned to this sender), not through an ACK. Default: ignored.
    fn on_queue_report(&mut self, _now_ns: u64, _report: &QueueReport) {}
    /// A congestion notification packet reached the sender (DCQCN's
    /// notification point sends at most one per flow per interval when
    /// CE-marked packets arrive; RoCEv2 Annex A17.9). Default: ignored.
    fn on_cnp(&mut self, _now_ns: u64) {}
    /// When the algorithm's own timers next change its rate or window, if
    /// any run (DCQCN's α and rate-increase timers): the datapath calls
    /// `on_tick` then, so a paced sender sees a rate change when it
    /// happens, as a NIC's rate limiter does, not at the next periodic
    /// tick. Default: none.
    fn next_timer_ns(&self) -> Option<u64> {
        None
    }
    /// Window limit in bytes; `None` = not window-limited (rate only).
    fn cwnd_bytes(&self) -> Option<u64>;
    /// Pacing rate in bits/s; `None` = send as fast as the window allows.
    /// The datapath counts whole IP packets against it (docs/transport.md
    /// §7), unless [`pacing_counts_payload`](Self::pacing_counts_payload).
    fn pacing_rate_bps(&self) -> Option<u64>;
    /// Whether the pacing rate is a rate of payload bytes, as TCP's own
    /// pacing charges each segment (Linux `tcp_update_skb_after_send`: the
    /// segment's data, not its headers), rather than of whole IP packets.
    /// BBR's rate is its delivery rate, measured in payload, so a datapath
    /// that charged the headers too would send below the rate BBR chose
    /// (6 % below with p4cc's transport). Default: false.
    fn pacing_counts_payload(&self) -> bool {
        false
    }
    /// The queueing-inclusive delay the algorithm steers each ACK's RTT
    /// towards, when it has one (Swift's target), for the sender's RTT
    /// log: an analysis judges the delay against what the algorithm
    /// itself aimed at. Default: none.
    fn target_delay_ns(&self) -> Option<u64> {
        None
    }
    /// Algorithm-specific state for logging (e.g. "alpha" for DCTCP).
    fn state(&self) -> BTreeMap<&'static str, f64> {
        BTreeMap::new()
    }
    /// The monitor intervals scored since the last call, oldest first
    /// (PCC); the datapath drains them as it logs. Default: none.
    fn drain_mis(&mut self, _out: &mut Vec<MiRecord>) {}
}

/// Errors from building an algorithm by name.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CcError {
    #[error("unknown congestion control '{0}' (see --list-cc)")]
    UnknownAlgorithm(String),
    #[error("{algo}: unknown parameter '{param}' (known: {known})")]
    UnknownParam { algo: String, param: String, known: String },
    #[error("{algo}: parameter '{param}' = '{value}': {why}")]
    BadValue { algo: String, param: String, value: String, why: String },
}
