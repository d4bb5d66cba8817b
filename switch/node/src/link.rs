//! A link emulator's datapath: ports wired in pairs, no pipeline and no
//! queue. A frame that arrives on one port of a pair leaves on the other
//! after that port's link model (serialization at its rate, if it has one,
//! its propagation delay and its random loss) — the same
//! [`EgressPort`] code the switch's egress links run, so a delay or a loss
//! means the same thing on either side of a switch.
//!
//! `p4cc-link` runs it between bmv2 and what bmv2's ports are cabled to:
//! bmv2 keeps its own queue, rate limit and ECN marking (the thing under
//! test), the link adds only propagation delay and loss, on a clock the
//! fidelity monitor can read (release slip and ring drops, as the switch's).
use crate::shared::Shared;
use crate::socket_loop::Datapath;
use ports::queue::PortStats;
use ports::EgressPort;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Frames kept for reuse, at most (one receive pass of every port).
const POOL_FRAMES: usize = 256;

/// Why a set of pairs cannot be wired.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("port {0} is not a port of this link emulator")]
    UnknownPort(u32),
    #[error("port {0} is wired twice")]
    Rewired(u32),
    #[error("port {0} is wired to itself")]
    SelfLoop(u32),
    #[error("port {0} is not wired to any other port")]
    Unwired(u32),
}

pub struct LinkCore {
    /// One egress link per port, in the order of `shared.ports`.
    egress: Vec<EgressPort<()>>,
    /// Index of the port a frame arriving on port `i` leaves on.
    peer: Vec<usize>,
    /// v1model-style port number → index.
    index: Vec<Option<usize>>,
    shared: Arc<Shared>,
    settings_gen: u64,
    pool: Vec<Vec<u8>>,
}

impl LinkCore {
    /// The ports of `shared`, wired as `pairs` (port numbers); every port
    /// must be in exactly one pair.
    pub fn new(shared: Arc<Shared>, pairs: &[(u32, u32)], seed: u64) -> Result<LinkCore, WireError> {
        let mut index = vec![None; 512];
        let mut egress = Vec::new();
        for (i, sh) in shared.ports.iter().enumerate() {
            index[sh.port as usize] = Some(i);
            egress.push(EgressPort::new(sh.settings(), seed ^ (sh.port as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        }
        let mut peer = vec![usize::MAX; shared.ports.len()];
        let idx = |p: u32| index.get(p as usize).copied().flatten().ok_or(WireError::UnknownPort(p));
        for &(a, b) in pairs {
            if a == b {
                return Err(WireError::SelfLoop(a));
            }
            let (ia, ib) = (idx(a)?, idx(b)?);
            for (i, p) in [(ia, a), (ib, b)] {
                if peer[i] != usize::MAX {
                    return Err(WireError::Rewired(p));
                }
            }
            peer[ia] = ib;
            peer[ib] = ia;
        }
        if let Some(i) = peer.iter().position(|&p| p == usize::MAX) {
            return Err(WireError::Unwired(shared.ports[i].port));
        }
        Ok(LinkCore { egress, peer, index, shared, settings_gen: u64::MAX, pool: Vec::new() })
    }

    /// Port `i`'s egress link (its settings, counters and slip).
    pub fn port(&self, i: usize) -> &EgressPort<()> {
        &self.egress[i]
    }
}

impl Datapath for LinkCore {
    fn sync(&mut self) {
        let g = self.shared.settings_gen.load(Relaxed);
        if g != self.settings_gen {
            self.settings_gen = g;
            for (e, sh) in self.egress.iter_mut().zip(&self.shared.ports) {
                e.set_settings(sh.settings());
            }
        }
    }

    fn port_num(&self, i: usize) -> u32 {
        self.shared.ports[i].port
    }

    fn stats_mut(&mut self, i: usize) -> &mut PortStats {
        &mut self.egress[i].stats
    }

    fn ingress(&mut self, frame: &[u8], port: u32, t: u64) {
        let Some(i) = self.index.get(port as usize).copied().flatten() else { return };
        let mut f = self.pool.pop().unwrap_or_default();
        f.clear();
        f.extend_from_slice(frame);
        let out = &mut self.egress[self.peer[i]];
        out.stats.enq_pkts += 1;
        // No queue: the frame is on the link the instant it arrived.
        out.transmit(f, t);
    }

    fn enqueue_arrivals(&mut self) {}

    fn advance(&mut self, _i: usize, _t: u64) -> bool {
        false
    }

    fn pop_released(&mut self, i: usize, t: u64) -> Option<Vec<u8>> {
        self.egress[i].pop_released(t)
    }

    fn recycle_frame(&mut self, frame: Vec<u8>) {
        if self.pool.len() < POOL_FRAMES {
            self.pool.push(frame);
        }
    }

    fn next_event_ns(&self) -> Option<u64> {
        self.egress.iter().filter_map(|e| e.next_release_ns()).min()
    }

    fn publish(&self) {
        for (e, sh) in self.egress.iter().zip(&self.shared.ports) {
            sh.publish(&e.stats, &e.slip, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::PortShared;
    use ports::PortSettings;

    fn core(settings: &[(u32, PortSettings)], pairs: &[(u32, u32)]) -> Result<LinkCore, WireError> {
        let ports = settings.iter().map(|(n, s)| Arc::new(PortShared::new(*n, format!("if{n}"), *s))).collect();
        LinkCore::new(Arc::new(Shared::new(ports).unwrap()), pairs, 1)
    }

    fn delayed(us: u64) -> PortSettings {
        PortSettings { delay_us: us, ..PortSettings::default() }
    }

    #[test]
    fn a_frame_leaves_on_the_paired_port_after_that_ports_delay() {
        let mut c = core(&[(1, delayed(500)), (257, PortSettings::default())], &[(1, 257)]).unwrap();
        c.sync();
        // Arrives from bmv2's side (257) at 10 µs: leaves on 1 at 510 µs.
        c.ingress(b"towards the host", 257, 10_000);
        assert_eq!(c.next_event_ns(), Some(510_000));
        assert_eq!(c.pop_released(0, 509_999), None);
        assert_eq!(c.pop_released(0, 510_000).as_deref(), Some(&b"towards the host"[..]));
        // The other way has no delay of its own.
        c.ingress(b"towards bmv2", 1, 600_000);
        assert_eq!(c.pop_released(1, 600_000).as_deref(), Some(&b"towards bmv2"[..]));
        assert_eq!(c.port(0).stats.enq_pkts, 1);
        assert_eq!(c.port(1).stats.enq_pkts, 1);
    }

    #[test]
    fn frames_keep_their_order_and_late_releases_are_slip() {
        let mut c = core(&[(1, delayed(100)), (2, PortSettings::default())], &[(2, 1)]).unwrap();
        c.sync();
        for k in 0..3u8 {
            c.ingress(&[k], 2, 1_000 * k as u64);
        }
        // Handed on 50 µs after the last release was due.
        let got: Vec<u8> = std::iter::from_fn(|| c.pop_released(0, 152_000)).map(|f| f[0]).collect();
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(c.port(0).slip.samples, 3);
        assert!(c.port(0).slip.max_ns >= 50_000);
    }

    #[test]
    fn loss_is_the_egress_ports() {
        let lossy = PortSettings { loss: 1.0, ..PortSettings::default() };
        let mut c = core(&[(1, lossy), (2, PortSettings::default())], &[(1, 2)]).unwrap();
        c.sync();
        c.ingress(b"x", 2, 0);
        c.ingress(b"y", 1, 0);
        assert_eq!(c.pop_released(0, 1), None, "port 1 loses everything it sends");
        assert_eq!(c.port(0).stats.link_loss_drops, 1);
        assert_eq!(c.pop_released(1, 1).as_deref(), Some(&b"y"[..]));
    }

    #[test]
    fn settings_changes_apply_to_the_next_frame() {
        let mut c = core(&[(1, PortSettings::default()), (2, PortSettings::default())], &[(1, 2)]).unwrap();
        c.sync();
        *c.shared.ports[0].settings.lock().unwrap() = delayed(40);
        c.shared.settings_gen.fetch_add(1, Relaxed);
        c.sync();
        c.ingress(b"x", 2, 0);
        assert_eq!(c.next_event_ns(), Some(40_000));
    }

    #[test]
    fn wiring_errors() {
        let d = PortSettings::default();
        assert_eq!(core(&[(1, d), (2, d)], &[(1, 3)]).err(), Some(WireError::UnknownPort(3)));
        assert_eq!(core(&[(1, d), (2, d)], &[(1, 1)]).err(), Some(WireError::SelfLoop(1)));
        assert_eq!(core(&[(1, d), (2, d), (3, d)], &[(1, 2), (2, 3)]).err(), Some(WireError::Rewired(2)));
        assert_eq!(core(&[(1, d), (2, d), (3, d)], &[(1, 2)]).err(), Some(WireError::Unwired(3)));
    }
}
