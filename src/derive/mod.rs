//! Figures derived from raw counter readings: unit utilization inside kernel windows, from
//! a device profile's clocks and counters.

mod formulas;
pub mod utilization;
pub mod windows;
