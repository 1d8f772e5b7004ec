//! The plan hash: `sha256:<hex>` over the normalised inputs, the policy hash and the observed
//! state of every affected resource, including the facts that made it eligible.
//!
//! Invariants: the same inputs and state give the same hash (resources are sorted, the
//! serialisation is serde's fixed field order). Facts that only change when the base moves
//! forward (commit counts, whether work is lost) are left out on purpose, so a base moving
//! forward is not drift; a base rewinding past a merged branch removes its `merged` reason
//! and so changes the hash.

use super::model::{ConfigEntry, Criterion, Operation, Resource};
use serde::Serialize;

#[derive(Serialize)]
struct HashInput<'a> {
    format_version: u32,
    repository: &'a str,
    operation: &'a Operation,
    policy_hash: &'a str,
    resources: Vec<ResourceState<'a>>,
}

/// What the hash covers of one affected resource.
#[derive(Serialize)]
pub struct ResourceState<'a> {
    #[serde(rename = "ref")]
    pub refname: &'a str,
    pub oid: &'a str,
    pub reasons: &'a [Criterion],
    pub config: &'a [ConfigEntry],
}

impl<'a> From<&'a Resource> for ResourceState<'a> {
    fn from(a: &'a Resource) -> Self {
        ResourceState {
            refname: &a.refname,
            oid: &a.oid,
            reasons: &a.reasons,
            config: a.config(),
        }
    }
}

pub fn plan_hash(
    repository: &str,
    operation: &Operation,
    policy_hash: &str,
    affected: &[Resource],
) -> Result<String, serde_json::Error> {
    plan_hash_of(
        repository,
        operation,
        policy_hash,
        affected.iter().map(ResourceState::from),
    )
}

/// `plan_hash` over resource states built by the caller (the drift check re-observes reasons
/// and config without copying every other fact of every resource).
pub fn plan_hash_of<'a>(
    repository: &str,
    operation: &Operation,
    policy_hash: &str,
    resources: impl Iterator<Item = ResourceState<'a>>,
) -> Result<String, serde_json::Error> {
    let mut resources: Vec<ResourceState> = resources.collect();
    resources.sort_by(|a, b| a.refname.cmp(b.refname));
    let input = HashInput {
        format_version: super::model::FORMAT_VERSION,
        repository,
        operation,
        policy_hash,
        resources,
    };
    // Streamed into the hasher: at 50,000 branches the serialisation is megabytes. A failure
    // is returned, never hashed over: the hash would then cover only part of the state.
    let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
    serde_json::to_writer(&mut hasher, &input)?;
    Ok(format!(
        "sha256:{}",
        super::envelope::hex(&sha2::Digest::finalize(hasher))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::*;

    fn branch(name: &str, oid: &str, commits: u64) -> Resource {
        Resource {
            oid: oid.into(),
            ..test_data::branch(name, commits)
        }
    }

    fn op() -> Operation {
        Operation::StaleBranches(StaleBranchesInputs {
            protect: vec!["main".into()],
            ..test_data::merged_inputs().selection().unwrap().clone()
        })
    }

    #[test]
    fn the_same_selection_on_a_remote_is_another_plan() {
        let remote = Operation::RemoteBranches(RemoteBranchesInputs {
            remote: "origin".into(),
            selection: op().selection().unwrap().clone(),
        });
        let a = [branch("a", "1", 0)];
        assert_ne!(
            plan_hash("r", &op(), "p", &a).unwrap(),
            plan_hash("r", &remote, "p", &a).unwrap()
        );
    }

    #[test]
    fn same_state_in_any_order_gives_same_hash() {
        let a = [branch("a", "1", 0), branch("b", "2", 0)];
        let b = [branch("b", "2", 0), branch("a", "1", 0)];
        assert_eq!(
            plan_hash("r", &op(), "p", &a).unwrap(),
            plan_hash("r", &op(), "p", &b).unwrap()
        );
    }

    #[test]
    fn oid_reason_repository_and_policy_change_the_hash() {
        let base = plan_hash("r", &op(), "p", &[branch("a", "1", 0)]).unwrap();
        assert_ne!(base, plan_hash("r", &op(), "p", &[branch("a", "2", 0)]).unwrap());
        assert_ne!(
            base,
            plan_hash("other", &op(), "p", &[branch("a", "1", 0)]).unwrap()
        );
        assert_ne!(base, plan_hash("r", &op(), "q", &[branch("a", "1", 0)]).unwrap());
        let mut gone = branch("a", "1", 0);
        gone.reasons = vec![Criterion::Gone];
        assert_ne!(base, plan_hash("r", &op(), "p", &[gone]).unwrap());
    }

    #[test]
    fn commit_counts_do_not_change_the_hash() {
        // The base moving forward changes counts, and is not drift.
        assert_eq!(
            plan_hash("r", &op(), "p", &[branch("a", "1", 0)]).unwrap(),
            plan_hash("r", &op(), "p", &[branch("a", "1", 3)]).unwrap()
        );
    }
}
