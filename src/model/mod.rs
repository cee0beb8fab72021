//! The vocabulary every stage shares, below all of them: metrics and units, verdicts, the
//! results and report files (the JSON contracts), the evidence behind a report, exit codes,
//! atomic writes, and how untrusted text is shown on a terminal. Nothing here decides or runs anything.

pub mod evidence;
pub mod exit;
pub mod fsutil;
pub mod metric;
pub mod profile;
pub mod protocol;
pub mod report;
pub mod results;
pub mod text;
pub mod units;
pub mod verdict;
