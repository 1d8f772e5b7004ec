//! The import graph between top-level modules, checked against docs/architecture.md: imports
//! never go up a layer, no cycle, every module in the layer list and in `lib.rs`'s map, and
//! only the listed mutators name the mutating repository handle (`RepoMut`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `name: a, b, c` lines of the ```layers block, top layer first.
fn layers() -> Vec<(String, Vec<String>)> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = doc.find("```layers\n").expect("a ```layers block") + "```layers\n".len();
    let block = &doc[start..start + doc[start..].find("```").unwrap()];
    block
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(name, mods)| {
            let mods = mods.split(',').map(|m| m.trim().to_string()).collect();
            (name.trim().to_string(), mods)
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A source file without its comments and its `#[cfg(test)]` modules, whatever their
/// visibility (tests may reach anywhere; they are not the architecture).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|n| n.split_whitespace().take(2).any(|w| w == "mod"))
        {
            // Skip the module to its closing brace (braces in its strings are balanced in
            // practice; an unbalanced one hides the rest of the file, never adds to it).
            let mut depth = 0i64;
            for line in lines.by_ref() {
                depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
                if depth <= 0 && (line.contains('}') || line.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        if !t.starts_with("//") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The top-level module of a file under src/ (`None` for lib.rs and main.rs).
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root().join("src")).unwrap();
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_str()?
        .trim_end_matches(".rs");
    (first != "lib" && first != "main").then(|| first.to_string())
}

/// Every top-level module that `text` names as `crate::<module>`.
fn imports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// module -> (imported module -> the files that import it); and module -> whether its code
/// names `RepoMut` (with the files).
struct Graph {
    edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    names_repo_mut: BTreeMap<String, BTreeSet<String>>,
}

fn graph() -> Graph {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut g = Graph {
        edges: BTreeMap::new(),
        names_repo_mut: BTreeMap::new(),
    };
    for file in files {
        let Some(module) = module_of(&file) else {
            continue;
        };
        let text = code(&file);
        let shown = file.strip_prefix(root()).unwrap().display().to_string();
        let entry = g.edges.entry(module.clone()).or_default();
        for target in imports(&text).into_iter().filter(|t| *t != module) {
            entry.entry(target).or_default().insert(shown.clone());
        }
        if text.contains("RepoMut") {
            g.names_repo_mut.entry(module).or_default().insert(shown);
        }
    }
    g
}

/// A cycle through `from`, if any (depth-first search for a path back to it).
fn cycle_through(
    edges: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    from: &str,
) -> Option<Vec<String>> {
    fn walk(
        edges: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        goal: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let last = path.last().unwrap().clone();
        for next in edges.get(&last).into_iter().flat_map(|m| m.keys()) {
            if next == goal {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(edges, goal, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_string()];
    walk(edges, from, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn no_cycle_between_top_level_modules() {
    let g = graph();
    let cycles: BTreeSet<String> = g
        .edges
        .keys()
        .filter_map(|m| cycle_through(&g.edges, m))
        .map(|c| c.join(" -> "))
        .collect();
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
}

#[test]
fn imports_never_go_up_a_layer() {
    let layers = layers();
    let rank: BTreeMap<&str, usize> = layers
        .iter()
        .filter(|(name, _)| name != "mutators")
        .enumerate()
        .flat_map(|(i, (_, mods))| mods.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let g = graph();
    let mut missing: Vec<&String> = g
        .edges
        .keys()
        .filter(|m| !rank.contains_key(m.as_str()))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "modules not in docs/architecture.md's layers: {missing:?}"
    );
    let mut upward = Vec::new();
    for (from, targets) in &g.edges {
        for (to, files) in targets {
            let (Some(a), Some(b)) = (rank.get(from.as_str()), rank.get(to.as_str())) else {
                continue;
            };
            // Layers are listed top first: a smaller rank is a higher layer.
            if b < a {
                upward.push(format!("{from} imports {to} (in {files:?})"));
            }
        }
    }
    assert!(upward.is_empty(), "imports that go up a layer: {upward:#?}");
}

#[test]
fn only_the_mutators_name_the_mutating_handle() {
    let mutators: BTreeSet<String> = layers()
        .into_iter()
        .find(|(name, _)| name == "mutators")
        .expect("a `mutators:` line")
        .1
        .into_iter()
        .collect();
    let g = graph();
    assert!(
        g.names_repo_mut.contains_key("execute"),
        "the check found no RepoMut at all: is the handle still called that?"
    );
    let others: Vec<_> = g
        .names_repo_mut
        .iter()
        .filter(|(m, _)| !mutators.contains(*m))
        .collect();
    assert!(
        others.is_empty(),
        "RepoMut named outside the mutators: {others:?}"
    );
}

#[test]
fn every_module_is_in_the_map_of_lib_rs() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let map = &lib[..lib.find("\npub mod ").unwrap()];
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';'))
        .collect();
    assert!(declared.len() > 10, "{declared:?}");
    let unmapped: Vec<&&str> = declared
        .iter()
        .filter(|m| !map.contains(&format!("[`{m}`]")))
        .collect();
    assert!(
        unmapped.is_empty(),
        "modules missing from lib.rs's map: {unmapped:?}"
    );
}

/// What in a file's code (comments and test modules left out) spawns a program without
/// `crate::process`: `std::process`'s command, child and pipe types, or the Unix extension
/// of its command. `std::process::ExitCode` and `std::process::id()` spawn nothing.
fn spawns_directly(text: &str) -> Vec<String> {
    // Each occurrence of `needle` not reached through `crate::process` (which re-exports the
    // pipe types a running child hands out).
    let direct = |needle: &str| {
        text.match_indices(needle)
            .filter(|(i, _)| !text[..*i].ends_with("crate::"))
            .map(|(i, _)| i + needle.len())
            .collect::<Vec<_>>()
    };
    let mut found = Vec::new();
    for needle in ["process::Command", "process::Child", "process::Stdio"] {
        if !direct(needle).is_empty() {
            found.push(needle.to_string());
        }
    }
    for needle in ["CommandExt", "tokio::process"] {
        if text.contains(needle) {
            found.push(needle.to_string());
        }
    }
    // `use std::process::{...}` groups.
    for start in direct("process::{") {
        let group = &text[start..start + text[start..].find('}').unwrap_or(text.len() - start)];
        for name in group.split(',').map(str::trim) {
            if name.starts_with("Command") || name.starts_with("Child") || name.starts_with("Stdio") {
                found.push(format!("process::{{{name}}}"));
            }
        }
    }
    found
}

#[test]
fn only_the_process_module_spawns_programs() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let process_rs = root().join("src/process.rs");
    assert!(
        !spawns_directly(&code(&process_rs)).is_empty(),
        "src/process.rs names no std::process::Command: is the check still looking for the right thing?"
    );
    let mut offenders = Vec::new();
    for file in files.iter().filter(|f| **f != process_rs) {
        let found = spawns_directly(&code(file));
        if !found.is_empty() {
            offenders.push(format!(
                "{}: {found:?}",
                file.strip_prefix(root()).unwrap().display()
            ));
        }
    }
    assert!(
        offenders.is_empty(),
        "run programs through crate::process::Process, not std::process: {offenders:#?}"
    );
}

#[test]
fn the_spawn_check_sees_each_way_of_naming_the_command() {
    for text in [
        "let c = std::process::Command::new(\"git\");",
        "use std::process::{Output, Command};",
        "use std::process::{Child, ChildStdin};",
        "use std::os::unix::process::CommandExt;",
        "use std::process;\nlet c = process::Command::new(\"git\");",
    ] {
        assert!(!spawns_directly(text).is_empty(), "missed: {text}");
    }
    for text in [
        "fn main() -> std::process::ExitCode {}",
        "let pid = std::process::id();",
        "use crate::process::{ChildStdin, Process};",
    ] {
        assert!(spawns_directly(text).is_empty(), "flagged: {text}");
    }
}

/// The code of every file under `src/` with the path it is shown by (test files, the
/// `tests.rs` a module includes under `#[cfg(test)]`, left out with the test modules).
fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| f.file_name().is_none_or(|n| n != "tests.rs"))
        .map(|f| {
            let shown = f.strip_prefix(root()).unwrap().display().to_string();
            (shown, code(&f))
        })
        .collect()
}

/// Whether `text` names a git library: libgit2's binding (`git2`) or gitoxide (`gix`), as a
/// path or an import, not as part of a longer word.
fn names_a_git_library(text: &str) -> bool {
    ["git2", "gix"].iter().any(|lib| {
        text.match_indices(lib).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = &text[i + lib.len()..];
            let word_start = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            word_start && (after.starts_with("::") || after.starts_with(';') || after.starts_with(" as "))
        })
    })
}

#[test]
fn git_libraries_are_reached_only_through_the_repo_module() {
    let sources = sources();
    assert!(
        sources
            .iter()
            .any(|(f, text)| f.starts_with("src/repo/") && names_a_git_library(text)),
        "nothing under src/repo/ names git2 or gix: is the check still looking for the right thing?"
    );
    // main.rs owns the process's start-up settings of libgit2 (before any thread exists).
    let outside: Vec<&String> = sources
        .iter()
        .filter(|(f, text)| !f.starts_with("src/repo/") && f != "src/main.rs" && names_a_git_library(text))
        .map(|(f, _)| f)
        .collect();
    assert!(
        outside.is_empty(),
        "git2/gix named outside src/repo/ (name objects by repo::Oid, add a method to repo): {outside:#?}"
    );
}

#[test]
fn the_git_library_check_sees_each_way_of_naming_one() {
    for text in [
        "let r = git2::Repository::open(p);",
        "use git2;",
        "use gix as g;",
        "fn f(o: gix::ObjectId) {}",
    ] {
        assert!(names_a_git_library(text), "missed: {text}");
    }
    for text in ["let digit2 = 1;", "fn f(o: repo::Oid) {}", "let gixy = 2;"] {
        assert!(!names_a_git_library(text), "flagged: {text}");
    }
}

/// The front ends: every CLI command and the MCP server. They build a request, call the
/// engine and render its outcome (docs/architecture.md).
fn front_ends() -> Vec<(String, String)> {
    sources()
        .into_iter()
        .filter(|(f, _)| f.starts_with("src/commands/") || f == "src/mcp.rs")
        .collect()
}

#[test]
fn front_ends_reach_no_store_signing_or_repository_directly() {
    let front_ends = front_ends();
    assert!(front_ends.len() > 10, "{front_ends:?}");
    let mut offenders = Vec::new();
    for (file, text) in &front_ends {
        let below: Vec<String> = imports(text)
            .into_iter()
            .filter(|m| ["store", "sign", "repo"].contains(&m.as_str()))
            .collect();
        if !below.is_empty() {
            offenders.push(format!("{file}: crate::{below:?}"));
        }
    }
    assert!(
        offenders.is_empty(),
        "front ends that reach past the engine (add what they need to engine/): {offenders:#?}"
    );
}

#[test]
fn the_mcp_server_builds_no_command_arguments_and_parses_no_json_text() {
    let text = code(&root().join("src/mcp.rs"));
    assert!(
        text.contains("engine::"),
        "src/mcp.rs names no engine function: is the check reading the right file?"
    );
    let mut found = Vec::new();
    if text.contains("commands::") {
        found.push("commands:: (a CLI command's types or functions)");
    }
    for parse in ["from_str", "from_slice", "from_reader"] {
        if text.contains(&format!("serde_json::{parse}")) || text.contains(&format!("{parse}(")) {
            found.push(parse);
        }
    }
    assert!(
        found.is_empty(),
        "the MCP server takes typed outcomes from the engine, never a CLI command's arguments or JSON text: {found:?}"
    );
}

#[test]
fn render_imports_nothing_from_ops() {
    let offenders: Vec<String> = sources()
        .into_iter()
        .filter(|(f, text)| f.starts_with("src/render") && imports(text).contains("ops"))
        .map(|(f, _)| f)
        .collect();
    assert!(
        offenders.is_empty(),
        "render/ renders views; what it needs from ops belongs in text/ or the view: {offenders:?}"
    );
}

/// Fields of `text` that hold text already rendered for one front end: a `String` or bytes
/// named for an output form.
fn prerendered_fields(text: &str) -> Vec<String> {
    let forms = ["human", "json", "text", "rendered", "output"];
    let types = ["String", "Vec<u8>", "Option<String>"];
    text.lines()
        .map(str::trim)
        .map(|l| l.strip_prefix("pub ").unwrap_or(l))
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, ty)| forms.contains(&name.trim()) && types.contains(&ty.trim().trim_end_matches(',')))
        .map(|(name, ty)| format!("{}: {}", name.trim(), ty.trim().trim_end_matches(',')))
        .collect()
}

#[test]
fn engine_outcomes_hold_no_pre_rendered_text() {
    let engine: Vec<(String, String)> = sources()
        .into_iter()
        .filter(|(f, _)| f.starts_with("src/engine/"))
        .collect();
    assert!(engine.len() > 5, "{engine:?}");
    let offenders: Vec<String> = engine
        .iter()
        .flat_map(|(f, text)| {
            prerendered_fields(text)
                .into_iter()
                .map(move |x| format!("{f}: {x}"))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "an outcome carries data; the front end renders it (render/): {offenders:#?}"
    );
}

#[test]
fn the_pre_rendered_check_sees_a_rendered_field() {
    assert_eq!(
        prerendered_fields("pub struct Applied {\n    pub human: String,\n    json: String,\n}"),
        ["human: String", "json: String"]
    );
    assert!(
        prerendered_fields("pub struct A {\n    pub receipt: Receipt,\n    pub id: String,\n}").is_empty()
    );
}
