//! Identity and signatures (docs/trust-model.md): which key signs, who a key speaks for, and
//! SSHSIG signing (through `ssh-keygen`, so ssh-agent works) and verification (in-process).
//!
//! Not here: git. Values from git config reach this module as plain strings via `Ctx`.

pub mod agent;
pub mod allowed_signers;
pub mod dsse;
pub mod key;
pub mod sshsig;
pub mod unlock;

pub use allowed_signers::AllowedSigners;
pub use key::SigningKey;
