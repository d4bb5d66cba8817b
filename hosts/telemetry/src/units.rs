//! The units a switch reports in, shared by the postcard and the shim: a
//! v1model target counts its queue in packets and its time in µs, the
//! Tofino program in 80-byte cells and ns. One byte carries both (the
//! postcard's `units`, the shim's byte 3).

/// Unit of a queue depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthUnit {
    Packets,
    Cells80,
}

impl DepthUnit {
    pub fn from_u8(v: u8) -> Option<DepthUnit> {
        match v {
            0 => Some(DepthUnit::Packets),
            1 => Some(DepthUnit::Cells80),
            _ => None,
        }
    }
    pub fn as_u8(self) -> u8 {
        match self {
            DepthUnit::Packets => 0,
            DepthUnit::Cells80 => 1,
        }
    }
}

/// Unit of a queue delay and of timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Micros,
    Nanos,
}

impl TimeUnit {
    pub fn from_u8(v: u8) -> Option<TimeUnit> {
        match v {
            0 => Some(TimeUnit::Micros),
            1 => Some(TimeUnit::Nanos),
            _ => None,
        }
    }
    /// A value in this unit, in µs (rounded down).
    pub fn to_us(self, v: u64) -> u64 {
        match self {
            TimeUnit::Micros => v,
            TimeUnit::Nanos => v / 1000,
        }
    }
    /// A value in this unit, in ns (exact; saturating at `u64::MAX`).
    pub fn to_ns(self, v: u64) -> u64 {
        match self {
            TimeUnit::Micros => v.saturating_mul(1000),
            TimeUnit::Nanos => v,
        }
    }
}

/// A units byte (postcard `units`, shim byte 3): the depth unit in the low
/// nibble, the time unit in the high one; None for a code neither knows.
pub(crate) fn split_units(u: u8) -> Option<(DepthUnit, TimeUnit)> {
    Some((DepthUnit::from_u8(u & 0x0f)?, TimeUnit::from_u8(u >> 4)?))
}
