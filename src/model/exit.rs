//! Named exit codes: the one place the process status contract of DESIGN.md lives.
//!
//! CI systems branch on these numbers, so they are constants with documentation rather than
//! literals scattered through the command handlers. When a command has several outcomes at
//! once (a benchmark failed *and* the verdict says no baseline), [`ExitStatus::combine`] picks
//! the one that is reported, so every handler follows the same precedence.

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
    /// `kgate bisect`: a regression of BAD against GOOD was reproduced and located (a commit,
    /// or a range where commits were skipped or stayed inconclusive): the gate's "regression".
    pub const BISECT_FOUND: u8 = Self::REGRESSION;
    /// `kgate bisect`: BAD does not regress against GOOD, so there is nothing to locate: the
    /// gate's "pass".
    pub const BISECT_NOT_REPRODUCED: u8 = Self::PASS;
    /// `kgate bisect`: BAD against GOOD stayed inconclusive for some benchmark and none
    /// regressed: neither reproduced nor ruled out (the gate's "inconclusive", whatever
    /// `fail_on_inconclusive` says: a bisect has nothing to pass).
    pub const BISECT_UNDECIDED: u8 = Self::INCONCLUSIVE;
    /// `kgate bisect`: GOOD or BAD could not be built or run, or git failed.
    pub const BISECT_ERROR: u8 = Self::ERROR;
    /// Interrupted by SIGINT (Ctrl-C); nothing was written (128 + 2, as shells report it).
    pub const INTERRUPTED: u8 = 130;
    /// Terminated by SIGTERM (a CI job cancelled, `kill`, a timeout); nothing was written
    /// (128 + 15, as shells report it).
    pub const TERMINATED: u8 = 143;
    /// Hung up (SIGHUP: the terminal went away); nothing was written (128 + 1).
    pub const HUNG_UP: u8 = 129;

    /// The status of a run stopped by signal `signal`: 128 + its number, as a shell reports a
    /// process the signal killed.
    pub fn of_signal(signal: i32) -> u8 {
        match signal {
            1 => Self::HUNG_UP,
            15 => Self::TERMINATED,
            _ => Self::INTERRUPTED,
        }
    }

    /// The status to exit with when a command has two outcomes: the one that takes precedence.
    ///
    /// Precedence, strongest first: interrupted (by any signal), error, regression, no baseline,
    /// inconclusive, pass. An error wins over every verdict (DESIGN.md's contract: a gate that
    /// could not run a benchmark must not report that benchmark's absence as a verdict). Note that
    /// the numeric order is not the precedence (`4 > 2`), so `max` is wrong here. A code outside
    /// the documented set counts as an error.
    pub fn combine(a: u8, b: u8) -> u8 {
        if Self::rank(b) > Self::rank(a) { b } else { a }
    }

    fn rank(code: u8) -> u8 {
        match code {
            Self::PASS => 0,
            Self::INCONCLUSIVE => 1,
            Self::NO_BASELINE => 2,
            Self::REGRESSION => 3,
            Self::INTERRUPTED | Self::TERMINATED | Self::HUNG_UP => 5,
            _ => 4, // ERROR and anything undocumented
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ExitStatus as E;

    #[test]
    fn an_error_wins_over_every_verdict_in_either_order() {
        for verdict in [E::PASS, E::REGRESSION, E::INCONCLUSIVE, E::NO_BASELINE] {
            assert_eq!(E::combine(E::ERROR, verdict), E::ERROR);
            assert_eq!(E::combine(verdict, E::ERROR), E::ERROR);
            assert_eq!(E::combine(verdict, verdict), verdict);
            assert_eq!(E::combine(verdict, E::PASS), verdict);
            assert_eq!(E::combine(E::INTERRUPTED, verdict), E::INTERRUPTED);
        }
        assert_eq!(E::combine(E::INCONCLUSIVE, E::REGRESSION), E::REGRESSION);
        assert_eq!(E::combine(E::NO_BASELINE, E::INCONCLUSIVE), E::NO_BASELINE);
        assert_eq!(E::combine(E::INTERRUPTED, E::ERROR), E::INTERRUPTED);
        assert_eq!(E::combine(E::ERROR, E::TERMINATED), E::TERMINATED);
        assert_eq!(E::combine(E::REGRESSION, E::HUNG_UP), E::HUNG_UP);
    }

    #[test]
    fn a_signal_exits_128_plus_its_number() {
        assert_eq!(E::of_signal(libc::SIGINT), 130);
        assert_eq!(E::of_signal(libc::SIGTERM), 143);
        assert_eq!(E::of_signal(libc::SIGHUP), 129);
    }
}
