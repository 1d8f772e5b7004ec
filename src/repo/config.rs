//! Reading the repository's git config, through git itself. libgit2 copies every entry of
//! the config into a list each time it loads it (once to open the repository, again for
//! `Repository::config`, once more per remote lookup): at 50,000 `[branch]` sections that
//! measured 150–250 ms and about 70 MB per load, where one `git config` run takes 60 ms and
//! 14 MB. Reading through git also means guardctl sees exactly the values git sees.

use super::Repo;
use crate::error::{Error, Result};
use crate::text::safe;
use std::collections::HashMap;

/// Every `branch.<name>.*` entry (key, value) of the local config, by branch name.
pub type BranchConfig = HashMap<String, Vec<(String, String)>>;

impl Repo {
    /// A config value from the repository's full configuration (system, global, local; the
    /// last one wins, as for git); not for `branch.*` keys (see `branch_config`). Settings are read once per run, in one `git config` for
    /// every key: guardctl never changes them (it changes only `[branch]` sections, which
    /// `branch_config` reads live).
    pub fn config_string(&self, key: &str) -> Result<Option<String>> {
        let key = canonical_key(key);
        Ok(self
            .settings()?
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone()))
    }

    pub(super) fn settings(&self) -> Result<&[(String, String)]> {
        if let Some(s) = self.settings.get() {
            return Ok(s);
        }
        let read = settings_from(self.read_config(&["--list"])?);
        Ok(self.settings.get_or_init(|| read))
    }

    /// The `git config` run [`Repo::settings`] reads (its output goes through
    /// [`config_output`] and [`settings_from`]), for a read started ahead on another thread.
    pub(super) fn settings_reader(&self) -> crate::process::Process {
        self.config_process(&["--list"])
    }

    /// Every `branch.<name>.*` entry of the repository's local config, grouped by branch name,
    /// in file order. One pass over the config, whatever the number of branches. A key
    /// without a value (`[branch "x"] flag`) reads as the empty string.
    pub fn branch_config(&self) -> Result<BranchConfig> {
        self.branch_config_later()
            .join()
            .map_err(|_| Error::internal("the thread reading the branches' config panicked"))?
    }

    /// [`Repo::branch_config`], read by git on another thread while this one goes on
    /// (planning walks the base's history meanwhile): `join` it for the entries.
    pub fn branch_config_later(&self) -> std::thread::JoinHandle<Result<BranchConfig>> {
        let git = self.config_process(&["--local", "--get-regexp", r"^branch\..*\.[^.]*$"]);
        std::thread::spawn(move || Ok(group_branch_entries(&config_output(git)?.unwrap_or_default())))
    }

    /// The promisor remote of a partial clone (`git clone --filter=...`) and its filter, as
    /// git records them: `extensions.partialClone` naming the remote, or a remote with
    /// `promisor = true`. Objects the filter left out are fetched by git on demand; libgit2
    /// cannot fetch them, so a read of one fails.
    pub fn partial_clone(&self) -> Result<Option<(String, Option<String>)>> {
        let named = self
            .config_string("extensions.partialClone")?
            .filter(|r| !r.is_empty());
        let promisor = || -> Result<Option<String>> {
            Ok(self.settings()?.iter().rev().find_map(|(k, v)| {
                let remote = k.strip_prefix("remote.")?.strip_suffix(".promisor")?;
                matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1" | "")
                    .then(|| remote.to_string())
            }))
        };
        let Some(remote) = named.map_or_else(promisor, |r| Ok(Some(r)))? else {
            return Ok(None);
        };
        let filter = self.config_string(&format!("remote.{remote}.partialclonefilter"))?;
        Ok(Some((remote, filter)))
    }

    /// The names of the configured remotes (those with a `url` or `pushurl`, as for libgit2).
    pub fn remote_names(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = Vec::new();
        for (key, _) in self.settings()? {
            let name = key
                .strip_prefix("remote.")
                .and_then(|k| k.strip_suffix(".url").or_else(|| k.strip_suffix(".pushurl")));
            if let Some(name) = name
                && !names.iter().any(|n| n == name)
            {
                names.push(name.to_string());
            }
        }
        // `origin` first: it is what people mean by "the remote".
        names.sort_by_key(|n| (n != "origin", n.clone()));
        Ok(names)
    }

    /// The remote-tracking ref of each local branch that has one, as git computes it
    /// (`%(upstream)`: `branch.<x>.remote` and `.merge` mapped through the remote's fetch
    /// refspecs; the merge ref itself for `remote = .`), and whether that ref exists. One
    /// git run and one pass over the refs for every branch.
    pub fn upstream_refs(&self) -> Result<HashMap<String, (String, bool)>> {
        let out = self
            .git_local()
            .args(["for-each-ref", "--format=%(refname)%00%(upstream)", "refs/heads"])
            .output(None)?;
        if !out.status.success() {
            return Err(Error::internal("cannot read the branches' upstreams")
                .caused_by(safe(String::from_utf8_lossy(&out.stderr).trim())));
        }
        let tracking: Vec<(String, String)> = out
            .stdout
            .split(|b| *b == b'\n')
            .filter_map(|line| {
                let i = line.iter().position(|b| *b == 0)?;
                let (branch, upstream) = (&line[..i], &line[i + 1..]);
                (!upstream.is_empty()).then(|| {
                    (
                        String::from_utf8_lossy(branch).into_owned(),
                        String::from_utf8_lossy(upstream).into_owned(),
                    )
                })
            })
            .collect();
        let present = self.ref_targets(tracking.iter().map(|(_, t)| t.as_str()))?;
        Ok(tracking
            .into_iter()
            .map(|(branch, t)| {
                let exists = present.contains_key(&t);
                (branch, (t, exists))
            })
            .collect())
    }

    /// The prefixes `url.<base>.insteadOf` rewrites, as set in the repository's own config:
    /// what anyone who can write this clone can point elsewhere. That is `.git/config`, the
    /// worktree's `config.worktree`, **and every file they include** (`include.path`,
    /// `includeIf`): `git config --local` alone follows no includes, so a rewrite moved into
    /// an included file would pass unseen while `git remote get-url` applies it. Hence all
    /// scopes with includes (git's default), keeping those git reports as `local`/`worktree`
    /// (an included file reports the scope of the file that includes it).
    pub fn local_url_rewrites(&self) -> Result<Vec<String>> {
        let out = self
            .read_config(&[
                "--includes",
                "--show-scope",
                "--get-regexp",
                r"^url\..*\.insteadof$",
            ])?
            .unwrap_or_default();
        // `--show-scope --null`: `<scope>\0<key>\n<value>\0` per entry.
        let records: Vec<&[u8]> = out.split(|b| *b == 0).collect();
        Ok(records
            .chunks(2)
            .filter(|pair| pair.first().is_some_and(|s| *s == b"local" || *s == b"worktree"))
            .filter_map(|pair| pair.get(1))
            .flat_map(|record| entries(record).map(|(_, v)| v))
            .collect())
    }

    /// What in this repository's configuration makes a plain `git fetch` or `git pull`
    /// delete or overwrite local refs: a remote that mirrors, a fetch refspec whose
    /// destination is a local branch or tag (or everything), or tag pruning. `None`: a plain
    /// fetch only updates remote-tracking refs (pruning those loses nothing: they copy the
    /// remote).
    pub fn fetch_rewrites_local_refs(&self) -> Result<Option<String>> {
        for (k, v) in self.settings()? {
            let Some(rest) = k.strip_prefix("remote.") else {
                if (k == "fetch.prunetags") && v != "false" {
                    return Ok(Some(format!("{k}={v}")));
                }
                continue;
            };
            let field = rest.rsplit('.').next().unwrap_or_default();
            let local = |dst: &str| {
                dst == "*"
                    || dst.starts_with("refs/heads/")
                    || dst.starts_with("refs/tags/")
                    || dst == "refs/*"
                    || !dst.starts_with("refs/")
            };
            let dangerous = match field {
                "mirror" | "prunetags" => v != "false",
                "fetch" => v
                    .trim_start_matches('+')
                    .split_once(':')
                    .is_some_and(|(_, dst)| !dst.is_empty() && local(dst)),
                _ => false,
            };
            if dangerous {
                return Ok(Some(format!("{k}={v}")));
            }
        }
        Ok(None)
    }

    /// What in this repository's configuration makes a plain `git push` delete or overwrite
    /// refs on a remote: a remote that mirrors, or a push refspec that forces (`+`) or deletes
    /// (`:dst`). `None`: a plain push only fast-forwards what it names.
    pub fn push_rewrites_remote_refs(&self) -> Result<Option<String>> {
        for (k, v) in self.settings()? {
            let Some(rest) = k.strip_prefix("remote.") else {
                continue;
            };
            let dangerous = match rest.rsplit('.').next().unwrap_or_default() {
                "mirror" => v != "false",
                "push" => v.starts_with('+') || v.starts_with(':'),
                _ => false,
            };
            if dangerous {
                return Ok(Some(format!("{k}={v}")));
            }
        }
        Ok(None)
    }

    /// `git config --null <args>`: `None` when nothing matched (git's exit status 1).
    fn read_config(&self, args: &[&str]) -> Result<Option<Vec<u8>>> {
        config_output(self.config_process(args))
    }

    /// `git config --null <args>`, to be run.
    fn config_process(&self, args: &[&str]) -> crate::process::Process {
        self.git_local().args(["config", "--null"]).args(args)
    }
}

/// The settings among a `git config --null --list` output: `[branch]` sections are read
/// live, and there may be 50,000 of them: not kept.
pub(super) fn settings_from(out: Option<Vec<u8>>) -> Vec<(String, String)> {
    let out = out.unwrap_or_default();
    entries(&out).filter(|(k, _)| !k.starts_with("branch.")).collect()
}

/// What `git` (a `git config` read) printed: `None` when nothing matched (exit status 1).
pub(super) fn config_output(git: crate::process::Process) -> Result<Option<Vec<u8>>> {
    let out = git.output(None)?;
    match out.status.code() {
        Some(0) => Ok(Some(out.stdout)),
        Some(1) => Ok(None),
        _ => Err(Error::internal("cannot read the git config")
            .caused_by(safe(String::from_utf8_lossy(&out.stderr).trim()))),
    }
}

/// git's spelling of a key: section and variable names are case-insensitive and listed in
/// lower case; a subsection (`remote.<Name>.url`) keeps its case.
pub(super) fn canonical_key(key: &str) -> String {
    match (key.find('.'), key.rfind('.')) {
        (Some(first), Some(last)) => format!(
            "{}{}{}",
            key[..first].to_ascii_lowercase(),
            &key[first..last],
            key[last..].to_ascii_lowercase()
        ),
        _ => key.to_ascii_lowercase(),
    }
}

/// The `key\nvalue\0` (or `key\0` for a key without a value) records of `--null` output.
fn entries(out: &[u8]) -> impl Iterator<Item = (String, String)> + '_ {
    out.split(|b| *b == 0).filter(|r| !r.is_empty()).map(|record| {
        let (key, value) = match record.iter().position(|b| *b == b'\n') {
            Some(i) => (&record[..i], &record[i + 1..]),
            None => (record, &[][..]),
        };
        (
            String::from_utf8_lossy(key).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        )
    })
}

/// The `scope\0key\nvalue\0` records of `--show-scope --null` output: (scope, key, value).
pub(super) fn scoped_entries(out: &[u8]) -> Vec<(String, String, String)> {
    let records: Vec<&[u8]> = out.split(|b| *b == 0).collect();
    records
        .chunks_exact(2)
        .flat_map(|pair| {
            let scope = String::from_utf8_lossy(pair[0]).into_owned();
            entries(pair[1]).map(move |(k, v)| (scope.clone(), k, v))
        })
        .collect()
}

fn group_branch_entries(out: &[u8]) -> BranchConfig {
    let mut grouped: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for (key, value) in entries(out) {
        let Some(branch) = key
            .strip_prefix("branch.")
            .and_then(|k| k.rsplit_once('.'))
            .map(|(b, _)| b.to_string())
        else {
            continue;
        };
        grouped.entry(branch).or_default().push((key, value));
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_as_git_spells_them() {
        assert_eq!(canonical_key("user.signingKey"), "user.signingkey");
        assert_eq!(
            canonical_key("gpg.ssh.allowedSignersFile"),
            "gpg.ssh.allowedsignersfile"
        );
        assert_eq!(canonical_key("Remote.MyFork.URL"), "remote.MyFork.url");
        assert_eq!(canonical_key("init.defaultBranch"), "init.defaultbranch");
    }

    #[test]
    fn scoped_null_records_keep_their_scope_newlines_and_valueless_keys() {
        let out =
            b"system\0core.editor\nvi\0global\0url.x.insteadof\na\nb\0global\0flag.on\0command\0foo.bar\n1\0";
        let got = scoped_entries(out);
        let want = [
            ("system", "core.editor", "vi"),
            ("global", "url.x.insteadof", "a\nb"),
            ("global", "flag.on", ""),
            ("command", "foo.bar", "1"),
        ];
        assert_eq!(got.len(), want.len());
        for ((s, k, v), (ws, wk, wv)) in got.iter().zip(want) {
            assert_eq!((s.as_str(), k.as_str(), v.as_str()), (ws, wk, wv));
        }
        assert!(scoped_entries(b"").is_empty());
    }

    #[test]
    fn null_records_group_by_branch_with_dots_newlines_and_valueless_keys() {
        let out = b"branch.a b.flag\0branch.a b.remote\norigin\0branch.x.y.merge\nline1\nline2\0branch.a b.merge\nrefs/heads/a\0";
        let grouped = group_branch_entries(out);
        assert_eq!(
            grouped["a b"],
            vec![
                ("branch.a b.flag".to_string(), String::new()),
                ("branch.a b.remote".to_string(), "origin".to_string()),
                ("branch.a b.merge".to_string(), "refs/heads/a".to_string()),
            ]
        );
        assert_eq!(
            grouped["x.y"],
            vec![("branch.x.y.merge".to_string(), "line1\nline2".to_string())]
        );
        assert_eq!(grouped.len(), 2);
    }
}
