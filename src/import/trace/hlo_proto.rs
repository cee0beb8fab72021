//! The few messages of XLA's `xla/service/hlo.proto` that an XSpace's `/host:metadata` plane
//! carries in its "Hlo Proto" stats, as prost message types: enough to find a custom call's
//! `backend_config` (the cost estimate the compiler believed and the lowered kernel body).
//!
//! Only the fields kgate reads are declared; prost skips the others. Tags follow the upstream
//! file.

/// `xla.HloProto`: a module and its buffer assignment (not read).
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloProto {
    #[prost(message, optional, tag = "1")]
    pub hlo_module: Option<HloModuleProto>,
}

/// `xla.HloModuleProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloModuleProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub entry_computation_name: String,
    #[prost(message, repeated, tag = "3")]
    pub computations: Vec<HloComputationProto>,
}

/// `xla.HloComputationProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
}

/// `xla.HloInstructionProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloInstructionProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub opcode: String,
    #[prost(string, tag = "28")]
    pub custom_call_target: String,
    /// JSON for a Mosaic/Pallas TPU custom call: `{"custom_call_config": {"body": …,
    /// "cost_estimate": {…}}}`.
    #[prost(bytes = "vec", tag = "43")]
    pub backend_config: Vec<u8>,
}
