//! guardctl's own state files are untrusted input: crafted before-images, journals and
//! consumed markers (as anyone who can write `.git/guardctl`, holding a valid key of their
//! own, could make them) never make `gc`, `recover` or a rollback act. Each is refused with 16,
//! naming the file, and nothing changes: no ref deleted, no config written, no receipt signed.

use crate::fixtures::{NOW, Run, TestEnv, standard_repo};
use guardctl::sign::key::{KeySource, load};
use serde_json::{Value, json};
use std::fs;
use std::path::PathBuf;

/// The branches alice's plan deletes (`--merged --gone` on the standard repository).
const PLANNED: [&str; 3] = [
    "refs/heads/feature/done",
    "refs/heads/feature/gone-merged",
    "refs/heads/fix/old",
];

/// alice's plan, approved by bob, not applied; returns its id hex.
fn approved(env: &TestEnv) -> String {
    let r = env.run(
        "alice",
        &["--json", "plan", "stale-branches", "--merged", "--gone"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let id = r.json()["plan_id"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string();
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    id
}

fn plan_dir(env: &TestEnv, id: &str) -> PathBuf {
    env.repo.join(".git/guardctl/plans").join(id)
}

/// A before-image as guardctl writes it, for plan `id` deleting `refs`.
fn image(env: &TestEnv, id: &str, executor: &str, refs: &[&str], config: Value) -> Value {
    let refs: Vec<Value> = refs
        .iter()
        .map(|r| json!({"ref": r, "oid": env.git(&["rev-parse", r])}))
        .collect();
    json!({
        "plan_id": format!("sha256:{id}"),
        "plan_hash": "sha256:00",
        "repository": guardctl::repo::Repo::open(Some(&env.repo)).unwrap().identity().unwrap(),
        "executor": executor,
        "approved_by": ["bob@example.com"],
        "created_at": "2020-01-01T00:00:00Z",
        "retention_days": 1,
        "refs": refs,
        "backup_ref": format!("refs/guardctl/backup/{id}"),
        "backup_commit": null,
        "config": config,
    })
}

/// Write a crafted plan state: before-image, journal and (if `signer` is given) a consumed
/// marker that `signer` signs with their own, valid key.
fn craft(env: &TestEnv, id: &str, image: &Value, steps: &[&str], signer: Option<&str>) {
    let dir = plan_dir(env, id);
    fs::create_dir_all(&dir).unwrap();
    let bytes = serde_json::to_vec_pretty(image).unwrap();
    fs::write(dir.join("before-image.json"), &bytes).unwrap();
    let journal: String = steps
        .iter()
        .map(|s| {
            format!(
                "{}\n",
                json!({"plan": format!("sha256:{id}"), "step": s, "time": NOW})
            )
        })
        .collect();
    fs::write(dir.join("journal"), journal).unwrap();
    if let Some(user) = signer {
        let key = load(&env.key(user), KeySource::Flag).unwrap();
        let payload = json!({
            "plan_id": format!("sha256:{id}"),
            "before_image": guardctl::plan::envelope::sha256_id(&bytes),
            "key": guardctl::sign::sshsig::fingerprint(&key.public),
            "created_at": NOW,
        });
        let envelope = guardctl::sign::dsse::sign(
            guardctl::store::state::CONSUMED_PAYLOAD_TYPE,
            "guardctl-apply",
            payload.to_string().as_bytes(),
            &key,
        )
        .unwrap();
        fs::write(dir.join("consumed"), serde_json::to_vec(&envelope).unwrap()).unwrap();
    }
}

/// Refs, config, reflogs, objects, and the audit log: everything that must not change.
fn everything(env: &TestEnv) -> String {
    env.repository_state() + &fs::read_to_string(env.repo.join(".git/guardctl/audit.log")).unwrap_or_default()
}

fn refused_naming(r: &Run, file: &str) {
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains(file), "should name {file}: {}", r.stderr);
    assert!(r.stderr.contains("nothing was changed"), "{}", r.stderr);
}

/// `gc` at `now`, as alice (gc signs its audit entries, and checks the log against the
/// trusted identities first).
fn gc(env: &TestEnv, now: &str) -> Run {
    env.run_env("alice", &[("GUARDCTL_TEST_NOW", now)], &["gc"])
}

#[test]
fn gc_refuses_a_before_image_whose_backup_ref_is_not_its_own_and_deletes_nothing() {
    let env = standard_repo();
    let applied = approved(&env);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    let main = env.git(&["rev-parse", "refs/heads/main"]);
    let crafted = "ab".repeat(32);
    let file = plan_dir(&env, &crafted).join("before-image.json");
    for (backup_ref, commit) in [
        ("refs/heads/main".to_string(), main.clone()),
        (
            format!("refs/guardctl/backup/{applied}"),
            env.git(&["rev-parse", &format!("refs/guardctl/backup/{applied}")]),
        ),
    ] {
        let mut img = image(&env, &crafted, "alice@example.com", &[], json!([]));
        img["backup_ref"] = json!(backup_ref);
        img["backup_commit"] = json!(commit);
        craft(&env, &crafted, &img, &["before-image-written"], None);
        let before = everything(&env);
        let r = gc(&env, "2030-01-01T00:00:00Z");
        refused_naming(&r, &file.display().to_string());
        assert_eq!(everything(&env), before, "{backup_ref}");
        assert_eq!(env.git(&["rev-parse", "refs/heads/main"]), main);
    }
}

#[test]
fn gc_keeps_a_backup_whose_before_image_was_backdated() {
    let env = standard_repo();
    let id = approved(&env);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    let path = plan_dir(&env, &id).join("before-image.json");
    let mut img: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    img["created_at"] = json!("2020-01-01T00:00:00Z");
    img["retention_days"] = json!(0);
    fs::write(&path, serde_json::to_vec(&img).unwrap()).unwrap();
    let before = everything(&env);
    // The backup commit itself says when it was made and for how long it is kept.
    let r = gc(&env, "2026-06-20T00:00:00Z");
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("Nothing to collect"), "{}", r.stdout);
    assert_eq!(everything(&env), before);
    let r = gc(&env, "2026-07-02T00:00:00Z");
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout.contains("Removed the backup of 3 branches"),
        "{}",
        r.stdout
    );
}

#[test]
fn recover_never_signs_a_receipt_for_a_plan_that_was_never_applied() {
    let steps = ["before-image-written", "consumed", "refs-committed"];
    // (executor in the image, who signs the consumed marker, the file named)
    let cases: [(&str, Option<&str>, &str); 4] = [
        ("alice@example.com", None, "journal"),
        ("alice@example.com", Some("carol"), "consumed"),
        // carol makes herself the executor: alice's recover will not sign for carol's change.
        ("carol@example.com", Some("carol"), "only the key that applied it"),
        // even alice's own marker: the refs were never deleted, so nothing was committed.
        ("alice@example.com", Some("alice"), "journal"),
    ];
    for (executor, signer, named) in cases {
        let env = standard_repo();
        let id = approved(&env);
        let img = image(&env, &id, executor, &PLANNED, json!([]));
        craft(&env, &id, &img, &steps, signer);
        let before = everything(&env);
        for args in [&["recover"][..], &["apply", "plan.json"]] {
            let r = env.run("alice", args);
            assert_eq!(r.code, 16, "{executor} {signer:?} {args:?}: {}", r.transcript());
            assert!(r.stderr.contains(named), "{executor} {signer:?}: {}", r.stderr);
            assert_eq!(everything(&env), before, "{executor} {signer:?} {args:?}");
            assert!(!plan_dir(&env, &id).join("receipt.json").exists());
        }
        for r in PLANNED {
            env.git(&["rev-parse", "--verify", r]);
        }
    }
}

#[test]
fn a_legacy_or_unsigned_consumed_marker_is_not_trusted() {
    let env = standard_repo();
    let id = approved(&env);
    let img = image(&env, &id, "alice@example.com", &PLANNED, json!([]));
    craft(
        &env,
        &id,
        &img,
        &["before-image-written", "consumed", "refs-committed"],
        None,
    );
    fs::write(plan_dir(&env, &id).join("consumed"), "consumed\n").unwrap();
    let before = everything(&env);
    let r = env.run("alice", &["recover"]);
    refused_naming(&r, &plan_dir(&env, &id).join("consumed").display().to_string());
    assert_eq!(everything(&env), before);
}

#[test]
fn config_restore_never_writes_a_key_outside_the_restored_branches_sections() {
    let steps = [
        "before-image-written",
        "consumed",
        "refs-committed",
        "config-removed",
        "done",
        "rollback-started",
        "rollback-refs-restored",
    ];
    let done = "refs/heads/feature/done";
    for config in [
        json!([[
            "feature/done",
            [
                ["branch.feature/done.remote", "origin"],
                ["core.fsmonitor", "touch pwned"]
            ]
        ]]),
        json!([["feature/done", [["branch.feature/done.remote.x", "y"]]]]),
        json!([["main", [["branch.main.remote", "evil"]]]]),
    ] {
        let env = standard_repo();
        let crafted = "cd".repeat(32);
        // A valid key of her own: carol signs a marker naming herself the executor.
        let img = image(&env, &crafted, "carol@example.com", &[done], config.clone());
        craft(&env, &crafted, &img, &steps, Some("carol"));
        let before = everything(&env);
        let file = plan_dir(&env, &crafted).join("before-image.json");
        for args in [&["recover"][..], &["rollback", &crafted]] {
            let r = env.run("alice", args);
            refused_naming(&r, &file.display().to_string());
            assert_eq!(everything(&env), before, "{config} {args:?}");
        }
        let fsmonitor = std::process::Command::new("git")
            .current_dir(&env.repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args(["config", "core.fsmonitor"])
            .output()
            .unwrap();
        assert!(!fsmonitor.status.success(), "core.fsmonitor was written");
    }
}

#[test]
fn a_before_image_of_another_plan_or_a_foreign_journal_is_refused() {
    let env = standard_repo();
    let id = approved(&env);
    let other = "ef".repeat(32);
    // Another plan's before-image, copied under this plan's directory.
    let img = image(&env, &other, "alice@example.com", &PLANNED, json!([]));
    craft(&env, &id, &img, &["before-image-written"], None);
    let before = everything(&env);
    let r = env.run("alice", &["recover"]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains("it names plan sha256:efef"), "{}", r.stderr);
    assert_eq!(everything(&env), before);
    // Another plan's journal, copied likewise.
    let img = image(&env, &id, "alice@example.com", &PLANNED, json!([]));
    craft(&env, &other, &img, &["before-image-written"], None);
    fs::rename(
        plan_dir(&env, &other).join("journal"),
        plan_dir(&env, &id).join("journal"),
    )
    .unwrap();
    fs::write(
        plan_dir(&env, &id).join("before-image.json"),
        serde_json::to_vec(&img).unwrap(),
    )
    .unwrap();
    let r = env.run("alice", &["recover"]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains("journals plan sha256:efef"), "{}", r.stderr);
    assert_eq!(everything(&env), before);
}

/// A journal naming a step guardctl never writes (after steps that would otherwise be
/// recovered) stops `recover` with 16 naming the journal and the step; nothing is skipped
/// silently and nothing changes.
#[test]
fn recover_refuses_a_journal_step_it_does_not_know() {
    let env = standard_repo();
    let id = approved(&env);
    let img = image(&env, &id, "alice@example.com", &PLANNED, json!([]));
    craft(
        &env,
        &id,
        &img,
        &["before-image-written", "consumed", "refs-teleported"],
        Some("alice"),
    );
    let before = everything(&env);
    let r = env.run("alice", &["recover"]);
    refused_naming(&r, "journal");
    assert!(
        r.stderr.contains("unknown step `refs-teleported`"),
        "{}",
        r.stderr
    );
    assert_eq!(everything(&env), before);
}

/// State files a hostile planner crafts in their own clone (second review).
mod crafted_state {
    use std::fs;

    /// State files are untrusted (issue 20): an unsigned `consumed` file and a `result.txt` that
    /// someone else wrote must not make `apply` of an approved plan report success without doing
    /// anything, nor print (raw, unescaped) a file the result links to.
    #[test]
    fn a_crafted_consumed_marker_and_result_do_not_fake_a_successful_apply() {
        let env = crate::apply::planned();
        let r = crate::apply::approve(&env, "bob");
        assert_eq!(r.code, 0, "{}", r.transcript());
        let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
        let dir = env
            .repo
            .join(".git/guardctl/plans")
            .join(id.trim_start_matches("sha256:"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("consumed"), "not a signed marker").unwrap();
        let secret = env.path().join("secret");
        fs::write(
            &secret,
            "SECRET-KEY-MATERIAL \u{1b}]0;pwned\u{7}\nApplied plan: deleted 3 branches; verified.\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("result.txt")).unwrap();
        let before = crate::apply::branches(&env);
        let r = env.run("alice", &["apply", "plan.json"]);
        assert!(
            !r.stdout.contains("SECRET-KEY-MATERIAL") && !r.stdout.contains('\u{1b}'),
            "apply printed a file a state file links to, raw:\n{}",
            r.transcript().escape_debug()
        );
        // A state file that is a link is inconsistent state (16): refused, nothing deleted.
        assert_eq!(r.code, 16, "{}", r.transcript().escape_debug());
        assert_eq!(
            crate::apply::branches(&env),
            before,
            "apply exited 0 and reported success for a plan it never applied:\n{}",
            r.transcript().escape_debug()
        );
    }

    /// A state file that is not a regular file (a FIFO here; a link to `/dev/zero` would exhaust
    /// memory) must be refused as inconsistent (16, naming it), not read without end: `apply`
    /// of any plan runs `recover` over every plan directory first, holding the lock.
    #[test]
    fn a_journal_that_is_not_a_regular_file_is_refused_not_read_forever() {
        let env = crate::apply::planned();
        let r = crate::apply::approve(&env, "bob");
        assert_eq!(r.code, 0, "{}", r.transcript());
        let dir = env.repo.join(".git/guardctl/plans").join("ab".repeat(32));
        fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("journal");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let mut c = env.command();
        c.arg("--key")
            .arg(env.key("alice"))
            .arg("--allowed-signers")
            .arg(env.allowed_signers())
            .args(["apply", "plan.json"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if std::time::Instant::now() > deadline {
                child.kill().unwrap();
                child.wait().unwrap();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(16),
            "apply hung reading a FIFO in guardctl's state (killed after 20s) or gave another code"
        );
    }
}
