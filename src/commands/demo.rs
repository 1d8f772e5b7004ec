//! `guardctl demo`: builds a throwaway repository (with a throwaway "origin") holding merged,
//! squash-merged, gone, live, protected and worktree branches, creates two throwaway
//! identities, and runs guardctl on it step by step, explaining each step. Each step runs
//! this very binary as a user would type it. Touches nothing outside its temp directory.

use crate::error::{Error, Result};
use crate::process::Process;
use crate::ui::Ui;
use std::path::{Path, PathBuf};

/// Run the whole loop on a throwaway repository, explaining each step.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep the temporary directory and print its path
    #[arg(long)]
    pub keep: bool,
}

const DAY: i64 = 86_400;

struct Demo {
    root: PathBuf,
    repo: PathBuf,
    now: i64,
    /// Every guardctl step run, for `demo --json`.
    steps: std::cell::RefCell<Vec<serde_json::Value>>,
}

impl Demo {
    /// Run git with a neutral environment: the user's own git config must not leak in.
    fn git(&self, dir: &Path, args: &[&str], days_ago: i64) -> Result<String> {
        self.git_as(dir, args, days_ago, "Alice")
    }

    fn git_as(&self, dir: &Path, args: &[&str], days_ago: i64, author: &str) -> Result<String> {
        let date = format!("@{} +0000", self.now - days_ago * DAY);
        let email = format!("{}@example.com", author.to_lowercase());
        let out = Process::new("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .env("GIT_AUTHOR_NAME", author)
            .env("GIT_AUTHOR_EMAIL", &email)
            .env("GIT_COMMITTER_NAME", "Alice")
            .env("GIT_COMMITTER_EMAIL", "alice@example.com")
            .checked(None)?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn commit(&self, file: &str, text: &str, author: &str, days_ago: i64) -> Result<()> {
        let path = self.repo.join(file);
        std::fs::write(&path, text).map_err(Error::io("write", &path))?;
        self.git(&self.repo, &["add", file], days_ago)?;
        let msg = format!("Update {file}");
        self.git_as(&self.repo, &["commit", "-q", "-m", &msg], days_ago, author)?;
        Ok(())
    }

    fn build(&self) -> Result<()> {
        let r = &self.repo;
        let origin = self.root.join("origin.git");
        self.git(
            &self.root,
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                origin.to_str().unwrap_or_default(),
            ],
            0,
        )?;
        self.git(
            &self.root,
            &["init", "-q", "-b", "main", r.to_str().unwrap_or_default()],
            0,
        )?;
        self.git(
            r,
            &["remote", "add", "origin", origin.to_str().unwrap_or_default()],
            0,
        )?;
        self.commit("README", "demo\n", "Alice", 400)?;
        // Merged branches: their tips are in main.
        for (b, days) in [("feature/login", 300), ("fix/typo", 40)] {
            self.git(r, &["checkout", "-q", "-b", b, "main"], days)?;
            self.commit(&format!("{}.txt", b.replace('/', "-")), "done\n", "Bob", days)?;
            self.git(r, &["checkout", "-q", "main"], days)?;
            self.git(
                r,
                &["merge", "-q", "--no-ff", "-m", &format!("Merge {b}"), b],
                days,
            )?;
        }
        // A squash-merged branch: its change is in main as one new commit.
        self.git(r, &["checkout", "-q", "-b", "feature/search", "main"], 30)?;
        self.commit("search.txt", "v1\n", "Carol", 30)?;
        self.commit("search.txt", "v2\n", "Carol", 29)?;
        self.git(r, &["checkout", "-q", "main"], 28)?;
        self.git(r, &["merge", "-q", "--squash", "feature/search"], 28)?;
        self.git(r, &["commit", "-q", "-m", "Add search (squashed)"], 28)?;
        // Pushed branches whose remote copy was then deleted: "gone upstream". One merged,
        // one holding work that exists nowhere else.
        for (b, days, merge) in [("feature/api", 200, true), ("experiment/cache", 120, false)] {
            self.git(r, &["checkout", "-q", "-b", b, "main"], days)?;
            self.commit(&format!("{}.txt", b.replace('/', "-")), "wip\n", "Dave", days)?;
            self.git(r, &["push", "-q", "-u", "origin", b], days)?;
            self.git(r, &["checkout", "-q", "main"], days)?;
            if merge {
                self.git(
                    r,
                    &["merge", "-q", "--no-ff", "-m", &format!("Merge {b}"), b],
                    days,
                )?;
            }
            self.git(r, &["push", "-q", "origin", "--delete", b], days)?;
        }
        // Live work, a protected release branch, and a branch checked out in a worktree.
        self.git(r, &["checkout", "-q", "-b", "feature/payments", "main"], 2)?;
        self.commit("payments.txt", "wip\n", "Erin", 2)?;
        self.git(r, &["checkout", "-q", "main"], 0)?;
        self.git(r, &["branch", "release/1.0", "main"], 0)?;
        self.git(r, &["branch", "hotfix/urgent", "main"], 0)?;
        let wt = self.root.join("hotfix-worktree");
        self.git(
            r,
            &[
                "worktree",
                "add",
                "-q",
                wt.to_str().unwrap_or_default(),
                "hotfix/urgent",
            ],
            0,
        )?;
        self.git(r, &["push", "-q", "-u", "origin", "main"], 0)?;
        Ok(())
    }

    fn keygen(&self, name: &str) -> Result<PathBuf> {
        let path = self.root.join(format!("{name}_ed25519"));
        Process::new("ssh-keygen")
            .args([
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                &format!("{name} (guardctl demo)"),
                "-f",
            ])
            .arg(&path)
            .checked(None)?;
        Ok(path)
    }

    /// Run this binary as the user would, showing the command first; a step that does not
    /// end with the status the demo expects stops the demo.
    fn guardctl(&self, ui: &mut Ui, key: &Path, args: &[&str], expect: i32) -> Result<()> {
        let mut w = ui.text_out();
        writeln!(w, "\n$ guardctl {}", args.join(" "))?;
        w.flush()?;
        let exe = std::env::current_exe()
            .map_err(|e| Error::internal("cannot locate the guardctl executable").caused_by(e))?;
        let mut process = Process::new(exe);
        if ui.json {
            // The steps' own output is narrative too: stdout is the demo's one JSON document.
            process = process.stdout_to_stderr();
        }
        let status = process
            .current_dir(&self.repo)
            .args(args)
            .arg("--key")
            .arg(key)
            .arg("--allowed-signers")
            .arg(self.root.join("allowed_signers"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()?;
        let code = status.code().unwrap_or(-1);
        writeln!(ui.text_out(), "(exit status {code})")?;
        self.steps.borrow_mut().push(serde_json::json!({
            "command": format!("guardctl {}", args.join(" ")),
            "as": key.file_name().map(|n| n.to_string_lossy().into_owned()),
            "exit": code,
            "expected": expect,
        }));
        if code != expect {
            return Err(Error::internal(format!(
                "demo step `guardctl {}` exited {code}, expected {expect}",
                args.join(" ")
            )));
        }
        Ok(())
    }
}

fn say(ui: &mut Ui, text: &str) -> Result<()> {
    let color = ui.color;
    writeln!(
        ui.text_out(),
        "\n{}",
        crate::ui::paint(color, "1;36", &format!("## {text}"))
    )?;
    Ok(())
}

pub fn run(args: Args, ui: &mut Ui) -> Result<u8> {
    let dir = tempfile::Builder::new()
        .prefix("guardctl-demo-")
        .tempdir()
        .map_err(Error::io("create a directory in", &std::env::temp_dir()))?;
    let root = dir.path().to_path_buf();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let demo = Demo {
        repo: root.join("repo"),
        root: root.clone(),
        now,
        steps: Default::default(),
    };

    say(
        ui,
        &format!("Building a throwaway repository in {}", demo.repo.display()),
    )?;
    demo.build()?;
    let alice = demo.keygen("alice")?;
    let bob = demo.keygen("bob")?;
    let public = |key: &Path| {
        let path = key.with_extension("pub");
        std::fs::read_to_string(&path).map_err(Error::io("read", &path))
    };
    let signers = format!(
        "alice@example.com {}bob@example.com {}",
        public(&alice)?,
        public(&bob)?
    );
    let path = root.join("allowed_signers");
    std::fs::write(&path, signers).map_err(Error::io("write", &path))?;
    writeln!(
        ui.text_out(),
        "Branches: merged (feature/login, fix/typo), squash-merged (feature/search), gone upstream\n\
         (feature/api merged; experiment/cache holding unmerged work), live (feature/payments),\n\
         protected (release/1.0), checked out in a worktree (hotfix/urgent).\n\
         Identities: alice@example.com and bob@example.com, throwaway ed25519 keys in an allowed-signers file."
    )?;

    say(
        ui,
        "Who am I? Alice's key maps to her principal through the allowed-signers file",
    )?;
    demo.guardctl(ui, &alice, &["whoami"], 0)?;

    say(
        ui,
        "Alice plans a cleanup. `plan` only reads the repository and writes a signed plan file",
    )?;
    demo.guardctl(
        ui,
        &alice,
        &[
            "plan",
            "stale-branches",
            "--merged",
            "--squash-merged",
            "--gone",
            "--detailed-exitcode",
        ],
        2,
    )?;
    writeln!(
        ui.text_out(),
        "Exit status 2 (--detailed-exitcode) says the plan has changes. experiment/cache is gone upstream\n\
         but holds work that exists nowhere else: a weak criterion alone never plans it."
    )?;

    say(
        ui,
        "Bob reviews exactly what Alice signed: `show` verifies the signature first",
    )?;
    demo.guardctl(ui, &bob, &["show", "plan.json"], 0)?;

    say(
        ui,
        "Anyone can check the plan's signature with plain ssh-keygen (namespace guardctl-plan)",
    )?;
    let verified = verify_with_ssh_keygen(&demo)?;
    writeln!(ui.text_out(), "{verified}")?;

    say(
        ui,
        "A tampered plan is refused with exit 65, before anything in it is trusted",
    )?;
    let path = demo.repo.join("plan.json");
    let text = std::fs::read_to_string(&path).map_err(Error::io("read", &path))?;
    let tampered = text.replacen("\"payload\": \"ey", "\"payload\": \"EY", 1);
    let path = demo.repo.join("tampered.json");
    std::fs::write(&path, tampered).map_err(Error::io("write", &path))?;
    demo.guardctl(ui, &bob, &["show", "tampered.json"], 65)?;

    say(
        ui,
        "Alice cannot approve her own plan (exit 12): approval needs a distinct principal",
    )?;
    demo.guardctl(ui, &alice, &["approve", "plan.json", "--yes"], 12)?;

    say(
        ui,
        "Bob approves exactly this plan; the approval is signed and bound to its id and hash",
    )?;
    demo.guardctl(
        ui,
        &bob,
        &["approve", "plan.json", "--yes", "--comment", "looks stale to me"],
        0,
    )?;

    say(
        ui,
        "Before Alice applies, someone commits to fix/typo: apply refuses on drift (exit 10)",
    )?;
    demo.git(&demo.repo, &["checkout", "-q", "fix/typo"], 0)?;
    demo.commit("fix-typo.txt", "one more fix\n", "Bob", 0)?;
    demo.git(&demo.repo, &["checkout", "-q", "main"], 0)?;
    demo.guardctl(ui, &alice, &["apply", "plan.json"], 10)?;

    say(
        ui,
        "So Alice plans again; fix/typo now holds unmerged work and is left alone. The old plan.json\n\
         carries Bob's approval, which a new plan there drops: `plan` refuses that without --force",
    )?;
    let replan = [
        "-q",
        "plan",
        "stale-branches",
        "--merged",
        "--squash-merged",
        "--gone",
        "--force",
    ];
    demo.guardctl(ui, &alice, &replan, 0)?;
    demo.guardctl(ui, &bob, &["-q", "approve", "plan.json", "--yes"], 0)?;

    say(
        ui,
        "Apply: backups first, one compare-and-swap transaction, verification, a signed receipt",
    )?;
    demo.guardctl(ui, &alice, &["apply", "plan.json"], 0)?;

    say(
        ui,
        "Applying the same plan again changes nothing and prints the same receipt",
    )?;
    demo.guardctl(ui, &alice, &["apply", "plan.json"], 0)?;

    say(
        ui,
        "Rollback restores every deleted branch at its old commit, with its upstream config",
    )?;
    demo.guardctl(ui, &alice, &["rollback", "plan.json"], 0)?;

    say(ui, "The audit trail, hash-chained")?;
    demo.guardctl(ui, &alice, &["log"], 0)?;

    say(ui, "Done. Nothing outside the temporary directory was touched")?;
    let kept = if args.keep {
        let kept = dir.keep();
        writeln!(ui.text_out(), "Kept {}", kept.display())?;
        Some(kept.display().to_string())
    } else {
        None
    };
    if ui.json {
        ui.json_doc(&serde_json::json!({"steps": demo.steps.take(), "kept": kept}))?;
    }
    Ok(0)
}

/// Decode the envelope, rebuild the PAE bytes and run `ssh-keygen -Y verify` on them.
fn verify_with_ssh_keygen(demo: &Demo) -> Result<String> {
    let path = demo.repo.join("plan.json");
    let bytes = std::fs::read(&path).map_err(Error::io("read", &path))?;
    let file = crate::plan::envelope::parse_plan_file(&bytes)
        .map_err(|e| Error::internal("demo plan unreadable").caused_by(e))?;
    let payload = crate::plan::envelope::decode_payload(&file.payload)
        .map_err(|e| Error::internal("demo plan unreadable").caused_by(e))?;
    let pae = crate::plan::envelope::pae(&file.payload_type, &payload);
    let sig_path = demo.root.join("plan.sig");
    let sig = file.signatures.first().map(|s| s.sig.clone()).unwrap_or_default();
    std::fs::write(&sig_path, sig).map_err(Error::io("write", &sig_path))?;
    let out = Process::new("ssh-keygen")
        .args([
            "-Y",
            "verify",
            "-n",
            "guardctl-plan",
            "-I",
            "alice@example.com",
            "-f",
        ])
        .arg(demo.root.join("allowed_signers"))
        .arg("-s")
        .arg(&sig_path)
        .output(Some(&pae))?;
    Ok(format!(
        "$ ssh-keygen -Y verify -n guardctl-plan -I alice@example.com -f allowed_signers -s plan.sig < PAE bytes\n{}",
        String::from_utf8_lossy(&out.stdout).trim()
    ))
}
