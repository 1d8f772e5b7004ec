//! File primitives with the safety properties the design requires: atomic, durable writes
//! (temp file + fsync + rename + fsync of the directory) and bounded reads that never follow
//! a symlink.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `N` bytes from the kernel's random source (plan nonces).
pub fn random_bytes<const N: usize>() -> crate::error::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| crate::error::Error::internal("cannot read /dev/urandom").caused_by(e))?;
    Ok(bytes)
}

/// Write `bytes` to `path` so that a reader sees either the old or the new content.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// [`write_atomic`] with the content streamed by `fill` through a buffer, so a large
/// document (a plan of 30,000 branches is 20 MB) is never held in memory a second time.
pub fn write_atomic_with(path: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let (dir, tmp) = staged(path, fill, true)?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// [`write_atomic_with`] without the two fsyncs: a reader still sees the old content or the
/// whole new one, but a crash soon after may leave the old file, or a damaged new one, on
/// disk. Only for files that are cheap to make again and checked whenever read (a new plan
/// file: a damaged one fails its signature check, and `plan` makes another). The fsyncs
/// measured 13-20 ms for a 4 MB plan on the project's machine, a tenth of planning 10,000
/// branches.
pub fn write_replaceable_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let (_, tmp) = staged(path, fill, false)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// What `fill` writes, written (and with `sync`, fsynced) to a temporary file beside `path`
/// (in its directory).
fn staged(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    sync: bool,
) -> io::Result<(&Path, tempfile::NamedTempFile)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let tmp = tempfile::Builder::new().prefix(".guardctl-").tempfile_in(dir)?;
    let mut w = io::BufWriter::with_capacity(1 << 16, tmp);
    fill(&mut w)?;
    let tmp = w.into_inner().map_err(io::IntoInnerError::into_error)?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    Ok((dir, tmp))
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0} does not exist")]
    NotFound(String),
    #[error("{0} is a symbolic link; guardctl does not follow links for plan and approval files")]
    Symlink(String),
    #[error("{0} is not a regular file")]
    NotFile(String),
    #[error("{path} is larger than the {cap}-byte limit")]
    TooLarge { path: String, cap: u64 },
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: io::Error },
}

/// Read a whole regular file of at most `cap` bytes, refusing symlinks (`O_NOFOLLOW`).
pub fn read_bounded(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let name = path.display().to_string();
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => ReadError::Symlink(name.clone()),
            _ if e.kind() == io::ErrorKind::NotFound => ReadError::NotFound(name.clone()),
            _ => ReadError::Io {
                path: name.clone(),
                source: e,
            },
        })?;
    let meta = file.metadata().map_err(|e| ReadError::Io {
        path: name.clone(),
        source: e,
    })?;
    if !meta.is_file() {
        return Err(ReadError::NotFile(name));
    }
    if meta.len() > cap {
        return Err(ReadError::TooLarge { path: name, cap });
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    // Read one byte past the cap in case the file grew after the size check.
    file.take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ReadError::Io {
            path: name.clone(),
            source: e,
        })?;
    if buf.len() as u64 > cap {
        return Err(ReadError::TooLarge { path: name, cap });
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_then_bounded_read_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/plan.json");
        write_atomic(&p, b"hello").unwrap();
        write_atomic(&p, b"world").unwrap();
        assert_eq!(read_bounded(&p, 10).unwrap(), b"world");
    }

    #[test]
    fn bounded_read_refuses_symlinks_large_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, b"0123456789").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(matches!(read_bounded(&link, 100), Err(ReadError::Symlink(_))));
        assert!(matches!(read_bounded(&p, 5), Err(ReadError::TooLarge { .. })));
        assert!(matches!(read_bounded(dir.path(), 5), Err(ReadError::NotFile(_))));
        assert!(matches!(
            read_bounded(&dir.path().join("nope"), 5),
            Err(ReadError::NotFound(_))
        ));
    }
}
