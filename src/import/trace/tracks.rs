//! A trace's counter tracks as the formats read them: each counter's name once, then its
//! readings' times and values in two vectors.
//!
//! A trace can hold millions of readings of a few dozen counters. Kept one tuple per reading,
//! each with its own copy of the counter's name, they cost about 250 bytes a reading; kept as
//! tracks they cost the 16 bytes of their time and value (a track becomes a
//! [`crate::model::series::CounterSeries`]).

use rustc_hash::FxHashMap;

/// One counter's readings in one file, in arrival order.
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
#[derive(Debug, Clone, Default)]
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
    /// Returns the track's place, for [`CounterTracks::push_at`].
    pub fn push(&mut self, name: &str, t_ns: f64, value: f64) -> usize {
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
        self.push_at(i, t_ns, value);
        i
    }

    /// Adds a reading to the track at `place` (from [`CounterTracks::push`]).
    pub fn push_at(&mut self, place: usize, t_ns: f64, value: f64) {
        let track = &mut self.tracks[place];
        track.t_ns.push(t_ns);
        track.values.push(value);
    }

    /// Appends another set's readings after this one's, track by track (the readings of a
    /// later piece of the same file).
    pub fn append(&mut self, other: CounterTracks) {
        for mut track in other.tracks {
            match self.index.get(&track.name) {
                Some(&i) => {
                    let mine = &mut self.tracks[i];
                    mine.t_ns.append(&mut track.t_ns);
                    mine.values.append(&mut track.values);
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
        for track in &mut self.tracks {
            for t in &mut track.t_ns {
                *t += by;
            }
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
        let least = self.tracks.iter().filter_map(|t| super::least(&t.t_ns));
        least.reduce(f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_gather_by_name_and_keep_their_order() {
        let mut a = CounterTracks::default();
        a.push("x", 3.0, 30.0);
        a.push("y", 1.0, 10.0);
        a.push("x", 1.0, 11.0);
        let mut later = CounterTracks::default();
        later.push("z", 0.5, 0.5);
        later.push("x", 1.0, 12.0);
        later.shift(-0.5);
        a.append(later);
        assert_eq!(a.len(), 5);
        let names: Vec<&str> = a.tracks().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "z"]);
        let x: Vec<(f64, f64)> = a.track("x").unwrap().readings().collect();
        assert_eq!(x, [(3.0, 30.0), (1.0, 11.0), (0.5, 12.0)]);
        assert_eq!(a.earliest(), Some(0.0));
    }
}
