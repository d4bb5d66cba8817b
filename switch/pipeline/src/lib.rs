//! v1model pipeline engine for p4c-generated bmv2 JSON.
