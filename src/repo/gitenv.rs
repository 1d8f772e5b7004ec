//! The one environment every git child process gets, and the variables guardctl refuses to
//! run under.
//!
//! guardctl reads the repository through libgit2 and gix, which it opens itself and which
//! honour no `GIT_*` variable, and writes through git child processes, which honour many.
//! A variable that points git at another repository, object store, index, namespace or
//! history (one line in a CI workflow) would split the readers from the writers: branches
//! deleted in the repository, their backup written into another object store. So:
//!
//! - [`refuse_splitting`]: guardctl refuses to run (64, naming the variable) while any of
//!   [`SPLITTING`] is set;
//! - [`git`]: every git child starts from an empty environment plus [`PASSED`] (where git
//!   finds the user's own config, the locale, the transport's needs), never another `GIT_*`
//!   variable (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`, `GIT_EXEC_PATH`, … are dropped),
//!   with prompts off and replace refs ignored, as libgit2 ignores them.
//!
//! The caller adds what the repository must not decide (hooks off, the ssh command, no
//! credential helper of the repository's own): `Repo::git_local`, `Repo::git`.

use crate::error::{Error, Result};
use crate::process::Process;

/// Variables under which git and guardctl's own readers would see different repositories.
pub const SPLITTING: [&str; 11] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_INDEX_FILE",
    "GIT_NAMESPACE",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE",
    "GIT_QUARANTINE_PATH",
];

/// What a git child is given of guardctl's environment: where the user's own (global and
/// system) config is, the locale and time zone, temporary files, and what a transport needs
/// (the ssh agent and ssh command, proxies, TLS roots). Everything else is dropped.
pub const PASSED: [&str; 33] = [
    "HOME",
    "PATH",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "SSH_AUTH_SOCK",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_SSH_VARIANT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "GIT_PROXY_SSL_CAINFO",
    "CURL_CA_BUNDLE",
];

/// Refuse (64) while a variable of [`SPLITTING`] is set, naming it.
pub fn refuse_splitting() -> Result<()> {
    refuse_splitting_in(|name| std::env::var_os(name).is_some())
}

fn refuse_splitting_in(is_set: impl Fn(&str) -> bool) -> Result<()> {
    match SPLITTING.iter().find(|v| is_set(v)) {
        None => Ok(()),
        Some(v) => Err(Error::usage(format!(
            "{v} is set: git would act on another repository or object store than the one guardctl checks"
        ))
        .with_hint(format!(
            "unset {v} (name the repository with `-C <path>`); guardctl never runs git under it"
        ))),
    }
}

/// `git`, with exactly the environment described above.
pub fn git() -> Process {
    static RESOLVED: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    let program = RESOLVED.get_or_init(|| resolve("git", std::env::var_os("PATH").as_deref()));
    match program {
        Some(path) => environment(Process::new(path).arg0("git")),
        None => environment(Process::new("git")),
    }
}

/// Where `execvp` would find `program` in `path`, when the search is plain: every entry it
/// looks at absolute (a relative one would be read from the child's directory, not ours),
/// every candidate before the one found missing, not a directory we may enter, or not
/// ours to run (the errors `execvp` skips), and that one a program `posix_spawn` runs as
/// `execvp` would (an ELF file or a `#!` script: `execvp` runs any other file through
/// `/bin/sh`). Otherwise `None` leaves the search to the child, as before.
///
/// Why: the standard library starts a child with `posix_spawn` (no copy of the parent)
/// only when it need not search a `PATH` it was given, and every git child is given one (it
/// is in [`PASSED`]). Otherwise it forks: `show` of a 50,000-branch plan forked its 78 MB
/// three times to read config, a copy of its page tables each time.
fn resolve(program: &str, path: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    use nix::errno::Errno;
    use nix::unistd::{AccessFlags, access};
    use std::io::Read;
    for dir in std::env::split_paths(path?) {
        if !dir.is_absolute() {
            return None;
        }
        let candidate = dir.join(program);
        match access(&candidate, AccessFlags::X_OK) {
            Ok(()) => {}
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::EACCES) => continue,
            Err(_) => return None,
        }
        // A directory is EACCES to execvp: skipped.
        match std::fs::metadata(&candidate) {
            Ok(m) if m.is_dir() => continue,
            Ok(m) if m.is_file() => {}
            _ => return None,
        }
        let mut head = [0u8; 4];
        let read = std::fs::File::open(&candidate).and_then(|f| f.take(4).read(&mut head));
        return match read {
            Ok(4) if head == *b"\x7fELF" || head.starts_with(b"#!") => Some(candidate),
            Ok(n) if n >= 2 && head.starts_with(b"#!") => Some(candidate),
            _ => None,
        };
    }
    None
}

/// `p` (git, or a shell that execs git) with exactly the environment described above.
pub fn environment(p: Process) -> Process {
    with_environment(p, |name| std::env::var_os(name))
}

fn with_environment(p: Process, get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Process {
    let p = PASSED
        .iter()
        .filter_map(|name| Some((*name, get(name)?)))
        .fold(p.env_clear(), |p, (name, value)| p.env(name, value));
    p.env("GIT_TERMINAL_PROMPT", "0")
        // An askpass program could come from the repository's own config (core.askPass);
        // an empty GIT_ASKPASS outranks it and asks nobody.
        .env("GIT_ASKPASS", "")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two directories for a PATH, `a` empty and `b` holding an executable `git` script.
    fn two_path_dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("git"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(b.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, a, b)
    }

    /// The attack review's: a `git` we may not run is skipped, as execvp skips it; a
    /// symlink loop or a file without `#!` is left to the child (execvp fails on the
    /// first and runs the second through /bin/sh), never resolved to a later git.
    #[test]
    fn attack_git_in_path_is_resolved_only_where_execvp_would_agree() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, a, b) = two_path_dirs();
        let path = std::env::join_paths([&a, &b]).unwrap();
        // Executable only by others (root bypasses the check: then it is ours to run).
        std::fs::write(a.join("git"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(a.join("git"), std::fs::Permissions::from_mode(0o611)).unwrap();
        let runnable = nix::unistd::access(&a.join("git"), nix::unistd::AccessFlags::X_OK).is_ok();
        let expected = if runnable { a.join("git") } else { b.join("git") };
        assert_eq!(resolve("git", Some(&path)), Some(expected));
        // A symlink loop: execvp stops with ELOOP.
        std::fs::remove_file(a.join("git")).unwrap();
        std::os::unix::fs::symlink(a.join("git"), a.join("git")).unwrap();
        assert_eq!(resolve("git", Some(&path)), None);
        // A script without `#!`: execvp runs it through /bin/sh, posix_spawn would not.
        std::fs::remove_file(a.join("git")).unwrap();
        std::fs::write(a.join("git"), "exit 0\n").unwrap();
        std::fs::set_permissions(a.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(resolve("git", Some(&path)), None);
        // A directory named git: skipped.
        std::fs::remove_file(a.join("git")).unwrap();
        std::fs::create_dir(a.join("git")).unwrap();
        assert_eq!(resolve("git", Some(&path)), Some(b.join("git")));
    }

    #[test]
    fn git_is_found_where_execvp_would_find_it_or_left_to_the_child() {
        let (_dir, a, b) = two_path_dirs();
        // Not executable in a: skipped, as execvp skips it.
        std::fs::write(a.join("git"), "").unwrap();
        let path = std::env::join_paths([&a, &b]).unwrap();
        assert_eq!(resolve("git", Some(&path)), Some(b.join("git")));
        // A relative entry first: it would be searched from the child's directory.
        let path = std::env::join_paths([std::path::Path::new("bin"), &b]).unwrap();
        assert_eq!(resolve("git", Some(&path)), None);
        let path = std::ffi::OsString::from(format!(":{}", b.display()));
        assert_eq!(
            resolve("git", Some(&path)),
            None,
            "an empty entry is the current directory"
        );
        assert_eq!(resolve("git", None), None);
        assert_eq!(resolve("git", Some(a.as_os_str())), None);
    }

    #[test]
    fn a_git_child_gets_only_the_allowlist_and_guardctls_own_settings() {
        let given = |name: &str| -> Option<std::ffi::OsString> {
            match name {
                "HOME" => Some("/home/me".into()),
                "SSH_AUTH_SOCK" => Some("/run/agent".into()),
                _ => None,
            }
        };
        let p = with_environment(Process::new("sh"), given)
            .args(["-c", "env | grep -v '^PWD=\\|^SHLVL=\\|^_=' | sort"]);
        let out = String::from_utf8(p.checked(None).unwrap().stdout).unwrap();
        assert_eq!(
            out,
            "GIT_ASKPASS=\nGIT_NO_REPLACE_OBJECTS=1\nGIT_TERMINAL_PROMPT=0\nHOME=/home/me\nSSH_AUTH_SOCK=/run/agent\n"
        );
    }

    #[test]
    fn no_location_variable_passes_and_each_is_refused_by_name() {
        for v in SPLITTING {
            assert!(!PASSED.contains(&v), "{v} passes to git");
            let e = refuse_splitting_in(|name| name == v).unwrap_err();
            assert!(e.message.starts_with(&format!("{v} is set")), "{}", e.message);
            assert_eq!(e.exit_code(), 64);
        }
        for v in ["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXEC_PATH"] {
            assert!(!PASSED.contains(&v), "{v} passes to git");
        }
        assert!(refuse_splitting_in(|_| false).is_ok());
    }
}
