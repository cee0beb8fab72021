//! The Action's installer (scripts/action-install.sh) against a release stand-in served over
//! HTTP on loopback (wiremock): the assets are made by the release's own scripts
//! (scripts/pack-release.sh, scripts/release-sums.sh) around a small `kgate` that answers
//! `--version` as kgate does (the 200 MB debug binary would take a minute to compress; the
//! release binary itself is checked by scripts/check-static.sh). Covers
//! the download with its SHA-256 check, the refusal of a binary whose checksum does not match,
//! and the fallback to building the Action's source (a `cargo` stand-in on PATH records the
//! build it was asked for) when no release fits.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// GitHub's names for this machine's OS and architecture, and the release target they map to.
fn runner() -> (&'static str, &'static str, &'static str) {
    let (os, linux, mac) = match std::env::consts::OS {
        "linux" => ("Linux", true, false),
        "macos" => ("macOS", false, true),
        other => panic!("no release target for {other}"),
    };
    let (arch, target) = match (std::env::consts::ARCH, linux, mac) {
        ("x86_64", true, _) => ("X64", "x86_64-unknown-linux-musl"),
        ("aarch64", true, _) => ("ARM64", "aarch64-unknown-linux-musl"),
        ("x86_64", _, true) => ("X64", "x86_64-apple-darwin"),
        ("aarch64", _, true) => ("ARM64", "aarch64-apple-darwin"),
        (other, _, _) => panic!("no release target for {other}"),
    };
    (os, arch, target)
}

/// A folder standing in for the Action's checkout: the files its source digest covers.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let action = dir.path().join("action");
        std::fs::create_dir_all(action.join("src")).unwrap();
        std::fs::write(
            action.join("Cargo.toml"),
            format!("[package]\nname = \"kgate\"\nversion = \"{VERSION}\"\n"),
        )
        .unwrap();
        std::fs::write(action.join("Cargo.lock"), "version = 4\n").unwrap();
        std::fs::write(action.join("src/main.rs"), "fn main() {}\n").unwrap();
        // `cargo` stand-in: records its arguments and leaves a kgate where `--root` says.
        let bin = dir.path().join("fakebin");
        std::fs::create_dir_all(&bin).unwrap();
        let cargo = bin.join("cargo");
        std::fs::write(
            &cargo,
            format!(
                "#!/bin/sh\necho \"$@\" >> '{log}'\nwhile [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=$2; shift; done\n\
                 mkdir -p \"$root/bin\" && printf '#!/bin/sh\\necho built-from-source\\n' > \"$root/bin/kgate\" && chmod 755 \"$root/bin/kgate\"\n",
                log = dir.path().join("cargo.log").display()
            ),
        )
        .unwrap();
        make_executable(&cargo);
        Fixture { dir }
    }

    fn action(&self) -> PathBuf {
        self.dir.path().join("action")
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// What the `cargo` stand-in was asked, one call a line (empty when it was never run).
    fn cargo_calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("cargo.log")).unwrap_or_default()
    }

    /// The release's assets as the release workflow makes them: the archive, the source
    /// digest of the Action's folder and the SHA-256 file.
    fn release_assets(&self) -> Vec<(String, Vec<u8>)> {
        let out = self.dir.path().join("assets");
        let (_, _, target) = runner();
        let binary = self.dir.path().join("release-kgate");
        std::fs::write(&binary, format!("#!/bin/sh\necho 'kgate {VERSION}'\n")).unwrap();
        make_executable(&binary);
        run_ok(
            Command::new(repo().join("scripts/pack-release.sh"))
                .arg(&binary)
                .arg(target)
                .arg(&out),
        );
        run_ok(
            Command::new(repo().join("scripts/release-sums.sh"))
                .arg(&out)
                .arg(VERSION)
                .arg(self.action()),
        );
        let mut assets: Vec<(String, Vec<u8>)> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().into_string().unwrap(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        assets.sort();
        assert_eq!(
            assets.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            [
                format!("kgate-{VERSION}-SHA256SUMS"),
                format!("kgate-{VERSION}-source-digest"),
                format!("kgate-{VERSION}-{target}.tar.gz"),
            ]
        );
        assets
    }

    /// Runs the installer with the stand-in's URL and this machine's runner names.
    fn install(&self, server: &MockServer, env: &[(&str, &str)]) -> (Output, Duration) {
        let (os, arch, _) = runner();
        let path = format!(
            "{}:{}",
            self.dir.path().join("fakebin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new(repo().join("scripts/action-install.sh"));
        cmd.arg(self.root())
            .env("KGATE_ACTION_PATH", self.action())
            .env(
                "KGATE_RELEASE_URL",
                format!("{}/releases/download", server.uri()),
            )
            .env("RUNNER_OS", os)
            .env("RUNNER_ARCH", arch)
            .env("PATH", path)
            .env_remove("KGATE_INSTALL")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_ACTION_PATH");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let start = Instant::now();
        let out = cmd.output().unwrap();
        (out, start.elapsed())
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn run_ok(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A loopback server answering GET /releases/download/vVERSION/NAME with each asset; any
/// other path is a 404, as GitHub answers for a release or asset that does not exist.
fn serve(assets: Vec<(String, Vec<u8>)>) -> MockServer {
    std::thread::spawn(move || {
        block_on(async move {
            let server = MockServer::start().await;
            for (name, body) in assets {
                Mock::given(method("GET"))
                    .and(path(format!("/releases/download/v{VERSION}/{name}")))
                    .respond_with(ResponseTemplate::new(200).set_body_bytes(body))
                    .mount(&server)
                    .await;
            }
            server
        })
    })
    .join()
    .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn requested(server: &MockServer) -> Vec<String> {
    block_on(server.received_requests())
        .unwrap()
        .iter()
        .map(|r| r.url.path().rsplit('/').next().unwrap().to_string())
        .collect()
}

#[test]
fn downloads_verifies_and_installs_the_release_binary() {
    let f = Fixture::new();
    let server = serve(f.release_assets());
    let (out, took) = f.install(&server, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let (_, _, target) = runner();
    assert!(
        err.contains(&format!(
            "installed kgate {VERSION} ({target}) from release v{VERSION}, sha256 verified"
        )),
        "{err}"
    );
    assert_eq!(
        f.cargo_calls(),
        "",
        "nothing is built when the release fits"
    );
    let installed = Command::new(f.root().join("bin/kgate"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&installed.stdout).trim(),
        format!("kgate {VERSION}")
    );
    assert_eq!(
        requested(&server),
        [
            format!("kgate-{VERSION}-SHA256SUMS"),
            format!("kgate-{VERSION}-source-digest"),
            format!("kgate-{VERSION}-{target}.tar.gz"),
        ]
    );
    eprintln!("action install from the loopback release (download + verify + unpack): {took:?}");
}

#[test]
fn refuses_a_binary_whose_checksum_does_not_match() {
    let f = Fixture::new();
    let mut assets = f.release_assets();
    let archive = assets
        .iter_mut()
        .find(|(n, _)| n.ends_with(".tar.gz"))
        .unwrap();
    archive.1.push(0); // one byte more than the SHA-256 file was made over
    let name = archive.0.clone();
    let server = serve(assets);
    let (out, _) = f.install(&server, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("checksum mismatch for {name}"))
            && err.contains(&format!("kgate-{VERSION}-SHA256SUMS says "))
            && err.contains("Refusing to install it"),
        "{err}"
    );
    assert!(
        !f.root().join("bin/kgate").exists(),
        "nothing may be installed"
    );
    assert_eq!(
        f.cargo_calls(),
        "",
        "a mismatch is refused, not papered over by a build"
    );
}

#[test]
fn builds_from_source_when_no_release_exists() {
    let f = Fixture::new();
    let server = serve(Vec::new());
    let (out, _) = f.install(&server, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "release v{VERSION} has no kgate-{VERSION}-SHA256SUMS at {}/releases/download/v{VERSION} (a branch or an unreleased commit?); building kgate {VERSION} from the action's source",
            server.uri()
        )),
        "{err}"
    );
    assert_eq!(
        f.cargo_calls(),
        format!(
            "install --locked --path {} --root {}\n",
            f.action().display(),
            f.root().display()
        )
    );
    let built = Command::new(f.root().join("bin/kgate")).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&built.stdout),
        "built-from-source\n"
    );
}

#[test]
fn builds_from_source_when_the_action_is_not_the_released_source() {
    let f = Fixture::new();
    let server = serve(f.release_assets());
    // A commit after the release: same version in Cargo.toml, other source.
    std::fs::write(
        f.action().join("src/main.rs"),
        "fn main() { /* later */ }\n",
    )
    .unwrap();
    let (out, _) = f.install(&server, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("is not release v{VERSION}'s (digest "))
            && err.contains("a branch or an unreleased commit; building kgate"),
        "{err}"
    );
    assert!(f.cargo_calls().starts_with("install --locked --path "));
    assert!(
        !requested(&server).iter().any(|p| p.ends_with(".tar.gz")),
        "the binary of another source is not even downloaded"
    );
}

#[test]
fn builds_from_source_where_releases_have_no_binary() {
    let f = Fixture::new();
    let server = serve(f.release_assets());
    let (out, _) = f.install(&server, &[("RUNNER_OS", "Windows")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("releases have no binary for Windows on "),
        "{err}"
    );
    assert!(f.cargo_calls().starts_with("install --locked --path "));
    assert!(requested(&server).is_empty());
}

#[test]
fn install_release_fails_instead_of_building_and_source_always_builds() {
    let f = Fixture::new();
    let server = serve(Vec::new());
    let (out, _) = f.install(&server, &[("KGATE_INSTALL", "release")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`install: release` asks for the release binary, so nothing was installed"),
        "{err}"
    );
    assert_eq!(f.cargo_calls(), "");

    let server = serve(f.release_assets());
    let (out, _) = f.install(&server, &[("KGATE_INSTALL", "source")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("`install: source` was asked for; building"));
    assert!(requested(&server).is_empty());
    assert_eq!(f.cargo_calls().lines().count(), 1);

    let (out, _) = f.install(&server, &[("KGATE_INSTALL", "fast")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("install mode `fast` is not one of auto, release, source"));
}
