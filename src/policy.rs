//! The policy in force. Until policy files exist (issue 5) it is the built-in default below;
//! its hash goes into every plan so a later change of policy is detectable.
//!
//! Pure data and pure checks: no I/O here.

use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Clone, Serialize)]
pub struct Policy {
    /// Branch patterns never planned, on top of `--protect`.
    pub protected: Vec<String>,
    pub default_expiry_secs: u64,
    pub max_expiry_secs: u64,
    /// Approvals from distinct principals other than the planner.
    pub required_approvals: u32,
    /// How long backups of deleted branches are kept.
    pub retention_days: u32,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            protected: ["main", "master", "develop", "release/*"]
                .map(String::from)
                .to_vec(),
            default_expiry_secs: 15 * 60,
            max_expiry_secs: 7 * 86_400,
            required_approvals: 1,
            retention_days: 30,
        }
    }
}

impl Policy {
    pub fn hash(&self) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        crate::plan::envelope::sha256_id(&bytes)
    }

    /// The expiry a plan gets: the requested one, or the default; never above the maximum.
    pub fn expiry(&self, requested: Option<Duration>) -> Result<Duration, String> {
        let want = requested.unwrap_or(Duration::from_secs(self.default_expiry_secs));
        if want.as_secs() > self.max_expiry_secs {
            return Err(format!(
                "--expires-in {} exceeds the policy maximum of {}",
                crate::duration::humanize(want.as_secs() as i64),
                crate::duration::humanize(self.max_expiry_secs as i64)
            ));
        }
        Ok(want)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_defaults_and_is_bounded() {
        let p = Policy::default();
        assert_eq!(p.expiry(None), Ok(Duration::from_secs(900)));
        assert_eq!(
            p.expiry(Some(Duration::from_secs(3600))),
            Ok(Duration::from_secs(3600))
        );
        assert!(p.expiry(Some(Duration::from_secs(8 * 86_400))).is_err());
    }

    #[test]
    fn hash_is_stable_and_changes_with_content() {
        let p = Policy::default();
        assert_eq!(p.hash(), Policy::default().hash());
        let q = Policy {
            required_approvals: 2,
            ..Policy::default()
        };
        assert_ne!(p.hash(), q.hash());
    }
}
