//! A packet inside the switch: its PHV, the unparsed rest of the frame, and
//! what the actions asked of the traffic manager (clone, resubmit,
//! recirculate, truncate, exit). Below the engine's modules, so actions,
//! the parser and the engine share it without importing one another.

use crate::ir::Program;
use crate::phv::Phv;

/// Packet state carried between ingress and egress.
#[derive(Clone, Debug)]
pub(crate) struct Pkt {
    pub phv: Phv,
    /// The frame as received, headers included; the payload (the bytes
    /// after the parsed headers) starts at `payload_at`. For a
    /// recirculated packet: the whole frame to be parsed, from 0. Keeping
    /// the headers' bytes lets egress write the new headers over them and
    /// send this buffer, instead of copying the payload behind them.
    pub buf: Vec<u8>,
    pub payload_at: usize,
    pub ingress_length: u32,
    /// bmv2 packet register 0: length adjusted by setValid/setInvalid.
    pub pkt_len_reg: u32,
    pub truncate: Option<usize>,
    pub clone: Option<(u16, u16)>,
    pub resubmit: u16,
    pub recirculate: u16,
    pub exit: bool,
    pub assert_failed: bool,
}

impl Pkt {
    /// A packet as the parser finds it (from a recycled one when possible).
    pub fn fresh(p: &Program, pool: &mut Vec<Box<Pkt>>, len: u32) -> Box<Pkt> {
        match pool.pop() {
            Some(mut k) => {
                k.phv.reset(p);
                k.buf.clear();
                k.payload_at = 0;
                k.ingress_length = len;
                k.pkt_len_reg = len;
                k.truncate = None;
                k.clone = None;
                k.resubmit = 0;
                k.recirculate = 0;
                k.exit = false;
                k.assert_failed = false;
                k
            }
            None => Box::new(Pkt::new(p, len)),
        }
    }

    /// The bytes after the parsed headers.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        self.buf.get(self.payload_at..).unwrap_or(&[])
    }

    fn new(p: &Program, len: u32) -> Pkt {
        Pkt {
            phv: Phv::new(p),
            buf: Vec::new(),
            payload_at: 0,
            ingress_length: len,
            pkt_len_reg: len,
            truncate: None,
            clone: None,
            resubmit: 0,
            recirculate: 0,
            exit: false,
            assert_failed: false,
        }
    }
}
