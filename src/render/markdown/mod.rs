//! GitHub-flavoured Markdown of a `ShowView`, where reviewers read plans: a pull-request
//! comment (`show --format markdown`, at most 65,536 bytes) or a CI job summary
//! (`show --format summary` / `--step-summary`, at most 1 MiB).
//!
//! Built from the same view as `show` and `show --json`, so the three cannot disagree. What
//! a reviewer must see comes first and is never left out (the headline counts, risk and
//! approvals still needed, the plan's id and how to review it whole); the riskiest rows come
//! next, the rest of the list inside `<details>`, as many as the byte budget allows, and the
//! output says how many it left out. Every repository string goes through [`inline`].

pub mod inline;

use super::view::{Count, ExecView, Row, ShowView};
use crate::plan::derive::plural;
use inline::{COMMAND_CHARS, Place, code, code_up_to, prose};

/// GitHub's limit for an issue or pull-request comment (characters; a byte budget is never
/// over it).
pub const COMMENT_BYTES: usize = 65_536;
/// GitHub's limit for one step's job summary.
pub const SUMMARY_BYTES: usize = 1 << 20;
/// The smallest budget accepted: the headline, the details and the review block always fit.
pub const MIN_BYTES: usize = 8_192;
/// Rows in the table of the riskiest, before the rest are folded into `<details>`.
const TOP_ROWS: usize = 20;
/// Names in each list outside the tables (suspicious names, changes since a plan).
const LISTED: usize = 20;
/// Items in each list of the plan's details (patterns, PATH, pinned files): the details
/// always go in, so they are bounded; `show` lists everything.
const HEAD_LISTED: usize = 10;
/// Directories of an exec plan's PATH listed in its details.
const PATH_LISTED: usize = 32;
/// Room kept for the note saying what was left out.
const NOTE_BYTES: usize = 600;

/// The Markdown of `view` in at most `max_bytes` bytes (`max_bytes` ≥ [`MIN_BYTES`]).
pub fn render(view: &ShowView, max_bytes: usize) -> String {
    let max_bytes = max_bytes.max(MIN_BYTES);
    let head = head(view);
    let foot = foot(view);
    // Small sections, most important first: each goes in whole if it fits.
    let optional: Vec<(&str, String)> = [
        ("review groups", groups(view)),
        ("extremes", extremes(view)),
        ("side effects", side_effects(view)),
        ("skipped", skipped(view)),
        ("changes since the earlier plan", since(view)),
        ("comments", comments(view)),
    ]
    .into_iter()
    .filter(|(_, s)| !s.is_empty())
    .collect();

    let mut used = head.len() + foot.len() + NOTE_BYTES;
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (name, text) in &optional {
        if used + text.len() <= max_bytes {
            used += text.len();
            kept.push(*name);
        } else {
            dropped.push(*name);
        }
    }
    let list = list(view, max_bytes.saturating_sub(used));

    let mut out = head;
    let section = |name: &str| {
        optional
            .iter()
            .find(|(n, _)| *n == name && kept.contains(n))
            .map(|(_, s)| s.as_str())
            .unwrap_or_default()
    };
    out += section("review groups");
    out += section("comments");
    out += section("changes since the earlier plan");
    out += &list.text;
    if list.left_out > 0 || !dropped.is_empty() {
        out += &note(view, &list, &dropped, max_bytes);
    }
    out += section("extremes");
    out += section("side effects");
    out += section("skipped");
    out += &foot;
    if out.len() > max_bytes {
        // Only strings far longer than any real plan's (each is cut to `inline::MAX_CHARS`,
        // but a plan may have many) get here: the headline counts and the review block,
        // which are guardctl's own words and numbers, always fit.
        return minimal(view, max_bytes);
    }
    out
}

/// The title, the counts and how to review the plan, without one repository string: what
/// a reviewer must not miss survives even here (how many names look like others, whether
/// unmerged work is included, a rejection, an expiry).
fn minimal(view: &ShowView, max_bytes: usize) -> String {
    let a = &view.approvals;
    let missing: u32 = a.groups.iter().map(|g| g.missing).sum();
    let what = match &view.exec {
        Some(x) => runs_a_command(x),
        None => {
            let counts = Count::phrases(&view.counts_by_reason);
            format!(
                "**{} {}**{}",
                view.total_affected,
                noun(view, view.total_affected),
                if counts.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", counts.join(", "))
                }
            )
        }
    };
    let mut warnings = Vec::new();
    let flagged = view.extremes.suspicious_names.len();
    if flagged > 0 {
        warnings.push(format!(
            "**{flagged} {} to look at twice** (look-alike, invisible or mixed-script characters)",
            plural(flagged as u64, "name", "names")
        ));
    }
    if view.selection.iter().any(|s| s == "--include-unmerged") {
        warnings.push("**includes unmerged work** (`--include-unmerged`)".to_string());
    }
    if !a.rejected_by.is_empty() {
        warnings.push("**rejected**".to_string());
    }
    if !a.blocked_by.is_empty() {
        warnings.push("**blocked** by an unverifiable rejection".to_string());
    }
    if view.policy.status == "changed" {
        warnings.push("**policy changed since planning**: apply will refuse".to_string());
    }
    if view
        .exec
        .as_ref()
        .is_some_and(|x| x.preview_sandbox == "unsandboxed")
    {
        warnings.push("**the preview ran unsandboxed**".to_string());
    }
    if let Some(p) = &a.part_of {
        warnings.push(format!(
            "**part of {} plans totalling {} {}**",
            p.plans,
            p.resources,
            if p.same_kind { view.resources } else { "resources" }
        ));
    }
    if view.expired {
        warnings.push("**expired**".to_string());
    }
    let warnings = if warnings.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", warnings.join(" · "))
    };
    format!(
        "## guardctl plan `{}`\n\n{what} · risk **{}** · {} approved, {missing} more needed{warnings}\n\n\
         > The plan's details do not fit in `{max_bytes}` bytes.\n\n{}",
        short_hex(&view.plan_id),
        view.risk.level,
        a.approved_by.len(),
        foot(view)
    )
}

/// Up to `HEAD_LISTED` of `items`, each a code span, and how many more there are.
fn listed(items: &[String], sep: &str) -> String {
    listed_up_to(items, sep, HEAD_LISTED)
}

fn listed_up_to(items: &[String], sep: &str, n: usize) -> String {
    let mut out = items
        .iter()
        .take(n)
        .map(|i| code(i, Place::Cell))
        .collect::<Vec<_>>()
        .join(sep);
    if items.len() > n {
        out += &format!(" and {} more (`guardctl show` lists them)", items.len() - n);
    }
    out
}

/// The title, the headline and the plan's details: always shown.
fn head(view: &ShowView) -> String {
    let id = short_hex(&view.plan_id);
    let mut out = format!("## guardctl plan `{id}`\n\n");
    out += &headline(view);
    out += "\n\n| Plan | ";
    out += &format!("`{}` |\n|---|---|\n", view.plan_id);
    let mut row = |k: &str, v: String| out += &format!("| {k} | {v} |\n");
    let on = match &view.remote {
        Some(r) => format!(
            " on remote {} ({})",
            code(r, Place::Cell),
            code(&view.repository, Place::Cell)
        ),
        None => format!(" in {}", code(&view.repository, Place::Cell)),
    };
    row("Operation", format!("`{}`{on}", view.operation));
    if view.exec.is_none() {
        let base = if view.resource == "tag" {
            "commits judged against every branch".to_string()
        } else {
            format!("base {}", code(&view.base, Place::Cell))
        };
        row(
            "Judged by",
            format!("{base}; criteria: {}", view.criteria.join(", ")),
        );
    }
    if !view.selection.is_empty() {
        // The flags that are not patterns first, all of them (`--include-unmerged` must never
        // be the one left out); then the patterns, as many as the list holds.
        let (patterns, flags): (Vec<String>, Vec<String>) = view.selection.iter().cloned().partition(|s| {
            ["--match ", "--exclude ", "--protect "]
                .iter()
                .any(|p| s.starts_with(p))
        });
        let mut inputs: Vec<String> = flags.iter().map(|s| code(s, Place::Cell)).collect();
        if !patterns.is_empty() {
            inputs.push(listed(&patterns, " "));
        }
        row("Inputs", inputs.join(" "));
    }
    if let Some(x) = &view.exec {
        row("Command", command(&x.command, Place::Cell));
        row("Directory", code(&x.workdir, Place::Cell));
        row(
            "Preview",
            format!(
                "{} ({}, {} {} of {} lines)",
                command(&x.preview, Place::Cell),
                if x.preview_sandbox == "unsandboxed" {
                    "**ran unsandboxed**, with the planner's files, keys and network"
                } else {
                    "sandboxed"
                },
                x.resources,
                plural(x.resources as u64, "resource", "resources"),
                x.total_lines
            ),
        );
        // The environment and the before-image command are in the side effects too, but those
        // may be left out of a small budget; the details never are.
        row("Environment", format!("{} (nothing else)", listed(&x.env, ", ")));
        if let Some(before) = &x.before_image {
            row(
                "First runs",
                format!(
                    "{} (the before-image; it must succeed)",
                    command(before, Place::Cell)
                ),
            );
        }
        if let Some(v) = &x.verify {
            // `ExecView::verify` is the command and guardctl's own " (prints the …)" after it.
            let (command, prints) = match v.rsplit_once(" (prints the ") {
                Some((c, p)) => (c, format!(" (prints the {p}")),
                None => (v.as_str(), String::new()),
            };
            row(
                "Verify",
                format!("{}{prints}", self::command(command, Place::Cell)),
            );
        }
        if !x.path.is_empty() {
            // In order, and more of it than other lists: the commands find what they call by
            // name through it, and that is not pinned.
            row("PATH", listed_up_to(&x.path, " ", PATH_LISTED));
        }
        if !x.on_path.is_empty() {
            row("Found on PATH", listed(&x.on_path, ", "));
        }
        if !x.files.is_empty() {
            row("Files it names", listed(&x.files, ", "));
        }
        // One entry a line, a pinned tree's files indented under it: the entries are counted.
        let pinned: Vec<String> = x.pinned.iter().filter(|p| !p.starts_with(' ')).cloned().collect();
        let mut what = if pinned.is_empty() {
            "nothing".to_string()
        } else {
            format!(
                "{} {}: {}",
                pinned.len(),
                plural(pinned.len() as u64, "entry", "entries"),
                listed(&pinned, ", ")
            )
        };
        if x.content_files > 0 {
            what += &format!(
                "; {} work-tree {} by content",
                x.content_files,
                plural(x.content_files as u64, "file", "files")
            );
        }
        row("Pinned", format!("{what}; not pinned: {}", x.not_pinned));
    }
    row("Planner", party(&view.planner));
    row("Executor", party(&view.executor));
    row(
        "Policy",
        format!(
            "{} {} ({})",
            code(&view.policy.source, Place::Cell),
            code(
                &crate::text::short_digest(view.policy.hash.trim_start_matches("sha256:")),
                Place::Cell
            ),
            match view.policy.status {
                "in_force" => "in force".to_string(),
                "changed" => "**changed since planning: apply will refuse**".to_string(),
                other => prose(
                    &format!("{other}: {}", view.policy.detail.as_deref().unwrap_or("")),
                    Place::Cell,
                ),
            }
        ),
    );
    row(
        "Expires",
        if view.expired {
            format!("**expired** {}", view.expires_at)
        } else {
            format!(
                "{} (in {})",
                view.expires_at,
                crate::duration::humanize(view.expires_in_secs)
            )
        },
    );
    if view.total_affected > 0 {
        row("Before-image", prose(&view.before_image, Place::Cell));
    }
    row("Plan hash", format!("`{}`", view.plan_hash));
    out + "\n"
}

/// What a reviewer reads first: how much is deleted and why, the risk, and what the plan
/// still needs before it can be applied.
fn headline(view: &ShowView) -> String {
    let what = match &view.exec {
        Some(x) => runs_a_command(x),
        None if view.total_affected == 0 => "**No changes.** Nothing would be deleted".to_string(),
        None => {
            let counts = Count::phrases(&view.counts_by_reason);
            format!(
                "**Deletes {} {}**{} ({})",
                view.total_affected,
                noun(view, view.total_affected),
                if view.remote.is_some() {
                    " on the remote"
                } else {
                    ""
                },
                counts.join(", ")
            )
        }
    };
    let risk = if view.risk.reasons.is_empty() {
        format!("risk **{}**", view.risk.level)
    } else {
        let reasons: Vec<String> = view.risk.reasons.iter().map(|r| prose(r, Place::Text)).collect();
        format!("risk **{}** ({})", view.risk.level, reasons.join("; "))
    };
    let mut out = format!("{what} · {risk} · {}", approvals(view));
    let a = &view.approvals;
    if !a.rejected_by.is_empty() {
        out += &format!(
            "\n\n**Rejected** by {}: apply refuses this plan.",
            names(&a.rejected_by)
        );
    }
    if !a.blocked_by.is_empty() {
        out += &format!(
            "\n\n**Blocked**: {} unverifiable rejection {} on the team remote, taken for a veto.",
            a.blocked_by.len(),
            plural(a.blocked_by.len() as u64, "entry", "entries")
        );
    }
    if let Some(p) = &a.part_of {
        let ids: Vec<String> = p.others.iter().map(|id| short_hex(id)).collect();
        out += &format!(
            "\n\n**Part of {} plans by {} totalling {} {}** (also {}){}.",
            p.plans,
            code(&p.planner, Place::Text),
            p.resources,
            if p.same_kind { view.resources } else { "resources" },
            listed_up_to(&ids, ", ", HEAD_LISTED),
            if p.needs_bulk {
                "; together they are bulk: the bulk group must approve this one too"
            } else {
                ""
            }
        );
    }
    if !a.not_counted.is_empty() {
        out += &format!(
            "\n\n{} {} not counted: {}.",
            a.not_counted.len(),
            plural(a.not_counted.len() as u64, "approval is", "approvals are"),
            a.not_counted
                .iter()
                .take(HEAD_LISTED)
                .map(|n| code(n, Place::Text))
                .collect::<Vec<_>>()
                .join("; ")
                + &if a.not_counted.len() > HEAD_LISTED {
                    format!(" and {} more", a.not_counted.len() - HEAD_LISTED)
                } else {
                    String::new()
                }
        );
    }
    if a.invalid > 0 {
        out += &format!(
            "\n\n{} attached {} an invalid signature or payload.",
            a.invalid,
            plural(a.invalid as u64, "envelope has", "envelopes have")
        );
    }
    if view.expired {
        out += "\n\n**Expired**: apply refuses it; plan again.";
    }
    out
}

/// What each counted approval and standing rejection said (`--comment`).
fn comments(view: &ShowView) -> String {
    let list = &view.approvals.comments;
    if list.is_empty() {
        return String::new();
    }
    let mut out = format!("### Comments ({})\n\n", list.len());
    for c in list.iter().take(LISTED) {
        out += &format!(
            "- {} ({}): {}\n",
            code(&c.principal, Place::Text),
            c.decision,
            code(&c.comment, Place::Text)
        );
    }
    if list.len() > LISTED {
        out += &format!(
            "- and {} more (`guardctl show` lists them)\n",
            list.len() - LISTED
        );
    }
    out + "\n"
}

/// The headline of an exec plan, in the full and the minimal form.
fn runs_a_command(x: &ExecView) -> String {
    format!(
        "**Runs a command** whose preview lists {} {}",
        x.resources,
        plural(x.resources as u64, "resource", "resources")
    )
}

/// "approvals **1 of 2**, 1 more needed", or the groups' tally for a routed plan.
fn approvals(view: &ShowView) -> String {
    let a = &view.approvals;
    if a.not_needed {
        return "no approval needed (the plan changes nothing)".to_string();
    }
    let missing: u32 = a.groups.iter().map(|g| g.missing).sum();
    let still = if missing == 0 {
        "none more needed".to_string()
    } else {
        format!("{missing} more needed")
    };
    let mut out = match a.groups.as_slice() {
        [g] if a.is_simple() => format!("approvals **{} of {}**, {still}", g.approved_by.len(), g.required),
        groups => format!(
            "approvals **{} of {} review groups**, {still}",
            groups.iter().filter(|g| g.missing == 0).count(),
            groups.len()
        ),
    };
    if !a.approved_by.is_empty() {
        out += &format!(" (approved by {})", names(&a.approved_by));
    }
    out
}

/// A command the plan runs, whole unless longer than [`COMMAND_CHARS`]: a reviewer approves
/// all of it, and the middle of a long one is where `curl … | sh` hides.
fn command(s: &str, place: Place) -> String {
    code_up_to(s, place, COMMAND_CHARS)
}

fn party(p: &super::view::PartyView) -> String {
    match (&p.principal, &p.key) {
        (Some(pr), Some(k)) => format!("{} ({})", code(pr, Place::Cell), code(k, Place::Cell)),
        (Some(pr), None) => code(pr, Place::Cell),
        (None, Some(k)) => format!("unknown principal ({})", code(k, Place::Cell)),
        (None, None) => "unknown".to_string(),
    }
}

fn names(list: &[String]) -> String {
    list.iter()
        .map(|n| code(n, Place::Text))
        .collect::<Vec<_>>()
        .join(", ")
}

fn noun(view: &ShowView, n: usize) -> &'static str {
    plural(n as u64, view.resource, view.resources)
}

/// The first 12 hex digits of a plan id, as `show` and `approve` take it (any unique prefix
/// of 8 or more).
fn short_hex(id: &str) -> String {
    id.trim_start_matches("sha256:").chars().take(12).collect()
}

/// The review groups of a routed plan.
fn groups(view: &ShowView) -> String {
    let a = &view.approvals;
    if a.is_simple() || a.groups.is_empty() {
        return String::new();
    }
    let mut out = "### Review groups\n\n| Group | Covers | Needs | Approved by | Still needed | Who may approve |\n|---|---|---|---|---|---|\n".to_string();
    for g in &a.groups {
        let who = match g.open_approvers() {
            None => "anyone but the planner".to_string(),
            Some(list) => list
                .iter()
                .take(LISTED)
                .map(|p| code(p, Place::Cell))
                .collect::<Vec<_>>()
                .join(", "),
        };
        out += &format!(
            "| {} ({}) | {} {} | {} | {} | {} | {} |\n",
            code(&g.name, Place::Cell),
            g.kind,
            g.resources,
            noun(view, g.resources as usize),
            g.required,
            if g.approved_by.is_empty() {
                "—".to_string()
            } else {
                g.approved_by
                    .iter()
                    .take(LISTED)
                    .map(|p| code(p, Place::Cell))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            g.missing,
            who
        );
    }
    out + "\n"
}

/// `show --since`: how many resources changed since the earlier plan, and which.
fn since(view: &ShowView) -> String {
    let Some(s) = &view.since else {
        return String::new();
    };
    let mut out = format!(
        "### Changed since plan `{}`\n\n{} added, {} removed, {} moved{}.\n\n",
        short_hex(&s.old_plan_id),
        s.added,
        s.removed,
        s.moved,
        if s.inputs_changed {
            " (the inputs differ too)"
        } else {
            ""
        }
    );
    for c in s.changes.iter().take(LISTED) {
        out += &format!("- {} {}\n", c.change, code(&c.name, Place::Text));
    }
    if s.changes.len() > LISTED {
        out += &format!("- and {} more\n", s.changes.len() - LISTED);
    }
    out + "\n"
}

/// The most recent, oldest and most unmerged, and every name that needs a second look.
fn extremes(view: &ShowView) -> String {
    if view.exec.is_some() || view.total_affected == 0 {
        return String::new();
    }
    let x = &view.extremes;
    let list = |rows: &[Row], what: &dyn Fn(&Row) -> String| {
        rows.iter()
            .take(LISTED)
            .map(|r| format!("{} ({})", code(&r.name, Place::Text), what(r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = "### Extremes\n\n".to_string();
    out += &format!(
        "- **Most recently active:** {}\n",
        list(&x.most_recent, &|r| r.age.clone())
    );
    out += &format!("- **Oldest:** {}\n", list(&x.oldest, &|r| r.age.clone()));
    if !x.most_unmerged.is_empty() {
        out += &format!(
            "- **Most commits not in the base:** {}\n",
            list(&x.most_unmerged, &|r| format!(
                "{} commits",
                r.commits_not_in_base
            ))
        );
    }
    if !x.suspicious_names.is_empty() {
        out += &format!(
            "- **Names to look at twice:** {}{}\n",
            list(&x.suspicious_names, &|r| flag_words(r)),
            if x.suspicious_names.len() > LISTED {
                format!(" and {} more", x.suspicious_names.len() - LISTED)
            } else {
                String::new()
            }
        );
    }
    out + "\n"
}

fn flag_words(r: &Row) -> String {
    r.flags
        .iter()
        .map(|f| f.describe())
        .collect::<Vec<_>>()
        .join(", ")
}

fn side_effects(view: &ShowView) -> String {
    if view.side_effects.is_empty() {
        return String::new();
    }
    let mut out = "### Side effects\n\n".to_string();
    for s in &view.side_effects {
        out += &format!("- {}\n", side_effect(view, s));
    }
    out + "\n"
}

/// One side effect. A command's are built again from their parts, each part a code span: a
/// command line or directory is never prose (GitHub links words like `GH-26` or a commit
/// id in text). The rest are guardctl's sentences with ids and counts.
fn side_effect(view: &ShowView, line: &str) -> String {
    use super::view::{before_image_runs, command_runs};
    if let Some(x) = &view.exec {
        if line == command_runs(&x.command, &x.workdir, &x.env.join(", ")) {
            let mut env: Vec<String> = x
                .env
                .iter()
                .take(HEAD_LISTED)
                .map(|e| code(e, Place::Text))
                .collect();
            if x.env.len() > HEAD_LISTED {
                env.push(format!("{} more", x.env.len() - HEAD_LISTED));
            }
            return command_runs(
                &command(&x.command, Place::Text),
                &code(&x.workdir, Place::Text),
                &env.join(", "),
            );
        }
        if let Some(before) = &x.before_image
            && line == before_image_runs(before)
        {
            return before_image_runs(&command(before, Place::Text));
        }
    }
    prose(line, Place::Text)
}

/// What the plan leaves alone, by reason (counts only: the names are in `show`).
fn skipped(view: &ShowView) -> String {
    let s = &view.skipped;
    if s.total == 0 {
        return String::new();
    }
    let counts: Vec<String> = s
        .counts
        .iter()
        .map(|c| format!("{} {}", c.count, c.reason.replace('_', " ")))
        .collect();
    format!(
        "### Skipped\n\n{} {} {} not deleted: {}.\n\n",
        s.total,
        noun(view, s.total),
        plural(s.total as u64, "is", "are"),
        counts.join(", ")
    )
}

/// How to see the whole plan and decide on it: always shown.
fn foot(view: &ShowView) -> String {
    let id = short_hex(&view.plan_id);
    format!(
        "### Review\n\n\
         The signed plan is on the team remote (`guardctl inbox` lists it) or in the plan file \
         this was rendered from. Review it whole, in a clone of the repository:\n\n\
         ```sh\n\
         guardctl show {id} --all\n\
         guardctl approve {id} --publish   # or: guardctl reject {id} --comment \"why\"\n\
         ```\n"
    )
}

/// The rows (or preview lines) shown, and how many the budget left out.
struct Listing {
    text: String,
    left_out: usize,
    total: usize,
}

/// The list of what the plan deletes within `budget` bytes: the riskiest rows in a table,
/// the rest inside `<details>`; for a command, its preview's lines.
fn list(view: &ShowView, budget: usize) -> Listing {
    match &view.exec {
        Some(x) => preview_lines(&x.lines, budget),
        None => rows(view, budget),
    }
}

/// Riskiest first: work only the backup keeps, a name that needs a second look, more
/// commits not in the base, more recent activity; then by name, so the order is stable.
fn by_risk(rows: &[Row]) -> Vec<&Row> {
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort_by(|a, b| {
        b.loses_work
            .cmp(&a.loses_work)
            .then((!b.flags.is_empty()).cmp(&!a.flags.is_empty()))
            .then(b.commits_not_in_base.cmp(&a.commits_not_in_base))
            .then(b.last_commit.cmp(&a.last_commit))
            .then(a.name.cmp(&b.name))
    });
    sorted
}

const TABLE_HEAD: &str =
    "| Kind | Name | Tip | Age | Author | Work lost | Reason |\n|---|---|---|---|---|---|---|\n";

/// How many of `items` fit in `budget` bytes: up to `open` of them shown at once (after
/// `fixed` bytes of heading), then, inside a wrapper of `wrap` bytes, as many more as fit.
/// Returns the two counts.
fn fit(items: &[String], open: usize, budget: usize, fixed: usize, wrap: usize) -> (usize, usize) {
    let mut used = fixed;
    let mut top = 0;
    while top < open.min(items.len()) && used + items[top].len() <= budget {
        used += items[top].len();
        top += 1;
    }
    let mut rest = 0;
    if top == open && open < items.len() && used + wrap <= budget {
        used += wrap;
        while open + rest < items.len() && used + items[open + rest].len() <= budget {
            used += items[open + rest].len();
            rest += 1;
        }
    }
    (top, rest)
}

fn rows(view: &ShowView, budget: usize) -> Listing {
    let total = view.total_affected;
    if total == 0 {
        return Listing {
            text: String::new(),
            left_out: 0,
            total,
        };
    }
    let lines: Vec<String> = by_risk(&view.rows.items).into_iter().map(row).collect();
    // The headings say how many rows they hold, known only once the rows are fitted: sized
    // here with the largest numbers they can state, written below with the real ones.
    let heading = |top: usize| {
        if total > TOP_ROWS {
            format!("### The {top} riskiest of {total} {}\n\n", view.resources)
        } else {
            format!("### {} to delete ({total})\n\n", capitalized(view.resources))
        }
    };
    let others = total.saturating_sub(TOP_ROWS);
    let rest_open = |rest: usize| {
        let which = if rest == others {
            format!("The other {others} {}", view.resources)
        } else {
            format!("The next {rest} of the other {others} {}", view.resources)
        };
        format!("<details>\n<summary>{which}, riskiest first</summary>\n\n{TABLE_HEAD}")
    };
    let rest_close = "\n</details>\n\n";
    let fixed = heading(TOP_ROWS.min(total)).len() + TABLE_HEAD.len() + 1;
    if fixed > budget {
        return Listing {
            text: String::new(),
            left_out: total,
            total,
        };
    }
    let wrap = rest_open(others.saturating_sub(1).max(1)).len() + rest_close.len();
    let (top, rest) = fit(&lines, TOP_ROWS, budget, fixed, wrap);
    let mut text = heading(top) + TABLE_HEAD;
    lines[..top].iter().for_each(|l| text += l);
    text += "\n";
    if rest > 0 {
        text += &rest_open(rest);
        lines[top..top + rest].iter().for_each(|l| text += l);
        text += rest_close;
    }
    Listing {
        text,
        left_out: total - top - rest,
        total,
    }
}

fn row(r: &Row) -> String {
    let mut name = code(&r.name, Place::Cell);
    if !r.flags.is_empty() {
        name += &format!(" ⚠ *{}*", flag_words(r));
    }
    let tip: String = r.tip.chars().take(12).collect();
    let work = if r.loses_work {
        format!(
            "**{} {}**, kept only by the backup",
            r.commits_not_in_base,
            plural(r.commits_not_in_base, "commit", "commits")
        )
    } else {
        "none".to_string()
    };
    let mut reason = r.reasons.join(", ");
    if let Some(s) = &r.squashed_into {
        let commit: String = s.commit.chars().take(12).collect();
        reason += &format!(" as {}", code(&commit, Place::Cell));
    }
    format!(
        "| {} | {name} | {} | {} | {} | {work} | {reason} |\n",
        r.kind,
        code(&tip, Place::Cell),
        r.age,
        code(&r.author, Place::Cell)
    )
}

/// A command's preview, line by line, in a fenced block: the first lines open, the rest
/// inside `<details>`.
fn preview_lines(lines: &[String], budget: usize) -> Listing {
    let total = lines.len();
    // A fence longer than any backtick run in the output, so no line can close it.
    let longest = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`').map(str::len))
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let heading = format!("### What the preview lists ({total} lines)\n\n{fence}text\n");
    let close = format!("{fence}\n\n");
    let others = total.saturating_sub(TOP_ROWS);
    let rest_open = |rest: usize| {
        let which = if rest == others {
            format!("The other {others} lines")
        } else {
            format!("The next {rest} of the other {others} lines")
        };
        format!("<details>\n<summary>{which}</summary>\n\n{fence}text\n")
    };
    let rest_close = format!("{fence}\n\n</details>\n\n");
    let items: Vec<String> = lines.iter().map(|l| format!("{l}\n")).collect();
    let fixed = heading.len() + close.len();
    if total == 0 || fixed > budget {
        return Listing {
            text: String::new(),
            left_out: total,
            total,
        };
    }
    let wrap = rest_open(others.saturating_sub(1).max(1)).len() + rest_close.len();
    let (top, rest) = fit(&items, TOP_ROWS, budget, fixed, wrap);
    let mut text = heading;
    items[..top].iter().for_each(|l| text += l);
    text += &close;
    if rest > 0 {
        text += &rest_open(rest);
        items[top..top + rest].iter().for_each(|l| text += l);
        text += &rest_close;
    }
    Listing {
        text,
        left_out: total - top - rest,
        total,
    }
}

/// What the budget left out, and where to see it.
fn note(view: &ShowView, list: &Listing, dropped: &[&str], max_bytes: usize) -> String {
    let id = short_hex(&view.plan_id);
    let mut parts = Vec::new();
    if list.left_out > 0 {
        let what = if view.exec.is_some() {
            "lines of the preview".to_string()
        } else {
            view.resources.to_string()
        };
        parts.push(format!(
            "**{} of {} {what} are not listed here**",
            list.left_out, list.total
        ));
    }
    if !dropped.is_empty() {
        parts.push(format!("left out: {}", dropped.join(", ")));
    }
    format!(
        "> {}, to stay within `{max_bytes}` bytes. `guardctl show {id} --all` lists every one.\n\n",
        parts.join("; ")
    )
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
