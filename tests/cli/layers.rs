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

/// A source file without its comments and its `#[cfg(test)]` modules (tests may reach
/// anywhere; they are not the architecture).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod ") || n.trim_start().starts_with("pub mod "))
        {
            break;
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
