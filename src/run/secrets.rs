//! The runner's credentials stay with kgate.
//!
//! A benchmark is code from the change under test, often from a fork. CI runners put write
//! tokens in the environment (`GITHUB_TOKEN`, the Actions runtime and OIDC request tokens, a
//! GitLab access or job token), and kgate prints a failing benchmark's stderr tail, so a
//! benchmark that printed its environment would show them. Leaving them out of the child's
//! environment is not enough: a benchmark can read `/proc/PID/environ` of its ancestors, which
//! shows the environment a process *started* with, whatever it removed since.
//!
//! So `main` calls [`seal`] before anything else runs: kgate copies the credentials it finds
//! into memory, removes them from its environment, overwrites them where the kernel shows them
//! (the block of strings the process started with), and makes itself non-dumpable while it
//! holds them, so that a process of the same user cannot read its environment or memory at
//! all. What kgate starts (build steps, benchmarks, git, tools) inherits an environment without
//! them; `pass_env` cannot bring them back, since the configuration comes with the change under
//! test. Every credential value is masked as `***` in the stderr tails kgate keeps. The code
//! that posts reads its token through [`var`].

use std::borrow::Cow;

/// Variables that hold credentials, by exact name: GitHub's and GitLab's.
const CREDENTIALS: &[&str] = &[
    // GitHub: the workflow's token as workflows pass it, the CLI's names, the Actions runtime
    // (caches, artifacts) and the OIDC request.
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
    // GitLab: the job token (and its old name, and the clone URL that embeds it), the JWTs
    // that ID tokens replaced, the registry, dependency-proxy and deploy-token passwords, and
    // the access tokens kgate and other tools post with.
    "CI_JOB_TOKEN",
    "CI_BUILD_TOKEN",
    "CI_REPOSITORY_URL",
    "CI_JOB_JWT",
    "CI_JOB_JWT_V1",
    "CI_JOB_JWT_V2",
    "CI_REGISTRY_PASSWORD",
    "CI_DEPENDENCY_PROXY_PASSWORD",
    "CI_DEPLOY_PASSWORD",
    "KGATE_GITLAB_TOKEN",
    "GITLAB_TOKEN",
    "GL_TOKEN",
];

/// Whether a variable is one of the runner's credentials by its name: a name in
/// `CREDENTIALS`, an Actions runtime or OIDC variable, an action input that holds a token
/// (`INPUT_TOKEN`, `INPUT_GITHUB-TOKEN`), or kgate's own token variables.
pub fn is_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    CREDENTIALS.contains(&upper.as_str())
        || upper.starts_with("ACTIONS_ID_TOKEN_REQUEST_")
        || upper.starts_with("ACTIONS_RUNTIME_")
        || (upper.starts_with("INPUT_") && upper.contains("TOKEN"))
        || upper.starts_with("KGATE_GITHUB_TOKEN")
        || upper.starts_with("KGATE_GITLAB_TOKEN")
}

/// Whether a variable holds a credential: by its name ([`is_credential`]), or by a value
/// shaped like a signed JSON Web Token, which is how GitLab's ID tokens (`id_tokens:`, named as
/// the job chooses) and other OIDC tokens arrive.
pub fn is_credential_var(name: &str, value: &[u8]) -> bool {
    is_credential(name) || looks_like_jwt(value)
}

/// Three base64url parts, the first a JSON object (`eyJ`), the signature not empty.
fn looks_like_jwt(value: &[u8]) -> bool {
    let b64 = |part: &[u8]| {
        !part.is_empty()
            && part
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'='))
    };
    let mut parts = value.split(|&c| c == b'.');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some(h), Some(p), Some(s), None)
            if h.starts_with(b"eyJ") && b64(h) && b64(p) && b64(s) && value.len() >= 32
    )
}

/// Names of the credentials the configuration asks to pass through (`pass_env`): kgate
/// withholds them anyway, and says so.
pub fn refused(pass: &[String]) -> Vec<&str> {
    pass.iter()
        .map(String::as_str)
        .filter(|p| is_credential(p) || credentials().vars.iter().any(|(k, _)| k == p))
        .collect()
}

/// The credential variables to remove from a process that inherits kgate's environment: those
/// kgate held at its start (gone from its environment once [`seal`] ran) and any credential
/// in its environment now (when [`seal`] did not run: a library caller, a unit test).
pub fn withheld() -> Vec<String> {
    let mut names: Vec<String> = credentials().vars.iter().map(|(k, _)| k.clone()).collect();
    for (k, v) in std::env::vars_os() {
        if let Some(k) = k.to_str()
            && is_credential_var(k, v.as_encoded_bytes())
            && !names.iter().any(|n| n == k)
        {
            names.push(k.to_string());
        }
    }
    names
}

/// A credential kgate holds, by name: its value from kgate's start. Outside [`seal`], a
/// credential still in the environment.
pub fn var(name: &str) -> Option<String> {
    credentials()
        .vars
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(name).ok())
        .filter(|v| !v.is_empty())
}

/// The credentials of kgate's environment: taken by [`seal`], or found in the environment
/// the first time they are asked for.
struct Credentials {
    /// Each credential variable and its value (empty when the value is not UTF-8).
    vars: Vec<(String, String)>,
    /// Their values worth masking, longest first.
    values: Vec<String>,
}

impl Credentials {
    fn new(vars: Vec<(String, String)>) -> Credentials {
        let mut values: Vec<String> = vars
            .iter()
            .map(|(_, v)| v.clone())
            .filter(|v| v.len() >= MIN_SECRET_LEN && !v.starts_with("http"))
            .collect();
        // Longest first, so a token that contains another is masked whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Credentials { vars, values }
    }
}

static SEALED: std::sync::OnceLock<Credentials> = std::sync::OnceLock::new();

fn credentials() -> &'static Credentials {
    SEALED.get_or_init(|| {
        let found = std::env::vars_os().filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            is_credential_var(&k, v.as_encoded_bytes())
                .then(|| (k, v.into_string().unwrap_or_default()))
        });
        Credentials::new(found.collect())
    })
}

/// Takes the runner's credentials out of kgate's environment and into memory, once, at the start of
/// `main`: copies each credential variable, zeroes its value where the process started with it
/// (what `/proc/PID/environ` shows), removes it from the environment, and, when any was found,
/// makes the process non-dumpable (Linux), so that a process of the same user cannot read kgate's
/// environment or memory while kgate holds them. A child starts dumpable again (`execve` resets
/// it), so benchmarks, profilers and debuggers are unaffected.
///
/// # Safety
///
/// No other thread may run: this changes the environment (`std::env::remove_var`) and writes
/// the strings `environ` pointed at.
pub unsafe fn seal() {
    let mut found: Vec<(String, String)> = Vec::new();
    // SAFETY: no other thread runs, so `environ` and its strings stay as they are while read;
    // each entry is a NUL-terminated string.
    for ptr in unsafe { environ_entries() } {
        // SAFETY: as above.
        let entry = unsafe { std::ffi::CStr::from_ptr(ptr) }.to_bytes();
        let len = entry.len();
        let Some(eq) = entry.iter().skip(1).position(|&c| c == b'=').map(|i| i + 1) else {
            continue;
        };
        let (name, value) = (&entry[..eq], &entry[eq + 1..]);
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        if !is_credential_var(name, value) {
            continue;
        }
        if !found.iter().any(|(k, _)| k == name) {
            let value = String::from_utf8(value.to_vec()).unwrap_or_default();
            found.push((name.to_string(), value));
        }
        // The value's bytes, zeroed where they are while the entry is still the environment's
        // (the C library may free a string it allocated once it is unset). `NAME=` stays for
        // `remove_var` to find. Nothing borrowed from the entry is used from here on.
        for i in eq + 1..len {
            // SAFETY: within the entry's string, which is the process's own and writable.
            unsafe { std::ptr::write_volatile(ptr.add(i), 0) };
        }
    }
    for (name, _) in &found {
        // SAFETY: no other thread reads or writes the environment (the caller's promise).
        unsafe { std::env::remove_var(name) };
    }
    if !found.is_empty() {
        undumpable();
    }
    let _ = SEALED.set(Credentials::new(found));
}

/// The entries of the C library's `environ`, in order.
///
/// # Safety
///
/// No other thread may change the environment while the pointers are used.
unsafe fn environ_entries() -> Vec<*mut libc::c_char> {
    #[cfg(target_vendor = "apple")]
    // SAFETY: _NSGetEnviron returns the address of the process's `environ`.
    let mut p = unsafe { *libc::_NSGetEnviron() };
    #[cfg(not(target_vendor = "apple"))]
    let mut p = {
        unsafe extern "C" {
            static mut environ: *mut *mut libc::c_char;
        }
        // SAFETY: `environ` is the C library's, read once here.
        unsafe { environ }
    };
    let mut entries = Vec::new();
    if p.is_null() {
        return entries;
    }
    // SAFETY: `environ` is an array of string pointers ended by a null pointer.
    unsafe {
        while !(*p).is_null() {
            entries.push(*p);
            p = p.add(1);
        }
    }
    entries
}

/// Makes the process non-dumpable: `/proc/PID/environ`, `mem` and the rest become root's, and
/// no process of the same user can attach to it. Root still can (`CAP_SYS_PTRACE`), which is
/// why [`seal`] also clears the strings.
fn undumpable() {
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) changes a flag of this process; no memory is passed.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Values shorter than this are not masked: they are not secrets, and masking them would
/// garble ordinary text.
const MIN_SECRET_LEN: usize = 8;

/// `text` with every credential value of kgate's environment replaced by `***`.
pub fn mask(text: &str) -> Cow<'_, str> {
    mask_values(text, &credentials().values)
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
        #[rustfmt::skip]
        let credentials = [
            "GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_URL", "INPUT_GITHUB-TOKEN", "INPUT_TOKEN", "CI_JOB_TOKEN",
            "CI_BUILD_TOKEN", "CI_REPOSITORY_URL", "CI_JOB_JWT_V2", "CI_REGISTRY_PASSWORD",
            "CI_DEPENDENCY_PROXY_PASSWORD", "CI_DEPLOY_PASSWORD", "KGATE_GITLAB_TOKEN",
            "GITLAB_TOKEN", "GL_TOKEN",
        ];
        for name in credentials {
            assert!(is_credential(name), "{name}");
        }
        #[rustfmt::skip]
        let others = [
            "PATH", "HOME", "GITHUB_SHA", "GITHUB_REPOSITORY", "INPUT_CONFIG",
            "TOKENIZERS_PARALLELISM", "CI_JOB_NAME", "CI_API_V4_URL", "CI_REGISTRY_USER",
        ];
        for name in others {
            assert!(!is_credential(name), "{name}");
        }
    }

    #[test]
    fn id_tokens_are_known_by_their_shape() {
        let jwt = b"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJwcm9qZWN0In0.c2lnbmF0dXJl";
        assert!(is_credential_var("VAULT_ID_TOKEN", jwt));
        assert!(is_credential_var("SIGSTORE", jwt));
        for value in [
            &b"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwcm9qZWN0In0."[..],
            b"eyJ.a.b",
            b"1.2.3",
            b"/usr/local/bin:/usr/bin",
            b"eyJhbGciOiJSUzI1NiJ9 eyJzdWIiOiJwcm9qZWN0In0 c2lnbmF0dXJl",
        ] {
            let shown = String::from_utf8_lossy(value);
            assert!(!is_credential_var("SOMETHING", value), "{shown}");
        }
    }

    #[test]
    fn masks_every_value_longest_first() {
        let secrets = ["ghs_abcdefgh12345678", "ghs_abcdefgh"].map(String::from);
        let masked = mask_values("token=ghs_abcdefgh12345678 and ghs_abcdefgh", &secrets);
        assert_eq!(masked, "token=*** and ***");
        let unmasked = mask_values("nothing here", &secrets);
        assert!(matches!(unmasked, Cow::Borrowed(_)));
    }
}
