//! The runner's credentials stay with kgate.
//!
//! A benchmark is code from the change under test, often from a fork. CI runners put write
//! tokens in the environment (`GITHUB_TOKEN`, the Actions runtime and OIDC request tokens, a
//! GitLab job token), and kgate prints a failing benchmark's stderr tail, so a benchmark that
//! printed its environment would show them. Benchmarks and build steps therefore start without
//! these variables unless the configuration names them in `pass_env`, and every known token
//! value is masked in the stderr tails kgate keeps.

use std::borrow::Cow;

/// Variables that hold the runner's credentials, by exact name.
const CREDENTIALS: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_CACHE_URL",
    "ACTIONS_RESULTS_URL",
    "CI_JOB_TOKEN",
    "CI_JOB_JWT",
    "CI_JOB_JWT_V2",
    "CI_REGISTRY_PASSWORD",
    "CI_DEPLOY_PASSWORD",
];

/// Whether a variable of kgate's environment is one of the runner's credentials: a name in
/// [`CREDENTIALS`], an Actions runtime or OIDC variable, or an action input that holds a token
/// (`INPUT_TOKEN`, `INPUT_GITHUB-TOKEN`).
pub fn is_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    CREDENTIALS.contains(&upper.as_str())
        || upper.starts_with("ACTIONS_ID_TOKEN_REQUEST_")
        || upper.starts_with("ACTIONS_RUNTIME_")
        || (upper.starts_with("INPUT_") && upper.contains("TOKEN"))
        || upper.starts_with("KGATE_GITHUB_TOKEN")
}

/// The credential variables of kgate's environment to withhold from a process, given the
/// names the configuration passes through.
pub fn withheld(pass: &[String]) -> impl Iterator<Item = &'static str> {
    found()
        .names
        .iter()
        .map(String::as_str)
        .filter(|k| !pass.iter().any(|p| p == k))
}

/// The credentials of kgate's environment, found once: kgate never changes its own
/// environment, and every repetition would otherwise scan it again.
struct Found {
    /// Names of the credential variables.
    names: Vec<String>,
    /// Their values worth masking, longest first.
    values: Vec<String>,
}

fn found() -> &'static Found {
    static FOUND: std::sync::OnceLock<Found> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let mut names = Vec::new();
        let mut values = Vec::new();
        for (k, v) in std::env::vars_os() {
            let Ok(k) = k.into_string() else { continue };
            if !is_credential(&k) {
                continue;
            }
            if let Ok(v) = v.into_string()
                && v.len() >= MIN_SECRET_LEN
                && !v.starts_with("http")
            {
                values.push(v);
            }
            names.push(k);
        }
        // Longest first, so a token that contains another is masked whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Found { names, values }
    })
}

/// Values shorter than this are not masked: they are not secrets, and masking them would
/// garble ordinary text.
const MIN_SECRET_LEN: usize = 8;

/// `text` with every credential value of kgate's environment replaced by `***`.
pub fn mask(text: &str) -> Cow<'_, str> {
    mask_values(text, &found().values)
}

fn mask_values<'t>(text: &'t str, secrets: &[String]) -> Cow<'t, str> {
    let mut out = Cow::Borrowed(text);
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), "***"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names() {
        for name in [
            "GITHUB_TOKEN",
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            "INPUT_GITHUB-TOKEN",
            "INPUT_TOKEN",
            "CI_JOB_TOKEN",
        ] {
            assert!(is_credential(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "GITHUB_SHA",
            "GITHUB_REPOSITORY",
            "INPUT_CONFIG",
            "TOKENIZERS_PARALLELISM",
        ] {
            assert!(!is_credential(name), "{name}");
        }
    }

    #[test]
    fn masks_every_value_longest_first() {
        let secrets = vec![
            "ghs_abcdefgh12345678".to_string(),
            "ghs_abcdefgh".to_string(),
        ];
        assert_eq!(
            mask_values("token=ghs_abcdefgh12345678 and ghs_abcdefgh", &secrets),
            "token=*** and ***"
        );
        assert!(matches!(
            mask_values("nothing here", &secrets),
            Cow::Borrowed(_)
        ));
    }
}
