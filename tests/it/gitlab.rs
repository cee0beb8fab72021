//! `kgate ci` in a GitLab merge-request pipeline against a GitLab REST stand-in served over HTTP
//! on loopback (wiremock): the sticky note found across pages of notes and updated, or created;
//! the JUnit report for the merge-request widget; 401 and 403 answers named with the token and
//! the scope it lacks; no token in any output.

use crate::common::{self, stderr_of, stdout_of, write};

use std::future::Future;
use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "glpat-s3cret-value";
const JOB_TOKEN: &str = "job-s3cret-value";
const NOTES: &str = "/api/v4/projects/42/merge_requests/7/notes";
const MARKER: &str = "<!-- kgate:bench-gpu -->";

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A suite of one benchmark with a stored baseline.
fn suite() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "kgate.yaml",
        // The wall time of `true` informs and does not gate: these tests are about posting,
        // and on a loaded machine five runs of it can be five times slower than the last five.
        "defaults: {warmup: 0, repetitions: 5}\nbenchmarks:\n  - {name: a, command: [true], metrics: {wall_time: {gate: false}}}\n",
    );
    common::kgate(tmp.path())
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    tmp
}

/// `kgate ci` as a GitLab merge-request job runs it, with no GitHub variable in sight.
fn ci(
    dir: &Path,
    server: &MockServer,
    token: (&str, &str),
    extra: &[&str],
) -> std::process::Output {
    let mut cmd = job(dir, server);
    cmd.env(token.0, token.1);
    let mut args = vec!["ci", "--no-progress", "--comment", "always"];
    args.extend_from_slice(extra);
    cmd.args(&args).output().unwrap()
}

/// kgate in a GitLab merge-request job, without a token.
fn job(dir: &Path, server: &MockServer) -> assert_cmd::Command {
    let mut cmd = common::kgate(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") || k.starts_with("CI_") || k.starts_with("GITLAB") {
            cmd.env_remove(k);
        }
    }
    cmd.env_remove("KGATE_GITLAB_TOKEN")
        .env_remove("KGATE_JOB_ID")
        .env_remove("GITLAB_TOKEN")
        .env("GITLAB_CI", "true")
        .env("CI_API_V4_URL", format!("{}/api/v4", server.uri()))
        .env("CI_PROJECT_ID", "42")
        .env("CI_MERGE_REQUEST_IID", "7")
        .env("CI_JOB_NAME", "bench gpu")
        .env("CI_JOB_URL", "https://gitlab.example.com/g/k/-/jobs/5")
        .env("CI_PROJECT_URL", "https://gitlab.example.com/g/k");
    cmd
}

fn note(id: u64, author: &str, body: &str) -> Value {
    json!({"id": id, "body": body, "author": {"id": 1, "username": author}, "system": false})
}

fn serve(mount: impl FnOnce(&MockServer) -> Vec<Mock> + Send + 'static) -> MockServer {
    std::thread::spawn(move || {
        block_on(async move {
            let server = MockServer::start().await;
            for m in mount(&server) {
                m.mount(&server).await;
            }
            server
        })
    })
    .join()
    .unwrap()
}

fn user_mock() -> Mock {
    Mock::given(method("GET"))
        .and(path("/api/v4/user"))
        .and(header("private-token", TOKEN))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"id": 9, "username": "project_42_bot"})),
        )
}

fn assert_no_token(out: &std::process::Output, dir: &Path) {
    let all = format!(
        "{}{}{}",
        stdout_of(out),
        stderr_of(out),
        std::fs::read_to_string(dir.join("kgate-junit.xml")).unwrap_or_default()
    );
    assert!(!all.contains("s3cret"), "a token in the output: {all}");
}

#[test]
fn creates_the_note_after_reading_every_page_then_updates_it() {
    let tmp = suite();
    let dir = tmp.path();
    // Page 1: someone else's note quoting the marker, and the bot's note of another job.
    let server = serve(|_| {
        vec![
            user_mock(),
            Mock::given(method("GET"))
                .and(path(NOTES))
                .and(query_param("page", "1"))
                .and(query_param("per_page", "100"))
                .respond_with(
                    ResponseTemplate::new(200)
                        .insert_header("x-next-page", "2")
                        .set_body_json(json!([
                            note(1, "mallory", &format!("quoting {MARKER}")),
                            note(2, "project_42_bot", "<!-- kgate:other-job -->\nPASS"),
                        ])),
                ),
            Mock::given(method("GET"))
                .and(path(NOTES))
                .and(query_param("page", "2"))
                .respond_with(
                    ResponseTemplate::new(200)
                        .insert_header("x-next-page", "")
                        .set_body_json(json!([note(3, "reviewer", "looks good")])),
                ),
            Mock::given(method("POST"))
                .and(path(NOTES))
                .and(header("private-token", TOKEN))
                .respond_with(ResponseTemplate::new(201).set_body_json(note(
                    99,
                    "project_42_bot",
                    "<!-- kgate:bench-gpu -->",
                )))
                .expect(1),
        ]
    });
    let out = ci(dir, &server, ("KGATE_GITLAB_TOKEN", TOKEN), &[]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "kgate: added a note to !7: https://gitlab.example.com/g/k/-/merge_requests/7#note_99"
        ),
        "{err}"
    );
    let requests = block_on(server.received_requests()).unwrap();
    let post = requests
        .iter()
        .find(|r| r.method.as_str() == "POST")
        .unwrap();
    let body: Value = serde_json::from_slice(&post.body).unwrap();
    let text = body["body"].as_str().unwrap();
    assert!(text.starts_with(MARKER), "{text}");
    assert!(
        text.contains("https://gitlab.example.com/g/k/-/jobs/5"),
        "the job is linked: {text}"
    );
    assert!(
        !requests.iter().any(|r| r.method.as_str() == "PUT"),
        "neither someone else's note nor another job's is edited"
    );
    // The JUnit report for the merge-request widget.
    let junit = std::fs::read_to_string(dir.join("kgate-junit.xml")).unwrap();
    assert!(
        junit.contains("<testsuite") && junit.contains("name=\"a"),
        "{junit}"
    );
    assert!(
        err.contains("kgate: wrote the JUnit report kgate-junit.xml"),
        "{err}"
    );
    assert_no_token(&out, dir);

    // The next job finds its own note on page 2 and updates it.
    let server = serve(|_| {
        vec![
            user_mock(),
            Mock::given(method("GET"))
                .and(path(NOTES))
                .and(query_param("page", "1"))
                .respond_with(
                    ResponseTemplate::new(200)
                        .insert_header("x-next-page", "2")
                        .set_body_json(json!([note(1, "mallory", MARKER)])),
                ),
            Mock::given(method("GET"))
                .and(path(NOTES))
                .and(query_param("page", "2"))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([note(
                    99,
                    "project_42_bot",
                    &format!("{MARKER}\nold")
                )]))),
            Mock::given(method("PUT"))
                .and(path(format!("{NOTES}/99")))
                .respond_with(ResponseTemplate::new(200).set_body_json(note(
                    99,
                    "project_42_bot",
                    MARKER,
                )))
                .expect(1),
            Mock::given(method("POST"))
                .and(path(NOTES))
                .respond_with(ResponseTemplate::new(500))
                .expect(0),
        ]
    });
    let out = ci(dir, &server, ("KGATE_GITLAB_TOKEN", TOKEN), &[]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("kgate: updated the note on !7: https://gitlab.example.com/g/k/-/merge_requests/7#note_99"),
        "{err}"
    );
    block_on(server.verify());
    assert_no_token(&out, dir);
}

/// The split that keeps the access token away from the benchmarks: one job measures without it
/// (`kgate ci --comment never`), a later one posts the report it left (`kgate comment`).
#[test]
fn a_job_without_the_token_measures_and_a_later_one_posts_its_note() {
    let tmp = suite();
    let dir = tmp.path();
    let server = serve(|_| {
        vec![
            user_mock(),
            Mock::given(method("GET"))
                .and(path(NOTES))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
            Mock::given(method("POST"))
                .and(path(NOTES))
                .and(header("private-token", TOKEN))
                .respond_with(ResponseTemplate::new(201).set_body_json(note(
                    99,
                    "project_42_bot",
                    MARKER,
                )))
                .expect(1),
        ]
    });
    let out = job(dir, &server)
        .args(["ci", "--no-progress", "--comment", "never"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        block_on(server.received_requests()).unwrap().is_empty(),
        "the measuring job calls nothing"
    );
    let out = job(dir, &server)
        .env("CI_JOB_NAME", "post")
        .env("KGATE_GITLAB_TOKEN", TOKEN)
        .args([
            "comment",
            "kgate-report.json",
            "--job-id",
            "bench-gpu",
            "--comment",
            "always",
        ])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "kgate: added a note to !7: https://gitlab.example.com/g/k/-/merge_requests/7#note_99"
        ),
        "{err}"
    );
    let requests = block_on(server.received_requests()).unwrap();
    let post = requests
        .iter()
        .find(|r| r.method.as_str() == "POST")
        .unwrap();
    let body: Value = serde_json::from_slice(&post.body).unwrap();
    assert!(body["body"].as_str().unwrap().starts_with(MARKER), "{body}");
    block_on(server.verify());
    assert_no_token(&out, dir);
}

#[test]
fn the_job_token_is_refused_with_what_to_set_instead() {
    let tmp = suite();
    let dir = tmp.path();
    let server = serve(|_| {
        vec![
            Mock::given(method("GET"))
                .and(path("/api/v4/user"))
                .and(header("job-token", JOB_TOKEN))
                .respond_with(
                    ResponseTemplate::new(401)
                        .set_body_json(json!({"message": "401 Unauthorized"})),
                ),
        ]
    });
    let out = ci(dir, &server, ("CI_JOB_TOKEN", JOB_TOKEN), &[]);
    let err = stderr_of(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "posting never decides the gate: {err}"
    );
    assert!(
        err.contains("warning: GitLab refused the token (401 Unauthorized) to identify the token's user (GET /user): the job's CI_JOB_TOKEN was used, and GitLab lets job tokens call only a few API endpoints, not merge-request notes.")
            && err.contains("the `api` scope")
            && err.contains("KGATE_GITLAB_TOKEN"),
        "{err}"
    );
    assert_no_token(&out, dir);
    // On request, a posting failure fails the job.
    let out = ci(
        dir,
        &server,
        ("CI_JOB_TOKEN", JOB_TOKEN),
        &["--fail-on-post-error"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
}

#[test]
fn a_token_without_the_api_scope_is_named_on_403() {
    let tmp = suite();
    let dir = tmp.path();
    let server = serve(|_| {
        vec![
            user_mock(),
            Mock::given(method("GET"))
                .and(path(NOTES))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
            Mock::given(method("POST")).and(path(NOTES)).respond_with(
                ResponseTemplate::new(403).set_body_json(json!({"message": "403 Forbidden"})),
            ),
        ]
    });
    let out = ci(dir, &server, ("KGATE_GITLAB_TOKEN", TOKEN), &[]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("GitLab does not let the token create the merge-request note (403 Forbidden): the access token in KGATE_GITLAB_TOKEN (or GITLAB_TOKEN) lacks the `api` scope (a `read_api` token cannot write notes) or the Reporter role in project 42"),
        "{err}"
    );
    assert_no_token(&out, dir);
}

#[test]
fn outside_a_merge_request_nothing_is_posted_and_the_junit_report_is_still_written() {
    let tmp = suite();
    let dir = tmp.path();
    let server = serve(|_| Vec::new());
    let mut cmd = common::kgate(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") || k.starts_with("CI_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .env("GITLAB_CI", "true")
        .env("CI_API_V4_URL", format!("{}/api/v4", server.uri()))
        .env("CI_PROJECT_ID", "42")
        .env("KGATE_GITLAB_TOKEN", TOKEN)
        .args([
            "ci",
            "--no-progress",
            "--comment",
            "always",
            "--junit",
            "out/junit.xml",
        ])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "kgate: not a merge-request pipeline (CI_MERGE_REQUEST_IID is unset), so no note"
        ),
        "{err}"
    );
    assert!(dir.join("out/junit.xml").exists());
    assert!(block_on(server.received_requests()).unwrap().is_empty());
}
