//! The decisions of `approve` and `reject` before anything is signed: who the key speaks for,
//! that the planner does not approve their own plan, that the approver may approve the groups
//! they name (or some group), that the plan has not expired, and which of the principal's own
//! rejections a withdrawal lifts. Pure: no files, no repository, no clock but `now`.
//!
//! Not here: how approvals count at `apply` (`policy::checks`, through `gate`), the prompt
//! and the recording (`engine::review`).

use crate::error::{Error, Kind, Result};
use crate::plan::approval::{APPROVAL_NAMESPACE, Approval, Decision};
use crate::plan::envelope::{APPROVAL_PAYLOAD_TYPE, Envelope};
use crate::plan::model::{Plan, ReviewGroup};
use crate::sign::{AllowedSigners, dsse};
use crate::text::safe;
use time::OffsetDateTime;

/// The one principal `key` (fingerprint) speaks for in `guardctl-approval`: none may not
/// decide anything (`unapproved`), several is ambiguous (usage).
pub fn decider(principals: &[String], key: &str) -> Result<String> {
    match principals {
        [one] => Ok(one.clone()),
        [] => Err(Error::new(
            Kind::Unapproved,
            format!("key {key} may not sign approvals: it maps to no principal for {APPROVAL_NAMESPACE}"),
        )
        .with_hint("use a key listed in the allowed-signers file without a namespaces= restriction excluding approvals")),
        many => Err(Error::usage(format!(
            "key {key} maps to several principals: {}",
            many.join(", ")
        ))),
    }
}

/// The planner may not approve their own plan: not with the plan's key, not with any key
/// listed for the planner, and not as the planner's principal (in any case) with another key.
pub fn refuse_self_approval(plan: &Plan, principal: &str, key: &str, signers: &AllowedSigners) -> Result<()> {
    let planner = plan.planner.principal.as_deref();
    let planners_key = plan.planner.key.as_deref() == Some(key)
        || planner.is_some_and(|p| signers.keys_of(p).iter().any(|k| k == key));
    if !planners_key && !planner.is_some_and(|p| p.eq_ignore_ascii_case(principal)) {
        return Ok(());
    }
    let who = if planners_key {
        format!("key {key} belongs to the planner")
    } else {
        format!("{} planned this plan", safe(principal))
    };
    Err(
        Error::new(Kind::Unapproved, format!("{who} and cannot approve it")).with_hint(
            "a different principal, with a key of their own, must approve; that is the point of the gate",
        ),
    )
}

/// The named groups must exist, and the approver must be among the approvers of each named
/// group (or of at least one group when none is named): an approval that could not count is
/// refused here rather than silently ignored by `apply`. `plan` is the plan as `apply` will
/// judge it (with the bulk group when the planner's other plans make it bulk).
pub fn check_eligible(plan: &Plan, principal: &str, groups: &[String]) -> Result<()> {
    let all: Vec<&str> = plan.review.iter().map(|g| g.name.as_str()).collect();
    if let Some(unknown) = groups.iter().find(|g| !all.contains(&g.as_str())) {
        return Err(Error::usage(format!(
            "the plan has no review group `{}`; its groups: {}",
            safe(unknown),
            all.iter().map(|g| safe(g)).collect::<Vec<_>>().join(", ")
        ))
        .with_hint("name one of the plan's review groups with --group, or leave --group out")
        .with_details(serde_json::json!({"groups": all})));
    }
    let may = |g: &ReviewGroup| g.approvers.is_empty() || g.approvers.iter().any(|a| a == principal);
    let chosen: Vec<&ReviewGroup> = plan
        .review
        .iter()
        .filter(|g| groups.is_empty() || groups.contains(&g.name))
        .collect();
    let barred: Vec<String> = chosen.iter().filter(|g| !may(g)).map(|g| safe(&g.name)).collect();
    if (groups.is_empty() && chosen.iter().all(|g| !may(g))) || (!groups.is_empty() && !barred.is_empty()) {
        return Err(Error::new(
            Kind::Policy,
            format!(
                "the policy does not let {} approve review group{} {}",
                safe(principal),
                if barred.len() == 1 { "" } else { "s" },
                barred.join(", ")
            ),
        )
        .with_details(serde_json::json!({"principal": principal, "groups": barred}))
        .with_hint("`guardctl show` lists each group's approvers"));
    }
    Ok(())
}

/// An expired plan takes no more decisions (from its `expires_at` on, as `apply` counts).
pub fn check_not_expired(plan: &Plan, now: OffsetDateTime) -> Result<()> {
    if now < plan.expires_at {
        return Ok(());
    }
    Err(Error::new(
        Kind::Expired,
        format!("the plan expired at {}", crate::text::rfc3339(plan.expires_at)),
    )
    .with_hint("ask the planner to re-run `guardctl plan`"))
}

/// The ids of `principal`'s own valid rejections of plan `plan_id` among `envelopes` (the
/// plan file's and those recorded in the repository): what a withdrawal names. A rejection
/// counts as theirs only when it verifies, names the key that signed it, and that key spoke
/// for them when it was made. None is a usage error: there is nothing to withdraw.
pub fn own_rejections<'e>(
    envelopes: impl IntoIterator<Item = &'e Envelope>,
    plan_id: &str,
    signers: &AllowedSigners,
    principal: &str,
) -> Result<Vec<String>> {
    let mut ids: Vec<String> = Vec::new();
    for env in envelopes {
        let Ok(v) = dsse::verify(env, APPROVAL_PAYLOAD_TYPE, APPROVAL_NAMESPACE) else {
            continue;
        };
        let Ok(a) = serde_json::from_slice::<Approval>(&v.payload) else {
            continue;
        };
        let mine = a.decision == Decision::Reject
            && a.principal == principal
            && a.plan_id == plan_id
            && a.key == v.fingerprint
            && signers
                .principals_for(&v.signer, APPROVAL_NAMESPACE, a.created_at)
                .iter()
                .any(|p| p == principal);
        let id = crate::plan::envelope::sha256_id(&v.payload);
        if mine && !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(Error::usage(format!(
            "{} has no rejection of plan {} to withdraw",
            safe(principal),
            crate::render::view::short_id(plan_id)
        )));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::test_data;
    use crate::sign::SigningKey;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-06-01 12:00 UTC);

    /// A fixture key copied where ssh-keygen accepts it (owner-only).
    fn key(dir: &std::path::Path, name: &str) -> SigningKey {
        use std::os::unix::fs::PermissionsExt;
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/keys")
            .join(name);
        let dst = dir.join(name);
        std::fs::copy(&src, &dst).unwrap();
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o600)).unwrap();
        crate::sign::key::load(&dst, crate::sign::key::KeySource::Flag).unwrap()
    }

    fn fp(k: &SigningKey) -> String {
        crate::sign::sshsig::fingerprint(&k.public)
    }

    fn signers(keys: &[(&str, &SigningKey)]) -> AllowedSigners {
        let text: String = keys
            .iter()
            .map(|(who, k)| format!("{who} {}\n", k.public.to_openssh().unwrap()))
            .collect();
        AllowedSigners::parse(&text).unwrap()
    }

    /// A plan by alice@example.com with alice's key, routed by author into groups A
    /// (approvers ann) and B (ben), one branch each.
    fn routed(alice: &SigningKey) -> Plan {
        let policy = crate::policy::file::parse(
            "version = 1\n[groups]\na = [\"ann\"]\nb = [\"ben\"]\n\
             [[route]]\nname = \"A\"\nauthors = [\"*@a\"]\nrequired = 1\nfrom = [\"a\"]\n\
             [[route]]\nname = \"B\"\nauthors = [\"*@b\"]\nrequired = 1\nfrom = [\"b\"]\n",
        )
        .unwrap();
        let affected = vec![test_data::by("x", "dev@a", 0), test_data::by("y", "dev@b", 0)];
        let mut p = test_data::plan(affected, &policy.hash().unwrap());
        p.review = crate::policy::route::review(&policy, &p.affected).unwrap();
        p.planner.principal = Some("alice@example.com".into());
        p.planner.key = Some(fp(alice));
        p
    }

    #[test]
    fn a_key_decides_as_its_one_principal() {
        assert_eq!(decider(&["bob".into()], "SHA256:b").unwrap(), "bob");
        assert_eq!(decider(&[], "SHA256:b").unwrap_err().kind, Kind::Unapproved);
        assert_eq!(
            decider(&["bob".into(), "rob".into()], "SHA256:b")
                .unwrap_err()
                .kind,
            Kind::Usage
        );
    }

    #[test]
    fn the_planner_cannot_approve_by_key_listed_key_or_principal() {
        let dir = tempfile::tempdir().unwrap();
        let (alice, bob, mallory) = (
            key(dir.path(), "alice_ed25519"),
            key(dir.path(), "bob_ed25519"),
            key(dir.path(), "mallory_ed25519"),
        );
        let plan = routed(&alice);
        // mallory's key is listed for the planner too.
        let s = signers(&[
            ("alice@example.com", &alice),
            ("bob@example.com", &bob),
            ("alice@example.com", &mallory),
        ]);
        let e = refuse_self_approval(&plan, "bob@example.com", &fp(&alice), &s).unwrap_err();
        assert_eq!(e.kind, Kind::Unapproved);
        assert_eq!(
            e.message,
            format!("key {} belongs to the planner and cannot approve it", fp(&alice))
        );
        let e = refuse_self_approval(&plan, "anyone", &fp(&mallory), &s).unwrap_err();
        assert!(e.message.contains("belongs to the planner"), "{}", e.message);
        let e = refuse_self_approval(&plan, "Alice@Example.com", "SHA256:other", &s).unwrap_err();
        assert_eq!(
            e.message,
            "Alice@Example.com planned this plan and cannot approve it"
        );
        assert!(refuse_self_approval(&plan, "bob@example.com", &fp(&bob), &s).is_ok());
    }

    #[test]
    fn an_approver_must_be_eligible_for_the_groups_they_name_or_some_group() {
        let dir = tempfile::tempdir().unwrap();
        let plan = routed(&key(dir.path(), "alice_ed25519"));
        assert!(check_eligible(&plan, "ann", &[]).is_ok());
        assert!(check_eligible(&plan, "ann", &["A".into()]).is_ok());
        let e = check_eligible(&plan, "ann", &["A".into(), "B".into()]).unwrap_err();
        assert_eq!(e.kind, Kind::Policy);
        assert_eq!(e.message, "the policy does not let ann approve review group B");
        let e = check_eligible(&plan, "zed", &[]).unwrap_err();
        assert_eq!(
            e.message,
            "the policy does not let zed approve review groups A, B"
        );
        let e = check_eligible(&plan, "ann", &["Z".into()]).unwrap_err();
        assert_eq!(e.kind, Kind::Usage);
        assert_eq!(e.message, "the plan has no review group `Z`; its groups: A, B");
    }

    #[test]
    fn no_decision_from_the_moment_the_plan_expires() {
        let plan = test_data::plan(vec![], "sha256:p");
        assert!(check_not_expired(&plan, plan.expires_at - time::Duration::seconds(1)).is_ok());
        let e = check_not_expired(&plan, plan.expires_at).unwrap_err();
        assert_eq!(e.kind, Kind::Expired);
        assert_eq!(e.message, "the plan expired at 2026-06-01T12:15:00Z");
    }

    #[test]
    fn a_withdrawal_lifts_only_the_principals_own_valid_rejections_of_this_plan() {
        let dir = tempfile::tempdir().unwrap();
        let (alice, bob) = (key(dir.path(), "alice_ed25519"), key(dir.path(), "bob_ed25519"));
        let s = signers(&[("alice@example.com", &alice), ("bob@example.com", &bob)]);
        let decision = |who: &str, k: &SigningKey, d: Decision, plan_id: &str| {
            let a = Approval {
                plan_id: plan_id.into(),
                plan_hash: "sha256:h".into(),
                repository: "r".into(),
                decision: d,
                principal: who.into(),
                key: fp(k),
                created_at: T0,
                comment: None,
                groups: vec![],
                withdraws: vec![],
            };
            let payload = serde_json::to_vec(&a).unwrap();
            let env = dsse::sign(APPROVAL_PAYLOAD_TYPE, APPROVAL_NAMESPACE, &payload, k).unwrap();
            (env, crate::plan::envelope::sha256_id(&payload))
        };
        let (mine, mine_id) = decision("bob@example.com", &bob, Decision::Reject, "sha256:p");
        let others = [
            decision("alice@example.com", &alice, Decision::Reject, "sha256:p").0,
            decision("bob@example.com", &bob, Decision::Approve, "sha256:p").0,
            decision("bob@example.com", &bob, Decision::Reject, "sha256:other").0,
            // bob's name, alice's key.
            decision("bob@example.com", &alice, Decision::Reject, "sha256:p").0,
        ];
        let all: Vec<&Envelope> = others.iter().chain([&mine, &mine]).collect();
        assert_eq!(
            own_rejections(all, "sha256:p", &s, "bob@example.com").unwrap(),
            [mine_id]
        );
        let e = own_rejections(&others[1..3], "sha256:p", &s, "bob@example.com").unwrap_err();
        assert_eq!(e.kind, Kind::Usage);
        assert!(
            e.message
                .starts_with("bob@example.com has no rejection of plan sha256:p"),
            "{}",
            e.message
        );
    }
}
