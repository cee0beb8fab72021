//! Utilization derived from readings and launches held outside the results (a trace import's
//! columns), read a stretch of time at a time, so that deriving from a trace of gigabytes
//! holds a stretch of it, not all of it.
//!
//! The figures are those [`super::utilization::apply`] gives with every reading in memory,
//! number for number: each stretch is tallied by the same code, and no stretch splits a window
//! or a launch. A kernel's windows are read against the readings around its launches (the one
//! before, those inside, the one after: what
//! [`crate::model::results::RunResults::lent_counters`] lends). The counter series are read
//! once for all the kernels that borrow them, beside the launches of every kernel merged in
//! order of their start: each kernel copies the readings around its own launches as they are
//! read, and tallies what it copied once it holds its share of a stretch and none of its
//! launches waits for the reading after its end (every reading it kept then lies before its
//! next launch, so no window of that launch is split); its next stretch begins with the last
//! reading it kept, so each of its windows is in exactly one. A reading is let go once no
//! waiting launch and no launch to come can be around it. A benchmark whose arrays are not in
//! time order, that needs more than this reads (registers summed per time, counter passes, a
//! roofline from its own metrics), or a trace of many kernels and few readings, is not derived
//! here: the caller reads everything into memory instead.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io;

use super::utilization::{
    self, Launch, Options, SeriesPlan, Stretches, Tally, finish, import_options, tally_readings,
};
use super::windows::Readings;
use crate::model::held_arrays::{ArrayAt, Field, HeldArrays, ValueReader};
use crate::model::metric::ESTIMATE_SUFFIX;
use crate::model::results::{BenchmarkResult, CounterSeries, RunResults};

/// Readings a stretch holds before it may end (all series together): 1 MiB of them.
const STRETCH_READINGS: usize = 1 << 16;

/// Readings per kernel below which a trace is derived in memory: a kernel's state in a sweep
/// (its plan, tallies and what it keeps between tallies) costs about what 256 readings do in
/// memory, so a trace of many kernels and few readings (20,000 kernels of 3 launches) is
/// cheaper read whole.
const READINGS_PER_KERNEL: usize = 256;

/// Derives utilization for the benchmarks of `results` that the plan gives a device profile,
/// reading the arrays `held` keeps a stretch at a time. `Ok(false)`, with nothing changed,
/// when a benchmark cannot be derived this way: the caller then reads the arrays into memory
/// and uses [`utilization::apply_to_import`].
pub fn apply_to_held_import(
    results: &mut RunResults,
    held: &dyn HeldArrays,
    plan: &crate::plan::Plan,
) -> io::Result<bool> {
    let fallback = plan.benchmarks.iter().find_map(|b| b.device.as_ref());
    let declared = crate::model::by_name(&plan.benchmarks, |b| b.name.as_str());
    let derived: Vec<(usize, Options<'_>)> = results
        .benchmarks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((i, import_options(&b.name, &declared, fallback)?)))
        .collect();
    let sizes = Sizes {
        stretch: STRETCH_READINGS,
        readings_per_kernel: READINGS_PER_KERNEL,
    };
    let Some(outcomes) = derive_all(results, held, &derived, sizes)? else {
        return Ok(false);
    };
    for (i, outcome) in outcomes {
        outcome.record(&mut results.benchmarks[i]);
    }
    Ok(true)
}

/// How large a sweep's pieces are ([`STRETCH_READINGS`], [`READINGS_PER_KERNEL`]; tests cut
/// smaller).
#[derive(Debug, Clone, Copy)]
struct Sizes {
    stretch: usize,
    readings_per_kernel: usize,
}

/// The outcomes of the benchmarks `derived` names, with their settings, or `None` when one
/// cannot be derived from held arrays, or would better be derived in memory.
fn derive_all(
    results: &RunResults,
    held: &dyn HeldArrays,
    derived: &[(usize, Options<'_>)],
    sizes: Sizes,
) -> io::Result<Option<Vec<(usize, utilization::Outcome)>>> {
    let stretch = sizes.stretch;
    // Each benchmark by name, the first of a name (as a lookup of a lender finds it).
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, b) in results.benchmarks.iter().enumerate() {
        index.entry(b.name.as_str()).or_insert(i);
    }
    let mut counts = Counts::default();
    let mut outcomes = Vec::new();
    let mut borrowers = Vec::new();
    let mut own = Vec::new();
    for &(i, opts) in derived {
        let b = &results.benchmarks[i];
        let has = |name: &str| {
            b.metric(name).is_some() || b.metric(&format!("{name}{ESTIMATE_SUFFIX}")).is_some()
        };
        if !opts.passes.is_empty() || (has("flops") && has("bytes")) {
            return Ok(None);
        }
        if b.kernel_windows.is_empty() {
            own.push((i, opts));
        } else {
            match Borrower::new(results, &index, i, held, opts, &mut counts)? {
                Some(borrower) => borrowers.push(borrower),
                None => return Ok(None),
            }
        }
    }
    let lent_readings: usize = borrowers
        .iter()
        .flat_map(|b| b.windows.iter().map(|&(_, lender, _)| lender))
        .collect::<std::collections::BTreeSet<usize>>()
        .into_iter()
        .flat_map(|lender| {
            let counters = results.benchmarks[lender].counters.len();
            (0..counters).map(move |entry| (lender, entry))
        })
        .map(|(lender, entry)| {
            counts
                .0
                .get(&(lender, entry))
                .copied()
                .flatten()
                .unwrap_or(0)
        })
        .sum();
    if borrowers.len().saturating_mul(sizes.readings_per_kernel) > lent_readings {
        return Ok(None);
    }
    for (i, opts) in own {
        match own_series(&results.benchmarks[i], i, held, opts, stretch, &mut counts)? {
            Some(outcome) => outcomes.push((i, outcome)),
            None => return Ok(None),
        }
    }
    let plans: Vec<SeriesPlan<'_>> = borrowers
        .iter()
        .map(|b| SeriesPlan::new(&b.lent, b.opts))
        .collect();
    if !plans.iter().all(one_source_each) {
        return Ok(None);
    }
    let mut tallies: Vec<Vec<Tally>> = plans
        .iter()
        .map(|p| p.series.iter().map(|_| Tally::default()).collect())
        .collect();
    // The kernel windows that read each lender's repetition, read together.
    let mut groups: BTreeMap<(usize, u32), Vec<Member>> = BTreeMap::new();
    for (n, b) in borrowers.iter().enumerate() {
        for &(window, lender, repetition) in &b.windows {
            let series = b
                .lent_from
                .iter()
                .enumerate()
                .filter(|(_, at)| at.0 == window)
                .map(|(k, at)| {
                    let s = plans[n]
                        .series
                        .iter()
                        .position(|s| std::ptr::eq(s.sources[0], &b.lent[k]))
                        .expect("each lent series is in its borrower's plan");
                    (at.1, s)
                })
                .collect();
            groups
                .entry((lender, repetition))
                .or_default()
                .push(Member {
                    borrower: n,
                    window,
                    series,
                });
        }
    }
    for ((lender, repetition), members) in &groups {
        let sweep = Sweep {
            results,
            held,
            lender: *lender,
            repetition: *repetition,
            members,
            borrowers: &borrowers,
            plans: &plans,
            stretch,
        };
        sweep.run(&mut tallies, &mut counts)?;
    }
    for ((b, plan), tallies) in borrowers.iter().zip(&plans).zip(tallies) {
        outcomes.push((b.i, finish(&results.benchmarks[b.i], plan, tallies)));
    }
    // A derived metric that replaces one whose numbers are held would be written with them.
    let replaces_held = outcomes.iter().any(|(i, o)| {
        let b = &results.benchmarks[*i];
        o.metric_names().any(|name| {
            b.metrics.iter().enumerate().any(|(entry, m)| {
                m.name == name
                    && [Field::MetricValues, Field::MetricRepetition]
                        .iter()
                        .any(|&field| {
                            held.holds(&ArrayAt {
                                benchmark: *i,
                                entry,
                                field,
                            })
                        })
            })
        })
    });
    Ok((!replaces_held).then_some(outcomes))
}

/// A kernel's benchmark whose windows are read against another benchmark's series.
struct Borrower<'o> {
    i: usize,
    opts: Options<'o>,
    /// The lent series as `lent_counters` lends them (of the windows' repetition), without
    /// their readings: one per window with launches and lender series with readings.
    lent: Vec<CounterSeries>,
    /// Of each lent series: its kernel windows' entry and the lender's series entry.
    lent_from: Vec<(usize, usize)>,
    /// Its kernel windows with launches: entry, lender and the lender's repetition.
    windows: Vec<(usize, usize, u32)>,
}

impl<'o> Borrower<'o> {
    /// Benchmark `i`, or `None` when it cannot be read this way: it has series of its own,
    /// windows read against none or against itself, two windows of one repetition, or
    /// launches or readings out of time order.
    fn new(
        results: &RunResults,
        index: &HashMap<&str, usize>,
        i: usize,
        held: &dyn HeldArrays,
        opts: Options<'o>,
        counts: &mut Counts,
    ) -> io::Result<Option<Borrower<'o>>> {
        let b = &results.benchmarks[i];
        if !b.counters.is_empty() {
            return Ok(None);
        }
        let mut borrower = Borrower {
            i,
            opts,
            lent: Vec::new(),
            lent_from: Vec::new(),
            windows: Vec::new(),
        };
        let mut repetitions = std::collections::BTreeSet::new();
        for (k, w) in b.kernel_windows.iter().enumerate() {
            let Some(of) = &w.counters_of else {
                return Ok(None);
            };
            let Some(&lender) = index.get(of.benchmark.as_str()) else {
                return Ok(None);
            };
            if lender == i || !repetitions.insert(w.repetition) {
                return Ok(None);
            }
            match launches_in_order(held, i, k)? {
                None => return Ok(None),
                Some(0) => continue,
                Some(_) => {}
            }
            borrower.windows.push((k, lender, of.repetition));
            for (entry, series) in results.benchmarks[lender].counters.iter().enumerate() {
                if series.repetition != of.repetition {
                    continue;
                }
                match counts.count(held, lender, entry)? {
                    None => return Ok(None),
                    Some(0) => {}
                    Some(_) => {
                        borrower.lent.push(CounterSeries {
                            unit: series.unit.clone(),
                            bits: series.bits,
                            core: series.core,
                            sampling: series.sampling,
                            ..CounterSeries::new(&series.counter, w.repetition)
                        });
                        borrower.lent_from.push((k, entry));
                    }
                }
            }
        }
        Ok(Some(borrower))
    }
}

/// One kernel windows' part in a sweep: its borrower, its entry, and which series of its
/// borrower's plan each lender series is (by lender entry).
struct Member {
    borrower: usize,
    window: usize,
    series: Vec<(usize, usize)>,
}

/// Whether the plan can be read from one held series per entry: no key sums several.
fn one_source_each(plan: &SeriesPlan<'_>) -> bool {
    plan.series
        .iter()
        .all(|s| s.sources.len() == 1 && s.off_pass.is_none())
}

/// A time that orders as `f64::total_cmp` does.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Time(f64);

impl Eq for Time {}

impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Time {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The sweep of one lender's series of one repetition, for every kernel windows reading them.
struct Sweep<'a, 'o> {
    results: &'a RunResults,
    held: &'a dyn HeldArrays,
    lender: usize,
    repetition: u32,
    members: &'a [Member],
    borrowers: &'a [Borrower<'o>],
    plans: &'a [SeriesPlan<'a>],
    /// Readings the members keep, all together, before they tally them where they may.
    stretch: usize,
}

/// A lender series in a sweep: the readings read and not yet let go, by their index in the
/// series.
struct Shared<'h> {
    entry: usize,
    cursor: SeriesCursor<'h>,
    buffer: std::collections::VecDeque<(f64, f64)>,
    /// The index of `buffer[0]`.
    base: usize,
}

impl Shared<'_> {
    /// How many readings were read.
    fn read(&self) -> usize {
        self.base + self.buffer.len()
    }

    /// Reads the readings before `until`.
    fn read_before(&mut self, until: f64) -> io::Result<()> {
        while let Some(r) = self.cursor.next.filter(|r| r.0 < until) {
            self.buffer.push_back(r);
            self.cursor.advance()?;
        }
        Ok(())
    }

    /// The index of the first reading after `end` (the last reading when none is), once it
    /// is read. The search starts at index `from` and leaves it where it stopped, so that a
    /// launch waiting for many readings looks at each once.
    fn after(&self, end: f64, from: &mut usize) -> Option<usize> {
        let mut k = from.saturating_sub(self.base);
        while let Some(r) = self.buffer.get(k) {
            if r.0 > end {
                return Some(self.base + k);
            }
            k += 1;
        }
        *from = self.base + k;
        self.cursor
            .next
            .is_none()
            .then(|| self.read().saturating_sub(1))
    }

    /// Lets go of the readings before index `keep`.
    fn forget_before(&mut self, keep: usize) {
        while self.base < keep && !self.buffer.is_empty() {
            self.buffer.pop_front();
            self.base += 1;
        }
    }
}

/// A launch waiting for the reading after its end: per series, the index of the reading
/// before its start, and how far the search for the one after its end has come.
struct Waiting {
    start: f64,
    end: f64,
    before: Vec<usize>,
    searched: Vec<usize>,
}

/// What a member keeps between tallies.
#[derive(Default)]
struct Keeping {
    /// Its launches whose readings are not all read yet, in order of start.
    waiting: std::collections::VecDeque<Waiting>,
    /// The launches and, per series, the readings around them since its last tally.
    launches: Vec<(f64, f64)>,
    kept: Vec<Vec<(f64, f64)>>,
    /// Per series, the index of the last reading it kept.
    last: Vec<Option<usize>>,
    /// Per series, the last reading of its last tally (the first of its next).
    carry: Vec<Option<(f64, f64)>>,
}

impl Sweep<'_, '_> {
    fn run(&self, tallies: &mut [Vec<Tally>], counts: &mut Counts) -> io::Result<()> {
        let mut series: Vec<Shared<'_>> = Vec::new();
        for (entry, s) in self.results.benchmarks[self.lender]
            .counters
            .iter()
            .enumerate()
        {
            if s.repetition == self.repetition
                && counts.count(self.held, self.lender, entry)? > Some(0)
            {
                series.push(Shared {
                    entry,
                    cursor: SeriesCursor::open(self.held, self.lender, entry)?,
                    buffer: std::collections::VecDeque::new(),
                    base: 0,
                });
            }
        }
        if series.is_empty() {
            return Ok(());
        }
        // Each member's launches, the next of each in a heap by start.
        let mut launches = Vec::with_capacity(self.members.len());
        let mut heap = BinaryHeap::new();
        for (m, member) in self.members.iter().enumerate() {
            let i = self.borrowers[member.borrower].i;
            let (Some(mut starts), Some(mut ends)) = (
                reader(self.held, i, member.window, Field::WindowStarts),
                reader(self.held, i, member.window, Field::WindowEnds),
            ) else {
                return Err(io::Error::other(
                    "held kernel windows were let go while read",
                ));
            };
            if let (Some(s), Some(e)) = (starts.next()?, ends.next()?) {
                heap.push(Reverse((Time(s), m, Time(e))));
            }
            launches.push((starts, ends));
        }
        let n = series.len();
        let entries: Vec<usize> = series.iter().map(|s| s.entry).collect();
        let mut keeping: Vec<Keeping> = (0..self.members.len())
            .map(|_| Keeping {
                kept: vec![Vec::new(); n],
                last: vec![None; n],
                carry: vec![None; n],
                ..Keeping::default()
            })
            .collect();
        // The members with launches waiting.
        let mut busy: Vec<usize> = Vec::new();
        // Readings a member keeps before it tallies them: the stretch shared among them.
        let share = (self.stretch / self.members.len()).max(1);
        loop {
            let next = heap.peek().map(|Reverse((s, _, _))| s.0);
            for s in &mut series {
                s.read_before(next.unwrap_or(f64::INFINITY))?;
            }
            busy.retain(|&m| {
                self.take_read(&series, &mut keeping[m]);
                !keeping[m].waiting.is_empty()
            });
            let Some(start) = next else { break };
            let Reverse((_, m, Time(end))) = heap.pop().expect("peeked");
            let before: Vec<usize> = series.iter().map(|s| s.read().saturating_sub(1)).collect();
            let k = &mut keeping[m];
            // With none of its launches waiting, every reading the member kept was read
            // before this launch started (the last of them at most the one before it), so no
            // window inside this launch is among them: it may tally them now.
            let kept: usize = k.kept.iter().map(Vec::len).sum();
            if k.waiting.is_empty() && !k.launches.is_empty() && kept >= share {
                self.tally(m, &entries, k, tallies);
            }
            if k.waiting.is_empty() {
                busy.push(m);
            }
            k.waiting.push_back(Waiting {
                start,
                end,
                searched: before.clone(),
                before,
            });
            // Readings before every waiting launch's and the next launch's are let go.
            for (j, s) in series.iter_mut().enumerate() {
                let keep = busy
                    .iter()
                    .filter_map(|&m| keeping[m].waiting.front().map(|w| w.before[j]))
                    .min()
                    .unwrap_or(usize::MAX)
                    .min(s.read().saturating_sub(1));
                s.forget_before(keep);
            }
            let (starts, ends) = &mut launches[m];
            if let (Some(s), Some(e)) = (starts.next()?, ends.next()?) {
                heap.push(Reverse((Time(s), m, Time(e))));
            }
        }
        for (m, k) in keeping.iter_mut().enumerate() {
            if !k.launches.is_empty() {
                self.tally(m, &entries, k, tallies);
            }
        }
        Ok(())
    }

    /// Moves the member's waiting launches whose readings are all read (in order of start)
    /// to its launches, with the readings around them.
    fn take_read(&self, series: &[Shared<'_>], k: &mut Keeping) {
        while let Some(w) = k.waiting.front_mut() {
            let mut after = Vec::with_capacity(series.len());
            for (s, searched) in series.iter().zip(&mut w.searched) {
                match s.after(w.end, searched) {
                    Some(a) => after.push(a),
                    None => return,
                }
            }
            for (j, s) in series.iter().enumerate() {
                let from = match k.last[j] {
                    Some(i) => w.before[j].max(i + 1),
                    None => w.before[j],
                };
                for i in from..=after[j].max(w.before[j]) {
                    let r = s.buffer[i - s.base];
                    k.kept[j].push(r);
                    k.last[j] = Some(i);
                }
            }
            k.launches.push((w.start, w.end));
            k.waiting.pop_front();
        }
    }

    /// Tallies what member `m` kept since its last tally: per series, the readings around its
    /// launches after the last one it kept before.
    fn tally(&self, m: usize, entries: &[usize], k: &mut Keeping, tallies: &mut [Vec<Tally>]) {
        let member = &self.members[m];
        let borrower = &self.borrowers[member.borrower];
        let plan = &self.plans[member.borrower];
        let w = &self.results.benchmarks[borrower.i].kernel_windows[member.window];
        let mut kept: Vec<(usize, CounterSeries)> = Vec::new();
        for ((entry, readings), carry) in entries.iter().zip(&mut k.kept).zip(&mut k.carry) {
            let around: Vec<(f64, f64)> = (*carry).into_iter().chain(readings.drain(..)).collect();
            *carry = around.last().copied();
            // A series the plan leaves out (a register the profile has no key for) is kept
            // only to be let go here.
            if let Some(&(_, s)) = member.series.iter().find(|(e, _)| e == entry) {
                kept.push((s, stretch_series(plan.series[s].sources[0], &around)));
            }
        }
        let mut readings: Vec<Option<Readings<'_>>> = plan.series.iter().map(|_| None).collect();
        for (s, series) in &kept {
            readings[*s] = Some(Readings::gather(&[series]));
        }
        let launches: BTreeMap<u32, Vec<Launch<'_>>> = BTreeMap::from([(
            w.repetition,
            k.launches
                .drain(..)
                .map(|(start, end)| (w.kernel.as_str(), start, end))
                .collect(),
        )]);
        tally_readings(
            plan,
            readings,
            &launches,
            &mut tallies[member.borrower],
            Stretches::Many,
        );
    }
}

/// A held array's reader, or `None` when it is not held.
fn reader<'h>(
    held: &'h dyn HeldArrays,
    benchmark: usize,
    entry: usize,
    field: Field,
) -> Option<Box<dyn ValueReader + 'h>> {
    held.values(&ArrayAt {
        benchmark,
        entry,
        field,
    })
}

/// [`count_in_order`] of each series asked about, once: every kernel of a trace reads the
/// same counters benchmark.
#[derive(Default)]
struct Counts(std::collections::HashMap<(usize, usize), Option<usize>>);

impl Counts {
    fn count(
        &mut self,
        held: &dyn HeldArrays,
        benchmark: usize,
        entry: usize,
    ) -> io::Result<Option<usize>> {
        if let Some(&n) = self.0.get(&(benchmark, entry)) {
            return Ok(n);
        }
        let n = count_in_order(held, benchmark, entry)?;
        self.0.insert((benchmark, entry), n);
        Ok(n)
    }
}

/// How many readings a held series has, when they are in time order (`None` otherwise, or
/// when it is not held).
fn count_in_order(
    held: &dyn HeldArrays,
    benchmark: usize,
    entry: usize,
) -> io::Result<Option<usize>> {
    let fields = (Field::SeriesTimes, Field::SeriesValues);
    count_pairs(held, benchmark, entry, fields, |_, _| true)
}

/// How many pairs two held arrays of one entry hold (`fields`: a series' times and values, or
/// kernel windows' starts and ends), when the arrays are as long as each other, each pair is
/// `fit`, and the first numbers never decrease (`None` otherwise, or when not held).
fn count_pairs(
    held: &dyn HeldArrays,
    benchmark: usize,
    entry: usize,
    fields: (Field, Field),
    fit: impl Fn(f64, f64) -> bool,
) -> io::Result<Option<usize>> {
    let (Some(mut firsts), Some(mut seconds)) = (
        reader(held, benchmark, entry, fields.0),
        reader(held, benchmark, entry, fields.1),
    ) else {
        return Ok(None);
    };
    let (mut n, mut previous) = (0usize, f64::NEG_INFINITY);
    loop {
        match (firsts.next()?, seconds.next()?) {
            (Some(a), Some(b)) => {
                if !fit(a, b) || a.total_cmp(&previous).is_lt() {
                    return Ok(None);
                }
                previous = a;
                n += 1;
            }
            (None, None) => return Ok(Some(n)),
            _ => return Ok(None),
        }
    }
}

/// A series' readings read in order, with the next one looked at before it is taken.
struct SeriesCursor<'h> {
    times: Box<dyn ValueReader + 'h>,
    values: Box<dyn ValueReader + 'h>,
    next: Option<(f64, f64)>,
    /// The stretch's readings so far.
    kept: Vec<(f64, f64)>,
}

impl<'h> SeriesCursor<'h> {
    fn open(held: &'h dyn HeldArrays, benchmark: usize, entry: usize) -> io::Result<Self> {
        let held_series = |field| {
            reader(held, benchmark, entry, field)
                .ok_or_else(|| io::Error::other("a held series was let go while read"))
        };
        let mut cursor = SeriesCursor {
            times: held_series(Field::SeriesTimes)?,
            values: held_series(Field::SeriesValues)?,
            next: None,
            kept: Vec::new(),
        };
        cursor.advance()?;
        Ok(cursor)
    }

    fn advance(&mut self) -> io::Result<()> {
        self.next = match (self.times.next()?, self.values.next()?) {
            (Some(t), Some(v)) => Some((t, v)),
            _ => None,
        };
        Ok(())
    }

    /// Keeps every reading up to `until` (inclusive).
    fn keep_until(&mut self, until: f64) -> io::Result<()> {
        while let Some(r) = self.next.filter(|r| r.0 <= until) {
            self.kept.push(r);
            self.advance()?;
        }
        Ok(())
    }

    /// Ends the stretch: the next begins with its last reading.
    fn carry(&mut self) {
        let last = self.kept.last().copied();
        self.kept.clear();
        self.kept.extend(last);
    }
}

/// A series of the stretch as [`Readings`] read it: `like`'s name, unit and width with the
/// stretch's readings.
fn stretch_series(like: &CounterSeries, kept: &[(f64, f64)]) -> CounterSeries {
    CounterSeries {
        unit: like.unit.clone(),
        bits: like.bits,
        core: like.core,
        sampling: like.sampling,
        t_ns: kept.iter().map(|r| r.0).collect(),
        value: kept.iter().map(|r| r.1).collect(),
        ..CounterSeries::new(&like.counter, like.repetition)
    }
}

/// Tallies one stretch: the kept readings of `cursors` (by plan index) and `launches`.
fn tally_stretch(
    plan: &SeriesPlan<'_>,
    cursors: &[(usize, SeriesCursor<'_>)],
    launches: &BTreeMap<u32, Vec<Launch<'_>>>,
    tallies: &mut [Tally],
) {
    let series: Vec<(usize, CounterSeries)> = cursors
        .iter()
        .map(|(s, c)| (*s, stretch_series(plan.series[*s].sources[0], &c.kept)))
        .collect();
    let mut readings: Vec<Option<Readings<'_>>> = plan.series.iter().map(|_| None).collect();
    for (s, stretch) in &series {
        readings[*s] = Some(Readings::gather(&[stretch]));
    }
    tally_readings(plan, readings, launches, tallies, Stretches::Many);
}

/// A benchmark without kernel windows (a trace's counters benchmark): each series over all
/// its windows, stretch after stretch of time.
fn own_series(
    b: &BenchmarkResult,
    i: usize,
    held: &dyn HeldArrays,
    opts: Options<'_>,
    stretch: usize,
    in_order: &mut Counts,
) -> io::Result<Option<utilization::Outcome>> {
    let mut counts = Vec::with_capacity(b.counters.len());
    for entry in 0..b.counters.len() {
        match in_order.count(held, i, entry)? {
            Some(n) => counts.push(n),
            None => return Ok(None),
        }
    }
    let plan = SeriesPlan::new(&b.counters, opts);
    if !one_source_each(&plan) {
        return Ok(None);
    }
    let entry_of = |s: usize| {
        let source = plan.series[s].sources[0];
        b.counters
            .iter()
            .position(|c| std::ptr::eq(c, source))
            .expect("the plan's series are the benchmark's")
    };
    let mut tallies: Vec<Tally> = plan.series.iter().map(|_| Tally::default()).collect();
    let reps: std::collections::BTreeSet<u32> = plan.series.iter().map(|s| s.rep).collect();
    let no_launches = BTreeMap::new();
    for rep in reps {
        let mut cursors = Vec::new();
        for s in (0..plan.series.len()).filter(|&s| plan.series[s].rep == rep) {
            cursors.push((s, SeriesCursor::open(held, i, entry_of(s))?));
        }
        // Stretches end at the time of the densest series' next so many readings.
        let densest = (0..cursors.len())
            .max_by_key(|&k| counts[entry_of(cursors[k].0)])
            .unwrap_or(0);
        loop {
            let until = {
                let c = &mut cursors[densest].1;
                let mut until = None;
                while c.kept.len() < stretch
                    && let Some(r) = c.next
                {
                    c.kept.push(r);
                    c.advance()?;
                    until = Some(r.0);
                }
                until
            };
            let Some(until) = until else {
                // The densest series is read to its end: the rest of the others.
                for (_, c) in &mut cursors {
                    c.keep_until(f64::INFINITY)?;
                }
                tally_stretch(&plan, &cursors, &no_launches, &mut tallies);
                break;
            };
            for (_, c) in &mut cursors {
                c.keep_until(until)?;
            }
            tally_stretch(&plan, &cursors, &no_launches, &mut tallies);
            for (_, c) in &mut cursors {
                c.carry();
            }
        }
    }
    Ok(Some(finish(b, &plan, tallies)))
}

/// How many launches kernel windows `k` of benchmark `i` hold, when each ends no earlier
/// than it starts and they start in time order (`None` otherwise, or when not held).
fn launches_in_order(held: &dyn HeldArrays, i: usize, k: usize) -> io::Result<Option<usize>> {
    let fields = (Field::WindowStarts, Field::WindowEnds);
    count_pairs(held, i, k, fields, |s, e| {
        s.is_finite() && e.is_finite() && s <= e
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::held_arrays::{Number, SliceReader};
    use crate::model::results::{CountersOf, KernelWindows};
    use std::collections::HashMap;

    /// Arrays held in memory by place, read as a trace import's columns are.
    struct InMemory(HashMap<ArrayAt, Vec<f64>>);

    impl HeldArrays for InMemory {
        fn holds(&self, at: &ArrayAt) -> bool {
            self.0.contains_key(at)
        }

        fn places(&self) -> Vec<ArrayAt> {
            self.0.keys().copied().collect()
        }

        fn stored(&self, at: &ArrayAt) -> usize {
            self.0.get(at).map_or(0, Vec::len)
        }

        fn emit_part(
            &self,
            at: &ArrayAt,
            range: std::ops::Range<usize>,
            emit: &mut dyn FnMut(Number) -> io::Result<()>,
        ) -> io::Result<()> {
            let values = self.0.get(at).map_or(&[][..], Vec::as_slice);
            for &v in values.get(range).unwrap_or(&[]) {
                emit(Number::Value(v))?;
            }
            Ok(())
        }

        fn values(&self, at: &ArrayAt) -> Option<Box<dyn ValueReader + '_>> {
            Some(Box::new(SliceReader(self.0.get(at)?)))
        }
    }

    /// xorshift64*: the same cases on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A trace import's results: a counters benchmark whose series (a cycle counter, busy
    /// counters, a memory counter and a counter of no key, read at shared or their own
    /// times, cumulative with wrap-arounds) the kernels' launches (overlapping, touching,
    /// before the first reading and after the last, of no length) are read against, in one
    /// or two repetitions.
    fn random_run(rng: &mut Rng) -> RunResults {
        let reps = 1 + rng.below(2) as u32;
        let mut counters = BenchmarkResult::new("counters", Default::default());
        let shared_times = rng.below(2) == 0;
        let names = [
            ("cycle_count", Some(32u8)),
            ("mxu_busy_0", Some(32)),
            ("COUNT_XLU_BUSY_1", None),
            ("hbm_rd_beats", None),
            ("other", None),
        ];
        let mut kernels: Vec<BenchmarkResult> = (1..=1 + rng.below(5))
            .map(|k| BenchmarkResult::new(&format!("k{k}"), Default::default()))
            .collect();
        for rep in 0..reps {
            let n = 1 + rng.below(60) as usize;
            let grid: Vec<f64> = {
                let mut t = 1_000.0 * rng.below(5) as f64;
                (0..n)
                    .map(|_| {
                        t += [0.0, 500.0, 1_000.0, 1_000.0, 3_000.0][rng.below(5) as usize];
                        t
                    })
                    .collect()
            };
            for (name, bits) in names {
                let times: Vec<f64> = if shared_times {
                    grid.clone()
                } else {
                    let mut t = 0.0;
                    (0..1 + rng.below(60))
                        .map(|_| {
                            t += 250.0 * rng.below(9) as f64;
                            t
                        })
                        .collect()
                };
                let mut v: u64 = rng.below(1 << 31);
                let values: Vec<f64> = times
                    .iter()
                    .map(|_| {
                        v = (v + rng.below(if name == "cycle_count" { 4_000 } else { 2_500 }))
                            % (1 << 32);
                        v as f64
                    })
                    .collect();
                counters.counters.push(CounterSeries {
                    unit: if name == "other" {
                        String::new()
                    } else {
                        "cycles".into()
                    },
                    bits,
                    t_ns: times,
                    value: values,
                    ..CounterSeries::new(name, rep)
                });
            }
            for k in &mut kernels {
                let (mut starts, mut ends) = (Vec::new(), Vec::new());
                let mut t = -1_000.0 + 500.0 * rng.below(4) as f64;
                for _ in 0..rng.below(25) {
                    t += 250.0 * rng.below(12) as f64;
                    starts.push(t);
                    ends.push(t + 250.0 * rng.below(30) as f64);
                }
                k.kernel_windows.push(KernelWindows {
                    start_ns: starts,
                    end_ns: ends,
                    counters_of: Some(CountersOf {
                        benchmark: "counters".into(),
                        repetition: rep,
                    }),
                    ..KernelWindows::new(&k.name, rep)
                });
            }
        }
        let mut benchmarks = vec![counters];
        benchmarks.extend(kernels);
        RunResults::of(benchmarks)
    }

    /// `full` without its series and windows, and those arrays held by place.
    fn held(full: &RunResults) -> (RunResults, InMemory) {
        let mut outline = full.clone();
        let mut held = HashMap::new();
        for (benchmark, b) in outline.benchmarks.iter_mut().enumerate() {
            let series = b.counters.iter_mut().enumerate().flat_map(|(entry, c)| {
                [
                    (entry, Field::SeriesTimes, &mut c.t_ns),
                    (entry, Field::SeriesValues, &mut c.value),
                ]
            });
            let windows = b
                .kernel_windows
                .iter_mut()
                .enumerate()
                .flat_map(|(entry, w)| {
                    [
                        (entry, Field::WindowStarts, &mut w.start_ns),
                        (entry, Field::WindowEnds, &mut w.end_ns),
                    ]
                });
            for (entry, field, values) in series.chain(windows) {
                let at = ArrayAt {
                    benchmark,
                    entry,
                    field,
                };
                held.insert(at, std::mem::take(values));
            }
        }
        (outline, InMemory(held))
    }

    #[test]
    fn stretch_by_stretch_gives_what_every_reading_in_memory_gives() {
        let profile = crate::config::profile::builtin("tpu-v7x").unwrap();
        let opts = Options::cumulative(&profile);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut unresolved, mut utilizations, mut refused) = (0, 0, 0);
        for case in 0..400 {
            let full = random_run(&mut rng);
            let mut expected = full.clone();
            let lenders = full.lenders();
            for (i, b) in expected.benchmarks.iter_mut().enumerate() {
                let lent = lenders.lent_counters(&full, &full.benchmarks[i]);
                utilization::apply(b, &lent, opts);
            }
            let (outline, held) = held(&full);
            let derived: Vec<(usize, Options<'_>)> =
                (0..outline.benchmarks.len()).map(|i| (i, opts)).collect();
            for stretch in [1, 2, 5, 1 << 16] {
                let sizes = Sizes {
                    stretch,
                    readings_per_kernel: 0,
                };
                let outcomes = derive_all(&outline, &held, &derived, sizes)
                    .unwrap()
                    .expect("a trace's benchmarks derive from held arrays");
                assert_eq!(outcomes.len(), expected.benchmarks.len());
                for (i, outcome) in outcomes {
                    let want = &expected.benchmarks[i];
                    let mut got = outline.benchmarks[i].clone();
                    outcome.record(&mut got);
                    let bits = |b: &BenchmarkResult| {
                        b.metrics
                            .iter()
                            .map(|m| {
                                let values: Vec<u64> =
                                    m.values.iter().map(|v| v.to_bits()).collect();
                                (m.name.clone(), m.unit.clone(), values, m.repetition.clone())
                            })
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(
                        bits(&got),
                        bits(want),
                        "case {case}, stretch {stretch}, `{}`",
                        want.name
                    );
                    assert_eq!(
                        got.provenance, want.provenance,
                        "case {case}, stretch {stretch}"
                    );
                    unresolved += got.provenance.unavailable.len();
                    utilizations += got
                        .metrics
                        .iter()
                        .filter(|m| m.name.starts_with("util.") && !m.values.is_empty())
                        .count();
                    refused += got.provenance.notes.len();
                }
            }
        }
        // The cases reach launches that hold no window (whose reason names the median
        // interval), utilizations over windows and refusals (above 100 %, no key).
        assert!(unresolved > 100, "{unresolved}");
        assert!(utilizations > 100, "{utilizations}");
        assert!(refused > 100, "{refused}");
    }
}
