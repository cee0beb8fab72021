//! The GitHub integration against a fake GitHub API served over HTTP on loopback (wiremock):
//! the requests octocrab really sends, retries, error messages, the event payloads of the four
//! events kgate reads, and the environment files `kgate ci` writes.

use crate::common::{self, git};

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kgate::github::body::{self, CommentPolicy};
use kgate::github::client::{
    ACTIONS_BOT, CommentOutcome, Conclusion, GithubClient, GithubError, RetryPolicy,
};
use kgate::github::env::{GithubContext, parse_event};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github")
        .join(name)
}

fn payload(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
}

/// A complete issue comment as the API returns it (octocrab needs every required field).
/// Expects one POST of a new comment to `at`, answered as GitHub does: the comment, with
/// `id`, by the Actions bot, holding the body that was sent.
async fn expect_one_comment_post(server: &MockServer, at: impl Into<String>, id: u64) {
    let uri = server.uri();
    Mock::given(method("POST"))
        .and(path(at.into()))
        .respond_with(move |req: &Request| {
            let sent: Value = serde_json::from_slice(&req.body).unwrap();
            ResponseTemplate::new(201).set_body_json(fake_comment(
                &uri,
                id,
                ACTIONS_BOT,
                sent["body"].as_str().unwrap(),
            ))
        })
        .expect(1)
        .mount(server)
        .await;
}

fn fake_comment(base: &str, id: u64, login: &str, body: &str) -> Value {
    let user = format!("{base}/users/{login}");
    json!({
        "id": id,
        "node_id": format!("IC_kw{id}"),
        "url": format!("{base}/repos/o/r/issues/comments/{id}"),
        "html_url": format!("https://github.example/o/r/pull/7#issuecomment-{id}"),
        "issue_url": format!("{base}/repos/o/r/issues/7"),
        "body": body,
        "author_association": "NONE",
        "user": {
            "login": login,
            "id": 9000 + id,
            "node_id": format!("U_{id}"),
            "avatar_url": "https://avatars.example/u/1",
            "gravatar_id": "",
            "url": user,
            "html_url": format!("https://github.example/{login}"),
            "followers_url": format!("{user}/followers"),
            "following_url": format!("{user}/following"),
            "gists_url": format!("{user}/gists"),
            "starred_url": format!("{user}/starred"),
            "subscriptions_url": format!("{user}/subscriptions"),
            "organizations_url": format!("{user}/orgs"),
            "repos_url": format!("{user}/repos"),
            "events_url": format!("{user}/events"),
            "received_events_url": format!("{user}/received_events"),
            "type": if login.ends_with("[bot]") { "Bot" } else { "User" },
            "site_admin": false
        },
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z"
    })
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        attempts: 3,
        backoff: Duration::from_millis(10),
        rate_limit_wait: Duration::from_millis(10),
        max_wait: Duration::from_secs(5),
    }
}

fn client(server: &MockServer) -> GithubClient {
    GithubClient::new(&server.uri(), "test-token", "o", "r")
        .unwrap()
        .with_retry_policy(fast_retries())
}

const COMMENTS: &str = "/repos/o/r/issues/7/comments";

#[test]
fn creates_the_comment_when_none_exists() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .and(query_param("per_page", "100"))
            .and(query_param("page", "1"))
            .and(header("authorization", "Bearer test-token"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!([fake_comment(
                    &server.uri(),
                    1,
                    ACTIONS_BOT,
                    "<!-- kgate:other-job -->\nanother job's comment"
                )])),
            )
            .expect(1)
            .mount(&server)
            .await;
        expect_one_comment_post(&server, COMMENTS, 99).await;
        let outcome = client(&server)
            .upsert_comment(
                7,
                &body::marker("bench"),
                ACTIONS_BOT,
                "<!-- kgate:bench -->\nhi",
                true,
            )
            .await
            .unwrap();
        assert_eq!(
            outcome,
            CommentOutcome::Created {
                id: 99,
                url: "https://github.example/o/r/pull/7#issuecomment-99".into()
            }
        );
        let requests = server.received_requests().await.unwrap();
        let post = requests
            .iter()
            .find(|r| r.method.as_str() == "POST")
            .unwrap();
        let sent: Value = serde_json::from_slice(&post.body).unwrap();
        assert_eq!(sent, json!({"body": "<!-- kgate:bench -->\nhi"}));
    });
}

#[test]
fn updates_its_own_comment_found_on_a_later_page_and_leaves_others_alone() {
    block_on(async {
        let server = MockServer::start().await;
        let uri = server.uri();
        let marker = body::marker("bench");
        // Page 1: a human quoting the marker, and kgate's comment for another job.
        let page1: Vec<Value> = vec![
            fake_comment(&uri, 10, "alice", &format!("{marker}\nquoted by a human")),
            fake_comment(&uri, 11, ACTIONS_BOT, "<!-- kgate:bench-2 -->\nother job"),
        ];
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .and(query_param("page", "1"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!(page1))
                    .insert_header(
                        "link",
                        format!("<{uri}{COMMENTS}?per_page=100&page=2>; rel=\"next\", <{uri}{COMMENTS}?per_page=100&page=2>; rel=\"last\"").as_str(),
                    ),
            )
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .and(query_param("page", "2"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!([fake_comment(
                    &uri,
                    12,
                    ACTIONS_BOT,
                    &format!("{marker}\nold report")
                )])),
            )
            .expect(1)
            .mount(&server)
            .await;
        // octocrab updates a comment with POST (GitHub accepts POST for PATCH endpoints).
        Mock::given(method("POST"))
            .and(path("/repos/o/r/issues/comments/12"))
            .and(body_partial_json(
                json!({"body": format!("{marker}\nnew report")}),
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(fake_comment(
                &uri,
                12,
                ACTIONS_BOT,
                &format!("{marker}\nnew report"),
            )))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(500))
            .expect(0)
            .mount(&server)
            .await;
        let outcome = client(&server)
            .upsert_comment(
                7,
                &marker,
                ACTIONS_BOT,
                &format!("{marker}\nnew report"),
                false,
            )
            .await
            .unwrap();
        assert!(
            matches!(outcome, CommentOutcome::Updated { id: 12, .. }),
            "{outcome:?}"
        );
        // Nothing but the two listings and the one update.
        let requests = server.received_requests().await.unwrap();
        assert_eq!(requests.len(), 3);
    });
}

#[test]
fn the_policy_can_forbid_a_new_comment() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .mount(&server)
            .await;
        let outcome = client(&server)
            .upsert_comment(7, &body::marker("default"), ACTIONS_BOT, "x", false)
            .await
            .unwrap();
        assert_eq!(outcome, CommentOutcome::Skipped);
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    });
}

#[test]
fn retries_server_errors_then_succeeds() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(502).set_body_string("bad gateway"))
            .up_to_n_times(2)
            .with_priority(1)
            .expect(2)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .expect(1)
            .mount(&server)
            .await;
        let found = client(&server)
            .find_comment(7, "<!-- kgate:default -->", ACTIONS_BOT)
            .await
            .unwrap();
        assert!(found.is_none());
    });
}

#[test]
fn server_errors_give_up_after_the_last_attempt() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(503))
            .expect(3)
            .mount(&server)
            .await;
        let err = client(&server)
            .find_comment(7, "<!-- kgate:default -->", ACTIONS_BOT)
            .await
            .unwrap_err();
        assert!(
            matches!(err, GithubError::GaveUp { attempts: 3, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("GitHub failed to list the pull request's comments after 3 attempts"),
            "{err}"
        );
    });
}

#[test]
fn secondary_rate_limits_wait_as_long_as_retry_after_says() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMMENTS))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "1")
                    .set_body_json(json!({"message": "You have exceeded a secondary rate limit"})),
            )
            .up_to_n_times(1)
            .with_priority(1)
            .expect(1)
            .mount(&server)
            .await;
        let uri = server.uri();
        Mock::given(method("POST"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(201).set_body_json(fake_comment(
                &uri,
                5,
                ACTIONS_BOT,
                "b",
            )))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .mount(&server)
            .await;
        let start = Instant::now();
        let outcome = client(&server)
            .upsert_comment(7, "<!-- kgate:default -->", ACTIONS_BOT, "b", true)
            .await
            .unwrap();
        assert!(matches!(outcome, CommentOutcome::Created { id: 5, .. }));
        // retry-after: 1 overrides the policy's 10 ms.
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    });
}

#[test]
fn a_forbidden_token_names_the_missing_permission() {
    block_on(async {
        let server = MockServer::start().await;
        let forbidden = ResponseTemplate::new(403).set_body_json(json!({
            "message": "Resource not accessible by integration",
            "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment"
        }));
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(COMMENTS))
            .respond_with(forbidden.clone())
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/repos/o/r/check-runs"))
            .respond_with(forbidden)
            .expect(1)
            .mount(&server)
            .await;
        let c = client(&server);
        let err = c
            .upsert_comment(7, "<!-- kgate:default -->", ACTIONS_BOT, "b", true)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "GitHub refused to create the pull-request comment (403 Forbidden: Resource not accessible by integration): the token lacks `pull-requests: write`; add `permissions: { pull-requests: write }` to the job. Pull requests from forks only get a read-only token: post from a `workflow_run` workflow instead (docs/github.md, \"Fork pull requests\")"
        );
        let err = c.start_check_run("kgate", "abc").await.unwrap_err();
        assert!(
            err.to_string().contains("the token lacks `checks: write`"),
            "{err}"
        );
    });
}

#[test]
fn unauthorized_and_not_found_are_explained() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(
                ResponseTemplate::new(401).set_body_json(json!({"message": "Bad credentials"})),
            )
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/repos/o/r/issues/8/comments"))
            .respond_with(ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"})))
            .mount(&server)
            .await;
        let c = client(&server);
        let err = c.find_comment(7, "m", ACTIONS_BOT).await.unwrap_err();
        assert!(err.to_string().starts_with("GitHub rejected the token (401 Unauthorized) trying to list the pull request's comments: Bad credentials; pass a valid token"), "{err}");
        let err = c.find_comment(8, "m", ACTIONS_BOT).await.unwrap_err();
        assert!(
            err.to_string().contains("404 Not Found")
                && err.to_string().contains("`pull-requests: write`"),
            "{err}"
        );
    });
}

#[test]
fn identity_is_the_users_login_or_the_actions_bot() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/user"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"login": "kgate-bot", "id": 5})),
            )
            .mount(&server)
            .await;
        assert_eq!(client(&server).identity().await.unwrap(), "kgate-bot");
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/user"))
            .respond_with(
                ResponseTemplate::new(403)
                    .set_body_json(json!({"message": "Resource not accessible by integration"})),
            )
            .expect(1)
            .mount(&server)
            .await;
        assert_eq!(client(&server).identity().await.unwrap(), ACTIONS_BOT);
    });
}

#[test]
fn check_runs_start_in_progress_and_complete() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/repos/o/r/check-runs"))
            .and(body_partial_json(
                json!({"name": "kgate (gpu)", "head_sha": "abc123", "status": "in_progress"}),
            ))
            .respond_with(
                ResponseTemplate::new(201)
                    .set_body_json(json!({"id": 314, "status": "in_progress"})),
            )
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("PATCH"))
            .and(path("/repos/o/r/check-runs/314"))
            .and(body_partial_json(json!({"status": "completed", "conclusion": "failure", "output": {"title": "1 regression"}})))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": 314, "html_url": "https://github.example/o/r/runs/314"})))
            .expect(1)
            .mount(&server)
            .await;
        let c = client(&server);
        let id = c.start_check_run("kgate (gpu)", "abc123").await.unwrap();
        assert_eq!(id, 314);
        let url = c
            .finish_check_run(id, Conclusion::Failure, "1 regression", "details")
            .await
            .unwrap();
        assert_eq!(url.as_deref(), Some("https://github.example/o/r/runs/314"));
    });
}

#[test]
fn a_fork_pull_request_is_found_from_its_head_branch_and_commit() {
    block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/repos/o/r/pulls"))
            .and(query_param("head", "drive-by:tiling"))
            .and(query_param("state", "open"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                {"number": 76, "head": {"sha": "0000000000000000000000000000000000000001"}},
                {"number": 77, "head": {"sha": "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"}}
            ])))
            .mount(&server)
            .await;
        let pr = client(&server)
            .find_pull_request(
                "drive-by",
                "tiling",
                "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
            )
            .await
            .unwrap();
        assert_eq!(pr, Some(77));
    });
}

#[test]
fn event_payloads_of_the_four_events() {
    let pr = parse_event("pull_request", &payload("pull_request.json"));
    assert_eq!(pr.pr_number, Some(42));
    assert_eq!(
        pr.head_sha.as_deref(),
        Some("6dcb09b5b57875f334f61aebed695e2e4193db5e")
    );
    assert_eq!(pr.base_ref.as_deref(), Some("main"));
    assert_eq!(
        pr.base_sha.as_deref(),
        Some("9a3f1c2e4b5d6a7f8091a2b3c4d5e6f708192a3b")
    );
    assert_eq!(pr.head_repo, pr.base_repo);

    let target = parse_event(
        "pull_request_target",
        &payload("pull_request_target_fork.json"),
    );
    assert_eq!(target.pr_number, Some(77));
    assert_eq!(
        target.head_sha.as_deref(),
        Some("c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00")
    );
    assert_eq!(target.head_repo.as_deref(), Some("drive-by/kernels"));
    assert_eq!(target.base_repo.as_deref(), Some("octo-org/kernels"));

    let push = parse_event("push", &payload("push.json"));
    assert_eq!(push.pr_number, None);
    assert_eq!(
        push.head_sha.as_deref(),
        Some("1f2e3d4c5b6a79880f1e2d3c4b5a697887766554")
    );
    assert_eq!(
        push.base_sha.as_deref(),
        Some("9a3f1c2e4b5d6a7f8091a2b3c4d5e6f708192a3b")
    );
    assert_eq!(push.base_ref, None);

    let run = parse_event("workflow_run", &payload("workflow_run.json"));
    assert_eq!(run.pr_number, Some(42));
    assert_eq!(
        run.head_sha.as_deref(),
        Some("6dcb09b5b57875f334f61aebed695e2e4193db5e")
    );
    assert_eq!(run.base_ref.as_deref(), Some("main"));

    let fork = parse_event("workflow_run", &payload("workflow_run_fork.json"));
    assert_eq!(
        fork.pr_number, None,
        "GitHub lists no pull requests for a fork's run"
    );
    assert_eq!(fork.head_owner.as_deref(), Some("drive-by"));
    assert_eq!(fork.head_branch.as_deref(), Some("tiling"));
    assert_eq!(fork.head_repo.as_deref(), Some("drive-by/kernels"));
    assert_eq!(fork.base_repo.as_deref(), Some("octo-org/kernels"));
}

#[test]
fn the_context_comes_from_the_environment_and_the_event_file() {
    let vars: BTreeMap<String, String> = [
        ("GITHUB_REPOSITORY", "octo-org/kernels".to_string()),
        ("GITHUB_EVENT_NAME", "pull_request".to_string()),
        (
            "GITHUB_EVENT_PATH",
            fixture("pull_request.json").display().to_string(),
        ),
        (
            "GITHUB_SHA",
            "merge000000000000000000000000000000000000".to_string(),
        ),
        ("GITHUB_API_URL", "https://ghe.example/api/v3".to_string()),
        ("GITHUB_SERVER_URL", "https://ghe.example".to_string()),
        ("GITHUB_RUN_ID", "12345".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let ctx = GithubContext::from_vars(&vars).unwrap().unwrap();
    assert_eq!(
        (ctx.owner.as_str(), ctx.repo.as_str()),
        ("octo-org", "kernels")
    );
    assert_eq!(ctx.api_url, "https://ghe.example/api/v3");
    // The head commit, not the merge commit in GITHUB_SHA.
    assert_eq!(
        ctx.head_sha(),
        Some("6dcb09b5b57875f334f61aebed695e2e4193db5e")
    );
    assert_eq!(
        ctx.run_url().as_deref(),
        Some("https://ghe.example/octo-org/kernels/actions/runs/12345")
    );
    assert!(
        GithubContext::from_vars(&BTreeMap::new())
            .unwrap()
            .is_none()
    );
    let mut bad = vars.clone();
    bad.insert("GITHUB_REPOSITORY".into(), "no-slash".into());
    assert_eq!(
        GithubContext::from_vars(&bad).unwrap_err().to_string(),
        "GITHUB_REPOSITORY is `no-slash`, expected `owner/name`; set it (Actions sets it for every job)"
    );
}

#[test]
fn comment_policies() {
    let mut report: kgate::model::report::Report =
        serde_json::from_value(report_json(0, 3)).unwrap();
    assert!(CommentPolicy::Always.allows_new(&report));
    assert!(!CommentPolicy::OnChange.allows_new(&report));
    assert!(!CommentPolicy::OnRegression.allows_new(&report));
    report.summary.regressed = 1;
    assert!(CommentPolicy::OnRegression.allows_new(&report));
    assert!(CommentPolicy::OnChange.allows_new(&report));
    assert!(!CommentPolicy::Never.allows_new(&report));
}

/// A report with `regressed` regressed benchmarks (long names) and `unchanged` unchanged ones.
fn report_json(regressed: usize, unchanged: usize) -> Value {
    let summary = |median: f64| {
        json!({"n": 10, "median": median, "mean": median, "std_dev": 1.0, "cv": 0.001, "mad": 0.5,
               "min": median - 1.0, "max": median + 1.0, "outliers": 0})
    };
    let metric = |verdict: &str, change: f64| {
        json!({
            "name": "kernel_time", "unit": "ns", "source": "timer", "direction": "lower",
            "gates": true, "verdict": verdict, "reason": "r", "method": "rank-test",
            "threshold": 0.05,
            "base": summary(1000.0),
            "head": summary(1000.0 * (1.0 + change)),
            "change": change, "ci": [change - 0.01, change + 0.01], "p_value": 0.0001
        })
    };
    let mut benchmarks = Vec::new();
    for i in 0..regressed {
        benchmarks.push(json!({
            "name": format!("regressed_{i:05}_{}", "x".repeat(60)),
            "verdict": "regressed",
            "explanation": format!("kernel_time +{}%", 10 + i),
            "metrics": [metric("regressed", 0.10 + i as f64 / 1000.0)]
        }));
    }
    for i in 0..unchanged {
        benchmarks.push(json!({
            "name": format!("same_{i:05}"),
            "verdict": "unchanged",
            "explanation": "",
            "metrics": [metric("unchanged", 0.0)]
        }));
    }
    json!({
        "schema_version": 1, "verdict": if regressed > 0 { "regressed" } else { "pass" },
        "summary": {"regressed": regressed, "improved": 0, "unchanged": unchanged, "inconclusive": 0, "new": 0, "missing": 0, "total": regressed + unchanged},
        "design": "stored-baseline", "alpha": 0.01, "warnings": [], "benchmarks": benchmarks
    })
}

#[test]
fn the_comment_fits_githubs_limit_by_folding_then_dropping_rows() {
    // Small: the full report, marker first.
    let small: kgate::model::report::Report = serde_json::from_value(report_json(1, 2)).unwrap();
    let text = body::comment_body(&small, "gpu-h100", None);
    assert!(text.starts_with("<!-- kgate:gpu-h100 -->\n"));
    assert!(
        text.contains("same\\_00001"),
        "unchanged rows are shown when they fit"
    );

    // Many unchanged rows: folded away, every regression kept.
    let folded: kgate::model::report::Report =
        serde_json::from_value(report_json(5, 3000)).unwrap();
    let text = body::comment_body(&folded, "default", Some("https://github.example/run/1"));
    assert!(text.chars().count() <= body::COMMENT_LIMIT_CHARS);
    assert!(
        text.contains("the 3000 rows without a change are left out"),
        "{}",
        &text[text.len() - 400..]
    );
    assert_eq!(
        text.matches("| regressed\\_").count(),
        10,
        "5 regressions, each in both tables"
    );

    // Too many regressions: the least important are dropped, with a line saying so.
    let cut: kgate::model::report::Report = serde_json::from_value(report_json(2000, 10)).unwrap();
    let text = body::comment_body(&cut, "default", None);
    let chars = text.chars().count();
    assert!(
        chars <= body::COMMENT_LIMIT_CHARS && chars > 60_000,
        "{chars}"
    );
    assert!(
        text.contains("of 2010 rows shown"),
        "{}",
        &text[text.len() - 400..]
    );
    // The largest regression (the last one, +11.999 %) survives; the smallest does not.
    assert!(text.contains("regressed\\_01999"));
    assert!(!text.contains("regressed\\_00000\\_"));
}

#[test]
fn the_job_summary_stays_under_one_mebibyte_with_what_is_already_there() {
    use kgate::github::env::{STEP_SUMMARY_LIMIT, append_step_summary, summary_room};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("summary.md");
    std::fs::write(&file, "x".repeat(100_000)).unwrap();
    let room = summary_room(&file);
    assert_eq!(room, STEP_SUMMARY_LIMIT - 100_000);
    let big: kgate::model::report::Report = serde_json::from_value(report_json(8000, 0)).unwrap();
    let text = body::fit_markdown(
        &big,
        "",
        "\n",
        "the JSON report",
        room,
        body::Measure::Bytes,
    );
    assert!(
        text.len() <= room && text.len() > room - 2_000,
        "{}",
        text.len()
    );
    assert!(text.contains("of 8000 rows shown"));
    append_step_summary(&file, &text).unwrap();
    assert!(std::fs::metadata(&file).unwrap().len() <= STEP_SUMMARY_LIMIT as u64);
}

#[test]
fn only_the_top_regressions_are_annotated() {
    let report: kgate::model::report::Report = serde_json::from_value(report_json(15, 2)).unwrap();
    let lines = kgate::cli::commands::github::report_annotations(&report, 10);
    assert_eq!(lines.len(), 11);
    // Largest change first: regressed_00014 is +11.4 %.
    assert!(
        lines[0].starts_with("::error title=kgate%3A regressed_00014_"),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with("::kernel_time +24%25"), "{}", lines[0]);
    assert!(lines[9].starts_with("::error title=kgate%3A regressed_00005_"));
    assert_eq!(
        lines[10],
        "::notice title=kgate::5 more regressed benchmarks are listed in the job summary"
    );
}

#[test]
fn job_ids_cannot_break_the_marker() {
    assert!(body::validate_job_id("bench-gpu/h100_1.0").is_ok());
    for bad in ["", "a -->", "a--b", "x\ny", "a b"] {
        assert!(body::validate_job_id(bad).is_err(), "{bad:?}");
    }
}

// ---- end to end: the binary against the fake API ----

/// [`common::kgate`] without any of the GitHub environment of the machine running the tests.
fn kgate(dir: &Path) -> assert_cmd::Command {
    let mut cmd = common::kgate(dir);
    cmd.env_remove("GITHUB_TOKEN")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("KGATE_JOB_ID");
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// The action's posting step passes `kgate ci`'s exit status: a gate that failed fails the
/// check run even where the rows pass; a status of 0 never makes rows that regressed green (it
/// is not checked against them, and in the two-workflow pattern it would come from the
/// untrusted job).
#[test]
fn comment_concludes_the_check_run_no_better_than_the_rows_and_the_gate() {
    let server = std::thread::spawn(|| {
        block_on(async {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .and(path("/repos/octo-org/kernels/check-runs"))
                .respond_with(
                    ResponseTemplate::new(201)
                        .set_body_json(json!({"id": 55, "status": "in_progress"})),
                )
                .expect(2)
                .mount(&server)
                .await;
            Mock::given(method("PATCH"))
                .and(path("/repos/octo-org/kernels/check-runs/55"))
                .respond_with(|req: &Request| {
                    let sent: Value = serde_json::from_slice(&req.body).unwrap();
                    let url = format!(
                        "https://github.example/octo-org/kernels/runs/{}",
                        sent["conclusion"].as_str().unwrap()
                    );
                    ResponseTemplate::new(200).set_body_json(json!({"id": 55, "html_url": url}))
                })
                .expect(2)
                .mount(&server)
                .await;
            server
        })
    })
    .join()
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("regressed.json"), report_json(1, 1).to_string()).unwrap();
    std::fs::write(d.join("passed.json"), report_json(0, 2).to_string()).unwrap();
    // The gate's status can make the conclusion worse than the rows say (a pass the gate
    // failed, `fail_on_inconclusive` say), never better: a status of 0 does not turn rows
    // that regressed green, whoever passes it.
    for (report, status, conclusion) in [
        ("passed.json", Some("1"), "failure"),
        ("regressed.json", Some("0"), "failure"),
    ] {
        let mut cmd = kgate(d);
        cmd.args(["comment", report, "--comment", "never", "--check-run"]);
        if let Some(status) = status {
            cmd.args(["--gate-status", status]);
        }
        let out = cmd
            .env("GITHUB_REPOSITORY", "octo-org/kernels")
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", fixture("pull_request.json"))
            .env("GITHUB_API_URL", server.uri())
            .env("GITHUB_OUTPUT", d.join("out.txt"))
            .env("GITHUB_TOKEN", "t")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
        let outputs = std::fs::read_to_string(d.join("out.txt")).unwrap();
        assert!(
            outputs.ends_with(&format!(
                "check-run-url=https://github.example/octo-org/kernels/runs/{conclusion}\n"
            )),
            "{outputs}"
        );
    }
    block_on(server.verify());
}

#[test]
fn comment_command_posts_and_never_prints_the_token() {
    let server = std::thread::spawn(|| {
        block_on(async {
            let server = MockServer::start().await;
            Mock::given(method("GET"))
                .and(path("/repos/octo-org/kernels/issues/42/comments"))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
                .mount(&server)
                .await;
            expect_one_comment_post(&server, "/repos/octo-org/kernels/issues/42/comments", 7).await;
            server
        })
    })
    .join()
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("report.json"), report_json(1, 1).to_string()).unwrap();
    let out = kgate(d)
        .args([
            "comment",
            "report.json",
            "--comment",
            "always",
            "--comment-author",
            ACTIONS_BOT,
        ])
        .env("GITHUB_REPOSITORY", "octo-org/kernels")
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", fixture("pull_request.json"))
        .env("GITHUB_API_URL", server.uri())
        .env("GITHUB_OUTPUT", d.join("out.txt"))
        .env("GITHUB_TOKEN", "s3cret-token-value")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr
            .contains("kgate: commented on #42: https://github.example/o/r/pull/7#issuecomment-7"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret") && !String::from_utf8_lossy(&out.stdout).contains("s3cret"));
    assert_eq!(
        std::fs::read_to_string(d.join("out.txt")).unwrap(),
        "comment-url=https://github.example/o/r/pull/7#issuecomment-7\ncheck-run-url=\n"
    );
    let requests = block_on(server.received_requests()).unwrap();
    let post = requests
        .iter()
        .find(|r| r.method.as_str() == "POST")
        .unwrap();
    let sent: Value = serde_json::from_slice(&post.body).unwrap();
    assert!(
        sent["body"]
            .as_str()
            .unwrap()
            .starts_with("<!-- kgate:default -->\n### ❌ kgate: REGRESSED")
    );
    let help = kgate(d)
        .args(["comment", "--help"])
        .env("GITHUB_TOKEN", "s3cret-token-value")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("s3cret"));
}

#[test]
fn posting_failures_warn_unless_asked_to_fail() {
    let server =
        std::thread::spawn(|| {
            block_on(async {
                let server = MockServer::start().await;
                Mock::given(method("GET"))
                    .respond_with(ResponseTemplate::new(403).set_body_json(
                        json!({"message": "Resource not accessible by integration"}),
                    ))
                    .mount(&server)
                    .await;
                server
            })
        })
        .join()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("report.json"), report_json(1, 1).to_string()).unwrap();
    let run = |extra: &[&str]| {
        kgate(d)
            .args(["comment", "report.json", "--comment-author", ACTIONS_BOT])
            .args(extra)
            .env("GITHUB_REPOSITORY", "octo-org/kernels")
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", fixture("pull_request.json"))
            .env("GITHUB_API_URL", server.uri())
            .env("GITHUB_TOKEN", "t")
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("warning: GitHub refused to list the pull request's comments (403 Forbidden")
    );
    let out = run(&["--fail-on-post-error"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `--fail-on-post-error` makes a posting failure an error, and an error (2) outranks the
/// verdict's status even where that is the larger number: no baseline (4), inconclusive (3).
#[test]
fn a_posting_error_outranks_no_baseline_and_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Bimodal kernel times: against themselves, inconclusive.
    std::fs::write(
        d.join("kgate.yaml"),
        r#"defaults: {warmup: 0, repetitions: 10, captures: [protocol]}
benchmarks:
  - name: noisy
    command: 'if [ $((KGATE_REPETITION % 2)) = 0 ]; then v=700; else v=1400; fi; echo "{\"metric\": \"kernel_time\", \"value\": $((v + KGATE_REPETITION)), \"unit\": \"us\", \"source\": \"timer\"}" >> "$KGATE_PROTOCOL_FILE"'
    metrics: {kernel_time: {source: timer}}
"#,
    )
    .unwrap();
    // A pull request and no token: the comment cannot be posted.
    let ci = |extra: &[&str]| {
        kgate(d)
            .args(["ci", "--no-progress"])
            .args(extra)
            .env("GITHUB_REPOSITORY", "octo-org/kernels")
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", fixture("pull_request.json"))
            .output()
            .unwrap()
    };
    let out = ci(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("warning: no GitHub token"), "{stderr}");
    let out = ci(&["--fail-on-post-error"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    kgate(d)
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    let out = ci(&["--fail-on", "inconclusive"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ci(&["--fail-on", "inconclusive", "--fail-on-post-error"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A policy that calls for no comment is named as users write it (`on-change`), not as the Rust
/// variant (`OnChange`).
#[test]
fn a_skipped_comment_names_the_policy_as_users_write_it() {
    let server = std::thread::spawn(|| {
        block_on(async {
            let server = MockServer::start().await;
            Mock::given(method("GET"))
                .and(path("/repos/octo-org/kernels/issues/42/comments"))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
                .mount(&server)
                .await;
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(500))
                .expect(0)
                .mount(&server)
                .await;
            server
        })
    })
    .join()
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Nothing changed, so neither policy creates a comment.
    std::fs::write(d.join("report.json"), report_json(0, 1).to_string()).unwrap();
    for policy in ["on-change", "on-regression"] {
        let out = kgate(d)
            .args(["comment", "report.json", "--comment", policy])
            .args(["--comment-author", ACTIONS_BOT])
            .env("GITHUB_REPOSITORY", "octo-org/kernels")
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", fixture("pull_request.json"))
            .env("GITHUB_API_URL", server.uri())
            .env("GITHUB_TOKEN", "t")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "kgate: no comment on #42: the `{policy}` policy does not call for one"
            )),
            "{stderr}"
        );
    }
}

#[test]
fn comment_refuses_an_untrusted_pull_request_target_checkout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    std::fs::write(d.join("report.json"), report_json(0, 1).to_string()).unwrap();
    git(d, &["add", "."]);
    git(d, &["commit", "-q", "-m", "fork head"]);
    let head = git(d, &["rev-parse", "HEAD"]);
    let mut event = payload("pull_request_target_fork.json");
    event["pull_request"]["head"]["sha"] = json!(head);
    let event_path = d.join("event.json");
    std::fs::write(&event_path, event.to_string()).unwrap();
    let run = |extra: &[&str]| {
        kgate(d)
            .args(["comment", "report.json"])
            .args(extra)
            .env("GITHUB_REPOSITORY", "octo-org/kernels")
            .env("GITHUB_EVENT_NAME", "pull_request_target")
            .env("GITHUB_EVENT_PATH", &event_path)
            .env("GITHUB_API_URL", "http://127.0.0.1:9")
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "refusing to post from a `pull_request_target` job that has checked out the fork's code"
        ),
        "{stderr}"
    );
    // Overridden: it goes on (and, without a token, posts nothing and says why).
    let out = run(&["--allow-untrusted-checkout"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no GitHub token"));
}

/// A repository whose `HEAD` is a fork's head commit, for the fork-guard tests; returns the
/// commit.
fn fork_head(dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("kgate.yaml"), format!(
        "defaults: {{warmup: 0, repetitions: 1}}\nbenchmarks:\n  - name: pwn\n    command: \"touch '{}'\"\n",
        dir.join("ran").display()
    ))
    .unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "fork head"]);
    git(dir, &["rev-parse", "HEAD"])
}

fn fork_event(dir: &Path, head: &str) -> std::path::PathBuf {
    let mut event = payload("pull_request_target_fork.json");
    event["pull_request"]["head"]["sha"] = json!(head);
    let path = dir.join("event.json");
    std::fs::write(&path, event.to_string()).unwrap();
    path
}

#[test]
fn the_fork_guard_sees_merge_commits_subfolders_and_benchmark_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = |cmd: &mut assert_cmd::Command, event: &Path| {
        cmd.env("GITHUB_ACTIONS", "true")
            .env("GITHUB_REPOSITORY", "octo-org/kernels")
            .env("GITHUB_EVENT_NAME", "pull_request_target")
            .env("GITHUB_EVENT_PATH", event)
            .env("GITHUB_WORKSPACE", d)
            .env("GITHUB_API_URL", "http://127.0.0.1:9")
            .env_remove("KGATE_ALLOW_UNTRUSTED_CHECKOUT");
    };

    // 1. The pull request's merge commit checked out: the fork's head is its parent.
    let merged = d.join("merged");
    let head = fork_head(&merged);
    git(&merged, &["checkout", "-q", "-b", "base"]);
    git(
        &merged,
        &["commit", "-q", "--allow-empty", "-m", "merge of the PR"],
    );
    let event = fork_event(d, &head);
    std::fs::write(merged.join("report.json"), report_json(0, 1).to_string()).unwrap();
    let mut cmd = kgate(&merged);
    target(&mut cmd, &event);
    let out = cmd.args(["comment", "report.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(stderr.contains("refusing to post"), "{stderr}");
    assert!(stderr.contains("or a merge of it"), "{stderr}");

    // 2. `kgate ci`, `check` and `run` refuse before any benchmark runs.
    for args in [&["ci"][..], &["check"][..], &["run", "-o", "out.json"][..]] {
        let mut cmd = kgate(&merged);
        target(&mut cmd, &event);
        let out = cmd.args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("refusing to run benchmarks from a `pull_request_target` job"),
            "{args:?}: {stderr}"
        );
        assert!(
            !merged.join("ran").exists(),
            "{args:?} ran the fork's benchmark"
        );
    }

    // 3. The base repository at the root, the fork's head in a subfolder: the work tree kgate
    //    runs in is trusted, but the fork's code sits in the workspace.
    let base = d.join("base");
    std::fs::create_dir_all(&base).unwrap();
    git(&base, &["init", "-q"]);
    std::fs::write(base.join("report.json"), report_json(0, 1).to_string()).unwrap();
    git(&base, &["add", "."]);
    git(&base, &["commit", "-q", "-m", "base"]);
    let sub_head = fork_head(&base.join("pr"));
    let event = fork_event(d, &sub_head);
    let mut cmd = kgate(&base);
    target(&mut cmd, &event);
    let out = cmd.args(["comment", "report.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(stderr.contains("pr`"), "the message names where: {stderr}");

    // 4. The same job with the base checked out only (the safe default) goes on.
    std::fs::remove_dir_all(base.join("pr")).unwrap();
    std::fs::remove_dir_all(&merged).unwrap();
    let mut cmd = kgate(&base);
    target(&mut cmd, &event);
    let out = cmd.args(["comment", "report.json"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ci_writes_the_summary_outputs_and_annotations() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("speed"), "100").unwrap();
    std::fs::write(
        d.join("kgate.yaml"),
        r#"defaults: {warmup: 0, repetitions: 8, captures: [protocol]}
gate: {threshold: 10%}
benchmarks:
  - name: "a,b: kernel"
    command: 'echo "{\"metric\": \"kernel_time\", \"value\": $(cat speed), \"unit\": \"us\", \"source\": \"timer\"}" >> "$KGATE_PROTOCOL_FILE"'
"#,
    )
    .unwrap();
    kgate(d)
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    std::fs::write(d.join("speed"), "300").unwrap();
    let out = kgate(d)
        .args(["ci", "--no-progress", "--comment", "never"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", "octo-org/kernels")
        .env("GITHUB_EVENT_NAME", "push")
        .env("GITHUB_EVENT_PATH", fixture("push.json"))
        .env("GITHUB_STEP_SUMMARY", d.join("summary.md"))
        .env("GITHUB_OUTPUT", d.join("output.txt"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "::error title=kgate%3A a%2Cb%3A kernel regressed::kernel_time: +200 %25 (98 %25 CI"
        ),
        "{stdout}"
    );
    let summary = std::fs::read_to_string(d.join("summary.md")).unwrap();
    assert!(
        summary.starts_with("### ❌ kgate: REGRESSED: 1 regression"),
        "{summary}"
    );
    let outputs = std::fs::read_to_string(d.join("output.txt")).unwrap();
    for line in [
        "verdict=regressed\n",
        "exit-code=1\n",
        "regressed=1\n",
        "total=1\n",
        "report=kgate-report.json\n",
        "regressions=a,b: kernel\n",
        "comment-url=\n",
    ] {
        assert!(outputs.contains(line), "{line:?} in {outputs}");
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("kgate-report.json")).unwrap())
            .unwrap();
    assert_eq!(report["verdict"], "regressed");
    // --fail-on nothing keeps the job green; the outputs still say what happened.
    let out = kgate(d)
        .args([
            "ci",
            "--no-progress",
            "--comment",
            "never",
            "--fail-on",
            "nothing",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn ci_on_a_pull_request_starts_a_check_run_then_comments_and_completes_it() {
    let server = std::thread::spawn(|| {
        block_on(async {
            let server = MockServer::start().await;
            let repo = "/repos/octo-org/kernels";
            Mock::given(method("GET"))
                .and(path("/user"))
                .respond_with(ResponseTemplate::new(403).set_body_json(
                    json!({"message": "Resource not accessible by integration"}),
                ))
                .expect(1)
                .mount(&server)
                .await;
            Mock::given(method("POST"))
                .and(path(format!("{repo}/check-runs")))
                .and(body_partial_json(json!({
                    "name": "kgate (bench-cpu)",
                    "head_sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
                    "status": "in_progress"
                })))
                .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 55})))
                .expect(1)
                .mount(&server)
                .await;
            Mock::given(method("PATCH"))
                .and(path(format!("{repo}/check-runs/55")))
                .and(body_partial_json(
                    json!({"status": "completed", "conclusion": "success"}),
                ))
                .respond_with(ResponseTemplate::new(200).set_body_json(
                    json!({"id": 55, "html_url": "https://github.example/octo-org/kernels/runs/55"}),
                ))
                .expect(1)
                .mount(&server)
                .await;
            Mock::given(method("GET"))
                .and(path(format!("{repo}/issues/42/comments")))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
                .expect(1)
                .mount(&server)
                .await;
            expect_one_comment_post(&server, format!("{repo}/issues/42/comments"), 8).await;
            server
        })
    })
    .join()
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("kgate.yaml"),
        r#"defaults: {warmup: 0, repetitions: 5, captures: [protocol]}
benchmarks:
  - name: steady
    command: 'echo "{\"metric\": \"kernel_time\", \"value\": 100, \"unit\": \"us\", \"source\": \"timer\"}" >> "$KGATE_PROTOCOL_FILE"'
"#,
    )
    .unwrap();
    kgate(d)
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    let out = kgate(d)
        .args(["ci", "--no-progress", "--comment", "always", "--check-run"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", "octo-org/kernels")
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", fixture("pull_request.json"))
        .env("GITHUB_API_URL", server.uri())
        .env("GITHUB_JOB", "bench-cpu")
        .env("GITHUB_OUTPUT", d.join("output.txt"))
        .env("GITHUB_TOKEN", "t")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let outputs = std::fs::read_to_string(d.join("output.txt")).unwrap();
    assert!(outputs.contains("verdict=pass\n"), "{outputs}");
    assert!(
        outputs.contains("comment-url=https://github.example/o/r/pull/7#issuecomment-8\n"),
        "{outputs}"
    );
    assert!(
        outputs.contains("check-run-url=https://github.example/octo-org/kernels/runs/55\n"),
        "{outputs}"
    );
    let requests = block_on(server.received_requests()).unwrap();
    let order: Vec<String> = requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect();
    assert_eq!(
        order,
        [
            "POST /repos/octo-org/kernels/check-runs",
            "GET /user",
            "GET /repos/octo-org/kernels/issues/42/comments",
            "POST /repos/octo-org/kernels/issues/42/comments",
            "PATCH /repos/octo-org/kernels/check-runs/55",
        ]
    );
    let sent: Value = serde_json::from_slice(&requests[3].body).unwrap();
    assert!(
        sent["body"]
            .as_str()
            .unwrap()
            .starts_with("<!-- kgate:bench-cpu -->\n<sub>job `bench-cpu`</sub>")
    );
}

// ---- a report artifact from a fork's job decides nothing by its own say ----

/// A report artifact as a fork's job can write it: `verdict: pass` and counts with nothing
/// regressed, over a benchmark marked `unchanged` whose gating metric row says `regressed`.
fn crafted_artifact() -> Value {
    let mut r = report_json(1, 1);
    r["verdict"] = json!("pass");
    r["summary"] = json!({"regressed": 0, "improved": 0, "unchanged": 2, "inconclusive": 0,
                          "new": 0, "missing": 0, "total": 2});
    r["benchmarks"][0]["verdict"] = json!("unchanged");
    r["benchmarks"][0]["explanation"] = json!("all good");
    r
}

/// `kgate comment --check-run` of `artifact` from the `workflow_run` of a fork's pull request
/// against a fake API; returns kgate's output and the requests it sent.
fn post_artifact_from_workflow_run(artifact: &Value) -> (std::process::Output, Vec<Request>) {
    let server = std::thread::spawn(|| {
        block_on(async {
            let server = MockServer::start().await;
            let repo = "/repos/octo-org/kernels";
            Mock::given(method("GET"))
                .and(path(format!("{repo}/pulls")))
                .and(query_param("head", "drive-by:tiling"))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                    {"number": 77, "head": {"sha": "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"}}
                ])))
                .mount(&server)
                .await;
            Mock::given(method("POST"))
                .and(path(format!("{repo}/check-runs")))
                .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 66})))
                .mount(&server)
                .await;
            Mock::given(method("PATCH"))
                .and(path(format!("{repo}/check-runs/66")))
                .respond_with(ResponseTemplate::new(200).set_body_json(
                    json!({"id": 66, "html_url": "https://github.example/octo-org/kernels/runs/66"}),
                ))
                .mount(&server)
                .await;
            Mock::given(method("GET"))
                .and(path(format!("{repo}/issues/77/comments")))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
                .mount(&server)
                .await;
            expect_one_comment_post(&server, format!("{repo}/issues/77/comments"), 9).await;
            server
        })
    })
    .join()
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("report.json"), artifact.to_string()).unwrap();
    let out = kgate(d)
        .args([
            "comment",
            "report.json",
            "--comment",
            "always",
            "--check-run",
        ])
        .args(["--job-id", "bench-gpu", "--comment-author", ACTIONS_BOT])
        .env("GITHUB_REPOSITORY", "octo-org/kernels")
        .env("GITHUB_EVENT_NAME", "workflow_run")
        .env("GITHUB_EVENT_PATH", fixture("workflow_run_fork.json"))
        .env("GITHUB_API_URL", server.uri())
        .env("GITHUB_TOKEN", "t")
        .output()
        .unwrap();
    let requests = block_on(server.received_requests()).unwrap();
    (out, requests)
}

/// The body of the one request sent as `METHOD path-suffix`.
fn sent_body(requests: &[Request], method: &str, suffix: &str) -> Value {
    let found: Vec<&Request> = requests
        .iter()
        .filter(|r| r.method.as_str() == method && r.url.path().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "{method} …{suffix}");
    serde_json::from_slice(&found[0].body).unwrap()
}

#[test]
fn a_crafted_artifact_never_turns_the_check_green() {
    let (out, requests) = post_artifact_from_workflow_run(&crafted_artifact());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The check run is on the trusted event's head commit, not the artifact's.
    let started = sent_body(&requests, "POST", "/check-runs");
    assert_eq!(
        started["head_sha"], "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
        "{started}"
    );
    let finished = sent_body(&requests, "PATCH", "/check-runs/66");
    assert_eq!(finished["conclusion"], "failure", "{finished}");
    assert!(
        finished["output"]["title"]
            .as_str()
            .unwrap()
            .starts_with("1 regression, 0 improvements, 1 unchanged"),
        "{finished}"
    );
    let comment = sent_body(&requests, "POST", "/issues/77/comments");
    let body = comment["body"].as_str().unwrap();
    assert!(
        body.starts_with("<!-- kgate:bench-gpu -->\n<sub>job `bench-gpu`</sub>\n\n### ❌ kgate: REGRESSED: 1 regression"),
        "{body}"
    );
    assert!(!body.contains("PASS"), "{body}");
    // What the artifact claimed and its rows do not support is said, in the comment and the log.
    let claim = "is marked unchanged but its gating metrics say regressed";
    assert!(body.contains(claim), "{body}");
    assert!(body.contains("the report says \\`pass\\`"), "{body}");
    assert!(stderr.contains(claim), "{stderr}");
}

#[test]
fn a_no_baseline_artifact_with_regressed_rows_fails_the_check() {
    let mut artifact = crafted_artifact();
    artifact["verdict"] = json!("no-baseline");
    let (_, requests) = post_artifact_from_workflow_run(&artifact);
    let finished = sent_body(&requests, "PATCH", "/check-runs/66");
    assert_eq!(finished["conclusion"], "failure", "{finished}");
}

#[test]
fn a_pass_by_waivers_the_artifact_claims_is_neutral_with_the_reason() {
    // Counts and verdicts agree with the rows, but the only regression is marked waived by
    // the report itself, which the posting job cannot check.
    let mut artifact = report_json(1, 1);
    artifact["verdict"] = json!("pass");
    artifact["summary"] = json!({"regressed": 0, "improved": 0, "unchanged": 2, "inconclusive": 0,
                                 "new": 0, "missing": 0, "waived": 1, "total": 2});
    artifact["benchmarks"][0]["verdict"] = json!("unchanged");
    artifact["benchmarks"][0]["metrics"][0]["waived"] = json!(true);
    artifact["benchmarks"][0]["metrics"][0]["waiver"] = json!("trust me");
    let (out, requests) = post_artifact_from_workflow_run(&artifact);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("stored report:"), "consistent: {stderr}");
    let finished = sent_body(&requests, "PATCH", "/check-runs/66");
    assert_eq!(finished["conclusion"], "neutral", "{finished}");
    assert!(
        finished["output"]["title"]
            .as_str()
            .unwrap()
            .starts_with("neutral: waivers claimed by the report: "),
        "{finished}"
    );
    let summary = finished["output"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("1 gating regression passes only by a waiver the report itself claims"),
        "{summary}"
    );
}

#[test]
fn a_consistent_artifact_still_passes_green() {
    let (_, requests) = post_artifact_from_workflow_run(&report_json(0, 2));
    let finished = sent_body(&requests, "PATCH", "/check-runs/66");
    assert_eq!(finished["conclusion"], "success", "{finished}");
    let comment = sent_body(&requests, "POST", "/issues/77/comments");
    assert!(!comment["body"].as_str().unwrap().contains("[!NOTE]"));
}

#[test]
fn reports_kgate_writes_are_consistent_with_their_rows() {
    // Every verdict a comparison writes (regressed, waived, unchanged, new, missing, failed)
    // reads back without a claim its rows do not support.
    use crate::baselines::{BASE, SLOW, results};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut head: Value = serde_json::from_str(&results(
        "cpu",
        "b",
        "2026-01-02T00:00:00Z",
        &[
            ("mm_large", &SLOW),
            ("slow", &SLOW),
            ("same", &BASE),
            ("added", &BASE),
            ("broken", &BASE),
            ("wrong", &BASE),
        ],
    ))
    .unwrap();
    head["benchmarks"][4]["status"] = json!("failed");
    head["benchmarks"][4]["failure"] = json!({"kind": "exit-status", "message": "exit status 1"});
    head["benchmarks"][5]["correctness"] = json!({"passed": false, "detail": "max abs error 0.5"});
    common::write(
        d,
        "base.json",
        &results(
            "cpu",
            "a",
            "2026-01-01T00:00:00Z",
            &[
                ("mm_large", &BASE),
                ("slow", &BASE),
                ("same", &BASE),
                ("gone", &BASE),
                ("broken", &BASE),
                ("wrong", &BASE),
            ],
        ),
    );
    common::write(d, "head.json", &head.to_string());
    common::write(
        d,
        ".kgate/waivers.yaml",
        "waivers:\n  - benchmark: mm_large\n    reason: fine\n    expires: 2999-12-31\n",
    );
    let out = kgate(d)
        .args([
            "compare",
            "base.json",
            "head.json",
            "--format",
            "json",
            "-o",
            "report.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr_of(&out));
    let mut report = kgate::render::stored::load_report(&d.join("report.json")).unwrap();
    let written = report.clone();
    let verdicts: Vec<&str> = written
        .benchmarks
        .iter()
        .map(|b| b.verdict.as_str())
        .collect();
    for v in [
        "regressed",
        "unchanged",
        "new",
        "missing",
        "failed",
        "incorrect",
    ] {
        assert!(verdicts.contains(&v), "{v} in {verdicts:?}");
    }
    assert_eq!(written.summary.waived, 1);
    let reconciled = kgate::compare::adjust::reconcile(&mut report);
    assert!(reconciled.warnings.is_empty(), "{:?}", reconciled.warnings);
    assert_eq!(reconciled.waived_regressions, 1);
    assert_eq!(report, written);
}

// ---- the marker names a comment only where kgate writes it ----

#[test]
fn another_jobs_comment_quoting_the_marker_is_not_taken_over() {
    block_on(async {
        let server = MockServer::start().await;
        let uri = server.uri();
        // The cpu job's comment shows a diff that holds the gpu job's marker; the gpu job's
        // own comment was edited on the web, so its lines end in CRLF.
        let cpu = "<!-- kgate:bench-cpu -->\n### ❌ kgate: REGRESSED\n\n```diff\n+<!-- kgate:bench-gpu -->\n```\n";
        let gpu_quoted_inline = "cc <!-- kgate:bench-gpu -->\n";
        let gpu = "<!-- kgate:bench-gpu -->\r\n### ✅ kgate: PASS\r\n";
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                fake_comment(&uri, 1, ACTIONS_BOT, cpu),
                fake_comment(&uri, 2, ACTIONS_BOT, gpu_quoted_inline),
                fake_comment(&uri, 3, ACTIONS_BOT, gpu),
            ])))
            .mount(&server)
            .await;
        let c = client(&server);
        let found = c
            .find_comment(7, &body::marker("bench-gpu"), ACTIONS_BOT)
            .await
            .unwrap();
        assert_eq!(found.map(|c| c.id.into_inner()), Some(3));
        let found = c
            .find_comment(7, &body::marker("bench-tpu"), ACTIONS_BOT)
            .await
            .unwrap();
        assert!(found.is_none());
    });
}
