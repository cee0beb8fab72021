//! The search itself: which commit to measure next, and what the answers so far prove.
//!
//! It is a pure function over positions in a history and a step oracle, so that it can be
//! tested exhaustively without git or benchmarks. Position 0 is the known-good commit and
//! `last` the known-bad one; every position between is a candidate. As `git bisect` does, a
//! candidate that cannot be measured is skipped and a neighbour is tried instead; a candidate
//! whose measurement stays inconclusive is treated the same way, never guessed good or bad. The
//! answer is then a range rather than one commit when the undecided candidates sit next to the
//! boundary.

use std::collections::BTreeSet;

/// What one measurement of a candidate said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Not regressed against the known-good commit.
    Good,
    /// Regressed against the known-good commit.
    Bad,
    /// Measured, but the evidence stayed inconclusive after every planned repetition.
    Inconclusive,
    /// Could not be measured (the build or the benchmark failed).
    Skipped,
}

/// One measurement the search asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub position: usize,
    pub step: Step,
}

/// Where the first bad commit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The first bad commit: every commit before it that was asked is good, and the one just
    /// before it is good.
    Commit(usize),
    /// The first bad commit is one of `after + 1 ..= through`: `after` is good, `through` is
    /// bad, and every commit between them was skipped or inconclusive.
    Range { after: usize, through: usize },
}

/// The answer and the measurements that led to it, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    pub answer: Answer,
    pub probes: Vec<Probe>,
}

/// Binary search for the first bad position in `1 ..= last`, position 0 being good and `last`
/// bad. Each call of `oracle` measures one position; each position is asked at most once.
/// With every answer good or bad this takes at most ⌈log2(last)⌉ measurements.
pub fn bisect<E>(
    last: usize,
    mut oracle: impl FnMut(usize) -> Result<Step, E>,
) -> Result<Search, E> {
    let (mut good, mut bad) = (0usize, last.max(1));
    let mut undecided = BTreeSet::new();
    let mut probes = Vec::new();
    while let Some(position) = next(good, bad, &undecided) {
        let step = oracle(position)?;
        probes.push(Probe { position, step });
        match step {
            Step::Good => good = position,
            Step::Bad => bad = position,
            Step::Inconclusive | Step::Skipped => {
                undecided.insert(position);
            }
        }
    }
    let answer = if bad == good + 1 {
        Answer::Commit(bad)
    } else {
        Answer::Range {
            after: good,
            through: bad,
        }
    };
    Ok(Search { answer, probes })
}

/// The candidate to measure next: the one between `good` and `bad` not yet undecided that is
/// nearest the middle (the lower on a tie), as `git bisect skip` moves to a neighbour.
fn next(good: usize, bad: usize, undecided: &BTreeSet<usize>) -> Option<usize> {
    // Twice the middle, to compare distances without rounding.
    let middle2 = good + bad;
    (good + 1..bad)
        .filter(|p| !undecided.contains(p))
        .min_by_key(|&p| ((2 * p).abs_diff(middle2), p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An oracle that tells the truth for a first bad commit at `culprit`, except at the
    /// positions in `undecided`, where it says `instead`.
    fn truthful(
        culprit: usize,
        undecided: &[usize],
        instead: Step,
    ) -> impl FnMut(usize) -> Result<Step, ()> + '_ {
        move |p| {
            Ok(if undecided.contains(&p) {
                instead
            } else if p >= culprit {
                Step::Bad
            } else {
                Step::Good
            })
        }
    }

    #[test]
    fn every_culprit_of_every_history_is_found_in_at_most_log2_steps() {
        for last in 1..=40usize {
            let bound = (usize::BITS - (last - 1).leading_zeros()) as usize; // ⌈log2(last)⌉
            for culprit in 1..=last {
                let s = bisect(last, truthful(culprit, &[], Step::Skipped)).unwrap();
                assert_eq!(s.answer, Answer::Commit(culprit), "last {last}");
                let probes = s.probes.len();
                let at = (last, culprit);
                assert!(probes <= bound, "{at:?}: {probes} probes > {bound}");
                let mut seen: Vec<usize> = s.probes.iter().map(|p| p.position).collect();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), s.probes.len(), "a position asked twice");
            }
        }
        // Sixteen commits (GOOD and fifteen after it): four measurements, where a linear scan
        // from GOOD needs as many as the culprit's position.
        let s = bisect(15, truthful(11, &[], Step::Skipped)).unwrap();
        assert_eq!(s.answer, Answer::Commit(11));
        let positions: Vec<usize> = s.probes.iter().map(|p| p.position).collect();
        assert_eq!(positions, [7, 11, 9, 10]);
    }

    #[test]
    fn a_skipped_neighbour_is_stepped_around_and_a_skipped_boundary_gives_a_range() {
        // Skipped away from the boundary: still the commit.
        let s = bisect(15, truthful(11, &[7, 8], Step::Skipped)).unwrap();
        assert_eq!(s.answer, Answer::Commit(11));
        let (position, step) = (s.probes[0].position, s.probes[0].step);
        assert_eq!((position, step), (7, Step::Skipped));
        let nearest = "the neighbour nearest the middle (lower on a tie)";
        assert_eq!(s.probes[1].position, 8, "{nearest}");
        let range = |after, through| Answer::Range { after, through };
        // The commit just before the culprit cannot be built: git bisect's "only skipped
        // commits left", a range of the two.
        let s = bisect(15, truthful(11, &[10], Step::Skipped)).unwrap();
        assert_eq!(s.answer, range(9, 11));
        // The culprit itself stays inconclusive: a range, not a guess.
        let s = bisect(15, truthful(11, &[11], Step::Inconclusive)).unwrap();
        assert_eq!(s.answer, range(10, 12));
        // Nothing between the ends can be measured: the whole history.
        let s = bisect(6, |_| Ok::<_, ()>(Step::Skipped)).unwrap();
        assert_eq!(s.answer, range(0, 6));
        assert_eq!(s.probes.len(), 5);
        // Only GOOD and BAD: BAD without a measurement.
        let s = bisect(1, |_| -> Result<Step, ()> { panic!("nothing to ask") }).unwrap();
        assert_eq!(s.answer, Answer::Commit(1));
        assert!(s.probes.is_empty());
    }

    /// For every history up to 12 commits after GOOD, every culprit and every set of undecided
    /// positions: the answer contains the culprit, is the culprit itself when it is one commit,
    /// and is a range only across undecided positions.
    #[test]
    fn the_answer_always_holds_the_culprit_and_ranges_span_only_undecided_commits() {
        for last in 1..=12usize {
            for culprit in 1..=last {
                for mask in 0u32..(1 << (last - 1)) {
                    let undecided: Vec<usize> =
                        (1..last).filter(|p| mask & (1 << (p - 1)) != 0).collect();
                    for instead in [Step::Skipped, Step::Inconclusive] {
                        let s = bisect(last, truthful(culprit, &undecided, instead)).unwrap();
                        match s.answer {
                            Answer::Commit(c) => assert_eq!(c, culprit),
                            Answer::Range { after, through } => {
                                assert!(after < culprit && culprit <= through);
                                assert!(through - after >= 2);
                                for p in after + 1..through {
                                    assert!(undecided.contains(&p), "{p} in the range was decided");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn an_oracle_error_stops_the_search() {
        let mut asked = 0;
        let r = bisect(15, |p| {
            asked += 1;
            if p == 11 {
                Err("interrupted")
            } else {
                Ok(Step::Good)
            }
        });
        assert_eq!(r, Err("interrupted"));
        assert_eq!(asked, 2);
    }
}
