//! Attacks on the remote's backups branch (`refs/heads/guardctl/backups`, `repo::backups`)
//! and on `rollback` from a clone that did not apply the plan: a hostile teammate who can
//! push to the team remote (whose host protects guardctl's branches from deletion and
//! force pushes, as docs/remote.md asks: fast-forwards by anyone remain allowed), and a
//! hostile executor who holds a valid key and re-signs what they like.

use crate::fixtures::{Team, TestEnv, protect_refs, publish};
use guardctl::plan::{derive, hash::plan_hash};
use std::fs;
use std::path::{Path, PathBuf};

const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n";

const BACKUPS: &str = "refs/heads/guardctl/backups";

/// The team, its remote protecting guardctl's branches as docs/remote.md says (no deletion,
/// no rewind): fast-forwards by anyone with push access remain allowed.
fn team() -> Team {
    let t = crate::fixtures::team(POLICY);
    protect_refs(&t.env.origin(), "refs/heads/guardctl/*");
    t
}

/// Alice publishes a plan of `extra`'s remote branches and bob approves it: its id's hex.
fn approved(t: &Team, name: &str, extra: &[&str]) -> String {
    let id = publish(&t.env, &t.planner, name, extra);
    let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    id
}

/// The unmerged `feature/live` planned by alice, approved, deleted from a CI clone that is
/// then discarded: its id and the deleted tip.
fn live_deleted_from_ci(t: &Team) -> (String, String) {
    let live = t
        .env
        .git(&["rev-parse", "origin/feature/live"])
        .trim()
        .to_string();
    let id = approved(
        t,
        "live.json",
        &[
            "--match",
            "feature/live",
            "--older-than",
            "1d",
            "--include-unmerged",
        ],
    );
    let [ci] = <[PathBuf; 1]>::try_from(t.env.clones(&["ci"])).unwrap();
    let r = t.env.run_in(&ci, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    fs::remove_dir_all(&ci).unwrap();
    (id, live)
}

/// A clone of the remote's `main` alone, one commit deep, as a CI checkout makes.
fn lean_clone(env: &TestEnv, name: &str) -> PathBuf {
    let lean = env.path().join(name);
    let url = format!("file://{}", env.origin().display());
    env.git_in(
        env.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--single-branch",
            "--branch",
            "main",
            &url,
            lean.to_str().unwrap(),
        ],
    );
    lean
}

fn has_object(dir: &Path, oid: &str) -> bool {
    std::process::Command::new("git")
        .args(["-C", dir.to_str().unwrap(), "cat-file", "-e", oid])
        .status()
        .unwrap()
        .success()
}

/// A commit on `parent` whose tree holds one file of `bytes` pseudo-random bytes, made in
/// `clone` (no ref): what a teammate fast-forwards onto a branch.
fn junk_commit(env: &TestEnv, clone: &Path, parent: &str, bytes: usize) -> (String, String) {
    let mut data = Vec::with_capacity(bytes);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while data.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.extend_from_slice(&x.to_le_bytes());
    }
    let file = clone.join(".git/junk-blob");
    fs::write(&file, &data).unwrap();
    let blob = env.git_in(clone, &["hash-object", "-w", file.to_str().unwrap()]);
    let index = clone.join(".git/junk-index");
    let with_index = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(clone)
            .env("GIT_INDEX_FILE", &index)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    with_index(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{blob},junk"),
    ]);
    let tree = with_index(&["write-tree"]);
    let commit = env.git_in(clone, &["commit-tree", &tree, "-p", parent, "-m", "junk"]);
    (commit, blob)
}

/// A plan applied from a CI clone that dies after the receipt was signed and before it was
/// published; the first receipt at a ledger name is the one every clone reads, so dave
/// publishes his own first: the genuine one re-signed with his (valid) key after `edit`.
/// Returns the plan id and the remote's branches then.
fn applied_with_a_forged_receipt(t: &Team, edit: impl Fn(&mut serde_json::Value)) -> (String, String) {
    let id = approved(t, "plan.json", &[]);
    let [ci] = <[PathBuf; 1]>::try_from(t.env.clones(&["ci"])).unwrap();
    let r = t.env.run_env(
        "mallory",
        &[("GUARDCTL_TEST_CRASH_AFTER", "done")],
        &["-C", ci.to_str().unwrap(), "apply", &id[..12]],
    );
    assert_eq!(r.code, -1, "killed: {}", r.transcript());
    let before = t.env.remote_branches();
    assert!(
        !before.contains("refs/heads/fix/old "),
        "the push landed: {before}"
    );
    let genuine = fs::read_to_string(ci.join(format!(".git/guardctl/plans/{id}/receipt.json"))).unwrap();
    let (forged, _) = crate::trust::resign(&t.env, &genuine, "mallory", edit);
    t.env
        .push_to_ledger(&t.carol, &[(&format!("receipts/{id}/receipt.json"), &forged)]);
    (id, before)
}

#[test]
fn a_receipt_re_signed_by_its_executor_to_list_an_unplanned_ref_restores_nothing_from_another_clone() {
    // Attack (hostile executor): the receipt lists one more "deleted" ref the plan never
    // planned. A rollback from another clone would create that ref on the remote.
    let t = team();
    let main = t.env.git(&["rev-parse", "origin/main"]).trim().to_string();
    let (id, before) = applied_with_a_forged_receipt(&t, |b| {
        b["deleted"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"ref": "refs/heads/release", "oid": main}));
    });
    let r = t.env.run_in(&t.planner, "alice", &["rollback", &id[..12]]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(
        r.stderr.contains("its receipt lists refs/heads/release")
            && r.stderr.contains("which the plan did not plan to delete"),
        "{}",
        r.stderr
    );
    assert_eq!(t.env.remote_branches(), before, "nothing was restored");
}

#[test]
fn a_receipt_re_signed_by_its_executor_to_leave_out_a_deleted_ref_restores_nothing_from_another_clone() {
    // Attack (hostile executor): the receipt lists one ref fewer than the push deleted. A
    // rollback from another clone restored only the refs listed and reported success,
    // leaving the other one gone.
    let t = team();
    let (id, before) = applied_with_a_forged_receipt(&t, |b| {
        let deleted = b["deleted"].as_array_mut().unwrap();
        assert!(
            deleted.len() >= 2,
            "the plan deletes more than one ref: {deleted:?}"
        );
        deleted.pop();
    });
    let r = t.env.run_in(&t.planner, "alice", &["rollback", &id[..12]]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(
        r.stderr.contains("its receipt leaves out refs/heads/")
            && r.stderr.contains("which the plan deleted with the rest"),
        "{}",
        r.stderr
    );
    assert_eq!(t.env.remote_branches(), before, "nothing was restored");
}

#[test]
fn a_published_local_plan_applied_in_another_clone_is_not_rolled_back_here() {
    // A local plan's refs were in the clone that applied it: its receipt is published (so
    // every inbox stops listing it), and a rollback elsewhere refuses (64), restoring
    // nothing on the remote.
    let env = crate::fixtures::standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let hex = id.trim_start_matches("sha256:");
    assert!(
        !env.published_under(&env.origin(), &format!("refs/guardctl/receipts/{hex}"))
            .is_empty(),
        "the receipt is published"
    );
    let [other] = <[PathBuf; 1]>::try_from(env.clones(&["other"])).unwrap();
    let before = env.remote_branches();
    let r = env.run_in(&other, "alice", &["rollback", &hex[..12]]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr.contains("was applied in another clone")
            && r.stderr.contains("it is a local plan of that clone"),
        "{}",
        r.stderr
    );
    assert_eq!(env.remote_branches(), before);
}

#[test]
fn an_exec_plan_applied_from_another_clone_has_no_rollback_here() {
    let env = crate::fixtures::remote_repo();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    fs::write(
        env.repo.join("scripts/prune.sh"),
        "#!/bin/sh\nfor f in trash/*; do\n  if [ \"$1\" = --dry-run ]; then echo \"would remove $f\"; else rm \"$f\"; fi\ndone\n",
    )
    .unwrap();
    fs::create_dir_all(env.repo.join("trash")).unwrap();
    fs::write(env.repo.join("trash/a"), "a").unwrap();
    env.git(&["add", "scripts", "trash"]);
    env.git(&["commit", "-q", "-m", "prune script"]);
    env.git(&["push", "-q", "origin", "main"]);
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--remote",
            "origin",
            "--publish",
            "--preview",
            "sh scripts/prune.sh --dry-run",
            "--",
            "sh",
            "scripts/prune.sh",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let hex = id.trim_start_matches("sha256:").to_string();
    let [ci, other] = <[PathBuf; 2]>::try_from(env.clones(&["ci", "other"])).unwrap();
    let plan = env.repo.join("plan.json");
    let r = env.run_in(&ci, "alice", &["apply", plan.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.remote_branches();
    let r = env.run_in(&other, "alice", &["rollback", &hex[..12]]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr.contains("was applied in another clone")
            && r.stderr.contains("an exec plan has no rollback"),
        "{}",
        r.stderr
    );
    assert_eq!(env.remote_branches(), before);
}

#[test]
fn a_rollback_elsewhere_fetches_the_deleted_commits_and_not_the_junk_fast_forwarded_onto_the_backups_branch()
{
    // Attack (hostile teammate, push access; the branch protected, so only fast-forwards):
    // a commit holding 4 MB is fast-forwarded onto guardctl/backups. A rollback in a clone
    // that lacks the deleted commit fetched the whole branch: every such rollback downloaded
    // the junk (and every history the branch ever kept) into the clone's object store.
    let t = team();
    let (id, live) = live_deleted_from_ci(&t);
    let tip = t.env.git_in(&t.env.origin(), &["rev-parse", BACKUPS]);
    t.env.git_in(&t.carol, &["fetch", "-q", "origin", BACKUPS]);
    let (junk, blob) = junk_commit(&t.env, &t.carol, &tip, 4 << 20);
    t.env
        .git_in(&t.carol, &["push", "-q", "origin", &format!("{junk}:{BACKUPS}")]);

    let lean = lean_clone(&t.env, "lean");
    assert!(!has_object(&lean, &live));
    let r = t.env.run_in(&lean, "bob", &["rollback", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("restored 1 branches"), "{}", r.stdout);
    let back = t
        .env
        .git_in(&t.env.origin(), &["rev-parse", "refs/heads/feature/live"]);
    assert_eq!(back.trim(), live);
    assert!(
        !has_object(&lean, &blob) && !has_object(&lean, &junk),
        "the junk on the backups branch was fetched into the clone"
    );
}

#[test]
fn a_rollback_elsewhere_from_a_server_that_refuses_unadvertised_ids_fetches_the_backups_branch() {
    // Protocol v0 without `uploadpack.allowReachableSHA1InWant` refuses a commit asked for
    // by id: the branch that keeps it is fetched instead.
    let t = team();
    let (id, live) = live_deleted_from_ci(&t);
    let lean = lean_clone(&t.env, "lean");
    let global = t.env.path().join("v0.gitconfig");
    fs::write(&global, "[protocol]\n\tversion = 0\n").unwrap();
    let r = t.env.run_env(
        "bob",
        &[("GIT_CONFIG_GLOBAL", global.to_str().unwrap())],
        &["-C", lean.to_str().unwrap(), "rollback", &id[..12]],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let back = t
        .env
        .git_in(&t.env.origin(), &["rev-parse", "refs/heads/feature/live"]);
    assert_eq!(back.trim(), live);
}

#[test]
fn an_apply_refuses_a_backups_tip_larger_than_a_backup_commit_and_deletes_nothing() {
    // Attack (hostile teammate): a fast-forward onto guardctl/backups of a commit whose tree
    // holds 256 KiB. An apply fetches the tip one commit deep, no file past 64 KiB; over it,
    // it refuses (14) before its push: no deletion without the backup, and the ledger has no
    // marker. The cap was a megabyte more than that (the room an item's fetch leaves for its
    // commit and tree), so every apply fetched such a tip.
    let t = team();
    let first = approved(&t, "a.json", &["--match", "feature/done"]);
    let id = approved(&t, "b.json", &["--match", "fix/old"]);
    // A first apply creates the branch.
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &first[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let tip = t.env.git_in(&t.env.origin(), &["rev-parse", BACKUPS]);
    t.env.git_in(&t.carol, &["fetch", "-q", "origin", BACKUPS]);
    let (junk, _) = junk_commit(&t.env, &t.carol, &tip, 256 << 10);
    t.env
        .git_in(&t.carol, &["push", "-q", "origin", &format!("{junk}:{BACKUPS}")]);
    let before = (t.env.remote_branches(), t.env.ledger_tip());
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(
        r.stderr.contains(BACKUPS) && r.stderr.contains("larger than a backup commit can be"),
        "{}",
        r.stderr
    );
    assert_eq!((t.env.remote_branches(), t.env.ledger_tip()), before);
}

#[test]
fn a_re_signed_remote_plan_that_lists_the_backups_branch_deletes_nothing() {
    // Attack (hostile planner, who can re-sign any plan): a remote-branches plan listing
    // guardctl/backups at its tip, every derived field recomputed. Reviewers might approve
    // a name they do not know; deleting it would drop the remote's copy of every plan's
    // deleted commits. No listing of the remote's branches has it, so the apply finds it
    // "gone" and refuses as drift (10) before it changes anything.
    let t = crate::fixtures::team(POLICY);
    let env = &t.env;
    let first = approved(&t, "a.json", &["--match", "feature/done"]);
    let r = env.run_in(&t.executor, "mallory", &["apply", &first[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env.git(&["fetch", "-q", "origin"]);
    let r = env.run(
        "alice",
        &[
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "--executor",
            "dave@example.com",
            "--match",
            "fix/old",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let origin = env.origin();
    let out = env.git_in(
        &origin,
        &["log", "-1", "--format=%H%x00%an%x00%ae%x00%s%x00%ct", BACKUPS],
    );
    let f: Vec<&str> = out.trim_end().split('\0').collect();
    crate::hostile::forge_raw(env, |p| {
        let mut b = p.affected[0].clone();
        b.refname = BACKUPS.into();
        b.oid = f[0].into();
        b.last_commit_time = time::OffsetDateTime::from_unix_timestamp(f[4].parse().unwrap()).unwrap();
        b.author = guardctl::plan::Person {
            name: f[1].into(),
            email: f[2].into(),
        };
        b.subject = f[3].into();
        p.affected.push(b);
        // Every derived field recomputed, under the team's policy.
        let (op, affected) = (&p.operation, &p.affected);
        p.plan_hash = plan_hash(&p.repository, op, &p.policy_hash, affected).unwrap();
        p.summary = derive::summary(op, affected);
        p.diff = derive::diff(affected);
        p.side_effects = derive::side_effects(op, affected);
        let policy = guardctl::policy::file::parse(POLICY).unwrap();
        p.risk = derive::risk(op, affected, policy.bulk.threshold);
        p.review = guardctl::policy::route::review(&policy, affected).unwrap();
    });
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = (
        env.remote_branches(),
        env.git_in(&origin, &["rev-parse", BACKUPS]),
    );
    let r = env.run("mallory", &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains(BACKUPS), "{}", r.stderr);
    assert_eq!(
        (
            env.remote_branches(),
            env.git_in(&origin, &["rev-parse", BACKUPS])
        ),
        before
    );
}

#[test]
fn an_apply_whose_backups_tip_moved_before_its_push_builds_on_the_new_tip() {
    // Race (another apply, or a teammate's fast-forward): after the apply listed the
    // backups branch, before its push, the branch moves on and the ledger does not. The
    // push's lease on the branch fails; the push is built again on the new tip and lands,
    // and the branch keeps both.
    let t = team();
    let first = approved(&t, "a.json", &["--match", "feature/done"]);
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &first[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let id = approved(&t, "b.json", &["--match", "fix/old"]);
    let origin = t.env.origin();
    let git = format!(
        "git -C {} -c user.name=eve -c user.email=eve@example.com",
        origin.display()
    );
    let move_on = format!(
        "{git} update-ref {BACKUPS} $({git} commit-tree -p {BACKUPS} -m other 4b825dc642cb6eb9a060e54bf8d69288fbee4904)"
    );
    let r = t.env.run_env(
        "mallory",
        &[
            ("GUARDCTL_TEST_EXEC_AT", "consumed"),
            ("GUARDCTL_TEST_EXEC", &move_on),
        ],
        &["-C", t.executor.to_str().unwrap(), "apply", &id[..12]],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!t.env.remote_branches().contains("fix/old"));
    let subjects = t
        .env
        .git_in(&origin, &["log", "--first-parent", "--format=%s", BACKUPS]);
    assert!(
        subjects.starts_with(&format!(
            "guardctl backup of plan sha256:{id}\nother\nguardctl backup of plan sha256:{first}"
        )),
        "{subjects}"
    );
}

/// In `remote_repo`, annotated tags `v0.2` and `v0.3` on main's first commit, pushed; alice
/// plans the deletion of `name` on the remote, bob approves, and alice applies it from a CI
/// clone that is then discarded. The tag object's id and the plan id's hex.
fn annotated_tag_deleted_from_ci(env: &TestEnv, name: &str) -> (String, String) {
    let tag = env
        .git(&["rev-parse", &format!("refs/tags/{name}")])
        .trim()
        .to_string();
    let file = format!("{name}.json");
    let r = env.run(
        "alice",
        &["plan", "tags", "--remote", "origin", "--match", name, "-o", &file],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", &file, "--yes"]).code, 0);
    let plan = env.repo.join(&file);
    let hex = crate::fixtures::plan_id_of(&plan)
        .trim_start_matches("sha256:")
        .to_string();
    let [ci] = <[PathBuf; 1]>::try_from(env.clones(&[&format!("ci-{name}")])).unwrap();
    let r = env.run_in(&ci, "alice", &["apply", plan.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    fs::remove_dir_all(&ci).unwrap();
    (tag, hex)
}

fn tagged_remote() -> TestEnv {
    let env = crate::fixtures::remote_repo();
    let first = env.git(&["rev-list", "--max-parents=0", "main"]);
    env.git_at(350, &["tag", "-a", "v0.2", "-m", "Release 0.2", first.trim()]);
    env.git_at(340, &["tag", "-a", "v0.3", "-m", "Release 0.3", first.trim()]);
    env.git(&["push", "-q", "origin", "--tags"]);
    env
}

#[test]
fn an_annotated_tag_deleted_from_a_ci_clone_is_restored_elsewhere_from_the_tag_object_the_remote_still_holds()
{
    // The backups branch keeps the commit a deleted annotated tag names, never the tag
    // object (a commit cannot point at one): only the remote's object store still has it,
    // unreferenced. Asked for by id, it is restored from there (fetching the branch never
    // brought it: 66).
    let env = tagged_remote();
    let (tag, hex) = annotated_tag_deleted_from_ci(&env, "v0.2");
    let lean = lean_clone(&env, "lean");
    assert!(!has_object(&lean, &tag));
    let r = env.run_in(&lean, "alice", &["rollback", &hex[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let back = env.git_in(&env.origin(), &["rev-parse", "refs/tags/v0.2"]);
    assert_eq!(back.trim(), tag);
}

#[test]
#[ignore = "design: the remote's backups keep the commit an annotated tag names, not the tag object (no commit can point at one); once the remote prunes the unreferenced object, a clone that never fetched the tag cannot restore it (66). Needs the tag objects' bytes kept where a rollback finds them by the tag's id: e.g. published on the ledger with the consumed marker, each checked to hash to its id"]
fn an_annotated_tag_deleted_from_a_ci_clone_is_restored_elsewhere_after_the_remote_pruned_its_tag_object() {
    let env = tagged_remote();
    let (tag, hex) = annotated_tag_deleted_from_ci(&env, "v0.3");
    env.git_in(&env.origin(), &["gc", "-q", "--prune=now"]);
    let lean = lean_clone(&env, "lean");
    let r = env.run_in(&lean, "alice", &["rollback", &hex[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let back = env.git_in(&env.origin(), &["rev-parse", "refs/tags/v0.3"]);
    assert_eq!(back.trim(), tag);
}

/// What a read must leave as it was in the repository at `dir`: every ref, the object
/// store's counts, the config.
fn state_of(env: &TestEnv, dir: &Path) -> String {
    let config = match dir.join("config").is_file() {
        true => dir.join("config"),
        false => dir.join(".git/config"),
    };
    format!(
        "{}\n{}\n{}",
        env.git_in(dir, &["for-each-ref", "--format=%(refname) %(objectname)"]),
        env.git_in(dir, &["count-objects", "-v"]),
        fs::read_to_string(config).unwrap()
    )
}

#[test]
fn plan_show_and_verify_beside_the_backups_branch_write_nothing_to_the_remote_or_the_clone() {
    // The backups branch is listed with the ledger by every read; only an apply adds to it
    // and only a rollback fetches from it.
    let t = team();
    let first = approved(&t, "a.json", &["--match", "feature/done"]);
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &first[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let id = approved(&t, "b.json", &["--match", "fix/old"]);
    let origin = t.env.origin();
    let reader = &t.carol;
    let before = (state_of(&t.env, &origin), state_of(&t.env, reader));
    let out = t.env.path().join("carol-plan.json");
    for args in [
        vec![
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "--include-unmerged",
            "--older-than",
            "1d",
            "-o",
            out.to_str().unwrap(),
        ],
        vec!["show", &id[..12]],
        vec!["verify", &id[..12]],
    ] {
        // verify as the executor would, in carol's clone.
        let who = if args[0] == "verify" { "mallory" } else { "carol" };
        let r = t.env.run_in(reader, who, &args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.transcript());
        assert!(!r.stdout.contains("guardctl/backups"), "{}", r.stdout);
    }
    assert_eq!((state_of(&t.env, &origin), state_of(&t.env, reader)), before);
}

#[test]
fn a_rollback_elsewhere_of_a_tag_object_the_remote_pruned_fetches_nothing_else_and_names_it() {
    // The remote took the commit by id (protocol v2) but no longer has the tag object: the
    // whole branch, with the 4 MB a teammate fast-forwarded onto it, was then fetched (the
    // fallback meant for servers that take no ids), to find nothing more (66).
    let env = tagged_remote();
    let origin = env.origin();
    protect_refs(&origin, "refs/heads/guardctl/*");
    let (tag, hex) = annotated_tag_deleted_from_ci(&env, "v0.2");
    env.git(&["fetch", "-q", "origin", BACKUPS]);
    let tip = env.git_in(&origin, &["rev-parse", BACKUPS]);
    let (junk, blob) = junk_commit(&env, &env.repo, &tip, 4 << 20);
    env.git(&["push", "-q", "origin", &format!("{junk}:{BACKUPS}")]);
    env.git_in(&origin, &["gc", "-q", "--prune=now"]);
    let lean = lean_clone(&env, "lean");
    let r = env.run_in(&lean, "alice", &["rollback", &hex[..12]]);
    assert_eq!(r.code, 66, "{}", r.transcript());
    assert!(
        r.stderr.contains(&format!("refs/tags/v0.2 ({tag})")),
        "{}",
        r.stderr
    );
    assert!(
        !has_object(&lean, &blob) && !has_object(&lean, &junk),
        "the junk on the backups branch was fetched into the clone"
    );
}
