//! The lifecycle engine: the one way every front end (the CLI's commands, the MCP server, and
//! the surfaces to come: agent hooks, review renderers) plans, reviews, verifies, applies,
//! rolls back, recovers and collects. A front end builds a typed request, calls the engine
//! and renders the typed outcome through `render`'s views; it never reaches guardctl's state
//! (`store`), keys (`sign`) or git (`repo`) itself, and no outcome holds pre-rendered text
//! (`tests/cli/layers.rs` checks both).
//!
//! Invariants the engine owns, so that no front end can skip one:
//! - everything that changes the repository or guardctl's state runs inside a
//!   [`session::Session`]: the lock held, the audit log checked intact, interrupted plans
//!   recovered and what was recovered published, before the request's own work;
//! - a signed record read back (receipt, consumed marker, abandonment, before-image) is
//!   verified against its binding once, where it is read (`execute`'s records), and handed
//!   on typed;
//! - the checks `verify` and `apply` share are `gate`'s, in the contract's order.

pub mod apply;
pub mod gc;
pub mod guard;
pub mod inbox;
pub mod log;
pub mod plan;
pub mod publish;
pub mod recover;
pub mod review;
pub mod rollback;
pub mod session;
pub mod show;
pub mod status;
pub mod verify;
pub mod wait;
pub mod whoami;
