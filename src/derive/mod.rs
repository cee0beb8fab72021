//! Figures derived from raw counter readings: unit utilization inside kernel windows, from
//! a device profile's clocks and counters.

pub mod utilization;
pub mod windows;
