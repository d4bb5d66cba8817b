//! p4cc switch: p4rt
