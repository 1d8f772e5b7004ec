//! A remote's branches and tags, read with `git ls-remote`: read-only, nothing is fetched or stored.
//! Names come from another machine and are untrusted: each is validated like a local one.

use super::Repo;
use super::refs::{BranchRef, is_valid_refname};
use crate::error::{Error, Result};
use crate::text::safe;
use git2::Oid;

/// What `git ls-remote --symref` says a remote holds now.
#[derive(Debug, Default)]
pub struct RemoteRefs {
    /// The branch the remote's HEAD names, if it says.
    pub head: Option<String>,
    /// Every `refs/heads/*` ref, sorted by name.
    pub branches: Vec<BranchRef>,
    /// Every `refs/tags/*` ref (not git's peeled `^{}` lines), sorted by name.
    pub tags: Vec<BranchRef>,
}

impl RemoteRefs {
    /// The object `refname` (a branch or a tag) points at on the remote, if it exists there.
    pub fn target(&self, refname: &str) -> Option<Oid> {
        let list = if refname.starts_with("refs/tags/") {
            &self.tags
        } else {
            &self.branches
        };
        list.binary_search_by(|b| b.refname.as_str().cmp(refname))
            .ok()
            .and_then(|i| list[i].oid)
    }
}

impl Repo {
    /// The one URL of `remote`: what a remote plan names as its repository, observes with
    /// `git ls-remote` and pushes to, after git's `insteadOf` and `pushInsteadOf` rewriting.
    /// A remote with several URLs, or whose push URL differs from its fetch URL, is refused
    /// (usage, naming the config keys): guardctl would observe one repository and change
    /// another (or several).
    pub fn remote_url(&self, remote: &str) -> Result<String> {
        let fetch = self.remote_urls(remote, false)?;
        let push = self.remote_urls(remote, true)?;
        match (fetch.as_slice(), push.as_slice()) {
            ([one], [same]) if one == same => Ok(one.clone()),
            ([_, _, ..], _) => Err(Error::usage(format!(
                "remote `{}` has {} URLs (remote.{}.url): {}",
                safe(remote),
                fetch.len(),
                safe(remote),
                fetch.iter().map(|u| safe(u)).collect::<Vec<_>>().join(", ")
            ))
            .with_hint("guardctl changes exactly one repository: give the remote one URL (`git remote set-url --delete`), or plan with a remote that has one")),
            _ => {
                let mut keys: Vec<String> = Vec::new();
                if self.config_string(&format!("remote.{remote}.pushurl"))?.is_some() {
                    keys.push(format!("remote.{remote}.pushurl"));
                }
                keys.extend(
                    self.settings()?
                        .iter()
                        .filter(|(k, _)| k.starts_with("url.") && k.ends_with(".pushinsteadof"))
                        .map(|(k, _)| k.clone()),
                );
                keys.dedup();
                Err(Error::usage(format!(
                    "remote `{}` fetches from {} but pushes to {} ({})",
                    safe(remote),
                    fetch.iter().map(|u| safe(u)).collect::<Vec<_>>().join(", "),
                    push.iter().map(|u| safe(u)).collect::<Vec<_>>().join(", "),
                    safe(&keys.join(", "))
                ))
                .with_hint("guardctl observes and changes one repository: remove the push URL (`git remote set-url --delete --push`) or the pushInsteadOf rule, or add a remote whose fetch and push URL are the same"))
            }
        }
    }

    /// The one URL `remote` is read from (after `insteadOf`), for reading only (the policy of
    /// a local plan): its push URL does not matter; several fetch URLs are refused as for
    /// [`Repo::remote_url`].
    pub fn remote_fetch_url(&self, remote: &str) -> Result<String> {
        match self.remote_urls(remote, false)?.as_slice() {
            [one] => Ok(one.clone()),
            many => Err(Error::usage(format!(
                "remote `{}` has {} URLs (remote.{}.url)",
                safe(remote),
                many.len(),
                safe(remote)
            ))
            .with_hint("give the remote one URL (`git remote set-url --delete`), or name another with `git config guardctl.remote`")),
        }
    }

    /// `git remote get-url [--push] --all`: the URLs git would use, rewritten by
    /// `insteadOf` (and for pushing `pushInsteadOf`).
    fn remote_urls(&self, remote: &str, push: bool) -> Result<Vec<String>> {
        let mut c = self.git().args(["remote", "get-url", "--all"]);
        if push {
            c = c.arg("--push");
        }
        let out = c.args(["--", remote]).output(None)?;
        if !out.status.success() {
            return Err(
                Error::usage(format!("no remote named `{}` in this repository", safe(remote)))
                    .caused_by(stderr_lines(&out.stderr))
                    .with_hint("see `git remote -v`"),
            );
        }
        // A relative path means what it means to `git fetch` in this repository (guardctl runs
        // git inside the git directory, where it would mean something else).
        let base = self.display_path();
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|u| super::url::resolve_local(u, &base))
            .collect())
    }

    /// The branches and HEAD of the repository at `url`, as it reports them now. Always a
    /// URL (from [`Repo::remote_url`] or a plan bound to it), never a remote's name, so that
    /// what is observed is what is pushed to. Never prompts for credentials: a CI job must
    /// fail, not hang.
    pub fn ls_remote(&self, url: &str) -> Result<RemoteRefs> {
        let remote = url;
        let out = self
            .git()
            .env("GIT_TERMINAL_PROMPT", "0")
            .args([
                "ls-remote",
                // git's own upload-pack, never the clone's `remote.<url>.uploadpack` (git
                // looks the URL up as a remote's name; for a local remote it runs here).
                "--upload-pack=git-upload-pack",
                "--symref",
                "--",
                remote,
                "HEAD",
                "refs/heads/*",
                "refs/tags/*",
            ])
            .output(None)?;
        if !out.status.success() {
            return Err(
                Error::internal(format!("cannot list the branches of remote `{}`", safe(remote)))
                    .caused_by(stderr_lines(&out.stderr))
                    .with_hint("check the remote's URL and your access to it (`git ls-remote <remote>`)"),
            );
        }
        Ok(parse_ls_remote(&out.stdout))
    }

    /// The branch the repository at `url` names as its HEAD, and its commit, as it reports
    /// them now (`None`: it has no HEAD, e.g. it is empty). Only HEAD is listed, once per
    /// URL per run: every trust root read in one run is read from the same commit.
    pub fn ls_remote_head(&self, url: &str) -> Result<Option<(String, Oid)>> {
        if let Some(known) = self.remote_heads.lock().ok().and_then(|h| h.get(url).cloned()) {
            return Ok(known);
        }
        let head = self.list_remote_head(url)?;
        if let Ok(mut heads) = self.remote_heads.lock() {
            heads.insert(url.to_string(), head.clone());
        }
        Ok(head)
    }

    fn list_remote_head(&self, url: &str) -> Result<Option<(String, Oid)>> {
        let out = self
            .git()
            .env("GIT_TERMINAL_PROMPT", "0")
            .args([
                "ls-remote",
                "--upload-pack=git-upload-pack",
                "--symref",
                "--",
                url,
                "HEAD",
            ])
            .output(None)?;
        if !out.status.success() {
            return Err(Error::internal(format!("cannot list the HEAD of {}", safe(url)))
                .caused_by(stderr_lines(&out.stderr))
                .with_hint("check the remote's URL and your access to it (`git ls-remote <remote>`)"));
        }
        let mut head = None;
        let mut oid = None;
        for line in out.stdout.split(|b| *b == b'\n') {
            let Some(tab) = line.iter().position(|b| *b == b'\t') else {
                continue;
            };
            if &line[tab + 1..] != b"HEAD" {
                continue;
            }
            let left = std::str::from_utf8(&line[..tab]).unwrap_or_default();
            match left.strip_prefix("ref: ") {
                Some(target) if is_valid_refname(target) && target.starts_with("refs/heads/") => {
                    head = Some(target.to_string())
                }
                Some(_) => {}
                None => oid = Oid::from_str(left).ok(),
            }
        }
        Ok(head.zip(oid))
    }

    /// Whether the object is in this clone (a remote's tips must be fetched to be judged).
    pub fn has_object(&self, oid: Oid) -> bool {
        self.git.odb().is_ok_and(|odb| odb.exists(oid))
    }
}

fn parse_ls_remote(out: &[u8]) -> RemoteRefs {
    let mut refs = RemoteRefs::default();
    for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let Some(tab) = line.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let (left, name) = (&line[..tab], &line[tab + 1..]);
        if let Some(target) = left.strip_prefix(b"ref: ") {
            if name == b"HEAD" {
                refs.head = Some(String::from_utf8_lossy(target).into_owned());
            }
            continue;
        }
        let tag = name.starts_with(b"refs/tags/");
        // guardctl's own ledger and backups are no branches a plan may delete.
        if !(tag || name.starts_with(b"refs/heads/"))
            || name.ends_with(b"^{}")
            || name == super::ledger::LEDGER_REF.as_bytes()
            || name == super::backups::BACKUPS_REF.as_bytes()
        {
            continue;
        }
        let (refname, utf8) = match std::str::from_utf8(name) {
            Ok(s) => (s.to_string(), true),
            Err(_) => (String::from_utf8_lossy(name).into_owned(), false),
        };
        let oid = std::str::from_utf8(left).ok().and_then(|h| Oid::from_str(h).ok());
        let r = BranchRef {
            valid: utf8 && is_valid_refname(&refname),
            refname,
            oid,
        };
        if tag {
            refs.tags.push(r)
        } else {
            refs.branches.push(r)
        }
    }
    refs.branches.sort_by(|a, b| a.refname.cmp(&b.refname));
    refs.tags.sort_by(|a, b| a.refname.cmp(&b.refname));
    refs
}

/// git's stderr as one cause: its lines joined with "; ", each escaped (a message with a
/// literal `\n` in it helps no one).
fn stderr_lines(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(safe)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ls_remote_output_gives_head_and_validated_branches() {
        let a = "1111111111111111111111111111111111111111";
        let b = "2222222222222222222222222222222222222222";
        let out = format!(
            "ref: refs/heads/main\tHEAD\n{a}\tHEAD\n{a}\trefs/heads/main\n{b}\trefs/heads/bad..name\n{b}\trefs/heads/feature/x\n{b}\trefs/tags/v1\n{a}\trefs/tags/v1^{{}}\n"
        );
        let refs = parse_ls_remote(out.as_bytes());
        assert_eq!(refs.head.as_deref(), Some("refs/heads/main"));
        let names: Vec<(&str, bool)> = refs
            .branches
            .iter()
            .map(|b| (b.refname.as_str(), b.valid))
            .collect();
        assert_eq!(
            names,
            [
                ("refs/heads/bad..name", false),
                ("refs/heads/feature/x", true),
                ("refs/heads/main", true)
            ]
        );
        assert_eq!(refs.target("refs/heads/feature/x"), Oid::from_str(b).ok());
        assert_eq!(refs.target("refs/heads/gone"), None);
        assert_eq!(refs.tags.len(), 1);
        assert_eq!(refs.target("refs/tags/v1"), Oid::from_str(b).ok());
    }
}
