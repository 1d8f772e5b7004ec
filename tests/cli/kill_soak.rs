//! A kill anywhere is recovered without a person (issue 35): `apply` and `rollback` are
//! SIGKILLed at random moments across their measured run, either guardctl alone (its git
//! child lives on and finishes or aborts) or its whole process group, git included, as a CI
//! runner's timeout or a closed terminal does; a quarter of the apply kills are aimed at the
//! moment git commits (a count after the plan is consumed), where git's commit can be split.
//! After each kill `recover` must succeed, and the repository must be in one of the two clean
//! end states with no `.lock` file left behind.
//!
//! 20 rounds in the default run; `GUARDCTL_SOAK=1000` for the full soak (the CHANGELOG's
//! counts come from it).

use crate::fixtures::{Lcg, Run, TestEnv, backed_up, git_out, run};
use crate::recover::{alice, planned_and_approved};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Who a kill reaches.
#[derive(Clone, Copy, Debug)]
enum Victim {
    /// guardctl's process only: its git child outlives it.
    Guardctl,
    /// guardctl's process group: guardctl and every git it started, mid-commit or not.
    Group,
    /// guardctl's process group, `after_us` microseconds after the plan was consumed, the
    /// moment git is told to commit: the narrow window where git's commit is split (a kill
    /// at a random moment of the whole apply rarely lands there).
    GroupInCommit { after_us: u64 },
}

/// What one killed command left, once `recover` ran.
struct Kill {
    /// How long the command ran (until it was killed or ended), in milliseconds.
    took: u64,
    /// Whether the kill landed while the command still ran.
    mid_run: bool,
    /// `recover`'s run: it must have exited 0.
    recover: Run,
}

/// Run `guardctl <command> plan.json` as Alice in `copy` in a process group of its own, kill
/// `victim` after `delay_ms` (`None`: let it finish), then run `guardctl recover` there.
fn kill_then_recover(
    template: &TestEnv,
    copy: &Path,
    command: &str,
    delay_ms: Option<u64>,
    victim: Victim,
) -> Kill {
    let dir = copy.to_str().unwrap();
    let mut c = alice(template, None, &["-C", dir, command, "plan.json"]);
    if let Victim::GroupInCommit { after_us } = victim {
        // From inside, at the step: a detached shell sleeps, then kills guardctl's group
        // (its own included). `$PPID` is guardctl, the group's leader.
        // A count in the shell, not `sleep`, which alone takes a millisecond to start while
        // git's commit takes about that long: a step of the count is about a microsecond.
        let pause = format!("i=0; while [ $i -lt {after_us} ]; do i=$((i+1)); done; ");
        c.env("GUARDCTL_TEST_EXEC_AT", "consumed").env(
            "GUARDCTL_TEST_EXEC",
            format!("({pause}kill -KILL -$PPID) >/dev/null 2>&1 </dev/null &"),
        );
    }
    c.current_dir(copy)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let started = std::time::Instant::now();
    let mut child = c.spawn().unwrap();
    let mut mid_run = false;
    if let Some(delay_ms) = delay_ms {
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        mid_run = child.try_wait().unwrap().is_none();
        let target = match victim {
            Victim::Guardctl => child.id().to_string(),
            // The group's id is guardctl's pid (`process_group(0)`); a negative pid names it.
            Victim::Group | Victim::GroupInCommit { .. } => format!("-{}", child.id()),
        };
        let _ = Command::new("kill").args(["-9", "--", &target]).status();
    }
    let status = child.wait().unwrap();
    if matches!(victim, Victim::GroupInCommit { .. }) {
        use std::os::unix::process::ExitStatusExt;
        mid_run = status.signal() == Some(9);
    }
    let took = started.elapsed().as_millis() as u64;
    let mut rec = alice(template, None, &["-C", dir, "recover"]);
    rec.current_dir(copy);
    Kill {
        took,
        mid_run,
        recover: run(rec),
    }
}

/// Run guardctl as `user` in `copy`, with `template`'s keys and allowed signers.
fn in_copy(template: &TestEnv, copy: &Path, user: &str, args: &[&str]) -> Run {
    let mut c = template.command();
    c.current_dir(copy)
        .arg("--key")
        .arg(template.key(user))
        .arg("--allowed-signers")
        .arg(template.allowed_signers())
        .args(args);
    run(c)
}

/// Every `.lock` file under the repository's git directory.
fn locks(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            locks(&path, out);
        } else if path.extension().is_some_and(|e| e == "lock") {
            out.push(path);
        }
    }
}

/// The end state of `repo`: `Ok(true)` applied (every planned branch gone and kept by a
/// backup), `Ok(false)` untouched (every planned branch at its planned commit, and no backup
/// unless `rolled_back`: a rollback keeps it), `Err` anything else, said plainly.
fn end_state(repo: &Path, oids: &BTreeMap<String, String>, rolled_back: bool) -> Result<bool, String> {
    let mut left = Vec::new();
    locks(&repo.join(".git"), &mut left);
    if !left.is_empty() {
        return Err(format!("lock files left: {left:?}"));
    }
    let heads = git_out(
        repo,
        &["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"],
    );
    let kept = backed_up(repo);
    let mut present = 0;
    for (r, o) in oids {
        if heads.lines().any(|l| l == format!("{r} {o}")) {
            present += 1;
        } else if !kept.contains(o) {
            return Err(format!("{r} lost: deleted without a backup"));
        }
    }
    let backups = git_out(repo, &["for-each-ref", "refs/guardctl/backup"]);
    match present {
        0 => Ok(true),
        n if n == oids.len() && (rolled_back || backups.is_empty()) => Ok(false),
        n if n == oids.len() => Err(format!("untouched, yet a backup exists: {backups}")),
        n => Err(format!(
            "half applied: {n} of {} planned branches present",
            oids.len()
        )),
    }
}

#[test]
fn a_kill_of_apply_or_its_whole_process_group_is_recovered_without_a_person() {
    let rounds: u64 = std::env::var("GUARDCTL_SOAK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let mut rng = Lcg(0x005e_ed35);
    let (template, oids) = planned_and_approved();
    // The first two rounds pin the extremes (a kill before anything happens; no kill at
    // all, which measures how long an apply takes here); the rest kill at random moments
    // across that span, so both end states are exercised however fast this machine is.
    let delays = [Some(0), None];
    let mut span_ms = 120;
    let (mut mid_apply, mut group_kills, mut applied, mut rolled_back) = (0, 0, 0, 0);
    // What recover said it did after the apply's kill (its words: render/recovery.rs).
    let (mut completed, mut abandoned, mut mid_commit, mut with_locks) = (0, 0, 0, 0);
    let mut failures: Vec<String> = Vec::new();
    for i in 0..rounds {
        // A fresh copy of the same approved repository for every round. A copy is another
        // repository (its identity is the git dir's inode and birth time), so the template's
        // plan would be refused there: plan and approve in the copy.
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("repo");
        let status = Command::new("cp")
            .arg("-a")
            .arg(&template.repo)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(status.success());
        for (user, args) in [
            (
                "alice",
                &["plan", "stale-branches", "--merged", "--gone", "--force"][..],
            ),
            ("bob", &["approve", "plan.json", "--yes"][..]),
        ] {
            let r = in_copy(&template, &copy, user, args);
            assert_eq!(r.code, 0, "round {i}: {}", r.transcript());
        }
        let delay = delays
            .get(i as usize)
            .copied()
            .unwrap_or_else(|| Some(rng.below(span_ms)));
        let (delay, victim) = match (delay, rng.below(4)) {
            (None, _) | (Some(0), _) => (delay, Victim::Group),
            (_, 0) => (delay, Victim::Guardctl),
            (_, 1) => (
                None,
                Victim::GroupInCommit {
                    after_us: rng.below(4_000),
                },
            ),
            _ => (delay, Victim::Group),
        };
        let kill = kill_then_recover(&template, &copy, "apply", delay, victim);
        if i == 1 {
            span_ms = kill.took.max(1);
        }
        mid_apply += u64::from(kill.mid_run);
        group_kills += u64::from(kill.mid_run && !matches!(victim, Victim::Guardctl));
        if kill.recover.code != 0 {
            failures.push(format!(
                "round {i}, apply killed ({victim:?}) after {delay:?} ms: recover: {}",
                kill.recover.transcript()
            ));
            continue;
        }
        let said = format!("{}{}", kill.recover.stdout, kill.recover.stderr);
        completed += u64::from(said.contains("completed the"));
        abandoned += u64::from(said.contains("abandoned") || said.contains("nothing had changed"));
        mid_commit += u64::from(said.contains("git's commit of the deletions was killed"));
        with_locks += u64::from(said.contains("lock file"));
        match end_state(&copy, &oids, false) {
            Err(why) => failures.push(format!("round {i}, apply killed ({victim:?}): {why}")),
            Ok(false) => rolled_back += 1,
            Ok(true) => {
                applied += 1;
                // Now kill a rollback at a random moment too: it ends restored or not at all.
                let kill = kill_then_recover(&template, &copy, "rollback", Some(rng.below(span_ms)), victim);
                if kill.recover.code != 0 {
                    failures.push(format!(
                        "round {i}, rollback killed ({victim:?}): recover: {}",
                        kill.recover.transcript()
                    ));
                } else if let Err(why) = end_state(&copy, &oids, true) {
                    failures.push(format!("round {i}, rollback killed ({victim:?}): {why}"));
                }
            }
        }
    }
    eprintln!(
        "soak: {rounds} rounds, {mid_apply} kills landed mid-apply ({group_kills} of the whole process group); \
         recover completed {completed} applies and abandoned {abandoned} ({mid_commit} inside git's commit, \
         {with_locks} with a killed git's locks removed); {applied} ended applied, {rolled_back} untouched; \
         {} needed a person",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        applied > 0 && rolled_back > 0,
        "the soak must see both end states: {applied} applied, {rolled_back} rolled back"
    );
}
