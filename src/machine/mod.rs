//! What machine and software a measurement came from: the fingerprint, accelerator
//! detection, and the environment key that decides which results may be compared.

pub mod accelerator;
pub mod envkey;
pub mod fingerprint;
