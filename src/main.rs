//! The guardctl binary: everything lives in the library (see `src/lib.rs`).

fn main() -> std::process::ExitCode {
    // The preview sandbox's launcher must be the process's only thread when it enters its
    // namespaces, so it runs before anything else (src/sandbox.rs).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = guardctl::sandbox::launch_if_asked(&args) {
        return code.into();
    }
    limit_mapped_packs();
    one_malloc_arena();
    guardctl::main()
}

/// glibc gives each thread that allocates its own malloc arena, and memory freed in a
/// thread's arena mostly stays with the process. `apply` at 50,000 branches (a `[branch]`
/// section each) peaked at 214 MB with the drift check's worker thread holding a second arena,
/// and at 179 MB with one arena for all (measured with `MALLOC_ARENA_MAX=1`). guardctl runs
/// at most a few threads, each with its own small-allocation cache (tcache), so sharing one
/// arena costs little lock contention.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn one_malloc_arena() {
    // SAFETY: mallopt only stores a tuning value under glibc's own lock; it is called before
    // any other thread exists. A failure (0) leaves glibc's default, which is correct, only
    // larger.
    unsafe {
        let _ = libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}

/// libgit2 reads pack files through mmap'd windows of up to 1 GiB each, 8 GiB in all, and
/// unmaps none of them while the repository is open; every page it touches counts in the
/// process's resident memory until then. A plan or a verify walks the base's whole history
/// (commits are spread over the whole pack), so a 120 MB pack ended up resident: 117 of the
/// 263 MB `plan` used at 50,000 real-shaped branches. With small windows and a small total,
/// libgit2 unmaps the least recently used window before it maps another (measured at 50k:
/// plan 225 → 126 MB; a few hundred more mmap calls, no measurable time).
#[allow(unsafe_code)]
fn limit_mapped_packs() {
    const WINDOW: usize = guardctl::repo::PACK_WINDOW_BYTES;
    const MAPPED: usize = guardctl::repo::PACK_MAPPED_LIMIT_BYTES;
    // SAFETY: both functions write a libgit2 global without synchronisation, so they must
    // not race any other libgit2 call. This is the first thing the process does: no other
    // thread exists yet, and no repository is open; every thread guardctl starts later is
    // spawned after these writes, which happen-before anything that thread reads. Each
    // call only stores a number (libgit2 validates nothing else), and a failure leaves
    // libgit2's defaults, which are correct, only larger.
    unsafe {
        let _ = git2::opts::set_mwindow_size(WINDOW);
        let _ = git2::opts::set_mwindow_mapped_limit(MAPPED);
    }
}
