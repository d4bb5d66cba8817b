//! p4cc switch: the P4Runtime server of the embedded target.
//!
//! The protocol code is generated at build time from the descriptors the
//! installed Python `p4runtime` package carries (see build.rs); nothing of
//! the .proto files is copied into the repository.
pub mod proto {
    #![allow(clippy::all, missing_docs, rustdoc::all)]
    pub mod p4 {
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/p4.v1.rs"));
        }
        pub mod config {
            pub mod v1 {
                include!(concat!(env!("OUT_DIR"), "/p4.config.v1.rs"));
            }
        }
    }
    pub mod google {
        pub mod rpc {
            include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
        }
    }
}

pub mod arbitration;
pub mod binding;
pub mod bytes;
pub mod entities;
#[doc(hidden)]
pub mod fixture;
pub mod installed;
pub mod server;

pub use server::{build_from_json, build_pipeline, P4RuntimeService, PacketOutFrame, Pipeline, PipelineSlot};
