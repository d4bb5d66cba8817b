//! p4cc switch: ports
