//! Remote URLs compared by meaning, not spelling: a plan bound to `/srv/origin.git` belongs
//! to a clone whose remote is `file:///srv/origin.git`, and one bound to
//! `git@github.com:org/repo.git` to a clone of `https://github.com/org/repo`.
//!
//! [`canonical`] reduces a URL to what names the repository: for the network transports
//! (ssh, scp-like `host:path`, https, http, git) the host (lower case), a port other than the
//! transport's default, and the path; for local repositories (a path or `file://`) the path.
//! Dropped as spelling: the scheme among the network transports, the user, the default port,
//! a trailing `/` and a `.git` suffix, `.` and `..` components. A non-default port is kept:
//! another port can be another server. A relative local path is resolved against the
//! directory git runs in, the work tree's top (the git directory of a bare repository), as
//! `git fetch` resolves it ([`resolve_local`]).
//!
//! Not here: which URL a remote has (`git remote get-url`, in `repo::remote`), and trust (the
//! remote's URL comes from config guardctl reads as the repository reports it).

use std::path::{Component, Path, PathBuf};

/// `url` with a relative local path made absolute against `base`; every other URL unchanged.
pub fn resolve_local(url: &str, base: &Path) -> String {
    match split(url) {
        Parsed::Local(p) if Path::new(&p).is_relative() => lexical(&base.join(p)).display().to_string(),
        _ => url.to_string(),
    }
}

/// Whether two remote URLs name the same repository (see the module doc).
pub fn same_repository(a: &str, b: &str) -> bool {
    a == b || canonical(a) == canonical(b)
}

/// The repository a URL names, as one string: `host[:port]/path` or `file:<path>`.
pub fn canonical(url: &str) -> String {
    match split(url) {
        Parsed::Local(p) => format!(
            "file:{}",
            trim_path(&lexical(Path::new(&p)).display().to_string())
        ),
        Parsed::Network { host, port, path } => {
            let host = host.to_ascii_lowercase();
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            format!("{host}{port}/{}", trim_path(&path).trim_start_matches('/'))
        }
    }
}

/// Whether `url` carries a secret in its user part: a password (`scheme://user:secret@host`),
/// or for the web transports any user part at all, since hosts take a token as the user name
/// (`https://<token>@github.com/…`, GitLab CI's `https://gitlab-ci-token:<token>@…`). An ssh
/// user (`ssh://git@host`, `git@host:path`) is a name, not a secret.
pub fn has_credentials(url: &str) -> bool {
    let url = address(url);
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    // The authority ends at the path, the query or the fragment (RFC 3986).
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let Some((user, _)) = authority.rsplit_once('@') else {
        return false;
    };
    let scheme = scheme.to_ascii_lowercase();
    // `git+https`, `persistent-https` and the like are web transports too.
    if scheme.contains("http") || scheme.contains("ftp") {
        !user.is_empty()
    } else {
        user.contains(':')
    }
}

/// The address of a `<transport>::<address>` URL (git runs `git-remote-<transport>` on the
/// address: `http::http://host/x` is `http://host/x`), any number deep; other URLs whole.
fn address(url: &str) -> &str {
    let mut url = url;
    while let Some((transport, rest)) = url.split_once("::") {
        let name = |b: u8| b.is_ascii_alphanumeric() || b"+.-_".contains(&b);
        if transport.is_empty() || !transport.bytes().all(name) {
            break;
        }
        url = rest;
    }
    url
}

/// `url` with the user part of a URL that [`has_credentials`] replaced by `***`, for saying
/// which remote was refused without repeating its secret.
pub fn redacted(url: &str) -> String {
    if !has_credentials(url) {
        return url.to_string();
    }
    let inner = address(url);
    let prefix = &url[..url.len() - inner.len()];
    let (scheme, rest) = inner.split_once("://").unwrap_or(("", inner));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = (&rest[..end], rest[end..].to_string());
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{prefix}{scheme}://***@{host}{path}")
}

enum Parsed {
    Local(String),
    Network {
        host: String,
        /// A port other than the scheme's default.
        port: Option<String>,
        path: String,
    },
}

fn split(url: &str) -> Parsed {
    if let Some(rest) = url.strip_prefix("file://") {
        // file:///srv/x (empty host) or file://localhost/srv/x.
        let path = rest.strip_prefix("localhost").unwrap_or(rest);
        return Parsed::Local(percent_decode(path));
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "ssh" | "git+ssh" | "ssh+git" => "22",
            "https" => "443",
            "http" => "80",
            "git" => "9418",
            _ => "",
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = split_port(host_port);
        let port = port.filter(|p| *p != default_port).map(String::from);
        return Parsed::Network {
            host: host.trim_matches(['[', ']']).to_string(),
            port,
            path: format!("/{path}"),
        };
    }
    // scp-like `[user@]host:path`: a colon before any slash (git's own rule).
    if let Some(colon) = url.find(':')
        && !url[..colon].contains('/')
        && colon > 0
    {
        let host = url[..colon].rsplit_once('@').map_or(&url[..colon], |(_, h)| h);
        return Parsed::Network {
            host: host.trim_matches(['[', ']']).to_string(),
            port: None,
            path: format!("/{}", url[colon + 1..].trim_start_matches('/')),
        };
    }
    Parsed::Local(url.to_string())
}

/// `host:port` -> (host, port); an IPv6 literal keeps its colons.
fn split_port(s: &str) -> (&str, Option<&str>) {
    if let Some(end) = s.find(']') {
        let (host, rest) = s.split_at(end + 1);
        return (host, rest.strip_prefix(':').filter(|p| !p.is_empty()));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
        _ => (s, None),
    }
}

/// Without trailing slashes and one `.git` suffix (`repo.git/` and `repo` are one).
fn trim_path(p: &str) -> String {
    let p = p.trim_end_matches('/');
    let p = p.strip_suffix(".git").unwrap_or(p);
    p.trim_end_matches('/').to_string()
}

/// `.` and `..` removed without touching the file system.
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `%20` and friends in a `file://` URL; an invalid escape is kept as written.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(v) = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_a_url_are_found_and_redacted() {
        for (url, secret, shown) in [
            (
                "https://user:tok3n@host/org/repo",
                true,
                "https://***@host/org/repo",
            ),
            (
                "https://tok3n@github.com/org/repo.git",
                true,
                "https://***@github.com/org/repo.git",
            ),
            (
                "HTTP://gitlab-ci-token:tok3n@gitlab.example:8443/g/r",
                true,
                "HTTP://***@gitlab.example:8443/g/r",
            ),
            ("ssh://git:tok3n@host/repo", true, "ssh://***@host/repo"),
            ("https://a@b:tok3n@host", true, "https://***@host"),
            ("ssh://git@host/org/repo", false, "ssh://git@host/org/repo"),
            (
                "git@github.com:org/repo.git",
                false,
                "git@github.com:org/repo.git",
            ),
            (
                "https://github.com/org/repo",
                false,
                "https://github.com/org/repo",
            ),
            (
                "https://host/path/with@sign",
                false,
                "https://host/path/with@sign",
            ),
            ("/srv/user:pass@x.git", false, "/srv/user:pass@x.git"),
            // `<transport>::<address>`: the address is what carries the secret.
            (
                "http::http://tok3n@127.0.0.1:9/r.git",
                true,
                "http::http://***@127.0.0.1:9/r.git",
            ),
            ("https::https://u:tok3n@host/r", true, "https::https://***@host/r"),
            ("x::y::https://tok3n@host/r", true, "x::y::https://***@host/r"),
            ("git+https://tok3n@host/r", true, "git+https://***@host/r"),
            (
                "persistent-https://tok3n@host/r",
                true,
                "persistent-https://***@host/r",
            ),
            ("ext::ssh -o x=y git@host", false, "ext::ssh -o x=y git@host"),
            ("https://host/a::b@c", false, "https://host/a::b@c"),
            // `?` and `#` end the authority: an `@` after them is not a user part.
            ("https://h:9#tok3n@x", false, "https://h:9#tok3n@x"),
            ("https://h/r?x=a@b", false, "https://h/r?x=a@b"),
            ("https://tok3n@h?x=1", true, "https://***@h?x=1"),
        ] {
            assert_eq!(has_credentials(url), secret, "{url}");
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn spellings_of_one_repository_are_the_same() {
        let same = [
            ("/srv/origin.git", "file:///srv/origin.git"),
            ("/srv/origin.git", "/srv/origin"),
            ("/srv/origin.git/", "file://localhost/srv/origin"),
            ("/srv/./x/../origin.git", "/srv/origin.git"),
            ("file:///srv/my%20repo.git", "/srv/my repo"),
            ("git@github.com:org/repo.git", "https://github.com/org/repo"),
            (
                "ssh://git@GitHub.com/org/repo.git",
                "https://github.com/org/repo/",
            ),
            ("ssh://git@host:22/org/repo", "host:org/repo"),
            ("https://host:443/org/repo", "http://host/org/repo.git"),
            ("git://host/org/repo", "https://user@host/org/repo"),
        ];
        for (a, b) in same {
            assert!(
                same_repository(a, b),
                "{a} vs {b}: {} vs {}",
                canonical(a),
                canonical(b)
            );
        }
    }

    #[test]
    fn different_repositories_stay_different() {
        let different = [
            ("/srv/origin.git", "/srv/other.git"),
            ("/srv/origin.git", "/srv/a/origin.git"),
            ("git@github.com:org/repo.git", "git@github.com:org/Repo.git"),
            ("git@github.com:org/repo.git", "git@gitlab.com:org/repo.git"),
            ("ssh://git@host:2222/org/repo", "https://host/org/repo"),
            ("/srv/origin.git", "https://srv/origin.git"),
        ];
        for (a, b) in different {
            assert!(!same_repository(a, b), "{a} vs {b}: both {}", canonical(a));
        }
    }

    #[test]
    fn relative_paths_resolve_against_the_directory_git_runs_in() {
        let base = Path::new("/home/me/work/repo");
        assert_eq!(resolve_local("../origin.git", base), "/home/me/work/origin.git");
        assert_eq!(resolve_local("./sub/../o.git", base), "/home/me/work/repo/o.git");
        assert_eq!(resolve_local("/abs/o.git", base), "/abs/o.git");
        assert_eq!(resolve_local("git@host:o.git", base), "git@host:o.git");
        assert_eq!(resolve_local("https://h/o.git", base), "https://h/o.git");
    }

    #[test]
    fn a_windows_like_or_odd_url_never_panics() {
        for u in [
            "",
            ":",
            "@:",
            "[::1]:x",
            "ssh://[::1]:2222/r",
            "file://",
            "%",
            "%zz",
            "a%2",
        ] {
            let _ = canonical(u);
            let _ = resolve_local(u, Path::new("/b"));
        }
        assert_eq!(canonical("ssh://[::1]:2222/r"), "::1:2222/r");
    }
}
