//! Derived CPU metrics: ratios and weighted sums computed from one repetition's counters.
//!
//! Raw counts answer "how many"; the questions reviewers ask are ratios: instructions per
//! cycle, how often the L1 missed, how many cycles the cache model estimates. Built-in
//! definitions cover the usual ones; `derived:` in `kgate.yaml` adds user expressions, parsed
//! and evaluated by the `exmex` crate rather than a hand-written parser.

use std::collections::BTreeMap;

use exmex::prelude::*;

use crate::model::metric::{Direction, Source};

/// A derived metric definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    /// An arithmetic expression over counter names (see [`variable_name`]).
    pub expr: String,
    pub unit: String,
    pub direction: Direction,
}

fn def(name: &str, expr: &str, unit: &str, direction: Direction) -> Definition {
    Definition {
        name: name.into(),
        expr: expr.into(),
        unit: unit.into(),
        direction,
    }
}

/// Built-in definitions, computed whenever every counter they use was measured.
///
/// `estimated_cycles` uses KCachegrind's cycle-estimation weighting, Ir + 10·L1m + 100·LLm
/// (an L1 miss served by LL costs about 10 cycles, an LL miss about 100): a model, useful for
/// comparing two builds on one machine model, not a cycle count.
#[rustfmt::skip]
pub fn builtins() -> Vec<Definition> {
    use Direction::{Higher, Lower};
    vec![
        // perf (hardware counters)
        def("ipc", "instructions / cycles", "", Higher),
        def("cache_miss_rate", "cache_misses / cache_references", "", Lower),
        def("branch_miss_rate", "branch_misses / branches", "", Lower),
        // valgrind (simulated)
        def("D1_miss_rate", "(D1mr + D1mw) / (Dr + Dw)", "", Lower),
        def("LL_miss_rate", "(DLmr + DLmw + ILmr) / (Ir + Dr + Dw)", "", Lower),
        def("estimated_cycles", "Ir + 10 * (I1mr + D1mr + D1mw) + 100 * (ILmr + DLmr + DLmw)", "", Lower),
        def("branch_mispredict_rate", "(Bcm + Bim) / (Bc + Bi)", "", Lower),
    ]
}

/// The value of `expr` at `inputs` (in the order of its variable names, each with a tag the
/// caller keeps alongside), when it evaluates to a finite number.
pub(crate) fn finite_value<T>(expr: &FlatEx<f64>, inputs: &[(f64, T)]) -> Option<f64> {
    let values: Vec<f64> = inputs.iter().map(|(v, _)| *v).collect();
    expr.eval(&values).ok().filter(|v| v.is_finite())
}

/// The variable name of a counter in expressions: every character that is not a letter, digit
/// or `_` becomes `_` (`branch-misses` → `branch_misses`, `cpu_core/cycles/` →
/// `cpu_core_cycles_`).
pub fn variable_name(counter: &str) -> String {
    counter
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// An expression that does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "derived metric `{name}`: `{expr}` is not a valid expression ({message}); write arithmetic over counter names, such as `instructions / cycles`"
)]
pub struct ExprError {
    pub name: String,
    pub expr: String,
    pub message: String,
}

/// Checks that an expression parses (for configuration validation).
pub fn check(name: &str, expr: &str) -> Result<(), ExprError> {
    FlatEx::<f64>::parse(expr)
        .map(|_| ())
        .map_err(|e| ExprError {
            name: name.into(),
            expr: expr.into(),
            message: e.to_string(),
        })
}

/// One computed value.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub direction: Direction,
    pub source: Source,
}

/// Evaluates `definitions` over one repetition's counters (name → value and source). A
/// definition whose counters were not all measured is skipped, as is a non-finite result
/// (a zero denominator). The source is `simulated` when any input is simulated, else `derived`.
pub fn evaluate(
    definitions: &[Definition],
    counters: &BTreeMap<String, (f64, Source)>,
) -> Result<Vec<Value>, ExprError> {
    let vars: BTreeMap<String, (f64, Source)> = counters
        .iter()
        .map(|(k, v)| (variable_name(k), *v))
        .collect();
    let mut out = Vec::new();
    for d in definitions {
        let expr = FlatEx::<f64>::parse(&d.expr).map_err(|e| ExprError {
            name: d.name.clone(),
            expr: d.expr.clone(),
            message: e.to_string(),
        })?;
        let names = expr.var_names();
        let Some(inputs) = names
            .iter()
            .map(|n| vars.get(n).copied())
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let Some(value) = finite_value(&expr, &inputs) else {
            continue;
        };
        let source = if inputs.iter().any(|(_, s)| *s == Source::Simulated) {
            Source::Simulated
        } else {
            Source::Derived
        };
        out.push(Value {
            name: d.name.clone(),
            value,
            unit: d.unit.clone(),
            direction: d.direction,
            source,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_and_user_expressions() {
        let mut c = BTreeMap::new();
        c.insert("instructions".to_string(), (300.0, Source::Hardware));
        c.insert("cycles".to_string(), (200.0, Source::Hardware));
        c.insert("branch-misses".to_string(), (5.0, Source::Hardware));
        let mut defs = builtins();
        let per_kinst = "1000 * branch_misses / instructions";
        defs.push(def("misses_per_kinst", per_kinst, "", Direction::Lower));
        let v = evaluate(&defs, &c).unwrap();
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].name, "ipc");
        assert_eq!(v[0].value, 1.5);
        assert_eq!(v[0].source, Source::Derived);
        assert_eq!(v[1].value, 1000.0 * 5.0 / 300.0);

        let mut s = BTreeMap::new();
        #[rustfmt::skip]
        let simulated = [("Ir", 1000.0), ("I1mr", 1.0), ("D1mr", 2.0), ("D1mw", 3.0), ("ILmr", 0.0),
                         ("DLmr", 1.0), ("DLmw", 1.0), ("Dr", 50.0), ("Dw", 50.0)];
        for (k, x) in simulated {
            s.insert(k.to_string(), (x, Source::Simulated));
        }
        let v = evaluate(&builtins(), &s).unwrap();
        let get = |n: &str| v.iter().find(|x| x.name == n).unwrap();
        assert_eq!(get("estimated_cycles").value, 1000.0 + 60.0 + 200.0);
        assert_eq!(get("estimated_cycles").source, Source::Simulated);
        assert_eq!(get("D1_miss_rate").value, 0.05);
    }

    #[test]
    fn bad_expressions_are_reported() {
        let e = check("r", "instructions / / cycles").unwrap_err();
        let start = "derived metric `r`: `instructions / / cycles` is not a valid expression";
        assert!(e.to_string().starts_with(start), "{e}");
    }
}
