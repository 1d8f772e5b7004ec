//! Where a plan or a decision is published (docs/remote.md): the front end says what the
//! user asked for (`--publish[=REMOTE]`, `--no-publish`, or nothing), the engine settles the
//! remote, since that reads the repository's and the user's git config.

use crate::context::Ctx;
use crate::error::Result;
use crate::store::published::Remote;

/// What the user asked for about publishing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Publish {
    /// Neither flag: publish where `guardctl.remote` makes it the default (or where the
    /// request implies it, e.g. a decision on a plan read from the remote).
    #[default]
    Default,
    /// `--publish[=REMOTE]`: to REMOTE, or (`None`) to the team remote.
    To(Option<String>),
    /// `--no-publish`.
    Never,
}

impl Publish {
    /// The remote to publish to: the one asked for; else, unless `Never`, the team remote when
    /// `guardctl.remote` is set (system or global config) or `implied`.
    pub(crate) fn remote(&self, ctx: &Ctx, implied: bool) -> Result<Option<Remote>> {
        match self {
            Publish::To(name) => Ok(Some(
                ctx.publish_remote(name.as_deref().filter(|n| !n.is_empty()))?,
            )),
            Publish::Never => Ok(None),
            Publish::Default if implied || ctx.publish_by_default()? => Ok(Some(ctx.publish_remote(None)?)),
            Publish::Default => Ok(None),
        }
    }
}
