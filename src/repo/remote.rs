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
        let urls: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|u| super::url::resolve_local(u, &base))
            .collect();
        // A remote's URL is recorded in plans (what they are bound to, where their policy was
        // read), published to the team remote and shown to reviewers: a secret in it would
        // travel with every plan. Refused, never repeated.
        if let Some(url) = urls.iter().find(|u| super::url::has_credentials(u)) {
            return Err(Error::usage(format!(
                "remote `{}`'s URL carries credentials ({}): guardctl records the URL in plans, publishes it and shows it to reviewers",
                safe(remote),
                safe(&super::url::redacted(url))
            ))
            .with_hint(format!(
                "keep the secret in a credential helper (`git config credential.helper`, or your host's), and give the remote its URL without it: `git remote set-url {} {}`",
                safe(remote),
                safe(&super::url::redacted(url).replacen("***@", "", 1))
            )));
        }
        Ok(urls)
    }

    /// The branches, tags and HEAD of the repository at `url`, from this run's listing of it
    /// ([`Repo::listing`]). Always a URL (from [`Repo::remote_url`] or a plan bound to it),
    /// never a remote's name, so that what is observed is what is pushed to. A listing made
    /// earlier in the run is as good as a new one before a push: every push is leased on
    /// the ids observed, so a ref that moved since makes it fail, changing nothing.
    pub fn ls_remote(&self, url: &str) -> Result<RemoteRefs> {
        Ok(self.listing(url)?.refs())
    }

    /// [`Repo::ls_remote`] as the remote reports it now, never an earlier listing: what a
    /// push did, or whether an interrupted one landed, is judged by a read made after it.
    pub fn ls_remote_now(&self, url: &str) -> Result<RemoteRefs> {
        self.forget_listing(url);
        self.ls_remote(url)
    }

    /// The run's one listing of `url` (`git ls-remote --symref` of HEAD, branches, tags and
    /// `refs/guardctl/*`), made on first use and kept until this run pushes there
    /// ([`Repo::forget_listing`]). Never prompts for credentials: a CI job must fail, not
    /// hang.
    pub fn listing(&self, url: &str) -> Result<std::sync::Arc<Listing>> {
        if let Some(known) = self.listings.lock().ok().and_then(|l| l.get(url).cloned()) {
            return Ok(known);
        }
        let listing = std::sync::Arc::new(self.list_remote(url)?);
        if let Ok(mut all) = self.listings.lock() {
            all.insert(url.to_string(), listing.clone());
        }
        Ok(listing)
    }

    /// Drop the run's listing of `url`: the next read lists it again (after a push there).
    pub fn forget_listing(&self, url: &str) {
        if let Ok(mut all) = self.listings.lock() {
            all.remove(url);
        }
    }

    /// The listing, made from a scratch repository as every read of the team remote is
    /// (`repo::publish`): this clone's own config (an `insteadOf` that rewrites the URL
    /// once more, a `remote.<url>.uploadpack`) plays no part in what is observed.
    fn list_remote(&self, url: &str) -> Result<Listing> {
        let patterns = ["HEAD", "refs/heads/*", "refs/tags/*", "refs/guardctl/*"].map(String::from);
        let out = super::publish::Scratch::new(self.transport_settings()?)?.ls_remote_raw(url, &patterns)?;
        if !out.status.success() {
            return Err(
                Error::internal(format!("cannot list the refs of remote `{}`", safe(url)))
                    .caused_by(stderr_lines(&out.stderr))
                    .with_hint("check the remote's URL and your access to it (`git ls-remote <remote>`)"),
            );
        }
        Ok(Listing { raw: out.stdout })
    }

    /// The branch the repository at `url` names as its HEAD, and its commit, as it reports
    /// them (`None`: it has no HEAD, e.g. it is empty). Read once per URL per run, from the
    /// run's first listing ([`Repo::listing`]), and never again after a push: every trust
    /// root read in one run is read from the same commit.
    pub fn ls_remote_head(&self, url: &str) -> Result<Option<(String, Oid)>> {
        if let Some(known) = self.remote_heads.lock().ok().and_then(|h| h.get(url).cloned()) {
            return Ok(known);
        }
        let head = self.listing(url)?.head();
        if let Ok(mut heads) = self.remote_heads.lock() {
            heads.entry(url.to_string()).or_insert(head.clone());
        }
        Ok(head)
    }

    /// Whether the object is in this clone (a remote's tips must be fetched to be judged).
    pub fn has_object(&self, oid: Oid) -> bool {
        self.git.odb().is_ok_and(|odb| odb.exists(oid))
    }
}

/// One `git ls-remote --symref` of a remote ([`Repo::listing`]), as git printed it: every
/// reader takes its own part (branches and tags, HEAD, guardctl's refs), each validated.
#[derive(Debug)]
pub struct Listing {
    raw: Vec<u8>,
}

impl Listing {
    /// The remote's branches, tags and HEAD's branch.
    pub fn refs(&self) -> RemoteRefs {
        parse_ls_remote(&self.raw)
    }

    /// HEAD's branch and commit (`None` unless the remote says both).
    pub fn head(&self) -> Option<(String, Oid)> {
        parse_head(&self.raw)
    }

    /// Every ref whose name starts with one of `prefixes` or is one of `exact`, sorted, with
    /// its id; names that are not valid ref names are left out (as `Scratch::ls_remote`).
    pub fn under(&self, prefixes: &[&str], exact: &[&str]) -> Vec<(String, Oid)> {
        let mut out: Vec<(String, Oid)> = lines(&self.raw)
            .filter_map(|(left, name)| {
                let name = std::str::from_utf8(name).ok()?;
                let wanted = prefixes.iter().any(|p| name.starts_with(p)) || exact.contains(&name);
                let oid = Oid::from_str(std::str::from_utf8(left).ok()?).ok()?;
                (wanted && is_valid_refname(name)).then(|| (name.to_string(), oid))
            })
            .collect();
        out.sort();
        out
    }
}

/// `git ls-remote` lines as (left column, name).
fn lines(out: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    out.split(|b| *b == b'\n').filter_map(|line| {
        let tab = line.iter().position(|b| *b == b'\t')?;
        Some((&line[..tab], &line[tab + 1..]))
    })
}

fn parse_head(out: &[u8]) -> Option<(String, Oid)> {
    let mut head = None;
    let mut oid = None;
    for (left, name) in lines(out) {
        if name != b"HEAD" {
            continue;
        }
        let left = std::str::from_utf8(left).unwrap_or_default();
        match left.strip_prefix("ref: ") {
            Some(target) if is_valid_refname(target) && target.starts_with("refs/heads/") => {
                head = Some(target.to_string())
            }
            Some(_) => {}
            None => oid = Oid::from_str(left).ok(),
        }
    }
    head.zip(oid)
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
    fn one_listing_serves_head_branches_and_guardctl_refs_each_validated() {
        let a = "1111111111111111111111111111111111111111";
        let b = "2222222222222222222222222222222222222222";
        let raw = format!(
            "ref: refs/heads/main\tHEAD\n{a}\tHEAD\n{a}\trefs/heads/main\n{b}\trefs/heads/guardctl/ledger\n{b}\trefs/heads/refs/guardctl/x\n{b}\trefs/guardctl/plans/{a}\n{b}\trefs/guardctl/bad..name\n"
        );
        let listing = Listing {
            raw: raw.into_bytes(),
        };
        let main = Oid::from_str(a).unwrap();
        assert_eq!(listing.head(), Some(("refs/heads/main".to_string(), main)));
        let branches: Vec<String> = listing.refs().branches.into_iter().map(|r| r.refname).collect();
        // The ledger is no branch a plan may delete; a branch named like guardctl's refs is.
        assert_eq!(branches, ["refs/heads/main", "refs/heads/refs/guardctl/x"]);
        let names: Vec<String> = listing
            .under(&["refs/guardctl/"], &["refs/heads/guardctl/ledger"])
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                format!("refs/guardctl/plans/{a}"),
                "refs/heads/guardctl/ledger".to_string()
            ]
        );
    }

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
