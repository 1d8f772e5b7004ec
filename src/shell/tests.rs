//! The static reader over the commands agents run: each case is a line and what guardctl must
//! make of it — Safe (runs at once), Known (planned or refused), or Try (the sandbox's trial).

use super::*;

fn rules() -> Rules {
    Rules::built_in().unwrap()
}

fn reading(line: &str) -> Reading {
    read(line, &rules())
}

fn classify_built_in(line: &str) -> Result<Vec<Finding>, String> {
    classify(line, &rules())
}

fn known(line: &str) -> Vec<Finding> {
    match reading(line) {
        Reading::Known(found) => found,
        other => panic!("{line}: {other:?}"),
    }
}

fn one(line: &str) -> Finding {
    let found = known(line);
    assert_eq!(found.len(), 1, "{line}: {found:?}");
    found.into_iter().next().unwrap()
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn refused(line: &str) -> String {
    match one(line).action {
        Action::Refuse { why } => why,
        other => panic!("{line}: {other:?}"),
    }
}

fn tried(line: &str) -> String {
    match reading(line) {
        Reading::Try(why) => why,
        other => panic!("{line}: {other:?}"),
    }
}

fn assert_safe(lines: &[&str]) {
    for line in lines {
        assert_eq!(reading(line), Reading::Safe, "{line}");
    }
}

fn assert_never_safe(lines: &[&str]) {
    for line in lines {
        assert_ne!(reading(line), Reading::Safe, "{line}: read as Safe");
    }
}

#[test]
fn read_only_commands_and_agent_idioms_are_safe() {
    assert_safe(&[
        "ls -la",
        "git status && git log --oneline -5 | head",
        "git push origin main",
        "git push -u origin feature",
        "git push --dry-run --delete origin x",
        "git branch --list",
        "git branch -a -vv",
        "git clean -n -d",
        "git clean -n",
        "n=$(mktemp); cat > \"$n\" <<EOF\nhello $(date)\nEOF",
        "find . -name '*.rs' -exec grep -l unsafe {} +",
        "command -v rm",
        "grep -r 'rm -rf' .",
        "git commit -m \"$(date)\"",
        "git add \"$f\" && git commit -F \"$msg\"",
        "git log --since=\"$SINCE\" --oneline",
        "for f in *.rs; do wc -l \"$f\"; done",
        "echo $((1 + 2))",
        "git -c color.ui=never status",
        "git fetch origin",
        "git pull --rebase origin main",
        "git rebase main",
        "git add -A && git commit --amend --no-edit",
        "git stash && git stash pop",
        "git stash list",
        "GIT_AUTHOR_NAME=bot git commit -m x",
        "git switch main",
        "git switch -c feature",
        "git checkout -b feature main",
        "git merge --no-ff feature",
        "git cherry-pick abc123",
        "git diff HEAD~1 --stat > /dev/null 2>&1",
        "git tag -l 'v*'",
        "git remote -v",
        "git config --get user.name",
        "git worktree list",
        "git init",
        "git clone https://example.com/r.git",
        "cat f | sort | uniq -c | sort -rn | head",
        "sed -n '1,20p' f",
        "sed 's/a/b/g' f",
        "awk '{print $1}' f",
        "jq .x f.json",
        "find . -type f | xargs wc -l",
        "mkdir -p out/dir && cd out/dir && pwd",
        "read -r x <<< 'y'; echo \"$x\"",
        "kubectl get pods -n prod",
        "kubectl get pods -o yaml > /dev/null",
        "docker ps -a",
        "gh pr view 12",
        "guardctl wait p && guardctl apply p",
        "set -euo pipefail; ls",
        "ssh host ls -la",
        "parallel echo ::: a b",
    ]);
}

#[test]
fn the_denylists_false_alarms_are_safe_now() {
    assert_safe(&[
        "if [ -f x ]; then cat x; fi",
        "[[ -f x ]] && echo yes",
        "git checkout -bfeature",
        "rm --help",
        "rm --version",
        "git -Crepo status",
        "find . -name -delete -print",
        "export PATH=$HOME/.cargo/bin:$PATH; ls",
        "export PATH=/usr/local/bin:$PATH",
        "GIT_EDITOR=true git rebase --continue",
        "GIT_SEQUENCE_EDITOR=: git rebase -i main",
        "GIT_PAGER=cat git log",
        "PAGER=cat git log",
        "git clean -n",
    ]);
    // A build tool is tried, not an unreadable refusal.
    assert!(tried("make -j$(( $(nproc) + 1 ))").contains("make"));
    // `git checkout -- .` is tried: the trial knows whether there is anything to discard.
    assert!(tried("git checkout -- .").contains("overwrites uncommitted changes"));
}

#[test]
fn temporary_deletions_are_safe_and_others_are_tried() {
    assert_safe(&[
        "rm -rf /tmp/build",
        "rm -f /var/tmp/x.log",
        "rm -rf $TMPDIR/x",
        "rm -rf \"$TMPDIR\"/x",
        "rm -rf ${TMPDIR}/x",
        "rm -rf \"${TMPDIR:-/tmp}/x\"",
        "tmp=$(mktemp -d); echo hi > \"$tmp/f\"; rm -rf \"$tmp\"",
        "tmp=$(mktemp); trap 'rm -f \"$tmp\"' EXIT; ls > \"$tmp\"",
        "awk -F: -v x=1 '{print $1}' /etc/passwd",
        "sed -n -- '1p' f",
        "rmdir /tmp/empty",
    ]);
    for line in [
        "rm -rf /tmp",
        "rm -rf /tmp/",
        "rm -rf /tmp/../home/me",
        // The kernel takes `..` after following `a`, which may be a link into the work tree.
        "rm -rf /tmp/a/../b",
        "rm -rf /tmp/link/src",
        "rm -rf $TMPDIR/a/b",
        "rm -rf ${TMPDIR:-.}/x",
        "rm -rf build",
        "rm README",
        "TMPDIR=. ; rm -rf $TMPDIR/x",
        "tmp=$(mktemp -d); tmp=.; rm -rf \"$tmp\"",
        "tmp=$(mktemp -u); rm -rf \"$tmp\"",
        "tmp=$(mktemp -d); read tmp <<< /home; rm -rf \"$tmp\"",
        "tmp=$(mktemp -d); for tmp in /home; do rm -rf \"$tmp\"; done",
        "tmp=$(mktemp -d); eval tmp=/home; rm -rf \"$tmp\"",
        "read TMPDIR <<< /; rm -rf $TMPDIR/home",
        "rm -rf $BUILD",
        "rm -rf build/*",
        "FOO=1 rm -rf x",
    ] {
        tried(line);
    }
}

#[test]
fn disasters_are_refused_never_tried() {
    for line in [
        "rm -rf /",
        "rm -rf /*",
        "rm -rf ~",
        "rm -rf ~/",
        "rm -rf $HOME",
        "rm -rf \"$HOME\"",
        "rm -rf .",
        "rm -rf ..",
        "rm -rf *",
        "rm -r /usr",
        "rm -rf /etc/",
        "rm -rf /lib64",
        "rm -rf --no-preserve-root /",
        "rm -fr /home",
    ] {
        let f = one(line);
        assert!(matches!(f.action, Action::Refuse { .. }), "{line}: {f:?}");
    }
    assert!(matches!(one("sudo rm -rf /").action, Action::Refuse { .. }));
    assert!(!known("parallel rm -rf ::: /").is_empty());
}

#[test]
fn local_destroyers_are_tried_with_their_rules_reason() {
    for (line, reason) in [
        ("git clean -fdx", "deletes untracked files"),
        ("rm -rf build", "deletes files"),
        ("git reset --hard HEAD~2", "discards uncommitted changes"),
        ("git checkout -- src/a.rs", "overwrites uncommitted changes"),
        ("find . -name '*.o' -delete", "deletes the files it finds"),
        ("git stash drop", "drops stashed changes"),
        ("git restore src/a.rs", "overwrites uncommitted changes"),
        ("git branch -f main HEAD~1", "moves or overwrites a branch"),
        ("env -S'-C dir' git reset --hard", "discards uncommitted changes"),
    ] {
        let why = tried(line);
        assert!(why.contains(reason), "{line}: {why}");
    }
}

#[test]
fn local_branch_deletion_is_a_plan_of_exactly_the_names() {
    assert_eq!(
        one("git branch -d old 'feature/x'").action,
        Action::Branches {
            names: names(&["old", "feature/x"]),
            force: false
        }
    );
    assert_eq!(
        one("git branch -D wip").action,
        Action::Branches {
            names: names(&["wip"]),
            force: true
        }
    );
    assert_eq!(
        one("git branch --delete --force -- -odd").action,
        Action::Branches {
            names: names(&["-odd"]),
            force: true
        }
    );
    assert!(refused("git branch -dr origin/x").contains("remote-tracking"));
}

#[test]
fn remote_deletions_become_remote_branch_and_tag_plans() {
    let remote = |n: &[&str]| Action::RemoteBranches {
        remote: "origin".into(),
        names: names(n),
    };
    assert_eq!(one("git push origin --delete y z").action, remote(&["y", "z"]));
    assert_eq!(one("git push origin :y").action, remote(&["y"]));
    assert_eq!(one("git push -d origin refs/heads/y").action, remote(&["y"]));
    let tags = Action::Tags {
        remote: Some("origin".into()),
        names: names(&["v1"]),
    };
    assert_eq!(one("git push origin :refs/tags/v1").action, tags);
    assert_eq!(one("git push --delete origin tag v1").action, tags);
    let both = classify_built_in("git push origin --delete y refs/tags/v1").unwrap();
    assert_eq!(both.len(), 2);
    assert!(refused("git push origin main :old").contains("deletes and pushes"));
    assert!(refused("git push https://example.com/r.git :old").contains("not a configured remote"));
}

#[test]
fn tag_deletion_is_a_tags_plan() {
    assert_eq!(
        one("git tag -d v1.0 v1.1").action,
        Action::Tags {
            remote: None,
            names: names(&["v1.0", "v1.1"])
        }
    );
}

#[test]
fn remote_effects_get_the_rules_previews() {
    let exec = |line: &str| match one(line).action {
        Action::Exec { argv, preview } => (argv, preview),
        other => panic!("{line}: {other:?}"),
    };
    assert_eq!(
        exec("kubectl -n prod delete pod web-1").1,
        "kubectl -n prod delete pod web-1 --dry-run=server -o name"
    );
    assert_eq!(
        exec("terraform destroy -auto-approve").1,
        "terraform plan -destroy"
    );
    assert_eq!(
        exec("git push --force origin main").1,
        "git push --dry-run --porcelain --force origin main"
    );
    assert_eq!(
        exec("git push origin +main").1,
        "git push --dry-run --porcelain origin +main"
    );
}

#[test]
fn compound_lines_follow_cd_and_git_dash_c() {
    let f = one("cd x && git push origin --delete y");
    assert_eq!(f.dir, PathBuf::from("x"));
    assert!(matches!(f.action, Action::RemoteBranches { .. }));
    assert_eq!(one("git -C sub branch -D y").dir, PathBuf::from("sub"));
    assert_eq!(one("git -Csub branch -D y").dir, PathBuf::from("sub"));
    assert_eq!(one("env -C d git branch -D x").dir, PathBuf::from("d"));
    let after_variable = refused("cd \"$DIR\" && git branch -D x");
    assert!(
        after_variable.contains("directory only the shell knows"),
        "{after_variable}"
    );
}

#[test]
fn wrappers_and_interpreters_are_seen_through() {
    assert!(matches!(
        one("sh -c 'git branch -D x'").action,
        Action::Branches { .. }
    ));
    assert!(tried("bash -lc \"rm -rf build\"").contains("deletes files"));
    assert!(matches!(one("eval git tag -d v1").action, Action::Tags { .. }));
    assert!(tried("timeout 10 nice -n 5 rm -rf x").contains("deletes files"));
    assert!(matches!(
        one("echo $(git branch -D x)").action,
        Action::Branches { .. }
    ));
    assert!(refused("sudo git branch -D x").contains("another user"));
    assert!(refused("git branch --merged | xargs git branch -d").contains("expanded by the shell"));
    tried("find . -name '*.o' -exec rm {} ;");
    assert_safe(&[
        "sudo ls /root",
        "timeout 5 cat f",
        "env -C d ls",
        "env",
        "xargs -n1 echo",
    ]);
}

#[test]
fn what_only_the_shell_knows_is_tried() {
    tried("$CMD -rf build");
    tried("sh -c \"$SCRIPT\"");
    tried("rm -rf 'unterminated");
    tried("git --git-dir=/elsewhere branch -D x");
    tried("GIT_DIR=/x git branch -D y");
    // A remote effect with a word only the shell knows is refused, never tried.
    assert!(refused("git push origin \"$B\"").contains("expanded by the shell"));
    assert!(refused("kubectl $(echo delete) ns prod").contains("expanded by the shell"));
    // The unparseable line is Try, and `classify` keeps calling it unreadable.
    assert!(classify_built_in("if then fi (").is_err());
    assert_eq!(classify_built_in("ls"), Ok(vec![]));
}

#[test]
fn a_destructive_command_without_a_preview_says_how_to_plan_it() {
    let why = refused("docker system prune -af");
    assert!(why.contains("guardctl plan exec --preview"), "{why}");
}

#[test]
fn the_gate_protects_itself() {
    let approve = one("guardctl approve plan.json");
    assert!(approve.reason.contains("a person"));
    assert!(matches!(approve.action, Action::Refuse { .. }));
    assert!(!known("setsid guardctl --key /tmp/human approve p.json --yes").is_empty());
    assert!(
        one("ssh-keygen -Y sign -f ~/.ssh/id -n guardctl-approval p")
            .reason
            .contains("SSH")
    );
    for line in [
        "guardctl apply --allowed-signers /tmp/mine p",
        "GUARDCTL_ALLOWED_SIGNERS=/tmp/mine guardctl apply p",
        "export GUARDCTL_ALLOWED_SIGNERS=/tmp/mine; guardctl apply p",
    ] {
        let found = known(line);
        assert!(
            found
                .iter()
                .any(|f| matches!(&f.action, Action::Refuse { why } if why.contains("does not choose who may approve"))),
            "{line}: {found:?}"
        );
    }
    // A renamed copy is at least tried.
    assert_never_safe(&[
        "./gc approve p.json",
        "/tmp/g approve p.json --yes",
        "guardctl gc",
    ]);
}

#[test]
fn a_policy_rule_comes_before_the_built_in_ones_and_stays_known() {
    let rules = Rules::built_in().unwrap().after(
        rules::parse("[[rule]]\nprogram = \"rm\"\nwhen = [\"-r\"]\nreason = \"ours\"\n")
            .unwrap()
            .rules,
    );
    let Reading::Known(found) = read("rm -r x", &rules) else {
        panic!("a policy's rule is Known")
    };
    assert_eq!(found[0].reason, "ours");
    assert!(matches!(found[0].action, Action::Refuse { .. }));
    let custom = rules::parse(
        "[[rule]]\nprogram = \"prune-db\"\npreview = \"prune-db --list {args}\"\nreason = \"drops rows\"\n",
    )
    .unwrap();
    let found = classify(
        "prune-db --older 30d",
        &Rules::built_in().unwrap().after(custom.rules),
    )
    .unwrap();
    assert_eq!(
        found[0].action,
        Action::Exec {
            argv: names(&["prune-db", "--older", "30d"]),
            preview: "prune-db --list --older 30d".into()
        }
    );
    // A local rule is tried: the rule names the reason.
    let local =
        rules::parse("[[rule]]\nprogram = \"wipe-cache\"\nreason = \"deletes the cache\"\nlocal = true\n")
            .unwrap();
    let Reading::Try(why) = read("wipe-cache", &Rules::built_in().unwrap().after(local.rules)) else {
        panic!("a local rule is tried")
    };
    assert!(why.contains("deletes the cache"), "{why}");
}

/// Lines from the attack review of the hook (issue 32): each destroys something when bash
/// runs it, and each was once classified harmless. None may be Safe.
#[test]
fn the_attack_reviews_bypasses_are_all_caught() {
    let lines = [
        // A dynamic word where a rule's subcommand or option goes.
        "x=D; git branch -$x feat2",
        "git tag \"-${D:-d}\" v1",
        "git reset --$(echo hard)",
        "git clean -$(echo f)dx",
        "find . -name f -${D:-delete}",
        "kubectl $(echo delete) ns prod",
        "terraform ${T:-destroy} -auto-approve",
        "guardctl ${A:-approve} --yes P",
        "ssh-keygen -Y ${S:-sign} -f k -n guardctl-approve x",
        // Approvals through other programs.
        "ssh-keygen -Ysign -f /tmp/human -n guardctl-approve /tmp/x",
        "setsid guardctl --key /tmp/human approve p.json --yes",
        "env -S'guardctl --key /tmp/human approve p.json --yes'",
        // git's option parsing.
        "git push origin --dele x2",
        "git push origin --del x2",
        "git push origin --forc main",
        "git push --prun origin 'refs/heads/*:refs/heads/*'",
        "git branch --de feat",
        "git branch --d feat",
        "git reset --ha",
        "git reset --h HEAD~1",
        "git clean --fo -dx",
        "git clean -fdx -en",
        "git push -on origin --delete x3",
        "git --attr-source HEAD branch -D feat",
        "git restore -SW .",
        "git restore --staged --worktree .",
        // Wrappers, shells and xargs.
        "busybox rm -rf f",
        "bash --rcfile /dev/null -c \"rm -rf f\"",
        "bash --init-file /dev/null -c \"rm -rf f\"",
        "rbash -c \"rm -rf f\"",
        "fish -c \"rm -rf f\"",
        "env -S'rm -rf f'",
        "env --split-string='rm -rf f'",
        "nice --adjustment 5 rm -rf f",
        "stdbuf --output L rm -rf f",
        "ionice --class 3 rm -rf f",
        "sudo --user root rm -rf f",
        "sudo -iu root rm -rf f",
        "echo f | xargs -i rm -rf f",
        "echo f | xargs -l rm -rf f",
        "setsid rm -rf f",
        "flock /tmp/l rm -rf f",
        "script -qc 'rm -rf f' /dev/null",
        "kubectl delete pod x --dry-run=none",
        "terraform apply --auto-approve",
        "terraform apply --destroy --auto-approve",
        // Code bash runs from strings.
        "trap 'rm -rf f' EXIT",
        "PS4='$(rm -rf f)'; set -x; true",
        "x='a[$(rm -rf f)]'; echo $((x))",
        "x='a[$(rm -rf f)]'; [[ $x -eq 0 ]]",
        "bash <<< \"rm -rf f\"",
        ". /dev/stdin <<< \"rm -rf f\"",
        "source <(echo rm -rf f)",
        "echo 'rm -rf f' | sh",
        // git aliases in one line, and pathspecs that are `.`.
        "git -c alias.z=\"branch -D\" z feat",
        "git -c alias.z='!rm -rf f' z",
        "git checkout :/",
        "git checkout ./",
    ];
    assert_never_safe(&lines);
}

#[test]
fn cd_forms_that_move_the_shell_are_followed_or_make_the_directory_unknown() {
    let dir = |line: &str| {
        let f = one(line);
        match f.action {
            Action::Refuse { why } if why.contains("directory only the shell knows") => None,
            _ => Some(f.dir),
        }
    };
    let d = "git branch -D f";
    assert_eq!(dir(&format!("builtin cd sub; {d}")), Some(PathBuf::from("sub")));
    assert_eq!(dir(&format!("command cd sub; {d}")), Some(PathBuf::from("sub")));
    assert_eq!(dir(&format!("cd sub/..; {d}")), Some(PathBuf::from("")));
    assert_eq!(dir(&format!("cd a/./b/../c; {d}")), Some(PathBuf::from("a/c")));
    assert_eq!(dir(&format!("eval cd sub; {d}")), None);
    assert_eq!(dir(&format!("CDPATH=/tmp; cd atk; {d}")), None);
    assert_eq!(dir(&format!("cd -P sub; {d}")), None);
    // A function that moves the shell: the line is Known (the deletion) all the same.
    assert!(!known(&format!("f() {{ cd sub; }}; f; {d}")).is_empty());
}

#[test]
fn build_tools_interpreters_and_scripts_are_tried() {
    for line in [
        "cargo test 2>&1 | tail -5",
        "bash scripts/check.sh",
        "sh cleanup.sh",
        "./x.sh",
        "make",
        "npm test",
        "python -V",
        "node index.js",
        "cat <<'EOF' > notes.md\nuse $(pwd) here\nEOF",
        "echo x > /tmp/out.txt",
        "echo hi >> README.md",
        "source ./env.sh",
        ". venv/bin/activate",
    ] {
        tried(line);
    }
}

/// The second attack review's lines (issue 32), each caught now. Code a line builds at run
/// time (`printf '\x24(…)'` evaluated in arithmetic) is a residual risk (docs/agents.md).
#[test]
fn the_second_attack_reviews_bypasses_are_all_caught() {
    let deep = |n: usize, inner: &str| format!("{}{inner}{}", "( ".repeat(n), " )".repeat(n));
    let tight = |n: usize, inner: &str| format!("{}{inner}{}", "(".repeat(n), ")".repeat(n));
    let lines = [
        deep(18, "rm -rf f"),
        deep(20, "git branch -D feat"),
        deep(30, "rm -rf f"),
        tight(20, "rm -rf f"),
        format!("bash -c '{}'", deep(18, "rm -rf f")),
        "{ bash; } <<< 'rm -rf f'".into(),
        "(bash) <<< 'rm -rf f'".into(),
        "bash < <(echo rm -rf f)".into(),
        "bash -s < <(echo rm -rf f)".into(),
        "bash /dev/fd/3 3<<< 'rm -rf f'".into(),
        "exec 0<<< 'rm -rf f'; bash".into(),
        "bash -eoc pipefail 'rm -rf f'".into(),
        "env -vS'rm -rf f'".into(),
        "env -iS 'rm -rf f'".into(),
        "env --split-s='rm -rf f'".into(),
        "env -iu X rm -rf f".into(),
        "env -vu X rm -rf f".into(),
        "env -iC /tmp rm -rf f".into(),
        "timeout --sig KILL 5 rm -rf f".into(),
        "timeout --s KILL 5 rm -rf f".into(),
        "stdbuf --out L rm -rf f".into(),
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.z GIT_CONFIG_VALUE_0='branch -D' git z feat".into(),
        "GIT_CONFIG_PARAMETERS=\"'alias.z=branch -D'\" git z feat".into(),
        "export GIT_SSH_COMMAND='rm -rf f'; git fetch".into(),
        "git -c diff.external='rm -rf f' diff".into(),
        "git fetch --upload-pack='rm -rf f' origin".into(),
        "git rebase -x 'rm -rf f' main".into(),
        "git submodule foreach rm -rf f".into(),
        "git bisect run rm -rf f".into(),
        "setpriv rm -rf f".into(),
        "prlimit rm -rf f".into(),
        "chroot / rm -rf f".into(),
        "unbuffer rm -rf f".into(),
        "fakeroot rm -rf f".into(),
    ];
    for line in &lines {
        assert_ne!(reading(line), Reading::Safe, "{line}: read as Safe");
    }
    assert_safe(&[
        "git fetch origin",
        "git rebase main",
        "GIT_AUTHOR_NAME=bot git commit -m x",
    ]);
}

/// The families the denylist missed (issue 54): each can destroy, so none may be Safe.
#[test]
fn the_missed_families_are_never_safe() {
    assert_never_safe(&[
        "git switch -f main",
        "git switch --discard-changes main",
        "git switch -C main HEAD~3",
        "git checkout main src/",
        "git checkout HEAD~1 -- src/a.rs",
        "git checkout src/a.rs",
        "git checkout -B main HEAD~1",
        "git read-tree -u --reset HEAD",
        "git checkout-index -f -a",
        "git diff | git apply -R",
        "git apply -R p.diff",
        "git update-ref refs/heads/main HEAD~3",
        "git update-ref -d refs/heads/x",
        "git tag -f v1 HEAD~1",
        "git fetch . +a:b",
        "git fetch --prune",
        "git fetch -p origin",
        "git fetch --pru origin",
        "git pull -p",
        "git send-pack origin :main",
        "git difftool -x 'rm -rf f' HEAD",
        "git grep -O'rm -rf' x",
        "git grep --open-files-in-pager=sh x",
        "git clone -u 'rm -rf f' x y",
        "git clone 'ext::sh -c rm% -rf% f' y",
        "git -c clean.requireForce=false clean -d",
        "git -c core.fsmonitor='rm -rf f' status",
        "git -c include.path=/tmp/x status",
        "git log --output=README.md",
        "python -c \"import os; os.system('rm -rf /')\"",
        "python3 -c 'print(1)'",
        "node -e \"require('fs').rmSync('x', {recursive: true})\"",
        "perl -e 'unlink q(x)'",
        "ruby -e 'File.delete(\"x\")'",
        "python3 <<EOF\nimport shutil; shutil.rmtree('x')\nEOF",
        "bash <<< 'rm -rf f'",
        "BASH_ENV=/dev/stdin bash <<< 'rm -rf f'",
        "alias x='rm -rf'; x dir",
        "alias ls='rm -rf'",
        "hash -p /bin/rm ls; ls x",
        "printf -v 'a[$(rm -rf x)]' y",
        "read 'a[$(rm -rf x)]' <<< 1",
        "declare -n r='a[$(rm -rf x)]'",
        "test -v 'a[$(rm -rf x)]'",
        "[ -v 'a[$(rm -rf x)]' ]",
        "echo ${!x}",
        "git config alias.zap 'branch -D'; git zap x",
        "eval \"$(echo rm -rf x)\"",
        "read -r x <<< 'rm -rf y'; $x",
        "env -S'-C dir' git reset --hard",
        "echo x | xargs -I{} bash -c {}",
        "parallel rm -rf ::: build",
        "parallel ::: 'rm -rf x'",
        "sem rm -rf x",
        "cat list | parallel rm",
        "ssh host git clean -f",
        "ssh host 'cd /srv && git pull'",
        "ssh host rm -rf /tmp/x",
        "parallel -S host rm -rf ::: x",
        "EDITOR='rm -rf x' git commit",
        "GIT_EDITOR='rm -rf x' git rebase -i main",
        "GIT_PAGER='rm -rf x' git log",
        "PATH=.:$PATH ls",
        "export PATH=/tmp/evil:$PATH; ls",
        "for PATH in /tmp/evil; do ls; done",
        "read PATH <<< /tmp/evil; ls",
        "printf -v PATH /tmp/evil; ls",
        "read -r GIT_EDITOR <<< 'rm -rf x'; git commit",
        "LD_PRELOAD=/tmp/x.so ls",
        "./ls",
        "/tmp/bin/cat x",
        "sed -i 's/a/b/' f",
        "sed 's/a/b/w out' f",
        "sed -n '1e rm -rf x' f",
        "sed -f script.sed f",
        "awk '{system(\"rm -rf x\")}' f",
        "awk '{print > \"out\"}' f",
        "awk -- '-1;{system(\"rm -rf x\")}' f",
        "awk --source='BEGIN{system(\"rm -rf x\")}' /dev/null",
        "gawk -e 'BEGIN{system(\"rm -rf x\")}'",
        "sed -l 5 'w out' f",
        "sed -n -- 'w out' f",
        "echo x > /tmp/link-to-readme",
        "sort -o README.md f",
        "uniq a README.md",
        "tee README.md",
        "find . -delete",
        "find . -fprint README.md",
        "find . -exec rm {} +",
        "f() { rm -rf x; }; f",
        "ls() { echo; }; ls",
        "echo x > README.md",
        "cat a >| b",
        "ls &> out.txt",
        "cp a b",
        "mv a b",
        "ln -sf /etc/passwd x",
        "chmod -x /usr/local/bin/guardctl",
        "git stash drop",
        "git stash clear",
        "git worktree remove x",
        "git rebase --abort",
        "git merge --abort",
        "git branch -m new",
        "kubectl --kubeconfig /tmp/k get pods",
        "watch ls ';' rm -rf x",
        "xargs -I{} sh -c 'echo {}'",
        "xargs -i sh -c 'echo {}'",
        "strace -o README.md ls",
        "time -o README.md ls",
        "script -c ls README.md",
        "sudo -e README.md",
        "sudo -s",
        "sudo -s <<< 'rm -rf x'",
        "chroot /tmp/evil ls",
        "mapfile -C 'rm -rf x' -c 1 a < f",
        "a[$(rm -rf x)]=1",
        "unset 'a[$(rm -rf x)]'",
        "xxd a README.md",
        "history -w README.md",
        "file -C -m x",
        "ag --pager 'rm -rf x' y",
        "gh api -X DELETE repos/o/r",
    ]);
}

/// Whatever context it sits in, a program off the allowlist never makes a line Safe.
#[test]
fn no_line_with_a_program_off_the_allowlist_is_safe() {
    let programs = [
        "python x.py",
        "python3 -c 'pass'",
        "node x.js",
        "perl x.pl",
        "ruby x.rb",
        "make",
        "cargo build",
        "npm install",
        "sh x.sh",
        "bash x.sh",
        "./x.sh",
        "cp a b",
        "mv a b",
        "tee f",
        "ln -s a b",
        "chmod +x f",
        "chown u f",
        "curl -o f https://x",
        "wget https://x",
        "tar xf a.tar",
        "unzip a.zip",
        "patch -p1",
        "install a b",
        "truncate -s0 f",
        "dd if=a of=b",
        "shred f",
        "git reset --hard",
        "git clean -fdx",
        "rm -rf build",
        "unknown-tool --flag",
        "zap x",
        "rsync -a a b",
    ];
    let contexts = [
        "{}",
        "ls && {}",
        "echo $({})",
        "echo `{}`",
        "if true; then {}; fi",
        "while false; do {}; done",
        "sudo {}",
        "env {}",
        "env -i FOO=1 {}",
        "timeout 5 {}",
        "nice -n 5 {}",
        "time {}",
        "command {}",
        "sh -c '{}'",
        "bash -c '{}'",
        "{} | cat",
        "cat <({})",
        "x=$({})",
        "( {} )",
        "{ {}; }",
        "echo ok; {}",
        "true || {}",
        "trap '{}' EXIT",
        "eval '{}'",
        "find . -exec {} ;",
    ];
    for p in programs {
        for c in contexts {
            let line = c.replace("{}", p);
            assert_ne!(reading(&line), Reading::Safe, "{line}: read as Safe");
        }
    }
}

#[test]
fn remote_effects_stay_known() {
    for line in [
        "git -c remote.origin.mirror=true push origin",
        "git -c 'remote.origin.push=+refs/heads/*:refs/heads/*' push origin",
        "git send-pack origin :main",
        "ssh host git clean -f",
        "ssh host 'rm -rf /srv/app'",
        "ssh -p 22 host <<< 'rm -rf x'",
        "ssh host",
        "parallel -S host rm -rf ::: x",
        "parallel --sshlogin host 'git reset --hard' ::: a",
        "gh repo delete o/r --yes",
        "gh release delete v1",
        "aws s3 rm s3://b/x",
        "aws ec2 terminate-instances --instance-ids i-1",
        "gcloud compute instances delete vm1",
        "docker system prune -af",
        "docker volume rm v",
        "kubectl drain node1",
        "rsync -a --delete ./ host:/srv/",
        "git push --prune origin 'refs/heads/*:refs/heads/*'",
        "git push --mirror origin",
        "gh pr merge 12 --squash --delete-branch",
        "kubectl apply -f k8s/ --prune -l app=web",
        "aws s3 sync . s3://b --delete",
        "gsutil -m rm -r gs://b/x",
        "az group delete -n rg",
        "pulumi destroy --yes",
    ] {
        assert!(!known(line).is_empty(), "{line}");
    }
    let why = refused("ssh host git clean -f");
    assert!(
        why.contains("another host") && why.contains("guardctl plan exec"),
        "{why}"
    );
    // What would be Safe here is Safe on another host.
    assert_safe(&["ssh host git status", "ssh -o ConnectTimeout=5 host uptime"]);
}

#[test]
fn the_reason_names_the_first_command_not_cleared() {
    assert!(tried("ls; make; rm -rf build").contains("make"));
    assert!(tried("git checkout main").contains("path and a branch"));
    // Known wins over Try, with every finding.
    assert_eq!(known("make; git branch -D a; git tag -d v1").len(), 2);
}

#[test]
fn a_safe_reading_names_what_it_takes_for_granted() {
    let (reading, assumed) = read_with_assumptions(
        "cd sub && git fetch origin && git push && rm -rf /tmp/build",
        &rules(),
    );
    assert_eq!(reading, Reading::Safe);
    assert_eq!(
        assumed,
        vec![
            Assumption::Fetch {
                dir: "sub".into(),
                remote: Some("origin".into())
            },
            Assumption::Push {
                dir: "sub".into(),
                remote: None
            },
            Assumption::Deletes {
                dir: "sub".into(),
                path: "/tmp/build".into()
            },
        ]
    );
    // Only a Safe reading assumes anything.
    assert_eq!(read_with_assumptions("git fetch; make", &rules()).1, vec![]);
    // Another host's commands assume nothing here.
    assert_eq!(read_with_assumptions("ssh host git fetch", &rules()).1, vec![]);
}

#[test]
fn a_reason_shows_the_command_as_written() {
    let why = tried("rm -rf \"$BUILD_DIR\"");
    assert!(why.starts_with("`rm -rf \"$BUILD_DIR\"` deletes files"), "{why}");
}
