//! Progress of a long observation, as counts: what is being done, how many of how many.
//! The operations report through this trait and never draw anything themselves; `ui`
//! implements it (a bar on a terminal, never with `--json` or `-q`), tests and `verify` pass
//! [`Silent`]. Implementations are shared by worker threads, hence `Sync`.

pub trait Progress: Sync {
    /// A counted step begins: `what` ("observed branches"), `total` items.
    fn begin(&self, what: &str, total: u64);
    /// `n` more items of the current step are done.
    fn advance(&self, n: u64);
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn begin(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
}
