//! The repetition each sample of a metric was measured in, held as a count while each value is
//! its own repetition in order (value i measured in repetition i), which is what almost every
//! capture and every Nsight Compute launch gives.
//!
//! A results file already leaves such numbers out; holding them in memory as well cost an
//! import of 16,000 counters x 1,000 launches 64 MB of the 251 MB it peaked at, and a
//! comparison 4 bytes of every 12 a sample took. The numbers are written out only when a
//! repetition breaks the pattern (several samples per repetition, a metric missing from some).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Repetition numbers, one per value of a metric. Equal lists are equal values whichever way
/// they were built: a listed run of `0, 1, …, n-1` is held as the count `n`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepetitionNumbers {
    /// How many numbers there are.
    len: usize,
    /// The numbers, or nothing while they are `0..len`.
    listed: Vec<u32>,
}

impl RepetitionNumbers {
    /// `0..len`: each of `len` values its own repetition.
    pub fn one_per_value(len: usize) -> RepetitionNumbers {
        RepetitionNumbers {
            len,
            listed: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether number i is i for every i (true of no numbers at all).
    pub fn is_one_per_value(&self) -> bool {
        self.listed.is_empty()
    }

    /// Number `i`, when there is one.
    pub fn get(&self, i: usize) -> Option<u32> {
        if i >= self.len {
            None
        } else if self.listed.is_empty() {
            u32::try_from(i).ok()
        } else {
            Some(self.listed[i])
        }
    }

    /// The numbers in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        (0..self.len).map(move |i| {
            if self.listed.is_empty() {
                i as u32
            } else {
                self.listed[i]
            }
        })
    }

    /// Appends a number.
    pub fn push(&mut self, repetition: u32) {
        if self.listed.is_empty() && repetition as usize == self.len {
            self.len += 1;
            return;
        }
        self.list();
        self.listed.push(repetition);
        self.len += 1;
    }

    /// Appends numbers in order; a run that goes on counting stays a count.
    pub fn extend(&mut self, repetitions: impl IntoIterator<Item = u32>) {
        let mut repetitions = repetitions.into_iter();
        if self.listed.is_empty() {
            for r in repetitions.by_ref() {
                if r as usize == self.len {
                    self.len += 1;
                } else {
                    self.push(r);
                    break;
                }
            }
        }
        for r in repetitions {
            self.listed.push(r);
            self.len += 1;
        }
    }

    /// Appends a run of numbers: one that counts on from where the count stands is added to
    /// the count without looking at each number again.
    pub fn extend_from_run(&mut self, run: &RepetitionRun<'_>) {
        if run.consecutive
            && self.listed.is_empty()
            && run.numbers.first().copied() == u32::try_from(self.len).ok()
        {
            self.len += run.numbers.len();
        } else {
            self.extend(run.numbers.iter().copied());
        }
    }

    /// Gives the numbers a count stood for their place in the list.
    fn list(&mut self) {
        if self.listed.is_empty() && self.len > 0 {
            self.listed = (0..self.len as u32).collect();
        }
    }

    /// Hands back room the list does not use.
    pub fn shrink_to_fit(&mut self) {
        self.listed.shrink_to_fit();
    }
}

/// Repetition numbers appended to many metrics alike (the launches of a tile of an import,
/// stored metric by metric): whether they count on is found once, when the run is made.
#[derive(Debug, Clone, Copy)]
pub struct RepetitionRun<'a> {
    numbers: &'a [u32],
    /// Each number one more than the one before.
    consecutive: bool,
}

impl<'a> RepetitionRun<'a> {
    pub fn new(numbers: &'a [u32]) -> RepetitionRun<'a> {
        let consecutive = numbers
            .windows(2)
            .all(|w| w[0].checked_add(1) == Some(w[1]));
        RepetitionRun {
            numbers,
            consecutive,
        }
    }

    pub fn len(&self) -> usize {
        self.numbers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }
}

impl From<Vec<u32>> for RepetitionNumbers {
    fn from(listed: Vec<u32>) -> RepetitionNumbers {
        let counting = listed.iter().enumerate().all(|(i, &r)| r as usize == i);
        RepetitionNumbers {
            len: listed.len(),
            listed: if counting { Vec::new() } else { listed },
        }
    }
}

impl FromIterator<u32> for RepetitionNumbers {
    fn from_iter<I: IntoIterator<Item = u32>>(numbers: I) -> RepetitionNumbers {
        let mut out = RepetitionNumbers::default();
        out.extend(numbers);
        out
    }
}

/// The numbers against a list of them (in tests and checks of an import's output).
impl PartialEq<[u32]> for RepetitionNumbers {
    fn eq(&self, other: &[u32]) -> bool {
        self.len == other.len() && self.iter().zip(other).all(|(a, &b)| a == b)
    }
}

impl PartialEq<Vec<u32>> for RepetitionNumbers {
    fn eq(&self, other: &Vec<u32>) -> bool {
        *self == other[..]
    }
}

impl<const N: usize> PartialEq<[u32; N]> for RepetitionNumbers {
    fn eq(&self, other: &[u32; N]) -> bool {
        *self == other[..]
    }
}

impl Serialize for RepetitionNumbers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for RepetitionNumbers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RepetitionNumbers, D::Error> {
        Vec::<u32>::deserialize(deserializer).map(RepetitionNumbers::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_and_its_list_are_the_same_numbers() {
        let listed: Vec<u32> = (0..5).collect();
        let counted = RepetitionNumbers::one_per_value(5);
        assert_eq!(RepetitionNumbers::from(listed.clone()), counted);
        assert!(counted.is_one_per_value());
        assert_eq!(counted.iter().collect::<Vec<_>>(), listed);
        assert_eq!((counted.get(4), counted.get(5)), (Some(4), None));
    }

    #[test]
    fn a_number_out_of_turn_lists_every_number() {
        let mut r = RepetitionNumbers::one_per_value(3);
        r.push(2);
        r.push(7);
        assert!(!r.is_one_per_value());
        assert_eq!(r.iter().collect::<Vec<_>>(), [0, 1, 2, 2, 7]);
        assert_eq!((r.len(), r.get(3), r.get(4)), (5, Some(2), Some(7)));

        let mut e = RepetitionNumbers::default();
        e.extend([0, 1, 1, 2]);
        assert_eq!(e.iter().collect::<Vec<_>>(), [0, 1, 1, 2]);
        assert_eq!(e, RepetitionNumbers::from(vec![0, 1, 1, 2]));
        let mut counting = RepetitionNumbers::default();
        counting.extend(0..4);
        counting.extend([4, 5]);
        assert!(counting.is_one_per_value());
        assert_eq!(counting.len(), 6);
    }

    #[test]
    fn a_run_that_counts_on_from_the_count_is_counted() {
        let mut r = RepetitionNumbers::default();
        r.extend_from_run(&RepetitionRun::new(&[0, 1, 2]));
        r.extend_from_run(&RepetitionRun::new(&[3, 4]));
        assert!(r.is_one_per_value());
        assert_eq!(r.len(), 5);
        // Counting on, but not from where the count stands: listed.
        r.extend_from_run(&RepetitionRun::new(&[9, 10]));
        assert_eq!(r, [0, 1, 2, 3, 4, 9, 10]);
        let mut s = RepetitionNumbers::one_per_value(2);
        s.extend_from_run(&RepetitionRun::new(&[2, 2, 3]));
        assert_eq!(s, [0, 1, 2, 2, 3]);
        let mut t = RepetitionNumbers::one_per_value(1);
        t.extend_from_run(&RepetitionRun::new(&[1, 3]));
        assert_eq!(t, [0, 1, 3]);
    }

    #[test]
    fn the_file_holds_the_numbers_either_way() {
        for numbers in [vec![], vec![0, 1, 2], vec![0, 0, 1], vec![3]] {
            let r = RepetitionNumbers::from(numbers.clone());
            let text = serde_json::to_string(&r).unwrap();
            assert_eq!(text, serde_json::to_string(&numbers).unwrap());
            assert_eq!(serde_json::from_str::<RepetitionNumbers>(&text).unwrap(), r);
        }
    }
}
