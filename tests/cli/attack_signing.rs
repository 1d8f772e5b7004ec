//! Attack review of in-process signing (commit 44e40a3: a plain Ed25519/ECDSA key file is
//! signed with in guardctl's own process, not by `ssh-keygen -Y sign`) and of counting only
//! the unmerged branches a criterion selects (commit 5788e38).

use crate::fixtures::standard_repo;
use std::fs;
use std::os::unix::fs::PermissionsExt;

/// Finding: ssh-keygen will not sign with a private key file of the user's that others may
/// read ("UNPROTECTED PRIVATE KEY FILE!"). The in-process path read it anyway, so a key in a
/// shared directory, a checkout or a world-readable home signed plans and approvals where it
/// used to be refused. Every signing command refuses it again, in ssh-keygen's words, and
/// writes nothing.
#[test]
fn a_key_file_others_may_read_signs_no_plan_and_no_approval() {
    let env = standard_repo();
    let planned = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(planned.code, 0, "{}", planned.transcript());
    let plan = fs::read(env.repo.join("plan.json")).unwrap();
    for user in ["alice", "carol"] {
        // alice's key is Ed25519, carol's ECDSA: both kinds the in-process path signs with.
        fs::set_permissions(env.key(user), fs::Permissions::from_mode(0o644)).unwrap();
    }
    let before = env.repository_state();
    let out = env.path().join("other.json");
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "-o", out.to_str().unwrap()],
    );
    assert_ne!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("UNPROTECTED PRIVATE KEY FILE"), "{}", r.stderr);
    assert!(!out.exists(), "a plan was signed with a key others may read");
    let r = env.run("carol", &["approve", "plan.json", "--yes"]);
    assert_ne!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("UNPROTECTED PRIVATE KEY FILE"), "{}", r.stderr);
    assert_eq!(
        plan,
        fs::read(env.repo.join("plan.json")).unwrap(),
        "approval recorded"
    );
    assert_eq!(before, env.repository_state());
    // Made private again, the same keys sign (in-process).
    for user in ["alice", "carol"] {
        fs::set_permissions(env.key(user), fs::Permissions::from_mode(0o600)).unwrap();
    }
    let r = env.run("carol", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}
