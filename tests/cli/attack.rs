//! Attacks on issue 12 ("apply trusts nothing the planner wrote"), by a reviewer playing a
//! hostile planner (who re-signs payloads), someone who can edit the work tree, a careless
//! teammate and a confused agent. Each test names the behaviour it demands; each failed on
//! the code it was written against (branch attack-12 at a600fc0).

use crate::fixtures::{TestEnv, payload_of, remote_repo, standard_repo};
use crate::hostile::{forge, planned};
use guardctl::plan::Operation;
use std::fs;

// ---------------------------------------------------------------------------------------
// exec plans
// ---------------------------------------------------------------------------------------

const SCRIPT: &str = "#!/bin/sh\nfor f in trash/*; do\n  if [ \"$1\" = --dry-run ]; then echo \"would remove $f\"; else rm \"$f\" && echo \"removed $f\"; fi\ndone\n";

/// A repository with scripts/prune.sh, scripts/dump.sh and two files in trash/.
fn with_script() -> TestEnv {
    let env = TestEnv::new();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    fs::create_dir_all(env.repo.join("trash")).unwrap();
    fs::write(env.repo.join("scripts/prune.sh"), SCRIPT).unwrap();
    fs::write(env.repo.join("scripts/dump.sh"), "#!/bin/sh\necho dumped\n").unwrap();
    for f in ["a", "b"] {
        fs::write(env.repo.join("trash").join(f), f).unwrap();
    }
    env
}

fn trash(env: &TestEnv) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(env.repo.join("trash"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn plan_exec(env: &TestEnv, extra: &[&str]) {
    let mut args = vec!["plan", "exec", "--preview", "sh scripts/prune.sh --dry-run"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "scripts/prune.sh"]);
    let r = env.run("alice", &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

fn exec_inputs(p: &mut guardctl::plan::Plan) -> &mut guardctl::plan::ExecInputs {
    match &mut p.operation {
        Operation::Exec(x) => x,
        _ => panic!("not an exec plan"),
    }
}

/// The reviewer reads `preview_output.text`; apply compares only `preview_output.sha256`. A
/// planner who keeps the real digest and rewrites the text shows the approver a harmless
/// manifest while the command does what the real preview said.
#[test]
fn a_forged_exec_preview_text_that_is_not_the_previews_output_is_refused() {
    let env = with_script();
    plan_exec(&env, &[]);
    forge(&env, |p| {
        exec_inputs(p).preview_output.text = "would remove trash/a\n".into();
    });
    let show = env.run("bob", &["show", "plan.json"]);
    assert_eq!(
        show.code,
        65,
        "show displayed a preview that is not the preview's output:\n{}",
        show.transcript()
    );
    let _ = env.run("bob", &["approve", "plan.json", "--yes"]);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_ne!(r.code, 0, "{}", r.transcript());
    assert_eq!(trash(&env), ["a", "b"], "the command ran");
}

/// `files` (the digests of the repository files the command names) is planner-written and
/// never re-derived from `command`: a plan without the script's digest lets the script be
/// swapped after approval, as long as its dry run prints the same.
#[test]
fn a_forged_exec_plan_that_drops_the_scripts_digest_is_refused() {
    let env = with_script();
    plan_exec(&env, &[]);
    forge(&env, |p| exec_inputs(p).files.clear());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // After approval: the same dry run, a different deed.
    fs::write(
        env.repo.join("scripts/prune.sh"),
        SCRIPT.replace("else rm \"$f\"", "else touch pwned; rm \"$f\""),
    )
    .unwrap();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert!(
        !env.repo.join("pwned").exists(),
        "a script changed after approval ran (exit {}):\n{}",
        r.code,
        r.transcript()
    );
    assert!(r.code == 65 || r.code == 10, "{}", r.transcript());
}

/// The before-image command is a shell string: the files it runs are never digested, so a
/// script it names can be changed after approval (by anyone who can write the work tree) and
/// runs at apply — before the command, with the command's environment.
#[test]
fn an_exec_before_image_script_changed_after_approval_is_drift() {
    let env = with_script();
    plan_exec(&env, &["--before-image", "sh scripts/dump.sh"]);
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    fs::write(
        env.repo.join("scripts/dump.sh"),
        "#!/bin/sh\ntouch pwned\necho dumped\n",
    )
    .unwrap();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert!(
        !env.repo.join("pwned").exists(),
        "a before-image script changed after approval ran (exit {}):\n{}",
        r.code,
        r.transcript()
    );
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert_eq!(trash(&env), ["a", "b"]);
}

/// Digests are never checked to be digests; `show` cuts them at byte 12, which panics
/// inside a multi-byte character (exit 101) instead of refusing the plan (65).
#[test]
fn a_forged_exec_plan_with_a_non_hex_digest_is_refused_not_a_panic() {
    let env = with_script();
    plan_exec(&env, &["--env", "HOME"]);
    forge(&env, |p| {
        let x = exec_inputs(p);
        x.files[0].sha256 = format!("a{}", "é".repeat(7));
        x.env[0].sha256 = Some(format!("a{}", "é".repeat(7)));
        x.preview_output.sha256 = "not a digest".into();
    });
    for (who, args) in [
        ("bob", &["show", "plan.json"][..]),
        ("bob", &["approve", "plan.json", "--yes"][..]),
        ("alice", &["verify", "plan.json"][..]),
    ] {
        let r = env.run(who, args);
        assert_eq!(r.code, 65, "{args:?}: {}", r.transcript());
    }
}

// ---------------------------------------------------------------------------------------
// self-approval
// ---------------------------------------------------------------------------------------

/// docs/trust-model.md: an approval signed by the plan's key, under any principal, is self-approval.
/// A key listed for planning as alice and for approving under another name (the
/// allowed-signers file's `namespaces=` makes that one principal per namespace, so `approve`
/// accepts it) approves its own plan today.
#[test]
fn an_approval_signed_with_the_plans_own_key_is_self_approval_whatever_the_principal() {
    let env = standard_repo();
    let signers = env.path().join("allowed_signers");
    fs::write(
        &signers,
        format!(
            "alice@example.com namespaces=\"guardctl-plan,guardctl-apply\" {a}\n\
             alice-review@example.com namespaces=\"guardctl-approval\" {a}\n\
             bob@example.com {b}\ncarol@example.com {c}\n",
            a = env.public_key("alice"),
            b = env.public_key("bob"),
            c = env.public_key("carol"),
        ),
    )
    .unwrap();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let _ = env.run("alice", &["approve", "plan.json", "--yes"]);
    let before = env.repository_state();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(
        r.code,
        12,
        "the planner's own key approved the plan:\n{}",
        r.transcript()
    );
    assert_eq!(before, env.repository_state());
}

/// docs/trust-model.md: a principal equal to the planner's ignoring case is the planner. A file that
/// spells one principal two ways is ambiguous: every command refuses it (64, naming both
/// lines), so the case variant never approves anything.
#[test]
fn an_approval_by_the_planners_principal_in_another_case_is_self_approval() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env.allow_signer("ALICE@example.com", "mallory");
    let r = env.run("mallory", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr.contains("line 4") && r.stderr.contains("line 1"),
        "{}",
        r.stderr
    );
    let before = env.repository_state();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_ne!(
        r.code,
        0,
        "the planner's case variant approved the plan:\n{}",
        r.transcript()
    );
    assert_eq!(before, env.repository_state());
}

// ---------------------------------------------------------------------------------------
// screens that honest plans miss too
// ---------------------------------------------------------------------------------------

/// A remote's HEAD is its "checked-out" branch (the default branch every clone starts on).
/// Locally the checked-out branch is never planned; on a remote, only the base is skipped,
/// so `--base main` plans the remote's default branch `trunk` (merged into main) and apply
/// pushes its deletion.
#[test]
fn a_remote_plan_never_deletes_the_branch_the_remotes_head_names() {
    let env = remote_repo();
    let origin = env.origin();
    env.git_in(&origin, &["branch", "trunk", "main"]);
    env.git_in(&origin, &["symbolic-ref", "HEAD", "refs/heads/trunk"]);
    env.git(&["fetch", "-q", "origin"]);
    let r = env.run(
        "alice",
        &["plan", "remote-branches", "--remote", "origin", "--base", "main"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let refs = crate::fixtures::affected_refs(&env.repo.join("plan.json"));
    assert!(
        !refs.contains(&"refs/heads/trunk".to_string()),
        "the remote's default branch is planned for deletion: {refs:?}"
    );
}

/// git refuses to delete a branch being bisected (`git branch -d`: "used by worktree"), as it
/// does one being rebased: `git bisect reset` returns to it. guardctl screens rebases only.
#[test]
fn a_branch_being_bisected_is_never_planned() {
    let env = standard_repo();
    env.git(&["checkout", "-q", "feature/done"]);
    env.git(&["bisect", "start"]);
    env.git(&["checkout", "-q", "--detach"]);
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let p = payload_of(&env.repo.join("plan.json"));
    let refs: Vec<&str> = p["affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["ref"].as_str().unwrap())
        .collect();
    assert!(
        !refs.contains(&"refs/heads/feature/done"),
        "a branch under bisection is planned: {refs:?}"
    );
}

/// "Never planned: the base". A base given as a revision (`feature/live^0`, or the raw id a
/// script computed) is not recognised as the branch it is: the branch is "merged" into
/// itself, planned with low risk and no lost work, and its commits end up only in the
/// backup.
#[test]
fn a_base_given_as_a_revision_of_a_branch_never_plans_that_branch() {
    let env = standard_repo();
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "--base", "feature/live^0"],
    );
    if r.code == 64 {
        return; // refusing a base that is not a ref is a fine answer too
    }
    assert_eq!(r.code, 0, "{}", r.transcript());
    let p = payload_of(&env.repo.join("plan.json"));
    let planned: Vec<&str> = p["affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["ref"].as_str().unwrap())
        .collect();
    assert!(
        !planned.contains(&"refs/heads/feature/live"),
        "feature/live is planned as merged into its own tip: {planned:?}"
    );
}

/// `--older-than` beyond i64 seconds wraps negative in `criteria_met` (`limit as i64`):
/// "older than 300 billion years" then means every branch.
#[test]
fn an_absurd_older_than_plans_nothing_rather_than_everything() {
    let env = standard_repo();
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--older-than", "300000000000y"],
    );
    if r.code == 64 {
        return;
    }
    assert_eq!(r.code, 0, "{}", r.transcript());
    let p = payload_of(&env.repo.join("plan.json"));
    assert_eq!(
        p["affected"].as_array().unwrap().len(),
        0,
        "branches are 'older than 300 billion years': {}",
        p["summary"]
    );
}

// ---------------------------------------------------------------------------------------
// planner-written fields validation does not cover
// ---------------------------------------------------------------------------------------

/// `policy_hash` is planner-written, enters the plan hash (which the planner recomputes),
/// and is printed raw in `show --json` (`policy.hash`): bidi and other non-C0 characters
/// reach the reviewer's terminal. It is a `sha256:<hex>` guardctl computes: check it.
#[test]
fn a_forged_policy_hash_is_refused_before_anyone_sees_it() {
    let env = planned();
    forge(&env, |p| p.policy_hash = "sha256:\u{202E}\u{9b}31m0000".into());
    let r = env.run("bob", &["--json", "show", "plan.json"]);
    assert!(
        !r.stdout.contains(['\u{202E}', '\u{9b}']),
        "show --json printed a raw bidi/C1 character:\n{}",
        r.stdout
    );
    assert_eq!(r.code, 65, "{}", r.transcript());
}

/// Inputs no `guardctl plan` writes: a branch plan selecting by `matched` (a tag-only
/// criterion, met by every branch), criteria out of order. Not a plan guardctl would write.
#[test]
fn a_forged_branch_plan_with_a_tag_only_criterion_is_refused() {
    let env = planned();
    forge(&env, |p| {
        if let Operation::StaleBranches(i) = &mut p.operation {
            i.criteria = vec![guardctl::plan::Criterion::Matched];
        }
        for a in &mut p.affected {
            a.reasons = vec![guardctl::plan::Criterion::Matched];
        }
    });
    let r = env.run("bob", &["show", "plan.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
}

/// `skipped` is never checked: a forged plan can list a branch it deletes as skipped
/// ("protected"), telling the reviewer it is safe.
#[test]
fn a_forged_skipped_list_that_names_a_deleted_branch_is_refused() {
    let env = planned();
    forge(&env, |p| {
        let a = p.affected[0].clone();
        p.skipped.insert(
            0,
            guardctl::plan::Skipped {
                refname: a.refname,
                oid: Some(a.oid),
                reason: guardctl::plan::SkipReason::Protected,
                detail: Some("kept: protected by policy".into()),
            },
        );
    });
    let r = env.run("bob", &["show", "plan.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
}

// ---------------------------------------------------------------------------------------
// more: JSON output, key validity, verify vs apply
// ---------------------------------------------------------------------------------------

/// `--json` errors carry `details` built from planner-written strings (drift's planned
/// values, the executor in a wrong-principal refusal, the planned policy hash) without
/// `safe`: serde escapes C0 only, so bidi and C1 controls reach the terminal.
#[test]
fn json_error_details_never_carry_raw_planner_written_controls() {
    let evil = "harmless\u{202E}txt.exe\u{9b}2J";
    // drift details: a misstated subject
    let env = planned();
    forge(&env, |p| p.affected[0].subject = evil.into());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["--json", "apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(
        !r.stdout.contains(['\u{202E}', '\u{9b}']),
        "apply --json printed a raw bidi/C1 character:\n{}",
        r.stdout
    );
    // wrong-principal details: a forged executor principal
    let env = planned();
    forge(&env, |p| {
        p.executor.principal = Some(format!("bob@example.com{evil}"))
    });
    let r = env.run("alice", &["--json", "verify", "plan.json"]);
    assert!(
        !r.stdout.contains(['\u{202E}', '\u{9b}']),
        "verify --json (exit {}) printed a raw bidi/C1 character:\n{}",
        r.code,
        r.stdout
    );
}

/// docs/trust-model.md: keys must be valid at the time their signature claims *and at the time of
/// the check*. The planner's key is looked up at the plan's own `created_at`, which the
/// planner writes: a key revoked yesterday (`valid-before`) backdates its plan to the day
/// before and has it applied by someone else today.
#[test]
fn a_plan_backdated_into_its_planners_key_validity_is_refused() {
    let env = standard_repo();
    fs::write(
        env.path().join("allowed_signers"),
        format!(
            "alice@example.com valid-before=\"20260531\" {a}\nbob@example.com {b}\ncarol@example.com {c}\n",
            a = env.public_key("alice"),
            b = env.public_key("bob"),
            c = env.public_key("carol"),
        ),
    )
    .unwrap();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let t = |s: &str| time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap();
    forge(&env, |p| {
        p.planner.principal = Some("alice@example.com".into());
        p.created_at = t("2026-05-30T12:00:00Z");
        p.expires_at = t("2026-06-02T12:00:00Z");
        p.executor = guardctl::plan::Party {
            principal: Some("carol@example.com".into()),
            key: None,
        };
    });
    let _ = env.run("bob", &["approve", "plan.json", "--yes"]);
    let before = env.repository_state();
    let r = env.run("carol", &["apply", "plan.json"]);
    assert_ne!(
        r.code,
        0,
        "a plan by a key revoked yesterday was applied:\n{}",
        r.transcript()
    );
    assert_eq!(before, env.repository_state());
}

/// Issue 12 item 5: `verify` answers what `apply` then does. After an apply killed midway
/// and not yet recovered, `verify` (which changes nothing, so cannot recover) says 16 and
/// names `recover`; once recovered, `verify` and `apply` agree: 10 when the kill came before
/// the commit (abandoned), 0 after it (completed).
#[test]
fn verify_and_apply_agree_after_an_interrupted_apply_is_recovered() {
    for (step, code) in [("consumed", 10), ("refs-committed", 0)] {
        let env = standard_repo();
        let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
        let r = env.run_env(
            "alice",
            &[("GUARDCTL_TEST_CRASH_AFTER", step)],
            &["apply", "plan.json"],
        );
        assert_ne!(r.code, 0, "{}", r.transcript());
        let before = env.repository_state();
        let verify = env.run("alice", &["verify", "plan.json"]);
        assert_eq!(
            verify.code,
            16,
            "verify after a kill at {step}: {}",
            verify.transcript()
        );
        assert!(verify.stderr.contains("guardctl recover"), "{}", verify.stderr);
        assert_eq!(before, env.repository_state(), "verify changed the repository");
        let r = env.run("alice", &["recover"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let verify = env.run("alice", &["verify", "plan.json"]);
        let apply = env.run("alice", &["apply", "plan.json"]);
        assert_eq!(
            apply.code,
            code,
            "apply after a kill at {step}: {}",
            apply.transcript()
        );
        assert_eq!(
            verify.code,
            code,
            "verify after a kill at {step}: {}",
            verify.transcript()
        );
    }
}

// ---------------------------------------------------------------------------------------
// odd numbers
// ---------------------------------------------------------------------------------------

/// `before_image.retention_days` is planner-written and only bounded below (the policy's
/// minimum). `gc` adds it to a date with `+`, which panics past year 9999: one applied plan
/// with `retention_days: 4294967295` makes every later `guardctl gc` of the repository panic.
#[test]
fn a_forged_retention_cannot_make_gc_panic() {
    let env = planned();
    forge(&env, |p| p.before_image.retention_days = u32::MAX);
    let _ = env.run("bob", &["approve", "plan.json", "--yes"]);
    let r = env.run("alice", &["apply", "plan.json"]);
    if r.code == 65 || r.code == 14 {
        return; // refusing an absurd retention is a fine answer
    }
    assert_eq!(r.code, 0, "{}", r.transcript());
    let gc = env.run("alice", &["gc"]);
    assert_eq!(gc.code, 0, "{}", gc.transcript());
}

/// Overstating lost work is allowed (apply refuses only *more* lost work than planned), but
/// the summary and side effects add the counts with `+`: two branches that each "lose"
/// u64::MAX/2+1 commits overflow — a panic in debug builds (exit 101) and, in release builds
/// (overflow wraps), a summary saying "0 unmerged commits lost" for a plan that loses work.
#[test]
fn overstated_commit_counts_that_overflow_are_refused_not_a_panic_or_a_wrapped_summary() {
    let env = standard_repo();
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--gone",
            "--older-than",
            "60d",
            "--include-unmerged",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let p = payload_of(&env.repo.join("plan.json"));
    let losing = p["affected"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["loses_work"] == true)
        .count();
    assert!(losing >= 1, "{p}");
    // The hostile planner computes the summary with wrapping sums (what a release build
    // does); the plan hash is recomputed as usual.
    crate::hostile::forge_raw(&env, |p| {
        use guardctl::plan::ResourceFacts;
        for a in &mut p.affected {
            if let ResourceFacts::Branch(b) = &mut a.facts
                && b.history.loses_work
            {
                b.history.commits_not_in_base = u64::MAX;
            }
        }
        // and one more, so the sum overflows even with a single losing branch
        let mut extra = p.affected.iter().find(|a| a.loses_work()).unwrap().clone();
        extra.refname = "refs/heads/feature/live".into();
        if let ResourceFacts::Branch(b) = &mut extra.facts {
            b.config.clear();
            b.upstream = None;
        }
        p.affected.push(extra);
        p.plan_hash =
            guardctl::plan::hash::plan_hash(&p.repository, &p.operation, &p.policy_hash, &p.affected)
                .unwrap();
    });
    let r = env.run("bob", &["show", "plan.json"]);
    assert_ne!(r.code, 101, "show panicked:\n{}", r.transcript());
    assert!(
        r.code == 65 || !r.stdout.contains(" 0 unmerged commits lost"),
        "{}",
        r.transcript()
    );
}

/// docs/trust-model.md: an approver's key must be valid when the approval says it was signed *and
/// when apply checks it*. A key revoked after approving (compromised: `valid-before` set
/// to now) still counts, since validity is looked up only at the approval's own
/// `created_at` — which its signer writes.
#[test]
fn an_approval_by_a_key_revoked_since_does_not_count() {
    let env = standard_repo();
    fs::write(
        env.path().join("allowed_signers"),
        format!(
            "alice@example.com {a}\nbob@example.com valid-before=\"202606011210\" {b}\ncarol@example.com {c}\n",
            a = env.public_key("alice"),
            b = env.public_key("bob"),
            c = env.public_key("carol"),
        ),
    )
    .unwrap();
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "--expires-in", "1h"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run_env(
        "bob",
        &[("GUARDCTL_TEST_NOW", "2026-06-01T12:05:00Z")],
        &["approve", "plan.json", "--yes"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.repository_state();
    let r = env.run_env(
        "alice",
        &[("GUARDCTL_TEST_NOW", "2026-06-01T12:20:00Z")],
        &["apply", "plan.json"],
    );
    assert_eq!(
        r.code,
        12,
        "an approval by a revoked key counted:\n{}",
        r.transcript()
    );
    assert_eq!(before, env.repository_state());
}

// ---------------------------------------------------------------------------------------
// what the reviewer is shown
// ---------------------------------------------------------------------------------------

/// The Trust model says "Approvers see the inputs; they approve those", but `show` prints only
/// the base and the criteria: not `--match`/`--exclude`/`--protect`, `--include-unmerged`,
/// `--include-signed`, the tag kind, nor which planned tags are signed or annotated (every
/// row's kind is just "tag"). A plan deleting a signed release tag looks like any other.
#[test]
fn show_states_every_input_and_marks_signed_tags() {
    let env = crate::fixtures::tagged_repo();
    let r = env.run(
        "alice",
        &[
            "plan",
            "tags",
            "--match",
            "v*",
            "--include-signed",
            "--exclude",
            "v9*",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let p = payload_of(&env.repo.join("plan.json"));
    assert!(
        p["affected"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["ref"] == "refs/tags/v0.3" && a["tag"]["signed"] == true),
        "{p}"
    );
    let show = env.run("bob", &["show", "plan.json"]);
    assert_eq!(show.code, 0, "{}", show.transcript());
    for input in ["v*", "v9*", "include-signed"] {
        assert!(
            show.stdout.contains(input),
            "show does not state the input {input}:\n{}",
            show.stdout
        );
    }
    let row = show
        .stdout
        .lines()
        .find(|l| l.contains(" v0.3 "))
        .unwrap_or_else(|| panic!("no v0.3 row:\n{}", show.stdout));
    assert!(row.contains("signed"), "v0.3 is not marked signed: {row}");
}

// ---------------------------------------------------------------------------------------
// trusted sources
// ---------------------------------------------------------------------------------------

/// docs/trust-model.md: allowed signers come from trusted sources only — "never the work tree or the
/// repository's own config (the planner can write both)". guardctl reads
/// `.guardctl/allowed_signers` from the work tree and `gpg.ssh.allowedSignersFile` from the
/// repository's config. A planner (or an agent whose key may only plan) who writes either
/// names their second key `bob@example.com` and approves their own plan.
#[test]
fn an_allowed_signers_file_in_the_work_tree_or_the_repository_config_is_never_trusted() {
    for how in ["repository config", "work tree"] {
        let env = standard_repo();
        let mine = format!(
            "alice@example.com {}\nbob@example.com {}\n",
            env.public_key("alice"),
            env.public_key("mallory")
        );
        if how == "work tree" {
            fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
            fs::write(env.repo.join(".guardctl/allowed_signers"), &mine).unwrap();
        } else {
            let path = env.path().join("mine");
            fs::write(&path, &mine).unwrap();
            env.git(&["config", "gpg.ssh.allowedSignersFile", path.to_str().unwrap()]);
        }
        let as_ = |user: &str, args: &[&str]| {
            let mut c = env.command();
            c.arg("--key").arg(env.key(user)).args(args);
            crate::fixtures::run(c)
        };
        let r = as_("alice", &["plan", "stale-branches", "--merged"]);
        assert_eq!(r.code, 0, "{how}: {}", r.transcript());
        let _ = as_("mallory", &["approve", "plan.json", "--yes"]);
        let before = env.repository_state();
        let r = as_("alice", &["apply", "plan.json"]);
        assert_ne!(
            r.code,
            0,
            "{how}: a planner-written allowed-signers file let the planner approve their own plan:\n{}",
            r.transcript()
        );
        assert_eq!(before, env.repository_state(), "{how}");
    }
}

/// `files[].path` is planner-written and only joined to the work tree: an absolute path or
/// `../` reads any file the applier (a CI job) can read — `/dev/zero` exhausts memory, a FIFO
/// blocks forever — and the drift message prints 48 bits of that file's sha256, enough to
/// confirm a guessed low-entropy secret. A path guardctl would record is relative, inside the
/// work tree, outside `.git`.
#[test]
fn a_forged_exec_file_path_outside_the_work_tree_is_refused() {
    let env = with_script();
    let secret = env.path().join("secret");
    fs::write(&secret, "1234\n").unwrap();
    let digest = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(b"1234\n");
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    plan_exec(&env, &[]);
    forge(&env, |p| {
        exec_inputs(p).files.push(guardctl::plan::FileDigest {
            path: "../secret".into(),
            sha256: "0".repeat(64),
        })
    });
    let show = env.run("bob", &["show", "plan.json"]);
    assert_eq!(show.code, 65, "{}", show.transcript());
    let _ = env.run("bob", &["approve", "plan.json", "--yes"]);
    let r = env.run("alice", &["verify", "plan.json"]);
    assert!(
        !r.stderr.contains(&digest[..12]),
        "verify printed the digest of a file outside the repository:\n{}",
        r.transcript()
    );
    assert_eq!(r.code, 65, "{}", r.transcript());
}

// ---------------------------------------------------------------------------------------
// races
// ---------------------------------------------------------------------------------------

/// The drift check and the deletion are atomic for the refs (git holds their locks), but not
/// for HEAD: a `git checkout` of a planned branch after the check and before the commit
/// succeeds, and apply then deletes the branch HEAD is on (the work tree is left on an unborn
/// branch). git ≥ 2.45's `symref-verify` in the same transaction (for every worktree's HEAD)
/// would hold HEAD's lock too.
#[test]
fn a_checkout_racing_apply_never_leaves_head_on_a_deleted_branch() {
    let env = planned();
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let checkout = format!(
        "git -C '{}' checkout -q feature/done 2>/dev/null; true",
        env.repo.display()
    );
    let r = env.run_env(
        "alice",
        &[
            ("GUARDCTL_TEST_EXEC_AT", "before-image-written"),
            ("GUARDCTL_TEST_EXEC", &checkout),
        ],
        &["apply", "plan.json"],
    );
    let head = env.git(&["symbolic-ref", "HEAD"]);
    let exists = !env.git(&["branch", "--list", "feature/done"]).is_empty();
    assert!(
        head != "refs/heads/feature/done" || exists,
        "apply (exit {}) deleted the branch a racing checkout put HEAD on:\n{}",
        r.code,
        r.transcript()
    );
}
