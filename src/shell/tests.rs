//! The classifier over the commands agents run: each case is a line and what guardctl must
//! make of it.

use super::*;

fn classify_built_in(line: &str) -> Result<Vec<Finding>, String> {
    classify(line, &Rules::built_in().unwrap())
}

fn one(line: &str) -> Finding {
    let found = classify_built_in(line).unwrap_or_else(|e| panic!("{line}: {e}"));
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

#[test]
fn read_only_commands_find_nothing() {
    for line in [
        "ls -la",
        "git status && git log --oneline -5 | head",
        "git push origin main",
        "git push -u origin feature",
        "git push --dry-run --delete origin x",
        "git branch --list",
        "git checkout main",
        "git clean -n -d",
        "cat > notes.txt <<EOF\nhello $(date)\nEOF",
        "find . -name '*.rs' -exec grep -l unsafe {} +",
        "command -v rm",
        "git restore --staged src/lib.rs",
        "kubectl get pods -n prod",
        "grep -r 'rm -rf' .",
    ] {
        assert_eq!(classify_built_in(line), Ok(vec![]), "{line}");
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
fn exec_plans_get_the_rules_previews() {
    let exec = |line: &str| match one(line).action {
        Action::Exec { argv, preview } => (argv, preview),
        other => panic!("{line}: {other:?}"),
    };
    assert_eq!(exec("git clean -fdx").1, "git clean --dry-run -fdx");
    assert_eq!(exec("rm -rf build").1, "find build -print");
    assert_eq!(exec("rm -rf build").0, names(&["rm", "-rf", "build"]));
    assert_eq!(exec("rm -- -x 'a b'").1, "find ./-x 'a b' -print");
    assert_eq!(exec("find . -name '*.o' -delete").1, "find . -name '*.o' -print");
    assert_eq!(
        exec("kubectl -n prod delete pod web-1").1,
        "kubectl -n prod delete pod web-1 --dry-run=server -o name"
    );
    assert_eq!(
        exec("terraform destroy -auto-approve").1,
        "terraform plan -destroy"
    );
    assert_eq!(exec("git checkout -- .").1, "git diff --stat HEAD -- .");
    assert_eq!(
        exec("git push --force origin main").1,
        "git push --dry-run --porcelain --force origin main"
    );
    assert_eq!(
        exec("git push origin +main").1,
        "git push --dry-run --porcelain origin +main"
    );
    assert!(exec("git reset --hard HEAD~2").1.ends_with("'HEAD~2'..HEAD"));
}

#[test]
fn compound_lines_follow_cd_and_git_dash_c() {
    let f = one("cd x && git push origin --delete y");
    assert_eq!(f.dir, PathBuf::from("x"));
    assert!(matches!(f.action, Action::RemoteBranches { .. }));
    assert_eq!(one("git -C sub branch -D y").dir, PathBuf::from("sub"));
    assert_eq!(one("env -C d rm x").dir, PathBuf::from("d"));
    let after_variable = refused("cd \"$DIR\" && rm -rf build");
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
    assert!(matches!(
        one("bash -lc \"rm -rf build\"").action,
        Action::Exec { .. }
    ));
    assert!(matches!(one("eval git tag -d v1").action, Action::Tags { .. }));
    assert!(matches!(
        one("timeout 10 nice -n 5 rm -rf x").action,
        Action::Exec { .. }
    ));
    assert!(matches!(
        one("echo $(git branch -D x)").action,
        Action::Branches { .. }
    ));
    assert!(refused("sudo rm -rf /var/cache/x").contains("another user"));
    assert!(refused("git branch --merged | xargs git branch -d").contains("expanded by the shell"));
    let found = classify_built_in("find . -name '*.o' -exec rm {} ;").unwrap();
    assert!(
        found
            .iter()
            .all(|f| matches!(&f.action, Action::Refuse { why } if why.contains("expanded by the shell"))),
        "{found:?}"
    );
}

#[test]
fn what_only_the_shell_knows_is_refused_or_unreadable() {
    assert!(classify_built_in("$CMD -rf build").is_err());
    assert!(classify_built_in("sh -c \"$SCRIPT\"").is_err());
    assert!(classify_built_in("rm -rf 'unterminated").is_err());
    assert!(classify_built_in("git --git-dir=/elsewhere branch -D x").is_err());
    assert!(refused("rm -rf $BUILD").contains("expanded by the shell"));
    assert!(refused("rm -rf build/*").contains("expanded by the shell"));
    assert!(classify_built_in("GIT_DIR=/x git branch -D y").is_err());
    assert!(refused("FOO=1 rm -rf x").contains("FOO"));
}

#[test]
fn a_destructive_command_without_a_preview_says_how_to_plan_it() {
    let why = refused("docker system prune -af");
    assert!(why.contains("guardctl plan exec --preview"), "{why}");
    let approve = one("guardctl approve plan.json");
    assert!(approve.reason.contains("a person"));
    assert!(matches!(approve.action, Action::Refuse { .. }));
    assert!(
        one("ssh-keygen -Y sign -f ~/.ssh/id -n guardctl-approval p")
            .reason
            .contains("SSH")
    );
}

#[test]
fn a_policy_rule_comes_before_the_built_in_ones() {
    let rules = Rules::built_in().unwrap().after(
        rules::parse("[[rule]]\nprogram = \"rm\"\nwhen = [\"-r\"]\nreason = \"ours\"\n")
            .unwrap()
            .rules,
    );
    let found = classify("rm -r x", &rules).unwrap();
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
}

/// Lines from the attack review of the hook (issue 32): each destroys something when bash
/// runs it, and each was once classified harmless. Each must now be a finding or unreadable.
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
    for line in lines {
        // Unreadable (`Err`) is denied too.
        if let Ok(found) = classify_built_in(line) {
            assert!(!found.is_empty(), "{line}: classified harmless");
        }
    }
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
    assert_eq!(dir("builtin cd sub; rm -rf f"), Some(PathBuf::from("sub")));
    assert_eq!(dir("command cd sub; rm -rf f"), Some(PathBuf::from("sub")));
    assert_eq!(dir("cd sub/..; rm -rf f"), Some(PathBuf::from("")));
    assert_eq!(dir("cd a/./b/../c; rm -rf f"), Some(PathBuf::from("a/c")));
    assert_eq!(dir("eval cd sub; rm -rf f"), None);
    assert_eq!(dir("f() { cd sub; }; f; rm -rf x"), None);
    assert_eq!(dir("CDPATH=/tmp; cd atk; rm -rf f"), None);
    assert_eq!(dir("cd -P sub; rm -rf f"), None);
}

#[test]
fn ordinary_agent_commands_stay_harmless() {
    for line in [
        "git commit -m \"$(date)\"",
        "git log --since=\"$SINCE\" --oneline",
        "for f in *.rs; do wc -l \"$f\"; done",
        "cat <<'EOF' > notes.md\nuse $(pwd) here\nEOF",
        "echo $((1 + 2))",
        "cargo test 2>&1 | tail -5",
        "bash scripts/check.sh",
        "git -c color.ui=never status",
    ] {
        assert_eq!(classify_built_in(line), Ok(vec![]), "{line}");
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
        if let Ok(found) = classify_built_in(line) {
            assert!(!found.is_empty(), "{line}: classified harmless");
        }
    }
    // What an agent writes every day still passes.
    for line in [
        "git fetch origin",
        "git rebase main",
        "git submodule update --init",
        "env FOO=1 cargo test",
        "GIT_AUTHOR_NAME=bot git commit -m x",
    ] {
        assert_eq!(classify_built_in(line), Ok(vec![]), "{line}");
    }
}
