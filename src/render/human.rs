//! Human text for a `ShowView`: summary, details, the table of branches, the extremes, side
//! effects and skipped branches. Only reads the view (already escaped), writes to any
//! `Write` so it is unit-testable into a buffer.

use super::view::{Row, ShowView};
use crate::ui::paint;
use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use std::io::{self, Write};

pub fn render(view: &ShowView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    let bold = |t: &str| paint(color, "1", t);
    writeln!(w, "{}", bold(&view.summary))?;
    writeln!(w)?;
    let who = |p: &super::view::PartyView| match (&p.principal, &p.key) {
        (Some(pr), Some(k)) => format!("{pr} ({k})"),
        (Some(pr), None) => pr.clone(),
        (None, Some(k)) => format!("unknown principal ({k})"),
        (None, None) => "unknown".to_string(),
    };
    let risk = if view.risk.reasons.is_empty() {
        view.risk.level.to_string()
    } else {
        format!("{} ({})", view.risk.level, view.risk.reasons.join(", "))
    };
    // What each approver or rejecter said, under the approvals row.
    let comments = view.approvals.comments.iter().map(|c| {
        (
            "comment",
            format!("{} ({}): {}", c.principal, c.decision, c.comment),
        )
    });
    let rows = [
        ("operation", {
            let on = match &view.remote {
                Some(remote) => format!(" on {remote} ({})", view.repository),
                None => String::new(),
            };
            // Tags are judged against every branch, not one base; a command has neither.
            let base = if view.resource == "tag" {
                "commits judged against every branch".to_string()
            } else {
                format!("base {}", view.base)
            };
            if view.exec.is_some() {
                format!("{} (the command below, gated by its preview)", view.operation)
            } else {
                format!(
                    "{}{on} ({base}; criteria: {})",
                    view.operation,
                    view.criteria.join(", ")
                )
            }
        }),
        ("inputs", view.selection.join(" ")),
        ("planner", who(&view.planner)),
        ("executor", who(&view.executor)),
        ("created", view.created_at.clone()),
        ("expires", view.expires_at.clone()),
        ("risk", risk),
        ("policy", policy_line(&view.policy)),
        ("approvals", approvals_line(&view.approvals)),
        ("part of", part_of_line(&view.approvals, view.resources)),
    ]
    .into_iter()
    .chain(comments)
    .chain([
        // The id the approval prompt asks for, in full.
        ("plan id", view.plan_id.clone()),
        ("plan hash", view.plan_hash.clone()),
    ]);
    for (k, v) in rows {
        if (k == "inputs" || k == "part of") && v.is_empty() {
            continue;
        }
        writeln!(w, "  {k:<10} {v}")?;
        // A remote plan changes exactly one repository: say which, by the URL itself.
        if k == "operation" && view.remote.is_some() {
            writeln!(
                w,
                "  {:<10} {} (the one URL apply observes and pushes to)",
                "changes", view.repository
            )?;
        }
    }

    if let Some(since) = &view.since {
        writeln!(w)?;
        let inputs = if since.inputs_changed {
            " (the inputs differ too)"
        } else {
            ""
        };
        writeln!(
            w,
            "{}",
            bold(&format!(
                "{} {} changed since plan {}{inputs}: {} added, {} removed, {} moved.",
                since.changed,
                view.resources,
                super::view::short_id(&since.old_plan_id),
                since.added,
                since.removed,
                since.moved
            ))
        )?;
        for c in &since.changes {
            let sign = match c.change {
                "added" => paint(color, "31", "+"),
                "removed" => paint(color, "32", "-"),
                _ => paint(color, "33", "~"),
            };
            let short = |o: &Option<String>| o.as_deref().map(|s| s.chars().take(12).collect::<String>());
            if view.exec.is_some() {
                writeln!(w, "  {sign} {}", c.name)?;
                continue;
            }
            let detail = match (short(&c.from), short(&c.to)) {
                (Some(f), Some(t)) => format!("{f} -> {t}"),
                (None, Some(t)) => format!("now planned at {t}"),
                (Some(f), None) => format!("no longer planned (was {f})"),
                (None, None) => String::new(),
            };
            writeln!(w, "  {sign} {:<32} {detail}", c.name)?;
        }
    }

    if !view.approvals.is_simple() {
        write_groups(&view.approvals, (view.resource, view.resources), color, w)?;
    }

    if let Some(x) = &view.exec {
        write_exec(x, color, w)?;
        writeln!(w)?;
        writeln!(w, "{}", bold("Side effects:"))?;
        for s in &view.side_effects {
            writeln!(w, "  - {s}")?;
        }
    } else if view.total_affected == 0 {
        writeln!(w)?;
        writeln!(w, "No changes. Nothing would be deleted.")?;
    } else {
        writeln!(w)?;
        let heading = match (view.rows.mode, view.rows.page) {
            ("page", Some(p)) => format!(
                "{} to delete ({}), page {p} of {}:",
                capitalized(view.resources),
                view.total_affected,
                view.rows.pages
            ),
            ("sample", _) => {
                let counts: Vec<String> = view
                    .counts_by_reason
                    .iter()
                    .map(|c| format!("{} {}", c.count, c.reason))
                    .collect();
                format!(
                    "{} to delete ({}: {}); a sample of {}:",
                    capitalized(view.resources),
                    view.total_affected,
                    counts.join(", "),
                    view.rows.shown
                )
            }
            _ => format!(
                "{} to delete ({}):",
                capitalized(view.resources),
                view.total_affected
            ),
        };
        writeln!(w, "{}", paint(color, "1;31", &heading))?;
        write_table(&view.resource.to_uppercase(), &view.rows.items, w)?;
        if view.rows.mode != "all" {
            writeln!(
                w,
                "  ({} of {} shown; `--all` lists every branch, `--page N` pages through {} pages of {})",
                view.rows.shown,
                view.total_affected,
                view.rows.pages,
                super::view::PAGE_SIZE
            )?;
        }

        writeln!(w)?;
        writeln!(w, "{}", bold("Extremes a reviewer must not miss:"))?;
        let list = |rows: &[Row], f: &dyn Fn(&Row) -> String| {
            if rows.is_empty() {
                "none".to_string()
            } else {
                rows.iter().map(f).collect::<Vec<_>>().join(", ")
            }
        };
        writeln!(
            w,
            "  most recently active: {}",
            list(&view.extremes.most_recent, &|r| format!(
                "{} ({} ago)",
                r.name, r.age
            ))
        )?;
        writeln!(
            w,
            "  oldest:               {}",
            list(&view.extremes.oldest, &|r| format!("{} ({} ago)", r.name, r.age))
        )?;
        writeln!(
            w,
            "  most commits not in base: {}",
            list(&view.extremes.most_unmerged, &|r| format!(
                "{} ({}{})",
                r.name,
                r.commits_not_in_base,
                if r.loses_work {
                    ", work lost"
                } else {
                    ", changes in base"
                }
            ))
        )?;
        if view.extremes.suspicious_names.is_empty() {
            writeln!(w, "  names to check:       none")?;
        } else {
            writeln!(w, "  {}", paint(color, "1;33", "names to check:"))?;
            for r in &view.extremes.suspicious_names {
                let why: Vec<&str> = r.flags.iter().map(|f| f.describe()).collect();
                writeln!(w, "    {} ({})", r.name, why.join(", "))?;
            }
        }

        writeln!(w)?;
        writeln!(w, "{}", bold("Side effects:"))?;
        for s in &view.side_effects {
            writeln!(w, "  - {s}")?;
        }
    }

    if view.skipped.total > 0 {
        writeln!(w)?;
        let counts: Vec<String> = view
            .skipped
            .counts
            .iter()
            .map(|c| format!("{} {}", c.count, c.reason))
            .collect();
        writeln!(
            w,
            "{}",
            bold(&format!(
                "Not planned ({}: {}):",
                view.skipped.total,
                counts.join(", ")
            ))
        )?;
        for s in &view.skipped.items {
            let flags = if s.flags.is_empty() {
                String::new()
            } else {
                format!(
                    " [{}]",
                    s.flags
                        .iter()
                        .map(|f| f.describe())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let detail = s.detail.as_deref().unwrap_or("");
            writeln!(w, "  {:<32} {:<13} {detail}{flags}", s.name, s.reason)?;
        }
        if view.skipped.items.len() < view.skipped.total {
            writeln!(
                w,
                "  ({} more; `--all` lists them)",
                view.skipped.total - view.skipped.items.len()
            )?;
        }
    }
    Ok(())
}

/// An exec plan: what runs, where, with what, and the manifest its preview printed.
fn write_exec(x: &super::view::ExecView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "{}", paint(color, "1;31", &format!("Command: {}", x.command)))?;
    writeln!(w, "  in          {}", x.workdir)?;
    writeln!(w, "  environment {} (nothing else)", x.env.join(", "))?;
    if !x.files.is_empty() {
        writeln!(w, "  files       {}", x.files.join(", "))?;
    }
    if let Some(b) = &x.before_image {
        writeln!(w, "  first       {b}")?;
    }
    writeln!(w, "  preview     {}", x.preview)?;
    if let Some(v) = &x.verify {
        writeln!(w, "  verify      {v}")?;
    }
    if !x.on_path.is_empty() {
        writeln!(w, "  on PATH     {}", x.on_path.join(", "))?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "{}",
        paint(
            color,
            "1",
            "Pinned (at apply, everything runs from a private copy of these):"
        )
    )?;
    for p in &x.pinned {
        writeln!(w, "  {p}")?;
    }
    writeln!(w, "  not pinned: {}", x.not_pinned)?;
    writeln!(w)?;
    writeln!(
        w,
        "Manifest: {} {} ({}), seen by the policy like branches.",
        x.resources,
        crate::plan::derive::plural(x.resources as u64, "resource", "resources"),
        if x.manifest_format == "json-lines" {
            "JSON lines, by id"
        } else {
            "one a line"
        }
    )?;
    let heading = match (x.mode, x.page) {
        ("page", Some(p)) => format!(
            "Preview output ({} lines), page {p} of {}:",
            x.total_lines, x.pages
        ),
        ("first", _) => format!(
            "Preview output ({} lines); the first {}:",
            x.total_lines,
            x.lines.len()
        ),
        _ => format!(
            "Preview output ({} {}):",
            x.total_lines,
            crate::plan::derive::plural(x.total_lines as u64, "line", "lines")
        ),
    };
    writeln!(w, "{}", paint(color, "1", &heading))?;
    for line in &x.lines {
        writeln!(w, "  {line}")?;
    }
    if x.mode == "first" {
        writeln!(
            w,
            "  ({} more; `--all` shows every line, `--page N` pages through {} pages)",
            x.total_lines - x.lines.len(),
            x.pages
        )?;
    }
    Ok(())
}

fn capitalized(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn write_table(name_header: &str, rows: &[Row], w: &mut dyn Write) -> io::Result<()> {
    let mut t = Table::new();
    // No wrapping and no truncation: a cut name could hide what a reviewer must see.
    t.load_style(presets::UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled);
    t.set_header([
        "KIND",
        name_header,
        "TIP",
        "AGE",
        "AUTHOR",
        "NOT IN BASE",
        "REASON",
        "SUBJECT",
    ]);
    for r in rows {
        let unmerged = if r.loses_work {
            format!("{} (lost)", r.commits_not_in_base)
        } else {
            r.commits_not_in_base.to_string()
        };
        let name = if r.flags.is_empty() {
            r.name.clone()
        } else {
            format!("{} (!)", r.name)
        };
        t.add_row([
            r.kind.to_string(),
            name,
            r.tip.chars().take(12).collect(),
            r.age.clone(),
            r.author.clone(),
            unmerged,
            r.reasons.join(", "),
            r.subject.clone(),
        ]);
    }
    for i in [3, 5] {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    for line in t.lines() {
        writeln!(w, "  {line}")?;
    }
    Ok(())
}

fn policy_line(p: &super::view::PolicyView) -> String {
    let status = match (p.status, &p.detail) {
        ("in_force", _) => "in force".to_string(),
        (_, Some(d)) => format!("{} ({d})", p.status.replace('_', " ").to_uppercase()),
        (s, None) => s.to_string(),
    };
    format!("{}, {status}", p.source)
}

/// "2 plans by alice totalling 4 branches": the planner's other live plans seen here.
fn part_of_line(a: &super::view::ApprovalsView, resources: &str) -> String {
    let Some(p) = &a.part_of else {
        return String::new();
    };
    let ids: Vec<String> = p.others.iter().map(|id| super::view::short_id(id)).collect();
    // Branches and tags together are neither "branches" nor "tags".
    let resources = if p.same_kind { resources } else { "resources" };
    let mut line = format!(
        "{} plans by {} totalling {} {resources} (also {})",
        p.plans,
        p.planner,
        p.resources,
        ids.join(", ")
    );
    if p.needs_bulk {
        line.push_str("; together they are bulk: the bulk group must approve this one too");
    }
    line
}

fn approvals_line(a: &super::view::ApprovalsView) -> String {
    let mut parts = vec![match a.groups.as_slice() {
        _ if a.not_needed => "none needed (the plan changes nothing)".to_string(),
        [g] if a.is_simple() => format!("{} of {} needed", g.approved_by.len(), g.required),
        groups => format!(
            "{} of {} review groups approved (below)",
            groups.iter().filter(|g| g.missing == 0).count(),
            groups.len()
        ),
    }];
    if !a.approved_by.is_empty() {
        parts.push(format!("approved by {}", a.approved_by.join(", ")));
    }
    if !a.rejected_by.is_empty() {
        parts.push(format!("REJECTED by {}", a.rejected_by.join(", ")));
    }
    if !a.not_counted.is_empty() {
        parts.push(format!("not counted: {}", a.not_counted.join(", ")));
    }
    if a.invalid > 0 {
        parts.push(format!("{} invalid", a.invalid));
    }
    parts.join("; ")
}

/// The review groups of a routed plan: what each covers, needs, has, and still lacks.
fn write_groups(
    a: &super::view::ApprovalsView,
    (one, many): (&str, &str),
    color: bool,
    w: &mut dyn Write,
) -> io::Result<()> {
    writeln!(w)?;
    writeln!(
        w,
        "{}",
        paint(color, "1", "Review groups (every one must be approved):")
    )?;
    let mut t = Table::new();
    t.load_style(presets::UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(["GROUP", "COVERS", "NEEDS", "APPROVED BY", "STILL NEEDED"]);
    for g in &a.groups {
        let covers = match g.kind {
            "bulk" => format!("all {} (bulk)", g.resources),
            "default" => format!("{} not routed", g.resources),
            _ => format!(
                "{} {}",
                g.resources,
                crate::plan::derive::plural(g.resources, one, many)
            ),
        };
        let from = if g.from.is_empty() {
            "anyone".to_string()
        } else {
            g.from.join(", ")
        };
        let still = match (g.missing, g.open_approvers()) {
            (0, _) => "-".to_string(),
            (n, None) => format!("{n} from any principal but the planner"),
            (n, Some(open)) => format!("{n} of: {}", open.join(", ")),
        };
        let approved = if g.approved_by.is_empty() {
            "-".to_string()
        } else {
            g.approved_by.join(", ")
        };
        t.add_row([
            g.name.clone(),
            covers,
            format!("{} from {from}", g.required),
            approved,
            still,
        ]);
    }
    for line in t.lines() {
        writeln!(w, "  {line}")?;
    }
    Ok(())
}

/// `guardctl inbox` as text.
pub fn render_inbox(v: &super::view::InboxView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    use crate::text::safe;
    let bold = |t: &str| paint(color, "1", t);
    let you = match (&v.principal, &v.key) {
        (Some(p), _) => format!("you approve as {}", safe(p)),
        (None, Some(k)) => format!("your key {k} approves as no principal"),
        (None, None) => "no signing key".to_string(),
    };
    let waiting = v.plans.len();
    writeln!(
        w,
        "{} plan{} waiting on remote `{}` ({}); {you}.",
        waiting,
        if waiting == 1 { "" } else { "s" },
        safe(&v.remote),
        safe(&v.url)
    )?;
    for p in &v.plans {
        let hex = p.plan_id.trim_start_matches("sha256:");
        writeln!(w)?;
        writeln!(
            w,
            "{}  {} by {}, expires in {}",
            bold(&format!("sha256:{}", &hex[..hex.len().min(12)])),
            p.operation,
            safe(p.planner.as_deref().unwrap_or("(no principal)")),
            crate::duration::humanize(p.expires_in_secs)
        )?;
        writeln!(w, "  {}", safe(&p.summary))?;
        if !p.rejected_by.is_empty() {
            let by: Vec<String> = p.rejected_by.iter().map(|r| safe(r)).collect();
            writeln!(w, "  rejected by {}", by.join(", "))?;
        }
        for n in &p.still_needed {
            let from = match &n.from {
                None => "any principal but the planner".to_string(),
                Some(f) => f.iter().map(|x| safe(x)).collect::<Vec<_>>().join(", "),
            };
            writeln!(w, "  needs: {} {} more (from {from})", safe(&n.group), n.missing)?;
        }
        if p.still_needed.is_empty() && p.rejected_by.is_empty() {
            writeln!(w, "  every approval it needs is in place")?;
        }
        match (&p.may_approve, &p.why_not) {
            (true, _) => writeln!(
                w,
                "  you may approve it: guardctl show {}; guardctl approve {} --publish",
                &hex[..hex.len().min(12)],
                &hex[..hex.len().min(12)]
            )?,
            (false, Some(why)) => writeln!(w, "  not for you: {why}")?,
            (false, None) => {}
        }
    }
    let l = &v.left_out;
    let parts: Vec<String> = [
        (l.consumed, "applied"),
        (l.expired, "expired"),
        (l.other_repository, "for another repository"),
        (l.invalid, "invalid"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !parts.is_empty() {
        writeln!(w)?;
        writeln!(w, "Not listed: {}.", parts.join(", "))?;
    }
    Ok(())
}
