//! Actions as lists of primitives (the subset p4c emits for v1model).
//! Legacy P4_14 arithmetic primitives are compiled to `Assign`.

use super::expr::{Expr, HdrRef, LValue, UnionRef};

#[derive(Clone, Debug)]
pub(crate) enum Prim {
    Assign(LValue, Expr),
    /// Direct forms of `Assign` (see compile/simplify.rs): `value` already fitted.
    SetConst { dst: usize, value: u128 },
    SetArg { dst: usize, arg: usize, mask: u128 },
    CopyField { dst: usize, src: usize, mask: u128 },
    AssignHeader(HdrRef, HdrRef),
    AssignUnion(UnionRef, UnionRef),
    AssignStack(usize, usize),
    /// `setValid()` (bmv2 add_header): zeroes an invalid header, grows the
    /// packet-length register.
    AddHeader(HdrRef),
    AddHeaderFast(HdrRef),
    /// `setInvalid()` (bmv2 remove_header).
    RemoveHeader(HdrRef),
    MarkToDrop { egress_spec: Option<usize>, mcast_grp: Option<usize> },
    RegisterRead { dst: LValue, reg: usize, idx: Expr },
    RegisterWrite { reg: usize, idx: Expr, val: Expr },
    Count { counter: usize, idx: Expr },
    Clone { session: Expr, field_list: Expr },
    Resubmit(Expr),
    Recirculate(Expr),
    Random { dst: LValue, lo: Expr, hi: Expr },
    Hash { dst: LValue, base: Expr, calc: usize, max: Expr },
    Truncate(Expr),
    Exit,
    Push(usize, Expr),
    Pop(usize, Expr),
    /// assert / assume: bmv2 aborts the switch; this engine drops the packet
    /// and counts the failure (see `State::assert_failures`).
    Assert(Expr),
    Jump(Expr),
    JumpIfZero(Expr, Expr),
    NoOp,
}

#[derive(Clone, Debug)]
pub(crate) struct ActionDef {
    pub prims: Vec<Prim>,
}
