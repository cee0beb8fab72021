//! A trace's counter tracks as the formats read them: each counter's name once, then its
//! readings' times and values in two arrays.
//!
//! A trace can hold millions of readings of a few dozen counters. Kept one tuple per reading,
//! each with its own copy of the counter's name, they cost about 250 bytes a reading; kept as
//! tracks they cost the 16 bytes of their time and value, and a track moves into the results
//! as it is (a [`crate::model::results::CounterSeries`]) without being copied.

use rustc_hash::FxHashMap;

/// One counter's readings in one file, in arrival order until [`CounterTracks::sort`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CounterTrack {
    pub name: String,
    /// Each reading's time, in nanoseconds from the file's origin.
    pub t_ns: Vec<f64>,
    /// Each reading's value, in the order of `t_ns`.
    pub values: Vec<f64>,
}

impl CounterTrack {
    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }

    /// The readings (time, value), in order.
    pub fn readings(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.t_ns.iter().copied().zip(self.values.iter().copied())
    }
}

/// The counter tracks of a file (or of a piece of one), in order of first reading.
#[derive(Debug, Default, Clone)]
pub struct CounterTracks {
    tracks: Vec<CounterTrack>,
    index: FxHashMap<String, usize>,
}

impl PartialEq for CounterTracks {
    fn eq(&self, other: &CounterTracks) -> bool {
        self.tracks == other.tracks
    }
}

impl CounterTracks {
    /// Adds a reading to the track of that name; the name is copied only for a new track.
    pub fn push(&mut self, name: &str, t_ns: f64, value: f64) {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                self.index.insert(name.to_string(), self.tracks.len());
                self.tracks.push(CounterTrack {
                    name: name.to_string(),
                    ..CounterTrack::default()
                });
                self.tracks.len() - 1
            }
        };
        let track = &mut self.tracks[i];
        track.t_ns.push(t_ns);
        track.values.push(value);
    }

    /// Appends another set's readings after this one's, track by track (the readings of a
    /// later piece of the same file).
    pub fn append(&mut self, other: CounterTracks) {
        for track in other.tracks {
            match self.index.get(&track.name) {
                Some(&i) => {
                    let mine = &mut self.tracks[i];
                    mine.t_ns.extend(track.t_ns);
                    mine.values.extend(track.values);
                }
                None => {
                    self.index.insert(track.name.clone(), self.tracks.len());
                    self.tracks.push(track);
                }
            }
        }
    }

    /// Moves every reading's time by `by` nanoseconds.
    pub fn shift(&mut self, by: f64) {
        for t in self.tracks.iter_mut().flat_map(|t| t.t_ns.iter_mut()) {
            *t += by;
        }
    }

    /// The total number of readings.
    pub fn len(&self) -> usize {
        self.tracks.iter().map(CounterTrack::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.tracks.iter().all(CounterTrack::is_empty)
    }

    pub fn tracks(&self) -> &[CounterTrack] {
        &self.tracks
    }

    pub fn into_tracks(self) -> Vec<CounterTrack> {
        self.tracks
    }

    /// The track of that name.
    pub fn track(&self, name: &str) -> Option<&CounterTrack> {
        self.index.get(name).map(|&i| &self.tracks[i])
    }

    /// Every reading (name, time, value), track by track.
    pub fn readings(&self) -> impl Iterator<Item = (&str, f64, f64)> {
        self.tracks.iter().flat_map(|t| {
            t.readings()
                .map(move |(time, v)| (t.name.as_str(), time, v))
        })
    }

    /// The earliest finite time of any reading.
    pub fn earliest(&self) -> Option<f64> {
        self.tracks
            .iter()
            .flat_map(|t| t.t_ns.iter().copied())
            .filter(|t| t.is_finite())
            .reduce(f64::min)
    }

    /// Leaves out readings whose time or value is not a finite number (Python's json writes
    /// NaN and infinities) and returns how many each counter lost, by name.
    pub fn retain_finite(&mut self) -> Vec<(String, usize)> {
        let mut lost = Vec::new();
        for track in &mut self.tracks {
            let before = track.len();
            if track
                .readings()
                .all(|(t, v)| t.is_finite() && v.is_finite())
            {
                continue;
            }
            let (mut t_ns, mut values) = (Vec::new(), Vec::new());
            for (t, v) in track.readings() {
                if t.is_finite() && v.is_finite() {
                    t_ns.push(t);
                    values.push(v);
                }
            }
            track.t_ns = t_ns;
            track.values = values;
            lost.push((track.name.clone(), before - track.len()));
        }
        lost
    }

    /// Frees what each track's arrays hold beyond their readings (the slack a growing vector
    /// keeps, up to as much again).
    pub fn shrink_to_fit(&mut self) {
        for track in &mut self.tracks {
            track.t_ns.shrink_to_fit();
            track.values.shrink_to_fit();
        }
    }

    /// Puts each track's readings in time order (a stable sort: readings at one time keep
    /// their arrival order). Tracks already in order, as most are, are left as they are.
    pub fn sort(&mut self) {
        for track in &mut self.tracks {
            if track.t_ns.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
                continue;
            }
            let mut order: Vec<u32> = (0..track.len() as u32).collect();
            order.sort_by(|&a, &b| track.t_ns[a as usize].total_cmp(&track.t_ns[b as usize]));
            track.t_ns = order.iter().map(|&i| track.t_ns[i as usize]).collect();
            track.values = order.iter().map(|&i| track.values[i as usize]).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_gather_by_name_keep_order_and_sort_stably() {
        let mut a = CounterTracks::default();
        a.push("x", 3.0, 30.0);
        a.push("y", 1.0, 10.0);
        a.push("x", 1.0, 11.0);
        let mut later = CounterTracks::default();
        later.push("z", 0.0, 0.5);
        later.push("x", 1.0, 12.0);
        later.shift(0.0);
        a.append(later);
        assert_eq!(a.len(), 5);
        let names: Vec<&str> = a.tracks().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "z"]);
        a.sort();
        let x: Vec<(f64, f64)> = a.track("x").unwrap().readings().collect();
        assert_eq!(x, [(1.0, 11.0), (1.0, 12.0), (3.0, 30.0)]);
        assert_eq!(a.earliest(), Some(0.0));
    }

    #[test]
    fn non_finite_readings_are_left_out_and_counted() {
        let mut a = CounterTracks::default();
        a.push("x", 1.0, f64::NAN);
        a.push("x", 2.0, 2.0);
        a.push("x", f64::INFINITY, 3.0);
        a.push("y", 1.0, 1.0);
        assert_eq!(a.retain_finite(), [("x".to_string(), 2)]);
        assert_eq!(
            a.readings().collect::<Vec<_>>(),
            [("x", 2.0, 2.0), ("y", 1.0, 1.0)]
        );
    }
}
