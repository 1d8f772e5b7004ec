//! Reading tags: what a tag ref points at (an annotated tag object, or a commit directly),
//! whether it is signed, the commit it names, and the raw tag object, which a backup keeps
//! byte for byte (its id is its content: the same bytes give back the same tag).

use super::Repo;
use crate::error::{Error, Result};
use git2::{ObjectType, Oid};

/// One tag as a plan records it.
#[derive(Debug, Clone)]
pub struct TagObservation {
    pub annotated: bool,
    pub signed: bool,
    /// The commit the tag names (peeled through any chain of tag objects).
    pub commit: Oid,
    /// The tagger's date for an annotated tag, else the commit's date.
    pub time: i64,
    pub name: String,
    pub email: String,
    /// The tag message's first line, else the commit's subject.
    pub subject: String,
}

impl Repo {
    /// Observe the tag whose ref points at `oid`. A tag of a tree or a blob is an error
    /// (the caller skips it as unreadable).
    pub fn tag_facts(&self, oid: Oid) -> Result<TagObservation> {
        let object = self.git.find_object(oid, None)?;
        let commit = object
            .peel(ObjectType::Commit)
            .map_err(|_| Error::internal("the tag does not name a commit"))?
            .id();
        let Some(tag) = object.as_tag() else {
            let facts = self.commit_facts(commit)?;
            return Ok(TagObservation {
                annotated: false,
                signed: false,
                commit,
                time: facts.time,
                name: facts.author_name,
                email: facts.author_email,
                subject: facts.subject,
            });
        };
        let raw = self.raw_object(oid)?;
        let (tagger_time, name, email) = match tag.tagger() {
            Some(t) => (
                Some(t.when().seconds()),
                String::from_utf8_lossy(t.name_bytes()).into_owned(),
                String::from_utf8_lossy(t.email_bytes()).into_owned(),
            ),
            None => (None, String::new(), String::new()),
        };
        let time = match tagger_time {
            Some(t) => t,
            None => self.commit_facts(commit)?.time,
        };
        let message = tag.message_bytes().unwrap_or_default();
        let subject = message.split(|b| *b == b'\n').next().unwrap_or_default();
        Ok(TagObservation {
            annotated: true,
            signed: is_signed(&raw),
            commit,
            time,
            name,
            email,
            subject: String::from_utf8_lossy(subject).into_owned(),
        })
    }

    /// The object's bytes as stored (without git's `<type> <size>` header).
    pub fn raw_object(&self, oid: Oid) -> Result<Vec<u8>> {
        Ok(self.git.odb()?.read(oid)?.data().to_vec())
    }
}

/// git appends a tag's signature to its message: PGP, SSH or X.509 (CMS) armour.
fn is_signed(raw: &[u8]) -> bool {
    const MARKERS: [&[u8]; 3] = [
        b"\n-----BEGIN PGP SIGNATURE-----",
        b"\n-----BEGIN SSH SIGNATURE-----",
        b"\n-----BEGIN SIGNED MESSAGE-----",
    ];
    MARKERS.iter().any(|m| raw.windows(m.len()).any(|w| w == *m))
}

#[cfg(test)]
mod tests {
    use super::is_signed;

    #[test]
    fn a_signature_block_after_the_message_marks_a_tag_signed() {
        let plain = b"object 1\ntype commit\ntag v1\ntagger A <a@x> 1 +0000\n\nrelease\n";
        assert!(!is_signed(plain));
        let ssh = b"object 1\ntype commit\ntag v1\ntagger A <a@x> 1 +0000\n\nrelease\n-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n";
        assert!(is_signed(ssh));
        // Quoted in the middle of a line is not a signature block.
        assert!(!is_signed(b"tag v1\n\nsee -----BEGIN PGP SIGNATURE----- here\n"));
    }
}
