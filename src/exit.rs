//! Named exit codes: the one place the process status contract of DESIGN.md lives.
//!
//! CI systems branch on these numbers, so they are constants with documentation rather than
//! literals scattered through the command handlers.

/// Documented exit statuses of `kgate`.
pub enum ExitStatus {}

impl ExitStatus {
    /// Nothing regressed (improvements included).
    pub const PASS: u8 = 0;
    /// At least one gating metric regressed.
    pub const REGRESSION: u8 = 1;
    /// Configuration, input or tool error, or a benchmark that crashed, failed or timed out.
    pub const ERROR: u8 = 2;
    /// The evidence was inconclusive and the policy makes that fail (`fail_on_inconclusive`).
    pub const INCONCLUSIVE: u8 = 3;
    /// A baseline was required and none was found.
    pub const NO_BASELINE: u8 = 4;
    /// Interrupted by SIGINT or SIGTERM; nothing was written (128 + SIGINT, as shells report it).
    pub const INTERRUPTED: u8 = 130;
}
