//! The guardctl binary: everything lives in the library (see `src/lib.rs`).

fn main() -> std::process::ExitCode {
    limit_mapped_packs();
    guardctl::main()
}

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
