//! `kgate bisect` as a function: the work tree's plan and policy over the commits from GOOD to
//! BAD, each checkout and measurement said as a line.

use super::{GateError, Say, within};
use crate::bisect::{self, BisectError, BisectReport, Commit, Observer, StepRecord, short};
use crate::compare::ComparePolicy;
use crate::config::LoadedConfig;
use crate::model::text::{escape_log, escape_terminal};
use crate::model::units::format_change;
use crate::plan::{Overrides, Plan};
use crate::run::progress::Progress;

/// What `kgate bisect` measures, and between which commits.
#[derive(Debug, Clone)]
pub struct BisectOptions {
    pub selection: Overrides,
    pub good: String,
    pub bad: String,
}

/// Bisects GOOD..BAD under the configuration `loaded`; says each checkout and each
/// measurement, one line each.
pub fn bisect(
    loaded: &LoadedConfig,
    options: &BisectOptions,
    progress: &mut dyn Progress,
    say: &mut Say<'_>,
) -> Result<BisectReport, GateError> {
    crate::github::refuse_untrusted_run(&loaded.root)?;
    let plan = Plan::new(&loaded.config, &options.selection)?;
    let request = bisect::Request {
        root: &loaded.root,
        plan: &plan,
        policy: &ComparePolicy::from(&loaded.config.gate),
        time_budget: loaded.config.gate.time_budget.map(|d| d.0),
        good: &options.good,
        bad: &options.bad,
    };
    match bisect::bisect(&request, progress, &mut Lines(say)) {
        Ok(report) => Ok(report),
        // An interruption stays one, so that it exits as such.
        Err(BisectError::Run(e)) => Err(e.into()),
        Err(e) => Err(within("cannot bisect")(e)),
    }
}

/// The lines of a bisect's checkouts and measurements, said.
struct Lines<'s, 'a>(&'s mut Say<'a>);

impl Observer for Lines<'_, '_> {
    fn building(&mut self, commit: &Commit) {
        let (commit, subject) = (short(&commit.commit), escape_terminal(&commit.subject));
        (self.0)(&format!("bisect: checking out {commit} ({subject})"));
    }

    fn measured(&mut self, benchmark: &str, step: &StepRecord) {
        let change = match (step.change, step.ci) {
            (Some(c), Some([lo, hi])) => {
                let [c, lo, hi] = [c, lo, hi].map(format_change);
                format!(", {c} ({lo} … {hi})")
            }
            (Some(c), None) => format!(", {}", format_change(c)),
            _ => String::new(),
        };
        let (benchmark, at) = (escape_terminal(benchmark), short(&step.commit.commit));
        let (position, outcome) = (step.commit.position, step.outcome.as_str());
        (self.0)(&format!(
            "bisect: `{benchmark}` at {at} (GOOD+{position}): {outcome}{change}"
        ));
        if step.outcome == bisect::StepOutcome::Skipped {
            (self.0)(&format!("  {}", escape_log(&step.reason)));
        }
    }
}
