//! Exactly once across machines (docs/remote.md): clones of one bare `file://` remote apply
//! the same approved plan at once, as real processes. The plan is consumed on the remote
//! (`refs/guardctl/consumed/<id>`, create-only: in the same atomic push as a remote's
//! deletions, or before a command runs), so exactly one apply acts; every other prints that
//! apply's receipt, published at `refs/guardctl/receipts/<id>`, as a replay.

use crate::fixtures::{Run, TestEnv, remote_repo, run};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const CLONES: usize = 16;

/// `n` fresh clones of `origin`, beside the planning clone.
fn clones(env: &TestEnv, n: usize) -> Vec<PathBuf> {
    let names: Vec<String> = (0..n).map(|i| format!("clone-{i:02}")).collect();
    env.clones(&names.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `guardctl -C <clone> --key <alice> --allowed-signers … <args>`, ready to spawn.
fn alice_in(env: &TestEnv, clone: &Path, vars: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = env.command();
    for (k, v) in vars {
        c.env(k, v);
    }
    c.arg("-C")
        .arg(clone)
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(args);
    c
}

/// Start `apply <plan>` in every clone at once (all spawned, then all waited for).
fn apply_everywhere(env: &TestEnv, clones: &[PathBuf], plan: &Path, extra: &[&str]) -> Vec<Run> {
    let children: Vec<_> = clones
        .iter()
        .map(|c| {
            let mut args = extra.to_vec();
            args.extend(["apply", plan.to_str().unwrap()]);
            alice_in(env, c, &[], &args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            Run {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .collect()
}

/// Every run exited 0; exactly one applied (`replayed: false`), and every other printed the
/// same receipt and envelope with `replayed: true`. Returns the winner's index and document.
fn exactly_one_applied(runs: &[Run]) -> (usize, serde_json::Value) {
    for r in runs {
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let docs: Vec<serde_json::Value> = runs.iter().map(Run::json).collect();
    let fresh: Vec<usize> = (0..docs.len())
        .filter(|i| docs[*i]["replayed"] == false)
        .collect();
    assert_eq!(fresh.len(), 1, "exactly one apply is not a replay");
    let winner = docs[fresh[0]].clone();
    for d in &docs {
        assert_eq!(
            d["receipt"], winner["receipt"],
            "every apply prints the same receipt"
        );
        assert_eq!(d["envelope"], winner["envelope"], "…signed once");
    }
    assert_eq!(
        docs.iter().filter(|d| d["replayed"] == true).count(),
        runs.len() - 1
    );
    (fresh[0], winner)
}

/// `<name> <oid>` of every consumed marker and receipt published on the remote (the ledger's
/// and any refs from before it).
fn published(env: &TestEnv) -> String {
    env.published_on(&env.origin())
        .lines()
        .filter(|l| l.starts_with("refs/guardctl/consumed/") || l.starts_with("refs/guardctl/receipts/"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Human replays in every clone (the winner's a local replay, the others' from the remote)
/// print the same bytes: a `Replayed:` line, then the recorded result.
fn human_replays_agree(env: &TestEnv, clones: &[PathBuf], plan: &Path) {
    let runs: Vec<Run> = clones
        .iter()
        .map(|c| run(alice_in(env, c, &[], &["apply", plan.to_str().unwrap()])))
        .collect();
    for r in &runs {
        assert_eq!(r.code, 0, "{}", r.transcript());
        assert!(r.stdout.starts_with("Replayed: "), "{}", r.stdout);
        assert_eq!(r.stdout, runs[0].stdout, "byte for byte");
    }
}

/// The remote-branches plan of `remote_repo` (feature/done and fix/old), approved by Bob.
fn remote_branches_plan(env: &TestEnv) -> PathBuf {
    let r = env.run("alice", &["plan", "remote-branches", "--remote", "origin"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env.repo.join("plan.json")
}

/// A counter outside every clone, and an exec plan bound to `origin` whose command appends
/// one line to it, approved by Bob.
fn counting_plan(env: &TestEnv) -> (PathBuf, PathBuf) {
    counting_plan_running(env, "#!/bin/sh\necho ran >> \"$1\"\n")
}

/// An approved `exec --remote` plan running `scripts/count.sh <counter>`, whose body is
/// `script`; returns the plan's path and the counter's.
fn counting_plan_running(env: &TestEnv, script: &str) -> (PathBuf, PathBuf) {
    let counter = env.path().join("counter");
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    fs::write(env.repo.join("scripts/count.sh"), script).unwrap();
    env.git(&["add", "scripts"]);
    env.git(&["commit", "-q", "-m", "count script"]);
    env.git(&["push", "-q", "origin", "main"]);
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--remote",
            "origin",
            "--preview",
            "echo would count once",
            "--",
            "sh",
            "scripts/count.sh",
            counter.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    (env.repo.join("plan.json"), counter)
}

fn lines(path: &Path) -> usize {
    fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0)
}

#[test]
fn sixteen_clones_applying_one_exec_plan_run_its_command_exactly_once() {
    let env = remote_repo();
    let (plan, counter) = counting_plan(&env);
    let clones = clones(&env, CLONES);
    let runs = apply_everywhere(&env, &clones, &plan, &["--json"]);
    let (_, winner) = exactly_one_applied(&runs);
    assert_eq!(lines(&counter), 1, "the command ran exactly once");
    assert_eq!(winner["receipt"]["verified"], true, "{winner}");
    let id = crate::fixtures::plan_id_of(&plan);
    let hex = id.trim_start_matches("sha256:");
    let refs = published(&env);
    assert!(refs.contains(&format!("refs/guardctl/consumed/{hex} ")), "{refs}");
    assert!(refs.contains(&format!("refs/guardctl/receipts/{hex} ")), "{refs}");
    human_replays_agree(&env, &clones, &plan);
    assert_eq!(lines(&counter), 1, "no replay ran it again");
}

#[test]
fn sixteen_clones_applying_one_remote_branches_plan_delete_once() {
    let env = remote_repo();
    let plan = remote_branches_plan(&env);
    let clones = clones(&env, CLONES);
    let runs = apply_everywhere(&env, &clones, &plan, &["--json"]);
    let (at, winner) = exactly_one_applied(&runs);
    assert_eq!(winner["receipt"]["deleted"].as_array().unwrap().len(), 2);
    let branches: Vec<String> = env
        .remote_branches()
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(
        branches,
        [
            "refs/heads/feature/live",
            "refs/heads/main",
            "refs/heads/release/1.0"
        ]
    );
    // The clone that applied keeps the backup of both deleted tips.
    let kept = crate::fixtures::backed_up(&clones[at]);
    for d in winner["receipt"]["deleted"].as_array().unwrap() {
        assert!(kept.contains(d["oid"].as_str().unwrap()), "{kept:?}");
    }
    // No clone keeps the process id of a git that has exited, winner or loser (issue 34
    // item 13): a stale one makes a later recovery wait on whatever process reuses it.
    for clone in &clones {
        let plans = clone.join(".git/guardctl/plans");
        for dir in std::fs::read_dir(&plans).into_iter().flatten().flatten() {
            assert!(!dir.path().join("git.pid").exists(), "{}", dir.path().display());
        }
    }
    human_replays_agree(&env, &clones, &plan);
}

/// The remote's `refs/guardctl/consumed/<id>` of `plan`, if any.
fn consumed_on_remote(env: &TestEnv, plan: &Path) -> String {
    let id = crate::fixtures::plan_id_of(plan);
    env.published_under(
        &env.origin(),
        &format!("refs/guardctl/consumed/{}", id.trim_start_matches("sha256:")),
    )
}

#[test]
fn an_apply_that_loses_the_race_after_marking_the_plan_consumed_is_refused_by_the_lease_and_runs_nothing() {
    let env = remote_repo();
    let (plan, counter) = counting_plan(&env);
    let clones = clones(&env, 2);
    // Clone 1 has checked everything and marked the plan consumed locally; just then clone 0
    // applies the plan, start to end. Clone 1's create-only push of its own marker must not
    // replace clone 0's: the lease (`--force-with-lease=<ref>:`, "must not exist") refuses it.
    let winner = format!(
        "env -u GUARDCTL_TEST_EXEC_AT -u GUARDCTL_TEST_EXEC '{}' -C '{}' --key '{}' --allowed-signers '{}' apply '{}' > '{}'",
        env!("CARGO_BIN_EXE_guardctl"),
        clones[0].display(),
        env.key("alice").display(),
        env.allowed_signers().display(),
        plan.display(),
        env.path().join("winner.out").display(),
    );
    let loser = run(alice_in(
        &env,
        &clones[1],
        &[
            ("GUARDCTL_TEST_EXEC_AT", "consumed"),
            ("GUARDCTL_TEST_EXEC", &winner),
        ],
        &["apply", plan.to_str().unwrap()],
    ));
    let won = fs::read_to_string(env.path().join("winner.out")).unwrap();
    assert!(won.starts_with("Applied plan"), "{won}");
    let marker = consumed_on_remote(&env, &plan);
    // The loser ran nothing and prints the winner's receipt as a replay, exit 0.
    assert_eq!(loser.code, 0, "{}", loser.transcript());
    assert_eq!(lines(&counter), 1, "the command ran once, in the winner's clone");
    let (said, recorded) = loser.stdout.split_once('\n').unwrap();
    assert!(said.starts_with("Replayed: "), "{said}");
    assert_eq!(recorded, won);
    // The remote still holds the winner's marker, and the loser recorded why it stopped.
    assert_eq!(consumed_on_remote(&env, &plan), marker);
    let id = crate::fixtures::plan_id_of(&plan);
    let aborted = fs::read_to_string(
        clones[1]
            .join(".git/guardctl/plans")
            .join(id.trim_start_matches("sha256:"))
            .join("aborted.json"),
    )
    .unwrap();
    assert!(aborted.contains("applied elsewhere first"), "{aborted}");
    // Asked again, the loser's clone still prints the winner's receipt.
    let again = run(alice_in(
        &env,
        &clones[1],
        &[],
        &["apply", plan.to_str().unwrap()],
    ));
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert_eq!(again.stdout, loser.stdout);
}

/// Push `commit` (an object of the planning clone) to the remote as `refname`, by hand.
fn push_by_hand(env: &TestEnv, commit: &str, refname: &str) {
    env.git(&["push", "-q", "origin", &format!("{commit}:{refname}")]);
}

#[test]
fn a_junk_consumed_ref_makes_apply_refuse_naming_it_and_run_nothing() {
    let env = remote_repo();
    let (plan, counter) = counting_plan(&env);
    let id = crate::fixtures::plan_id_of(&plan);
    let refname = format!("refs/guardctl/consumed/{}", id.trim_start_matches("sha256:"));
    let head = env.git(&["rev-parse", "HEAD"]);
    push_by_hand(&env, &head, &refname);
    let clone = &clones(&env, 1)[0];
    let r = run(alice_in(
        &env,
        clone,
        &[],
        &["--json", "apply", plan.to_str().unwrap()],
    ));
    assert_eq!(r.code, 16, "{}", r.transcript());
    let e = &r.json()["error"];
    assert_eq!(e["kind"], "needs_recovery");
    assert!(e["message"].as_str().unwrap().contains(&refname), "{e}");
    assert!(!r.stdout.contains("\"replayed\""), "{}", r.stdout);
    assert_eq!(lines(&counter), 0, "nothing ran");
}

#[test]
fn a_genuine_marker_of_another_plan_under_this_plans_ref_is_refused() {
    let env = remote_repo();
    let first = remote_branches_plan(&env);
    let clone = &clones(&env, 1)[0];
    let r = run(alice_in(&env, clone, &[], &["apply", first.to_str().unwrap()]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    let marker = consumed_on_remote(&env, &first);
    // A second plan (another nonce, another id), with the first plan's signed marker copied
    // under its consumed ref.
    fs::rename(&first, env.path().join("first.json")).unwrap();
    let r = env.run(
        "alice",
        &[
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "--match",
            "feature/*",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let second = env.repo.join("plan.json");
    let id = crate::fixtures::plan_id_of(&second);
    let first_hex = crate::fixtures::plan_id_of(&env.path().join("first.json"));
    let copied = env.published_bytes(
        &env.origin(),
        &format!(
            "refs/guardctl/consumed/{}",
            first_hex.trim_start_matches("sha256:")
        ),
    );
    assert!(!marker.is_empty());
    // Copied onto the ledger, as anyone who can push to it can.
    env.push_to_ledger(
        clone,
        &[(
            &format!("consumed/{}/consumed.json", id.trim_start_matches("sha256:")),
            &copied,
        )],
    );
    let r = run(alice_in(&env, clone, &[], &["apply", second.to_str().unwrap()]));
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains("it consumes sha256:"), "{}", r.stderr);
}

#[test]
fn a_plan_consumed_elsewhere_without_a_receipt_yet_is_16_naming_who_until_it_is_published() {
    let env = remote_repo();
    let plan = remote_branches_plan(&env);
    let clones = clones(&env, 2);
    let plan_arg = plan.to_str().unwrap();
    // Clone 0's apply dies right after its push landed: consumed on the remote, no receipt.
    let killed = run(alice_in(
        &env,
        &clones[0],
        &[("GUARDCTL_TEST_CRASH_AFTER", "pushed")],
        &["apply", plan_arg],
    ));
    assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());
    let r = run(alice_in(
        &env,
        &clones[1],
        &[],
        &["--json", "apply", "--wait", "0", plan_arg],
    ));
    assert_eq!(r.code, 16, "{}", r.transcript());
    let e = &r.json()["error"];
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("alice@example.com"), "{message}");
    assert!(message.contains("2026-06-01T12:00:00Z"), "{message}");
    assert_eq!(e["details"]["consumed_by"]["principal"], "alice@example.com");
    // Clone 0 recovers (the marker says its push landed), which completes the apply and
    // publishes its receipt; clone 1 then prints it, as a replay in clone 0 does.
    let r = run(alice_in(&env, &clones[0], &[], &["recover"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("completed"), "{}", r.stdout);
    replayed_in_the_other_clone(&env, &clones, plan_arg);
}

/// Clone 1's apply of the plan consumed in clone 0 prints clone 0's published receipt as a
/// replay, byte for byte what a replay in clone 0 prints.
fn replayed_in_the_other_clone(env: &TestEnv, clones: &[PathBuf], plan_arg: &str) {
    let here = run(alice_in(
        env,
        &clones[1],
        &[],
        &["apply", "--wait", "0", plan_arg],
    ));
    assert_eq!(here.code, 0, "{}", here.transcript());
    assert!(
        here.stderr.contains("applied in another clone"),
        "{}",
        here.stderr
    );
    let there = run(alice_in(env, &clones[0], &[], &["apply", plan_arg]));
    assert_eq!(there.code, 0, "{}", there.transcript());
    assert_eq!(here.stdout, there.stdout, "byte for byte");
}

/// The one file of the item at `refname` on the remote.
fn item_on_remote(env: &TestEnv, refname: &str, file: &str) -> String {
    let _ = file;
    env.published_bytes(&env.origin(), refname)
}

fn refuse_guardctl_refs(env: &TestEnv, refuse: bool) {
    use std::os::unix::fs::PermissionsExt;
    let hook = env.origin().join("hooks/pre-receive");
    if !refuse {
        fs::remove_file(&hook).unwrap();
        return;
    }
    fs::create_dir_all(hook.parent().unwrap()).unwrap();
    fs::write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do case \"$ref\" in refs/guardctl/*|refs/heads/guardctl/*) echo \"no custom refs here\"; exit 1;; esac; done\n",
    )
    .unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_published_local_plan_publishes_its_marker_and_receipt_after_apply_or_says_how_to_later() {
    let env = crate::fixtures::standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let hex = id.trim_start_matches("sha256:").to_string();
    // The remote refuses refs/guardctl/* now: the apply happens, and says how to publish.
    refuse_guardctl_refs(&env, true);
    let applied = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(applied.code, 0, "{}", applied.transcript());
    assert!(
        applied.stderr.contains("the receipt was not published"),
        "{}",
        applied.stderr
    );
    assert!(
        applied.stderr.contains("no custom refs here"),
        "{}",
        applied.stderr
    );
    assert!(
        applied
            .stderr
            .contains("run `guardctl apply` with this plan again"),
        "{}",
        applied.stderr
    );
    assert_eq!(published(&env), "");
    // Allowed again: the replay publishes the marker and the receipt, as this clone signed
    // them; another replay finds them there.
    refuse_guardctl_refs(&env, false);
    let replay = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(replay.code, 0, "{}", replay.transcript());
    assert!(!replay.stderr.contains("warning"), "{}", replay.stderr);
    let state = env.repo.join(".git/guardctl/plans").join(&hex);
    assert_eq!(
        item_on_remote(&env, &format!("refs/guardctl/consumed/{hex}"), "consumed.json"),
        fs::read_to_string(state.join("consumed")).unwrap().trim_end()
    );
    assert_eq!(
        item_on_remote(&env, &format!("refs/guardctl/receipts/{hex}"), "receipt.json"),
        fs::read_to_string(state.join("receipt.json")).unwrap().trim_end()
    );
    let again = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert_eq!(again.stdout, replay.stdout);
    assert!(!again.stderr.contains("warning"), "{}", again.stderr);
}

#[test]
fn a_remote_that_refuses_the_consumed_ref_deletes_nothing_and_names_it() {
    let env = remote_repo();
    let plan = remote_branches_plan(&env);
    let before = env.remote_branches();
    refuse_guardctl_refs(&env, true);
    let r = env.run("alice", &["apply", plan.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("refs/guardctl/consumed/"), "{}", r.stderr);
    assert!(r.stderr.contains("no custom refs here"), "{}", r.stderr);
    assert_eq!(env.remote_branches(), before, "atomic: nothing deleted");
}

#[test]
fn a_remotes_tags_are_consumed_on_the_remote_in_their_push_and_another_clone_replays() {
    let env = remote_repo();
    let first = env.git(&["rev-list", "--max-parents=0", "main"]);
    env.git_at(350, &["tag", "-a", "v0.2", "-m", "Release 0.2", &first]);
    env.git_at(340, &["tag", "v0.1", &first]);
    env.git(&["push", "-q", "origin", "--tags"]);
    let r = env.run(
        "alice",
        &["plan", "tags", "--remote", "origin", "--match", "v0.*"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let plan = env.repo.join("plan.json");
    let clones = clones(&env, 2);
    let runs = apply_everywhere(&env, &clones, &plan, &["--json"]);
    let (_, winner) = exactly_one_applied(&runs);
    assert_eq!(winner["receipt"]["deleted"].as_array().unwrap().len(), 2);
    let tags = env.git_in(&env.origin(), &["tag", "--list"]);
    assert!(!tags.contains("v0."), "{tags}");
    assert!(!consumed_on_remote(&env, &plan).is_empty());
    human_replays_agree(&env, &clones, &plan);
}

/// Commit `.guardctl/policy.toml` with the consumed marker off on the remote's default branch
/// (where the policy of a remote's plan is read), from the planning clone.
fn marker_off(env: &TestEnv) {
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    fs::write(
        env.repo.join(".guardctl/policy.toml"),
        "version = 1\n\n[remote]\nconsumed_marker = false\n",
    )
    .unwrap();
    env.git(&["add", ".guardctl/policy.toml"]);
    env.git(&["commit", "-q", "-m", "no consumed marker"]);
    env.git(&["push", "-q", "origin", "main"]);
}

#[test]
fn a_host_refusing_guardctl_refs_is_named_with_the_opt_out_and_with_it_one_clone_deletes_and_another_drifts()
{
    let env = remote_repo();
    let plan = remote_branches_plan(&env);
    let before = env.remote_branches();
    refuse_guardctl_refs(&env, true);
    // Without the opt-out: a clear refusal naming the ref and the policy key; nothing deleted.
    let r = env.run("alice", &["apply", plan.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("refs/guardctl/consumed/"), "{}", r.stderr);
    assert!(r.stderr.contains("consumed_marker = false"), "{}", r.stderr);
    assert_eq!(env.remote_branches(), before);

    // With it (the policy on the remote's default branch), a new plan: show says where it is
    // consumed, one clone deletes the branches, a second is refused (drift) and deletes nothing.
    marker_off(&env);
    fs::remove_file(&plan).unwrap();
    let plan = remote_branches_plan(&env);
    let shown = env.run("alice", &["--json", "show", plan.to_str().unwrap()]);
    assert_eq!(shown.json()["consumed_on"], "clone", "{}", shown.stdout);
    let text = env.run("alice", &["show", plan.to_str().unwrap()]).stdout;
    assert!(text.contains("in the applying clone only"), "{text}");
    let clones = clones(&env, 2);
    let first = run(alice_in(
        &env,
        &clones[0],
        &[],
        &["--json", "apply", plan.to_str().unwrap()],
    ));
    assert_eq!(first.code, 0, "{}", first.transcript());
    assert_eq!(first.json()["consumed_on"], "clone");
    assert_eq!(first.json()["receipt"]["deleted"].as_array().unwrap().len(), 2);
    let after = env.remote_branches();
    assert!(
        !after.contains("feature/done") && !after.contains("fix/old"),
        "{after}"
    );
    assert_eq!(published(&env), "", "nothing under refs/guardctl was pushed");
    let second = run(alice_in(
        &env,
        &clones[1],
        &[],
        &["apply", plan.to_str().unwrap()],
    ));
    assert_eq!(second.code, 10, "{}", second.transcript());
    assert!(
        second.stderr.contains("consumed in the applying clone only"),
        "{}",
        second.stderr
    );
    assert_eq!(env.remote_branches(), after, "the second clone deleted nothing");
    // The first clone's replay says where the plan was consumed, then the recorded result.
    let replay = run(alice_in(
        &env,
        &clones[0],
        &[],
        &["apply", plan.to_str().unwrap()],
    ));
    assert_eq!(replay.code, 0, "{}", replay.transcript());
    let mut lines = replay.stdout.lines();
    assert!(
        lines.next().unwrap().starts_with("Replayed: "),
        "{}",
        replay.stdout
    );
    assert!(
        lines.next().unwrap().starts_with("Consumed in this clone only: "),
        "{}",
        replay.stdout
    );
}

#[test]
fn without_the_marker_an_exec_plan_is_consumed_per_clone_and_says_so() {
    let env = remote_repo();
    marker_off(&env);
    let (plan, counter) = counting_plan(&env);
    let clones = clones(&env, 2);
    for (i, clone) in clones.iter().enumerate() {
        let r = run(alice_in(&env, clone, &[], &["apply", plan.to_str().unwrap()]));
        assert_eq!(r.code, 0, "{}", r.transcript());
        assert!(
            r.stdout.starts_with("Consumed in this clone only: ")
                && r.stdout.contains("another clone could run its command again"),
            "{}",
            r.stdout
        );
        assert_eq!(lines(&counter), i + 1, "no guard across clones, as documented");
    }
    assert_eq!(published(&env), "");
    // Once per clone still: a replay there runs nothing.
    let r = run(alice_in(
        &env,
        &clones[0],
        &[],
        &["--json", "apply", plan.to_str().unwrap()],
    ));
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        (r.json()["replayed"].clone(), r.json()["consumed_on"].clone()),
        (true.into(), "clone".into())
    );
    assert_eq!(lines(&counter), 2);
}

#[test]
fn an_exec_apply_killed_after_its_marker_landed_is_abandoned_by_recover_and_another_clone_is_told_at_once() {
    let env = remote_repo();
    let (plan, counter) = counting_plan(&env);
    let plan_arg = plan.to_str().unwrap();
    let clones = clones(&env, 2);
    let killed = run(alice_in(
        &env,
        &clones[0],
        &[("GUARDCTL_TEST_CRASH_AFTER", "pushed")],
        &["apply", plan_arg],
    ));
    assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());
    assert!(!consumed_on_remote(&env, &plan).is_empty(), "the marker landed");
    let r = run(alice_in(&env, &clones[0], &[], &["recover"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("it was not run"), "{}", r.stdout);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let id = crate::fixtures::plan_id_of(&plan);
    let hex = id.trim_start_matches("sha256:");
    let record = item_on_remote(&env, &format!("refs/guardctl/receipts/{hex}"), "receipt.json");
    assert!(
        record.contains("application/vnd.guardctl.abandoned.v1+json"),
        "{record}"
    );
    // The other clone, with the default --wait: refused at once (no waiting), naming who
    // consumed the plan and that the command never ran.
    let r = run(alice_in(&env, &clones[1], &[], &["--json", "apply", plan_arg]));
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(!r.stderr.contains("waiting"), "{}", r.stderr);
    let e = &r.json()["error"];
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("alice@example.com"), "{message}");
    assert!(message.contains("the command was never run"), "{message}");
    assert_eq!(e["details"]["consumed_by"]["principal"], "alice@example.com");
    assert_eq!(e["details"]["stage"], "before_command", "{e}");
    assert_eq!(lines(&counter), 0, "nothing ran anywhere");
    // In the clone that consumed it: aborted, as before.
    let r = run(alice_in(&env, &clones[0], &[], &["apply", plan_arg]));
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert_eq!(lines(&counter), 0);
}

#[test]
fn an_exec_apply_killed_while_its_command_ran_is_abandoned_by_recover_and_another_clone_is_told_to_check_by_hand()
 {
    use std::os::unix::process::CommandExt;
    let env = remote_repo();
    // The command does part of its work, then blocks until it is killed with the apply.
    let (plan, counter) = counting_plan_running(&env, "#!/bin/sh\necho ran >> \"$1\"\nexec sleep 300\n");
    let plan_arg = plan.to_str().unwrap();
    let clones = clones(&env, 2);
    let mut child = alice_in(&env, &clones[0], &[], &["apply", plan_arg])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while lines(&counter) == 0 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the apply ended before its command ran: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The apply and its command, killed mid-run.
    let group = format!("-{}", child.id());
    let killed = Command::new("kill").args(["-9", "--", &group]).status().unwrap();
    assert!(killed.success());
    assert!(!child.wait().unwrap().success());
    assert!(!consumed_on_remote(&env, &plan).is_empty(), "the marker landed");
    let r = run(alice_in(&env, &clones[0], &[], &["recover"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("it was not run again"), "{}", r.stdout);
    assert!(r.stdout.contains("published there"), "{}", r.stdout);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let hex = crate::fixtures::plan_id_of(&plan)
        .trim_start_matches("sha256:")
        .to_string();
    let record = item_on_remote(&env, &format!("refs/guardctl/receipts/{hex}"), "receipt.json");
    assert!(
        record.contains("application/vnd.guardctl.abandoned.v1+json"),
        "{record}"
    );
    // The other clone, with the default --wait: 16 at once (no waiting), naming who consumed
    // the plan and when, and that the command may have partly run and must be checked.
    let r = run(alice_in(&env, &clones[1], &[], &["--json", "apply", plan_arg]));
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(!r.stderr.contains("waiting"), "{}", r.stderr);
    let e = &r.json()["error"];
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("alice@example.com"), "{message}");
    assert!(message.contains("may have partly run"), "{message}");
    assert!(message.contains("checked by hand"), "{message}");
    assert_eq!(e["details"]["stage"], "command_started", "{e}");
    assert_eq!(e["details"]["consumed_by"]["principal"], "alice@example.com");
    assert!(e["details"]["consumed_by"]["at"].is_string(), "{e}");
    // Said in words too, and again on every try: the plan is spent, nothing runs.
    let again = run(alice_in(&env, &clones[1], &[], &["apply", plan_arg]));
    assert_eq!(again.code, 16, "{}", again.transcript());
    assert!(again.stderr.contains("checked by hand"), "{}", again.stderr);
    let there = run(alice_in(&env, &clones[0], &[], &["apply", plan_arg]));
    assert_eq!(there.code, 10, "{}", there.transcript());
    assert_eq!(lines(&counter), 1, "the command ran at most once");
}

#[test]
fn an_exec_apply_killed_after_its_command_finished_is_completed_by_recover_which_publishes_its_receipt() {
    let env = remote_repo();
    let (plan, counter) = counting_plan(&env);
    let plan_arg = plan.to_str().unwrap();
    let clones = clones(&env, 2);
    let killed = run(alice_in(
        &env,
        &clones[0],
        &[("GUARDCTL_TEST_CRASH_AFTER", "command-finished")],
        &["apply", plan_arg],
    ));
    assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());
    assert_eq!(lines(&counter), 1);
    let r = run(alice_in(&env, &clones[0], &[], &["recover"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("completed"), "{}", r.stdout);
    let id = crate::fixtures::plan_id_of(&plan);
    assert!(
        published(&env).contains(&format!(
            "refs/guardctl/receipts/{}",
            id.trim_start_matches("sha256:")
        )),
        "{}",
        published(&env)
    );
    replayed_in_the_other_clone(&env, &clones, plan_arg);
    assert_eq!(lines(&counter), 1, "ran once");
}

/// Create `refname` on the remote as a one-file item (`file` holding `content`), by hand.
fn push_item(env: &TestEnv, refname: &str, file: &str, content: &str) {
    let scratch = env.path().join("scratch-item");
    let _ = fs::remove_dir_all(&scratch);
    env.git_in(env.path(), &["init", "-q", scratch.to_str().unwrap()]);
    fs::write(scratch.join(file), content).unwrap();
    env.git_in(&scratch, &["add", file]);
    env.git_in(&scratch, &["commit", "-q", "-m", "by hand"]);
    let url = format!("file://{}", env.origin().display());
    env.git_in(&scratch, &["push", "-q", &url, &format!("HEAD:{refname}")]);
}

#[test]
fn a_junk_or_foreign_signed_abandonment_record_never_reads_as_abandoned_or_applied() {
    use base64::Engine;
    let env = remote_repo();
    let (plan, counter) = counting_plan(&env);
    let plan_arg = plan.to_str().unwrap();
    let id = crate::fixtures::plan_id_of(&plan);
    let hex = id.trim_start_matches("sha256:").to_string();
    let clones = clones(&env, 2);
    // A genuine marker by alice lands; the apply dies before recording anything more.
    let killed = run(alice_in(
        &env,
        &clones[0],
        &[("GUARDCTL_TEST_CRASH_AFTER", "pushed")],
        &["apply", plan_arg],
    ));
    assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());
    let marker: serde_json::Value = serde_json::from_str(&item_on_remote(
        &env,
        &format!("refs/guardctl/consumed/{hex}"),
        "consumed.json",
    ))
    .unwrap();
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(marker["payload"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let plan_hash = crate::fixtures::payload_of(&plan)["plan_hash"].clone();
    // Bob signs an abandonment record naming alice's key and consumption.
    let ty = "application/vnd.guardctl.abandoned.v1+json";
    let body = serde_json::json!({
        "plan_id": id,
        "plan_hash": plan_hash,
        "executor": "alice@example.com",
        "key": claims["key"],
        "consumed_at": claims["created_at"],
        "abandoned_at": claims["created_at"],
        "reason": "forged",
    })
    .to_string();
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, body.len()).into_bytes();
    pae.extend_from_slice(body.as_bytes());
    let bob = env.key("bob");
    let forged = serde_json::json!({
        "payloadType": ty,
        "payload": base64::engine::general_purpose::STANDARD.encode(&body),
        "signatures": [{"keyid": crate::plan_file::fingerprint(&bob), "sig": crate::plan_file::ssh_sign(&bob, "guardctl-apply", &pae)}],
    });
    let receipts = format!("refs/guardctl/receipts/{hex}");
    for record in [forged.to_string(), "junk".to_string()] {
        let _ = env.git_in(&env.origin(), &["update-ref", "-d", &receipts]);
        push_item(&env, &receipts, "receipt.json", &record);
        let r = run(alice_in(
            &env,
            &clones[1],
            &[],
            &["--json", "apply", "--wait", "0", plan_arg],
        ));
        assert_eq!(r.code, 16, "{}", r.transcript());
        let e = &r.json()["error"];
        assert!(e["message"].as_str().unwrap().contains(&receipts), "{e}");
        assert!(!e["message"].as_str().unwrap().contains("abandoned"), "{e}");
        assert!(!r.stdout.contains("\"replayed\""), "{}", r.stdout);
        assert_eq!(lines(&counter), 0, "nothing ran");
    }
}

#[test]
fn recover_publishes_an_abandonment_only_where_the_clone_still_points_and_only_with_the_consuming_key() {
    let env = remote_repo();
    let (plan, counter) = counting_plan(&env);
    let clone = &clones(&env, 1)[0];
    let killed = run(alice_in(
        &env,
        clone,
        &[("GUARDCTL_TEST_CRASH_AFTER", "pushed")],
        &["apply", plan.to_str().unwrap()],
    ));
    assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());
    let receipts = || {
        env.published_on(&env.origin())
            .lines()
            .filter(|l| l.starts_with("refs/guardctl/receipts/"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // The clone's `origin` now names another repository: the before-image's URL is never
    // pushed to, and neither is the new one; recover refuses naming both, settling nothing.
    let elsewhere = env.path().join("elsewhere.git");
    env.git_in(env.path(), &["init", "-q", "--bare", elsewhere.to_str().unwrap()]);
    env.git_in(
        clone,
        &["remote", "set-url", "origin", elsewhere.to_str().unwrap()],
    );
    let r = run(alice_in(&env, clone, &[], &["recover"]));
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("elsewhere.git"), "{}", r.stderr);
    assert!(r.stderr.contains("origin.git"), "{}", r.stderr);
    assert_eq!(receipts(), "");
    let url = format!("file://{}", env.origin().display());
    env.git_in(clone, &["remote", "set-url", "origin", &url]);
    // Another key may not sign the record for alice's consumption.
    let mut bob = env.command();
    bob.arg("-C")
        .arg(clone)
        .arg("--key")
        .arg(env.key("bob"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .arg("recover");
    let r = run(bob);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains("only the key that consumed it"), "{}", r.stderr);
    assert_eq!(receipts(), "");
    // Alice may: published, and nothing ever ran.
    let r = run(alice_in(&env, clone, &[], &["recover"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_ne!(receipts(), "");
    assert_eq!(lines(&counter), 0);
}
