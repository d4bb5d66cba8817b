//! Expressions as trees over PHV slots, and the places they name: header
//! references (fixed, or chosen at run time by a stack index) and
//! assignable fields.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    DivU,
    ModU,
    Shl,
    Shr,
    ShrU,
    And,
    Or,
    Xor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LtU,
    LeU,
    GtU,
    GeU,
    LAnd,
    LOr,
    BoolEq,
    BoolNe,
    TwoCompMod,
    UsatCast,
    SatCast,
}

#[derive(Clone, Debug)]
pub(crate) enum Expr {
    Const(i128),
    Bool(bool),
    Field(usize),
    /// Direct forms (see compile/simplify.rs): a fixed header's validity; a
    /// field tested as a boolean.
    ValidHdr(usize),
    FieldNonZero(usize),
    /// The hidden `$valid$` field: 1 if valid.
    ValidBit(Box<HdrRef>),
    Valid(Box<HdrRef>),
    ValidUnion(Box<UnionRef>),
    Local(usize),
    StackLast { stack: usize, off: usize },
    HdrField { hdr: Box<HdrRef>, off: usize },
    Register { reg: usize, idx: Box<Expr> },
    LastStackIndex(usize),
    SizeStack(usize),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    BitNeg(Box<Expr>),
    Not(Box<Expr>),
    D2B(Box<Expr>),
    B2D(Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    HdrEq(Box<HdrRef>, Box<HdrRef>),
    UnionEq(Box<UnionRef>, Box<UnionRef>),
}

/// A place a value can be written to.
#[derive(Clone, Debug)]
pub(crate) enum LValue {
    Slot(usize),
    /// Field `off` of the last valid element of a stack.
    StackLast { stack: usize, off: usize },
    /// Field `off` of a header chosen at run time.
    HdrField { hdr: Box<HdrRef>, off: usize },
}

/// A header, possibly chosen at run time.
#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) enum HdrRef {
    Fixed(usize),
    StackIdx { stack: usize, idx: Box<Expr> },
    UnionMember { un: Box<UnionRef>, member: usize },
}

#[derive(Clone, Debug)]
pub(crate) enum UnionRef {
    Fixed(usize),
}
