//! The one error type of guardctl, and the only place that maps failures to exit codes.
//!
//! Every failure a user can see is an [`Error`]: a stable [`Kind`] (which fixes the exit code
//! and the JSON `error.kind` of docs/exit-codes.md), a message saying what happened, optional
//! `caused by` lines, a hint saying what to do next, and structured details for `--json`.
//! Library modules keep small error types of their own and convert with `From`.

use serde_json::Value;
use std::fmt;

/// Declares [`Kind`] from one table, so the variants, their exit codes, their JSON names and
/// [`Kind::ALL`] (which the docs test checks against docs/exit-codes.md) cannot disagree.
macro_rules! kinds {
    ($($(#[doc = $doc:literal])* $variant:ident => $code:literal, $name:literal;)*) => {
        /// The error kinds of docs/exit-codes.md. Adding one is an interface change.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Kind {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Kind {
            /// Every kind, in the order of docs/exit-codes.md.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant),*];

            /// The process exit code (docs/exit-codes.md).
            pub fn exit_code(self) -> u8 {
                match self {
                    $(Kind::$variant => $code,)*
                }
            }

            /// The JSON `error.kind` string (docs/exit-codes.md).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$variant => $name,)*
                }
            }
        }
    };
}

kinds! {
    /// I/O, git, or any unexpected failure.
    Internal => 1, "internal";
    /// A prompt was declined.
    Declined => 1, "declined";
    /// Bad flags or arguments.
    Usage => 64, "usage";
    /// Malformed, tampered or unsigned plan or approval; unknown format; another repository.
    InvalidPlan => 65, "invalid_plan";
    /// A plan or approval file named on the command line does not exist (sysexits
    /// EX_NOINPUT): a typo in a path is not tampering, and an agent must be able to tell.
    NotFound => 66, "not_found";
    /// Observed state no longer matches the plan.
    Drift => 10, "drift";
    /// Plan or approval expired.
    Expired => 11, "expired";
    /// Approvals insufficient.
    Unapproved => 12, "unapproved";
    /// The one applying is not the plan's executor.
    WrongPrincipal => 13, "wrong_principal";
    /// Policy changed since planning, or forbids the plan.
    Policy => 14, "policy";
    /// Applied, but the observed effect differs from the plan.
    Unverified => 15, "unverified";
    /// An interrupted apply must be recovered first, or the repository is locked.
    NeedsRecovery => 16, "needs_recovery";
}

impl Kind {
    /// What the exit code means, in a man page's words.
    pub fn meaning(self) -> &'static str {
        match self {
            Kind::Internal => "unexpected failure (I/O, git, internal)",
            Kind::Declined => "a prompt was declined",
            Kind::Usage => {
                "usage error: bad flags or arguments, no repository, an unknown base, a key that cannot sign now"
            }
            Kind::InvalidPlan => {
                "bad input: a malformed, tampered or unsigned plan or approval, an unknown format, a plan for another repository, a broken audit log"
            }
            Kind::NotFound => "a plan or approval file named on the command line does not exist",
            Kind::Drift => {
                "refused: the repository no longer matches the plan (each drifted resource is listed) and nothing was changed; plan again and have the new plan approved"
            }
            Kind::Expired => {
                "refused: the plan or an approval expired; plan again and have the new plan approved"
            }
            Kind::Unapproved => {
                "refused: approvals insufficient, or a rejection; a person other than the planner approves with `guardctl approve`"
            }
            Kind::WrongPrincipal => "refused: the key applying is not the plan's executor",
            Kind::Policy => "refused: the policy changed since planning, or forbids the plan",
            Kind::Unverified => {
                "applied, but the observed effect differs from the plan; recorded for `guardctl recover`: tell a person"
            }
            Kind::NeedsRecovery => {
                "an interrupted apply must be recovered first, or the repository is locked"
            }
        }
    }

    /// What to do next when the failure itself says nothing more specific: every error
    /// carries a hint (`details.hint` with `--json`), so an agent never has to guess.
    pub fn default_hint(self) -> &'static str {
        match self {
            Kind::Internal => "re-run with the same arguments; if it fails again, report the message above",
            Kind::Declined => "nothing was changed; run the command again to answer differently",
            Kind::Usage => "see `guardctl <command> --help`",
            Kind::InvalidPlan => "use the plan file exactly as `guardctl plan` wrote it, or plan again",
            Kind::NotFound => "check the path; plans are made by `guardctl plan`",
            Kind::Drift => {
                "the repository changed since planning: run `guardctl plan` again and have it approved"
            }
            Kind::Expired => "run `guardctl plan` again and have the new plan approved",
            Kind::Unapproved => "a different principal must run `guardctl approve` on this plan",
            Kind::WrongPrincipal => "run apply as the plan's executor (see `guardctl show`)",
            Kind::Policy => "plan again under the policy in force",
            Kind::Unverified => "run `guardctl log` and `guardctl recover`; inspect the mismatches",
            Kind::NeedsRecovery => "run `guardctl recover`, or wait for the other guardctl process to finish",
        }
    }
}

/// A user-visible failure.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    pub causes: Vec<String>,
    pub hint: Option<String>,
    pub details: Value,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            causes: Vec::new(),
            hint: None,
            details: Value::Object(Default::default()),
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Kind::Internal, message)
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Kind::Usage, message)
    }

    pub fn invalid_plan(message: impl Into<String>) -> Self {
        Self::new(Kind::InvalidPlan, message)
    }

    /// For `map_err` on an I/O call: `cannot <what> <path>`, the OS error as the cause. There is
    /// no blanket conversion from `io::Error`: an error that does not say which file failed
    /// leaves the user nothing to act on.
    pub fn io(what: &str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + use<> {
        let message = format!("cannot {what} {}", path.display());
        move |e| Error::internal(message).caused_by(e)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn caused_by(mut self, cause: impl fmt::Display) -> Self {
        self.causes.push(cause.to_string());
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// The message followed by its causes, `: `-separated (for a warning that stands in for
    /// the error).
    pub fn chain(&self) -> String {
        std::iter::once(self.message.as_str())
            .chain(self.causes.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(": ")
    }

    pub fn exit_code(&self) -> u8 {
        self.kind.exit_code()
    }

    /// The hint: the one given, else the kind's default.
    pub fn hint(&self) -> &str {
        self.hint.as_deref().unwrap_or(self.kind.default_hint())
    }

    /// The one error document, wherever an error is shown as data (`--json` on every command,
    /// MCP tool errors, argument errors included): `{"error": {"kind", "exit_code",
    /// "meaning", "message", "hint", "details"}}`, `details.hint` repeating the hint (the
    /// contract's first shape, kept for the callers that read it there).
    pub fn to_json(&self) -> Value {
        let mut details = self.details.clone();
        if let Value::Object(map) = &mut details {
            map.insert("hint".into(), Value::String(self.hint().to_string()));
        }
        serde_json::json!({"error": {
            "kind": self.kind.as_str(),
            "exit_code": self.exit_code(),
            "meaning": self.kind.meaning(),
            "message": self.chain(),
            "hint": self.hint(),
            "details": details,
        }})
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_contract() {
        let table = [
            (Kind::Internal, 1, "internal"),
            (Kind::Declined, 1, "declined"),
            (Kind::Usage, 64, "usage"),
            (Kind::InvalidPlan, 65, "invalid_plan"),
            (Kind::NotFound, 66, "not_found"),
            (Kind::Drift, 10, "drift"),
            (Kind::Expired, 11, "expired"),
            (Kind::Unapproved, 12, "unapproved"),
            (Kind::WrongPrincipal, 13, "wrong_principal"),
            (Kind::Policy, 14, "policy"),
            (Kind::Unverified, 15, "unverified"),
            (Kind::NeedsRecovery, 16, "needs_recovery"),
        ];
        assert_eq!(Kind::ALL.len(), table.len());
        for (kind, code, name) in table {
            assert_eq!(kind.exit_code(), code, "{name}");
            assert_eq!(kind.as_str(), name);
        }
        assert_eq!(table.map(|(k, _, _)| k), Kind::ALL, "ALL lists every kind once");
    }

    #[test]
    fn every_error_has_a_hint_even_when_none_was_given() {
        let v = Error::usage("bad").to_json();
        assert_eq!(v["error"]["details"]["hint"], Kind::Usage.default_hint());
    }

    #[test]
    fn the_error_document_carries_kind_exit_code_meaning_message_and_hint() {
        let v = Error::new(Kind::Drift, "moved")
            .caused_by("refs/heads/x")
            .to_json();
        assert_eq!(v["error"]["kind"], "drift");
        assert_eq!(v["error"]["exit_code"], 10);
        assert_eq!(v["error"]["meaning"], Kind::Drift.meaning());
        assert_eq!(v["error"]["message"], "moved: refs/heads/x");
        assert_eq!(v["error"]["hint"], Kind::Drift.default_hint());
        let keys: Vec<&String> = v["error"].as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 6, "{keys:?}");
    }

    #[test]
    fn json_error_carries_kind_message_and_hint() {
        let e = Error::invalid_plan("bad plan")
            .caused_by("signature mismatch")
            .with_hint("re-run `guardctl plan`");
        let v = e.to_json();
        assert_eq!(v["error"]["kind"], "invalid_plan");
        assert_eq!(v["error"]["message"], "bad plan: signature mismatch");
        assert_eq!(v["error"]["details"]["hint"], "re-run `guardctl plan`");
    }
}
