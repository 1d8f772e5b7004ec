//! The end every apply shares, whether it ran to the end or `recover` completes it: the
//! deleted branches' config removed (`config-removed`), what is there now observed against the
//! plan, the receipt signed with the key that consumed the plan and appended to the audit log
//! as the apply's entry, then `done`.

use super::journal::at::Finishing;
use super::journal::{Journal, MayRemoveConfig};
use super::shared::encode_failed;
use super::{EXEC_RESULT, Executor};
use crate::error::{Error, Result};
use crate::ops::exec;
use crate::plan::approval::{APPLY_NAMESPACE, ExecResult, RECEIPT_PAYLOAD_TYPE, Receipt};
use crate::sign::{SigningKey, dsse};
use crate::store::{BeforeImage, state};

impl Executor<'_> {
    /// After the refs are committed: remove config, observe, sign and store the receipt.
    /// For `recover`, which completes an apply from where its journal stands.
    pub fn finish(&self, id: &str, image: &BeforeImage, key: &SigningKey) -> Result<Receipt> {
        let journal = self.resume::<Finishing>(id)?;
        self.settle(journal, image, key)
    }

    /// [`Executor::finish`] from the place the apply's own journal reached.
    pub(super) fn settle<S: MayRemoveConfig>(
        &self,
        journal: Journal<'_, S>,
        image: &BeforeImage,
        key: &SigningKey,
    ) -> Result<Receipt> {
        let id = journal.id();
        // Checked before anything else is done or journaled: a result that does not verify
        // leaves the state exactly as the crash did.
        let exec: Option<ExecResult> = match self.store.read_file(id, EXEC_RESULT)? {
            Some(bytes) => Some(self.signed_exec_result(id, &bytes, key)?),
            None if image.command.is_some() => {
                return Err(state::inconsistent(
                    &self.store.plan_dir(id).join(EXEC_RESULT),
                    "the command finished but its result is missing",
                ));
            }
            None => None,
        };
        let names: Vec<String> = image.config.iter().map(|(n, _)| n.clone()).collect();
        self.repo.remove_branch_sections(&names)?;
        let journal = journal.config_removed()?;
        let mut mismatches = self.observe(image, &names)?;
        if let Some(r) = &exec {
            match (r.status, &r.error) {
                (Some(0), _) => {}
                (Some(code), _) => mismatches.push(format!("the command exited with status {code}")),
                (None, Some(why)) => mismatches.push(format!("the command did not finish: {why}")),
                (None, None) => mismatches.push("the command was killed by a signal".into()),
            }
            if let Some(v) = &r.verification {
                mismatches.extend(exec::verification_mismatches(v));
            }
        }
        let receipt = Receipt {
            plan_id: image.plan_id.clone(),
            plan_hash: image.plan_hash.clone(),
            repository: image.repository.clone(),
            executor: image.executor.clone(),
            key: crate::sign::sshsig::fingerprint(&key.public),
            approved_by: image.approved_by.clone(),
            applied_at: image.created_at,
            backup: image.backup_ref.clone(),
            deleted: image.refs.clone(),
            config_removed: names.len(),
            verified: mismatches.is_empty(),
            mismatches,
            exec,
            audit: None,
        };
        // The receipt is the apply's audit entry: it names its place in the log, and its
        // signature is the entry's.
        let log = crate::store::audit::open_for_append(&self.repo, &self.store.audit_path())?;
        let receipt = Receipt {
            audit: Some(log.next()),
            ..receipt
        };
        let payload = serde_json::to_vec(&receipt)
            .map_err(|e| Error::internal("cannot encode the receipt").caused_by(e))?;
        // ssh-keygen signs while the human result, which needs no signature, is written.
        let (signed, human) = std::thread::scope(|s| {
            let human = s.spawn(|| {
                let text = crate::render::receipt::human(&receipt);
                self.store.write_file(id, "result.txt", text.as_bytes())
            });
            let signed = dsse::sign(RECEIPT_PAYLOAD_TYPE, APPLY_NAMESPACE, &payload, key);
            (signed, human.join())
        });
        let envelope =
            signed.map_err(|e| Error::internal("applied, but cannot sign the receipt").caused_by(e))?;
        human.map_err(|_| Error::internal("cannot write the result"))??;
        crate::store::audit::append_envelope(&self.repo, &self.store.audit_path(), &log, &envelope)?;
        let pretty = serde_json::to_vec_pretty(&envelope).map_err(|e| encode_failed("receipt.json", e))?;
        self.store.write_file(id, "receipt.json", &pretty)?;
        self.store.write_file(
            id,
            "result.json",
            crate::render::receipt::json(&receipt, &envelope)
                .map_err(|e| encode_failed("result.json", e))?
                .as_bytes(),
        )?;
        journal.done()?;
        Ok(receipt)
    }

    /// What is there now, compared with the planned effect.
    pub(super) fn observe(&self, image: &BeforeImage, config_names: &[String]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let kept = self.kept(image);
        let now = self.targets(image, &image.refs)?;
        for d in &image.refs {
            if now.contains_key(&d.refname) {
                out.push(format!("{} still exists", d.refname));
            }
            if !kept.contains(image.backup_tip(d)) {
                out.push(format!(
                    "backup {} does not keep {}",
                    image.backup_ref.as_deref().unwrap_or("(none)"),
                    d.oid
                ));
            }
        }
        if config_names.is_empty() {
            return Ok(out);
        }
        let config = self.repo.branch_config()?;
        out.extend(
            config_names
                .iter()
                .filter(|n| config.contains_key(*n))
                .map(|n| format!("config of branch {n} remains")),
        );
        Ok(out)
    }
}
