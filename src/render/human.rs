//! Human text for a `ShowView`: summary, details, the table of branches, the extremes, side
//! effects and skipped branches. Only reads the view (already escaped), writes to any
//! `Write` so it is unit-testable into a buffer.

use super::view::{Row, ShowView};
use crate::ui::paint;
use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use std::io::{self, Write};

/// The whole text of `view`, section by section.
pub fn render(view: &ShowView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    header(view, color, w)?;
    if let Some(since) = &view.since {
        since_section(view, since, color, w)?;
    }
    if !view.approvals.is_simple() {
        write_groups(&view.approvals, (view.resource, view.resources), color, w)?;
    }
    if let Some(x) = &view.exec {
        write_exec(x, color, w)?;
        side_effects(&view.side_effects, color, w)?;
    } else if view.total_affected == 0 {
        writeln!(w)?;
        writeln!(w, "No changes. Nothing would be deleted.")?;
    } else {
        affected(view, color, w)?;
        extremes(view, color, w)?;
        side_effects(&view.side_effects, color, w)?;
    }
    skipped(&view.skipped, color, w)
}

/// The summary line and the plan's details, one `key value` row each.
fn header(view: &ShowView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "{}", paint(color, "1", &view.summary))?;
    writeln!(w)?;
    // What each approver or rejecter said, under the approvals row.
    let comments = view.approvals.comments.iter().map(|c| {
        (
            "comment",
            format!("{} ({}): {}", c.principal, c.decision, c.comment),
        )
    });
    let rows = [
        ("operation", operation_line(view)),
        ("inputs", view.selection.join(" ")),
        ("planner", who(&view.planner)),
        ("executor", who(&view.executor)),
        ("created", view.created_at.clone()),
        ("expires", view.expires_at.clone()),
        ("risk", risk_line(&view.risk)),
        ("policy", policy_line(&view.policy)),
        ("consumed", consumed_line(view)),
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
        if (k == "inputs" || k == "part of" || k == "consumed") && v.is_empty() {
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
    Ok(())
}

fn who(p: &super::view::PartyView) -> String {
    match (&p.principal, &p.key) {
        (Some(pr), Some(k)) => format!("{pr} ({k})"),
        (Some(pr), None) => pr.clone(),
        (None, Some(k)) => format!("unknown principal ({k})"),
        (None, None) => "unknown".to_string(),
    }
}

fn risk_line(risk: &super::view::RiskView) -> String {
    if risk.reasons.is_empty() {
        risk.level.to_string()
    } else {
        format!("{} ({})", risk.level, risk.reasons.join(", "))
    }
}

/// What the plan does, on what, judged how.
fn operation_line(view: &ShowView) -> String {
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
}

/// What changed since an earlier plan (`show --since`).
fn since_section(
    view: &ShowView,
    since: &super::since::SinceView,
    color: bool,
    w: &mut dyn Write,
) -> io::Result<()> {
    writeln!(w)?;
    let inputs = if since.inputs_changed {
        " (the inputs differ too)"
    } else {
        ""
    };
    writeln!(
        w,
        "{}",
        paint(
            color,
            "1",
            &format!(
                "{} {} changed since plan {}{inputs}: {} added, {} removed, {} moved.",
                since.changed,
                view.resources,
                super::view::short_id(&since.old_plan_id),
                since.added,
                since.removed,
                since.moved
            )
        )
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
    Ok(())
}

/// The heading and table of what would be deleted, and how much of it is shown.
fn affected(view: &ShowView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    let heading = match (view.rows.mode, view.rows.page) {
        ("page", Some(p)) => format!(
            "{} to delete ({}), page {p} of {}:",
            capitalized(view.resources),
            view.total_affected,
            view.rows.pages
        ),
        ("sample", _) => {
            let counts = super::view::Count::phrases(&view.counts_by_reason);
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
    squash_evidence(&view.rows.items, w)
}

/// Where each shown squash-merged branch's change landed: the base commit a reviewer can
/// open (`git show <id>`) to check it, outside the table so that long subjects cost no width.
fn squash_evidence(rows: &[Row], w: &mut dyn Write) -> io::Result<()> {
    let squashed: Vec<(&Row, &super::view::SquashedView)> = rows
        .iter()
        .filter_map(|r| Some((r, r.squashed_into.as_ref()?)))
        .collect();
    if squashed.is_empty() {
        return Ok(());
    }
    writeln!(w, "  Squash-merged: the base commit that carries each change:")?;
    let width = squashed
        .iter()
        .map(|(r, _)| r.name.chars().count())
        .max()
        .unwrap_or(0);
    for (r, s) in squashed {
        let id: String = s.commit.chars().take(12).collect();
        writeln!(w, "    {:<width$}  {id}  {}", r.name, s.subject)?;
    }
    Ok(())
}

/// The extremes a reviewer must not miss, whatever part of the table is shown.
fn extremes(view: &ShowView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "{}", paint(color, "1", "Extremes a reviewer must not miss:"))?;
    let list = |rows: &[Row], f: &dyn Fn(&Row) -> String| {
        if rows.is_empty() {
            "none".to_string()
        } else {
            rows.iter().map(f).collect::<Vec<_>>().join(", ")
        }
    };
    let x = &view.extremes;
    writeln!(
        w,
        "  most recently active: {}",
        list(&x.most_recent, &|r| format!("{} ({} ago)", r.name, r.age))
    )?;
    writeln!(
        w,
        "  oldest:               {}",
        list(&x.oldest, &|r| format!("{} ({} ago)", r.name, r.age))
    )?;
    writeln!(
        w,
        "  most commits not in base: {}",
        list(&x.most_unmerged, &|r| format!(
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
    if x.suspicious_names.is_empty() {
        writeln!(w, "  names to check:       none")?;
    } else {
        writeln!(w, "  {}", paint(color, "1;33", "names to check:"))?;
        for r in &x.suspicious_names {
            let why: Vec<&str> = r.flags.iter().map(|f| f.describe()).collect();
            writeln!(w, "    {} ({})", r.name, why.join(", "))?;
        }
    }
    Ok(())
}

fn side_effects(effects: &[String], color: bool, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "{}", paint(color, "1", "Side effects:"))?;
    for s in effects {
        writeln!(w, "  - {s}")?;
    }
    Ok(())
}

/// What the plan left out, and why (nothing when it left nothing out).
fn skipped(skipped: &super::view::SkippedView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    if skipped.total == 0 {
        return Ok(());
    }
    writeln!(w)?;
    let counts = super::view::Count::phrases(&skipped.counts);
    writeln!(
        w,
        "{}",
        paint(
            color,
            "1",
            &format!("Not planned ({}: {}):", skipped.total, counts.join(", "))
        )
    )?;
    for s in &skipped.items {
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
    if skipped.items.len() < skipped.total {
        writeln!(
            w,
            "  ({} more; `--all` lists them)",
            skipped.total - skipped.items.len()
        )?;
    }
    Ok(())
}

/// An exec plan: what runs, where, with what, and the manifest its preview printed.
fn write_exec(x: &super::view::ExecView, color: bool, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "{}", paint(color, "1;31", &format!("Command: {}", x.command)))?;
    writeln!(w, "  in          {}", x.workdir)?;
    writeln!(w, "  environment {} (nothing else)", x.env.join(", "))?;
    if !x.path.is_empty() {
        writeln!(w, "  PATH        {}", x.path.join(":"))?;
    }
    if x.content_files > 0 {
        writeln!(
            w,
            "  work tree   {} {} under {} pinned by content (tracked, or not ignored): any change refuses apply",
            x.content_files,
            crate::plan::derive::plural(x.content_files as u64, "file", "files"),
            x.workdir
        )?;
    }
    if !x.files.is_empty() {
        writeln!(w, "  files       {}", x.files.join(", "))?;
    }
    if let Some(b) = &x.before_image {
        writeln!(w, "  first       {b}")?;
    }
    if x.trial {
        writeln!(w, "  manifest    {}", x.preview)?;
    } else {
        writeln!(w, "  preview     {}", x.preview)?;
    }
    if x.preview_sandbox == "unsandboxed" {
        let warning = "  WARNING     the preview ran UNSANDBOXED, with the planner's files, keys and network \
                       (their system could not sandbox it and the trusted policy allows that)";
        writeln!(w, "{}", paint(color, "1;31", warning))?;
    } else {
        writeln!(
            w,
            "  sandboxed   preview and verify run without keys, agents or home directory; the work tree read-only"
        )?;
    }
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
        // A trial that changed the gate itself (the hook's settings, guardctl's trust roots,
        // policy or binary, git's hooks or config): said in red.
        if x.trial && line.starts_with("gate") {
            writeln!(w, "  {}", paint(color, "1;31", line))?;
        } else {
            writeln!(w, "  {line}")?;
        }
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

/// The width the resource table must fit: `$COLUMNS`, else the terminal's when standard
/// output is one; `None` (no limit) when written elsewhere.
fn table_width() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
    {
        return Some(n);
    }
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
}

/// `text` cut to `max` characters, the cut shown by `…`.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// The resource table, fitted to [`table_width`]: subjects are cut first, then authors'
/// names and emails (never below a few characters); a resource's name, tip and reason never
/// are (a cut name could hide what a reviewer must see).
fn write_table(name_header: &str, rows: &[Row], w: &mut dyn Write) -> io::Result<()> {
    // Measured, not computed: each pass cuts the widest cuttable column by what is still over.
    let longest = |f: fn(&Row) -> &str| rows.iter().map(|r| f(r).chars().count()).max().unwrap_or(0);
    let (mut subject_max, mut author_max) = (longest(|r| &r.subject), longest(|r| &r.author));
    let limit = table_width();
    let lines = loop {
        let lines: Vec<String> = table(name_header, rows, subject_max, author_max)
            .lines()
            .collect();
        let wide = lines.iter().map(|l| l.chars().count() + 2).max().unwrap_or(0);
        let over = match limit {
            Some(limit) if wide > limit => wide - limit,
            _ => break lines,
        };
        if subject_max > MIN_CUT {
            subject_max = subject_max.saturating_sub(over).max(MIN_CUT);
        } else if author_max > MIN_CUT {
            author_max = author_max.saturating_sub(over).max(MIN_CUT);
        } else {
            break lines;
        }
    };
    for line in lines {
        writeln!(w, "  {line}")?;
    }
    Ok(())
}

/// The fewest characters a cut subject or author keeps.
const MIN_CUT: usize = 12;

/// The resource table with subjects and authors cut to at most `subject_max` and
/// `author_max` characters.
fn table(name_header: &str, rows: &[Row], subject_max: usize, author_max: usize) -> Table {
    let mut t = Table::new();
    // No wrapping: comfy-table's own arrangement would cut or wrap any column, names included.
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
            cut(&r.author, author_max),
            unmerged,
            r.reasons.join(", "),
            cut(&r.subject, subject_max),
        ]);
    }
    for i in [3, 5] {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Where a plan bound to a remote is consumed (empty: a local plan, or unknown here).
fn consumed_line(view: &ShowView) -> String {
    match view.consumed_on {
        Some("remote") => "on the remote (refs/guardctl/consumed/<id>): one apply across every clone".into(),
        Some(_) if view.exec.is_some() => "in the applying clone only (policy: [remote] consumed_marker = false): every clone can run the command once".into(),
        Some(_) => "in the applying clone only (policy: [remote] consumed_marker = false): a second clone's apply finds the refs gone (drift)".into(),
        None => String::new(),
    }
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
    if !a.blocked_by.is_empty() {
        parts.push(format!(
            "BLOCKED (taken for a veto) by {}",
            a.blocked_by.join("; ")
        ));
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
        // Escaped already (a published plan is loaded, so its summary is `derive::summary`'s).
        writeln!(w, "  {}", p.summary)?;
        if !p.rejected_by.is_empty() {
            let by: Vec<String> = p.rejected_by.iter().map(|r| safe(r)).collect();
            writeln!(w, "  rejected by {}", by.join(", "))?;
        }
        for b in &p.approvals.blocked_by {
            writeln!(w, "  blocked (taken for a veto): {b}")?;
        }
        for n in &p.still_needed {
            let from = match &n.from {
                None => "any principal but the planner".to_string(),
                Some(f) => f.iter().map(|x| safe(x)).collect::<Vec<_>>().join(", "),
            };
            writeln!(w, "  needs: {} {} more (from {from})", safe(&n.group), n.missing)?;
        }
        if p.still_needed.is_empty() && p.rejected_by.is_empty() && p.approvals.blocked_by.is_empty() {
            writeln!(w, "  every approval it needs is in place")?;
        }
        match (&p.may_approve, &p.why_not) {
            (true, _) => writeln!(
                w,
                "  you may approve it: guardctl show {}; guardctl approve {} (published back to the remote)",
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
        (l.empty, "changing nothing"),
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

#[cfg(test)]
mod tests {
    use super::super::since::{Change, SinceView};
    use super::super::view::*;
    use super::*;
    use crate::text::Flag;

    fn row(name: &str, age: &str, unmerged: u64) -> Row {
        Row {
            kind: "branch",
            name: name.into(),
            tip: "0123456789abcdef0123".into(),
            last_commit: "2026-01-01T00:00:00Z".into(),
            age: age.into(),
            author: "a@x".into(),
            subject: "fix it".into(),
            commits_not_in_base: unmerged,
            loses_work: unmerged > 0,
            reasons: vec!["merged"],
            flags: vec![],
            squashed_into: None,
        }
    }

    /// A two-branch stale-branches plan, as simple as views come.
    fn view() -> ShowView {
        ShowView {
            plan_id: "sha256:abc".into(),
            plan_hash: "sha256:def".into(),
            summary: "Plan sha256:abc…: delete 2 branches.".into(),
            operation: "stale-branches".into(),
            resource: "branch",
            resources: "branches",
            repository: "/r".into(),
            remote: None,
            base: "refs/heads/main".into(),
            criteria: vec!["merged"],
            selection: vec![],
            planner: PartyView {
                principal: Some("alice".into()),
                key: Some("SHA256:a".into()),
            },
            executor: PartyView {
                principal: None,
                key: None,
            },
            created_at: "2026-06-01T12:00:00Z".into(),
            expires_at: "2026-06-01T13:00:00Z".into(),
            expires_in_secs: 3600,
            expired: false,
            approvals: ApprovalsView {
                groups: vec![GroupView {
                    name: "default".into(),
                    kind: "default",
                    resources: 2,
                    required: 1,
                    from: vec![],
                    approvers: vec![],
                    approved_by: vec![],
                    missing: 1,
                }],
                ..Default::default()
            },
            policy: PolicyView {
                source: "built-in".into(),
                hash: "sha256:p".into(),
                status: "in_force",
                detail: None,
            },
            risk: RiskView {
                level: "low",
                reasons: vec![],
            },
            total_affected: 2,
            counts_by_reason: vec![],
            rows: RowsView {
                mode: "all",
                page: None,
                pages: 1,
                shown: 2,
                items: vec![row("old", "90d", 0), row("new", "1d", 0)],
            },
            extremes: Extremes {
                most_recent: vec![row("new", "1d", 0)],
                oldest: vec![row("old", "90d", 0)],
                most_unmerged: vec![],
                suspicious_names: vec![],
            },
            side_effects: vec!["Deleting 2 branches also deletes their reflogs.".into()],
            before_image: String::new(),
            skipped: SkippedView {
                total: 0,
                counts: vec![],
                items: vec![],
            },
            exec: None,
            since: None,
            consumed_on: None,
        }
    }

    fn text(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
        let mut buf = Vec::new();
        f(&mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn the_header_lists_the_details_and_leaves_out_empty_rows() {
        let v = view();
        let out = text(|w| header(&v, false, w));
        assert_eq!(
            out,
            "Plan sha256:abc…: delete 2 branches.\n\
             \n  operation  stale-branches (base refs/heads/main; criteria: merged)\
             \n  planner    alice (SHA256:a)\
             \n  executor   unknown\
             \n  created    2026-06-01T12:00:00Z\
             \n  expires    2026-06-01T13:00:00Z\
             \n  risk       low\
             \n  policy     built-in, in force\
             \n  approvals  0 of 1 needed\
             \n  plan id    sha256:abc\
             \n  plan hash  sha256:def\n"
        );
    }

    #[test]
    fn the_header_of_a_remote_plan_names_the_url_it_changes_and_comments_follow_approvals() {
        let mut v = view();
        v.remote = Some("origin".into());
        v.repository = "https://example.com/r.git".into();
        v.selection = vec!["--match topic/*".into()];
        v.approvals.rejected_by = vec!["bob".into()];
        v.approvals.comments = vec![CommentView {
            principal: "bob".into(),
            decision: "reject",
            comment: "not yet".into(),
        }];
        let out = text(|w| header(&v, false, w));
        assert!(out.contains(
            "  operation  stale-branches on origin (https://example.com/r.git) (base refs/heads/main; criteria: merged)\n\
             \x20 changes    https://example.com/r.git (the one URL apply observes and pushes to)\n\
             \x20 inputs     --match topic/*\n"
        ), "{out}");
        assert!(
            out.contains(
                "  approvals  0 of 1 needed; REJECTED by bob\n  comment    bob (reject): not yet\n  plan id"
            ),
            "{out}"
        );
    }

    #[test]
    fn color_is_only_ever_added_when_asked_for() {
        let v = view();
        assert!(!text(|w| render(&v, false, w)).contains('\u{1b}'));
        let colored = text(|w| header(&v, true, w));
        assert!(colored.starts_with("\u{1b}[1mPlan sha256:abc…"), "{colored:?}");
    }

    #[test]
    fn the_table_heading_says_how_much_is_shown() {
        let mut v = view();
        let out = text(|w| affected(&v, false, w));
        assert!(out.starts_with("\nBranches to delete (2):\n"), "{out}");
        assert!(
            out.contains(
                "  │ branch   old      0123456789ab   90d   a@x                0   merged   fix it  │\n"
            ),
            "{out}"
        );
        assert!(!out.contains("shown;"), "{out}");
        v.total_affected = 120;
        v.rows.mode = "sample";
        v.rows.pages = 3;
        v.counts_by_reason = vec![Count {
            reason: "merged",
            count: 120,
        }];
        let out = text(|w| affected(&v, false, w));
        assert!(
            out.starts_with("\nBranches to delete (120: 120 merged); a sample of 2:\n"),
            "{out}"
        );
        assert!(
            out.ends_with(
                "  (2 of 120 shown; `--all` lists every branch, `--page N` pages through 3 pages of 50)\n"
            ),
            "{out}"
        );
        v.rows.mode = "page";
        v.rows.page = Some(3);
        let out = text(|w| affected(&v, false, w));
        assert!(
            out.starts_with("\nBranches to delete (120), page 3 of 3:\n"),
            "{out}"
        );
    }

    #[test]
    fn extremes_say_none_or_list_each_with_why() {
        let mut v = view();
        assert_eq!(
            text(|w| extremes(&v, false, w)),
            "\nExtremes a reviewer must not miss:\
             \n  most recently active: new (1d ago)\
             \n  oldest:               old (90d ago)\
             \n  most commits not in base: none\
             \n  names to check:       none\n"
        );
        v.extremes.most_unmerged = vec![row("wip", "3d", 4)];
        let mut odd = row("mаin", "2d", 0);
        odd.flags = vec![Flag::NonAscii, Flag::LooksProtected];
        v.extremes.suspicious_names = vec![odd];
        let out = text(|w| extremes(&v, false, w));
        assert!(
            out.contains("  most commits not in base: wip (4, work lost)\n"),
            "{out}"
        );
        assert!(
            out.ends_with("  names to check:\n    mаin (non-ASCII, looks like a protected name)\n"),
            "{out}"
        );
    }

    #[test]
    fn side_effects_are_a_list() {
        assert_eq!(
            text(|w| side_effects(&["one".into(), "two".into()], false, w)),
            "\nSide effects:\n  - one\n  - two\n"
        );
    }

    #[test]
    fn skipped_says_nothing_when_nothing_was_left_out_and_counts_the_rest() {
        let v = view();
        assert_eq!(text(|w| skipped(&v.skipped, false, w)), "");
        let s = SkippedView {
            total: 3,
            counts: vec![Count {
                reason: "protected",
                count: 3,
            }],
            items: vec![SkippedRow {
                name: "main".into(),
                reason: "protected",
                detail: Some("matches --protect".into()),
                flags: vec![Flag::MixedScripts],
            }],
        };
        assert_eq!(
            text(|w| skipped(&s, false, w)),
            format!(
                "\nNot planned (3: 3 protected):\n  {:<32} {:<13} matches --protect [mixed scripts]\n  (2 more; `--all` lists them)\n",
                "main", "protected"
            )
        );
    }

    #[test]
    fn since_lists_each_change_with_its_commits() {
        let v = view();
        let since = SinceView {
            old_plan_id: "sha256:0123456789abcdef".into(),
            inputs_changed: true,
            changed: 2,
            added: 1,
            removed: 0,
            moved: 1,
            changes: vec![
                Change {
                    change: "added",
                    name: "x".into(),
                    from: None,
                    to: Some("aaaaaaaaaaaaaaaa".into()),
                },
                Change {
                    change: "moved",
                    name: "y".into(),
                    from: Some("bbbbbbbbbbbbbbbb".into()),
                    to: Some("cccccccccccccccc".into()),
                },
            ],
        };
        assert_eq!(
            text(|w| since_section(&v, &since, false, w)),
            format!(
                "\n2 branches changed since plan sha256:0123456789ab… (the inputs differ too): 1 added, 0 removed, 1 moved.\n  + {:<32} now planned at aaaaaaaaaaaa\n  ~ {:<32} bbbbbbbbbbbb -> cccccccccccc\n",
                "x", "y"
            )
        );
    }

    #[test]
    fn a_plan_without_changes_says_so_instead_of_a_table() {
        let mut v = view();
        v.total_affected = 0;
        let out = text(|w| render(&v, false, w));
        assert!(
            out.ends_with("  plan hash  sha256:def\n\nNo changes. Nothing would be deleted.\n"),
            "{out}"
        );
        assert!(!out.contains("Side effects"), "{out}");
    }

    #[test]
    fn routed_approvals_get_the_review_group_table() {
        let mut v = view();
        v.approvals.groups[0].kind = "route";
        v.approvals.groups[0].name = "release".into();
        v.approvals.groups[0].from = vec!["release".into()];
        v.approvals.groups[0].approvers = vec!["rel@x".into(), "ops@x".into()];
        v.approvals.groups[0].approved_by = vec!["ops@x".into()];
        let out = text(|w| render(&v, false, w));
        assert!(
            out.contains("  approvals  0 of 1 review groups approved (below)\n"),
            "{out}"
        );
        assert!(
            out.contains("Review groups (every one must be approved):"),
            "{out}"
        );
        assert!(
            out.contains("  │ release   2 branches   1 from release   ops@x         1 of: rel@x  │\n"),
            "{out}"
        );
    }

    #[test]
    fn an_exec_plan_shows_the_command_what_is_pinned_and_the_manifest() {
        let x = ExecView {
            command: "rm -r build".into(),
            workdir: ".".into(),
            env: vec!["PATH".into()],
            path: vec!["/usr/bin".into(), "/bin".into()],
            content_files: 0,
            files: vec![],
            preview: "ls build".into(),
            trial: false,
            preview_sandbox: "sandboxed",
            before_image: None,
            verify: None,
            pinned: vec!["/bin/rm sha256:aaaa [path]".into()],
            on_path: vec!["rm -> /bin/rm".into()],
            not_pinned: NOT_PINNED,
            resources: 60,
            manifest_format: "lines",
            total_lines: 60,
            mode: "first",
            page: None,
            pages: 2,
            lines: vec!["a".into(), "b".into()],
        };
        let out = text(|w| write_exec(&x, false, w));
        assert!(out.starts_with("\nCommand: rm -r build\n  in          .\n  environment PATH (nothing else)\n  PATH        /usr/bin:/bin\n  preview     ls build\n  sandboxed   preview and verify run without keys, agents or home directory; the work tree read-only\n  on PATH     rm -> /bin/rm\n"), "{out}");
        let unsandboxed = ExecView {
            preview_sandbox: "unsandboxed",
            ..x.clone()
        };
        let warned = text(|w| write_exec(&unsandboxed, false, w));
        assert!(
            warned.contains("  WARNING     the preview ran UNSANDBOXED"),
            "{warned}"
        );
        assert!(!warned.contains("  sandboxed   "), "{warned}");
        assert!(
            out.contains("  /bin/rm sha256:aaaa [path]\n  not pinned: anything the command calls"),
            "{out}"
        );
        assert!(
            out.contains("Manifest: 60 resources (one a line), seen by the policy like branches.\n"),
            "{out}"
        );
        assert!(out.ends_with("Preview output (60 lines); the first 2:\n  a\n  b\n  (58 more; `--all` shows every line, `--page N` pages through 2 pages)\n"), "{out}");
    }
}
