# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_guardctl_global_optspecs
    string join \n C/repo= json color= q/quiet key= allowed-signers= h/help V/version
end

function __fish_guardctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_guardctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_guardctl_using_subcommand
    set -l cmd (__fish_guardctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c guardctl -n "__fish_guardctl_needs_command" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_needs_command" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_needs_command" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_needs_command" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_needs_command" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_needs_command" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_needs_command" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "plan" -d 'Observe and write a signed plan (read-only: never changes the repository)'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "show" -d 'Render a plan: summary, branches, extremes, side effects, skipped branches'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "approve" -d 'Record a signed approval of exactly this plan, by a principal other than the planner'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "reject" -d 'Record a signed rejection of the plan; any valid rejection blocks apply'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "verify" -d 'Run every check apply runs (integrity, expiry, principal, approvals, policy, drift) without changing anything; exits with the code apply would give'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "inbox" -d 'List the plans published on the team remote that are neither applied nor expired: what each still needs from which review group, and whether your key may approve it'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "wait" -d 'Wait until the plan is approved (exit 0), rejected (12) or expired (11), or the time allowed runs out (75)'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "apply" -d 'Apply exactly the plan: refuses on drift, expiry, missing approvals, wrong principal or changed policy; backs up before it deletes; idempotent on replay'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "rollback" -d 'Restore the branches and config an applied plan deleted, from its backups'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "recover" -d 'Finish or abandon an interrupted apply or rollback, from its journal and the real refs'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "log" -d 'Show the audit trail and check it'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "whoami" -d 'Show the key in use, its fingerprint, and the principal it maps to'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "gc" -d 'Remove before-images (backup refs) past their retention'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "completions" -d 'Print shell completions for SHELL on stdout'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "demo" -d 'Run the whole loop on a throwaway repository, explaining each step'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "mcp" -d 'Serve guardctl as a Model Context Protocol server on stdin/stdout, for AI agents'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "hook" -d 'Put guardctl in front of an AI agent\'s own shell (docs/agents.md)'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "guard" -d 'Classify a command line before it runs: exit 0 when nothing in it is destructive; else plan exactly what it would destroy (signed with your key, written to guardctl\'s plan directory) and exit 3, saying how to have the plan approved and applied'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "doctor" -d 'Check the agent-shell hook\'s set-up end to end (read-only)'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "explain" -d 'Explain what the agent-shell gate would do with a command line, without planning it'
complete -c guardctl -n "__fish_guardctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -s o -l out -d 'Where to write the plan' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l expires-in -d 'How long the plan stays valid, e.g. 15m, 2h, 1d (bounded by policy)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l executor -d 'The principal that may apply the plan [default: the planner]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l publish -d 'Also publish the plan to the team remote (`guardctl.remote`, else origin), or to REMOTE, under refs/guardctl/plans/ (docs/remote.md)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l detailed-exitcode -d 'Exit 2 when the plan has changes, 0 when it has none'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l force -d 'Replace FILE even when it is not a guardctl plan, or holds a plan with approvals (guardctl\'s own state and trust files are refused whatever is given)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l no-publish -d 'Do not publish, even where `guardctl.remote` makes publishing the default'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -f -a "stale-branches" -d 'Local branches that are safe to delete'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -f -a "remote-branches" -d 'A remote\'s branches that are safe to delete, as the remote holds them now'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -f -a "tags" -d 'Tags that are safe to delete, here or (with --remote) on a remote'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -f -a "exec" -d 'Any destructive command, gated by its preview'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and not __fish_seen_subcommand_from stale-branches remote-branches tags exec help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l base -d 'The branch others are compared with [default: the remote HEAD\'s target, else init.defaultBranch, else main or master]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l older-than -d 'Branches whose last commit is older than DUR (e.g. 90d, 6mo, 1y; `m` alone is refused: 6min or 6mo?)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l match -d 'Only consider branches matching GLOB (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l exclude -d 'Never consider branches matching GLOB (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l protect -d 'Protect branches matching GLOB, in addition to the policy\'s (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -s o -l out -d 'Where to write the plan' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l expires-in -d 'How long the plan stays valid, e.g. 15m, 2h, 1d (bounded by policy)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l executor -d 'The principal that may apply the plan [default: the planner]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l publish -d 'Also publish the plan to the team remote (`guardctl.remote`, else origin), or to REMOTE, under refs/guardctl/plans/ (docs/remote.md)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l gone -d 'Branches whose upstream is configured but no longer exists'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l merged -d 'Branches whose tip is reachable from the base'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l squash-merged -d 'Branches whose combined change is already in the base (squash or rebase merged)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l include-unmerged -d 'Allow branches with commits not in the base (each is flagged as losing work)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l named -d 'Select exactly the branches --match names, whatever their state (no other criterion; unmerged ones only with --include-unmerged): `git branch -D NAMES` as a plan'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l detailed-exitcode -d 'Exit 2 when the plan has changes, 0 when it has none'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l force -d 'Replace FILE even when it is not a guardctl plan, or holds a plan with approvals (guardctl\'s own state and trust files are refused whatever is given)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l no-publish -d 'Do not publish, even where `guardctl.remote` makes publishing the default'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from stale-branches" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l remote -d 'The remote, by name (its URL identifies the plan) [default: the team remote: `guardctl.remote` in system or global config, else origin]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l base -d 'The remote branch others are compared with, e.g. main [default: the remote\'s HEAD]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l older-than -d 'Branches whose last commit is older than DUR (e.g. 90d, 6mo, 1y; `m` alone is refused: 6min or 6mo?)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l match -d 'Only consider branches matching GLOB (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l exclude -d 'Never consider branches matching GLOB (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l protect -d 'Protect branches matching GLOB, in addition to the policy\'s (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -s o -l out -d 'Where to write the plan' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l expires-in -d 'How long the plan stays valid, e.g. 15m, 2h, 1d (bounded by policy)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l executor -d 'The principal that may apply the plan [default: the planner]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l publish -d 'Also publish the plan to the team remote (`guardctl.remote`, else origin), or to REMOTE, under refs/guardctl/plans/ (docs/remote.md)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l merged -d 'Branches whose tip is reachable from the base'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l squash-merged -d 'Branches whose combined change is already in the base (squash or rebase merged)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l include-unmerged -d 'Allow branches with commits not in the base (each is flagged as losing work)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l named -d 'Select exactly the branches --match names, whatever their state (no other criterion; unmerged ones only with --include-unmerged): `git branch -D NAMES` as a plan'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l detailed-exitcode -d 'Exit 2 when the plan has changes, 0 when it has none'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l force -d 'Replace FILE even when it is not a guardctl plan, or holds a plan with approvals (guardctl\'s own state and trust files are refused whatever is given)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l no-publish -d 'Do not publish, even where `guardctl.remote` makes publishing the default'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from remote-branches" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l remote -d 'A remote\'s tags, by remote name (judged with this clone\'s objects: fetch first)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l match -d 'Tags whose name matches GLOB (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l older-than -d 'Tags older than DUR (e.g. 2y, 6mo, 90d; `m` alone is refused: 6min or 6mo?)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l exclude -d 'Never consider tags matching GLOB (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l protect -d 'Protect tags matching GLOB, in addition to the policy\'s (repeatable)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -s o -l out -d 'Where to write the plan' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l expires-in -d 'How long the plan stays valid, e.g. 15m, 2h, 1d (bounded by policy)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l executor -d 'The principal that may apply the plan [default: the planner]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l publish -d 'Also publish the plan to the team remote (`guardctl.remote`, else origin), or to REMOTE, under refs/guardctl/plans/ (docs/remote.md)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l annotated -d 'Only annotated tags'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l lightweight -d 'Only lightweight tags'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l include-signed -d 'Allow signed tags'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l include-unmerged -d 'Allow tags whose commits no branch reaches (each is flagged as losing work)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l detailed-exitcode -d 'Exit 2 when the plan has changes, 0 when it has none'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l force -d 'Replace FILE even when it is not a guardctl plan, or holds a plan with approvals (guardctl\'s own state and trust files are refused whatever is given)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l no-publish -d 'Do not publish, even where `guardctl.remote` makes publishing the default'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from tags" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l remote -d 'Bind the plan to this remote\'s URL instead of this clone, so that another clone of it (a CI job) can apply it' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l preview -d 'A shell command whose output lists what the command will do (the manifest)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l before-image -d 'A shell command run first at apply time (e.g. a dump); it must succeed' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l env -d 'Give the commands this environment variable (repeatable; PATH always)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l pin -d 'Pin this file or directory too, e.g. a helper a script sources (repeatable; directories are pinned as trees, relative to the working directory)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l verify -d 'A shell command run after the command; its output is the observed state' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l verify-prints -d 'What --verify prints: the manifest\'s resources still present (state), or what the command changed (diff)' -r -f -a "state\t''
diff\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -s o -l out -d 'Where to write the plan' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l expires-in -d 'How long the plan stays valid, e.g. 15m, 2h, 1d (bounded by policy)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l executor -d 'The principal that may apply the plan [default: the planner]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l publish -d 'Also publish the plan to the team remote (`guardctl.remote`, else origin), or to REMOTE, under refs/guardctl/plans/ (docs/remote.md)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l detailed-exitcode -d 'Exit 2 when the plan has changes, 0 when it has none'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l force -d 'Replace FILE even when it is not a guardctl plan, or holds a plan with approvals (guardctl\'s own state and trust files are refused whatever is given)'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l no-publish -d 'Do not publish, even where `guardctl.remote` makes publishing the default'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from exec" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "stale-branches" -d 'Local branches that are safe to delete'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "remote-branches" -d 'A remote\'s branches that are safe to delete, as the remote holds them now'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "tags" -d 'Tags that are safe to delete, here or (with --remote) on a remote'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "exec" -d 'Any destructive command, gated by its preview'
complete -c guardctl -n "__fish_guardctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l page -d 'Show page N (50 branches per page)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l since -d 'Show what changed against an earlier plan of the same operation' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l format -d 'How to render the plan: `text` (a terminal), `json` (as --json), `markdown` (a pull-request comment), `summary` (a CI job summary)' -r -f -a "text\t''
json\t''
markdown\t''
summary\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l max-bytes -d 'The most bytes `markdown` or `summary` output may take [default: 65536 for markdown, 1048576 for summary; at least 8192]' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l all -d 'List every affected and skipped branch'
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l step-summary -d 'Append the summary to the file $GITHUB_STEP_SUMMARY names (GitHub Actions\' job summary) instead of printing it; implies --format summary'
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand show" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l comment -d 'A comment recorded in the approval' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l out -d 'Write a detached approval file instead of appending to the plan' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l group -d 'Approve only this review group\'s part of the plan (repeatable; see `guardctl show`)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l publish -d 'Publish to the team remote (`guardctl.remote`, else origin), or to REMOTE, under refs/guardctl/ (docs/remote.md)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l no-publish -d 'Do not publish, even where `guardctl.remote` makes publishing the default'
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand approve" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -l comment -d 'Why the plan is rejected' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -l publish -d 'Publish to the team remote (`guardctl.remote`, else origin), or to REMOTE, under refs/guardctl/ (docs/remote.md)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -l withdraw -d 'Withdraw your own earlier rejection(s) of this plan instead (signed, like a rejection)'
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -l no-publish -d 'Do not publish, even where `guardctl.remote` makes publishing the default'
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand reject" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -l approval -d 'A detached approval file (repeatable)' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand verify" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand inbox" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand inbox" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand inbox" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand inbox" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand inbox" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand inbox" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand inbox" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand inbox" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -l timeout -d 'How long to wait before giving up (exit 75), e.g. 30s, 10m, 2h' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand wait" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -l approval -d 'A detached approval file (repeatable)' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -l wait -d 'When another clone has consumed the plan and its receipt is not published yet: how long to wait for it, e.g. 30s, 10m (0: do not wait)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand apply" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand rollback" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand rollback" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand rollback" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand rollback" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand rollback" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand rollback" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand rollback" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand rollback" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand recover" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand recover" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand recover" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand recover" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand recover" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand recover" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand recover" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand recover" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -l verify -d 'Also check each entry\'s key against the trusted identities, each receipt\'s approvers, and that every apply the state, the backups and the team remote know of is in the log'
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand log" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -l generate -d 'Make guardctl a signing key of its own (an unprotected ed25519 key in its data directory), only when no key is configured; guardctl never makes one unasked'
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand whoami" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand gc" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand gc" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand gc" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand gc" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand gc" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand gc" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand gc" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand gc" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand completions" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand completions" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand completions" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand completions" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand completions" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand completions" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand completions" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand completions" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -l keep -d 'Keep the temporary directory and print its path'
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand demo" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand mcp" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand mcp" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand mcp" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand mcp" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand mcp" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand mcp" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand mcp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand mcp" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -f -a "claude-code" -d 'Claude Code\'s PreToolUse hook: reads the tool call (JSON) on stdin. A Bash command that destroys nothing: exit 0, no output. One that does: planned with the agent\'s key and denied (exit 2; the reason, the plan and what to run next on stderr). Every failure is exit 2 too: a hook that fails open is no gate'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -f -a "gemini-cli" -d 'Gemini CLI\'s BeforeTool hook (matcher `run_shell_command`): as `hook claude-code`, for Gemini CLI\'s payload. Allowed: exit 0 with `{}` on stdout; denied: exit 2, the reason on stderr. Every failure is exit 2'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -f -a "install" -d 'Print (or, with --write, merge into the settings file) the Claude Code settings that run `guardctl hook claude-code` before every Bash command, with this command\'s --key and --allowed-signers'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and not __fish_seen_subcommand_from claude-code gemini-cli install help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -l rules -d 'A rules file whose rules come before the built-in ones (repeatable; docs/agents.md)' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -l timeout -d 'Deny when no decision is made within DUR (set it below the hook\'s own `timeout` in Claude Code\'s settings, which otherwise lets the call through)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from claude-code" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -l rules -d 'A rules file whose rules come before the built-in ones (repeatable; docs/agents.md)' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -l timeout -d 'Deny when no decision is made within DUR (set it below the hook\'s own `timeout` in Claude Code\'s settings, which otherwise lets the call through)' -r
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from gemini-cli" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -l scope -d '`local` (.claude/settings.local.json in the repository: untracked, and ignored through .git/info/exclude, so no commit, checkout or clean of the project\'s files changes it), `project` (.claude/settings.json, committed) or `user` (~/.claude/settings.json)' -r -f -a "local\t''
project\t''
user\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -l write -d 'Merge the hook into that settings file (kept otherwise as it is) instead of printing it'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -s h -l help -d 'Print help'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from install" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "claude-code" -d 'Claude Code\'s PreToolUse hook: reads the tool call (JSON) on stdin. A Bash command that destroys nothing: exit 0, no output. One that does: planned with the agent\'s key and denied (exit 2; the reason, the plan and what to run next on stderr). Every failure is exit 2 too: a hook that fails open is no gate'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "gemini-cli" -d 'Gemini CLI\'s BeforeTool hook (matcher `run_shell_command`): as `hook claude-code`, for Gemini CLI\'s payload. Allowed: exit 0 with `{}` on stdout; denied: exit 2, the reason on stderr. Every failure is exit 2'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "install" -d 'Print (or, with --write, merge into the settings file) the Claude Code settings that run `guardctl hook claude-code` before every Bash command, with this command\'s --key and --allowed-signers'
complete -c guardctl -n "__fish_guardctl_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -l rules -d 'A rules file whose rules come before the built-in ones (repeatable; TOML, docs/agents.md)' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand guard" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand doctor" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand doctor" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand doctor" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand doctor" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand doctor" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand doctor" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -l rules -d 'A rules file whose rules come before the built-in ones (repeatable; docs/agents.md)' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -s C -l repo -d 'Run as if started in PATH (like `git -C`); default: discover from the working directory' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -l color -d 'When to colour output (auto honours NO_COLOR and terminals)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -l key -d 'Signing key: a private key, or a public key whose private half is in ssh-agent [default: $GUARDCTL_KEY, git\'s user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -l allowed-signers -d 'Allowed-signers file mapping keys to principals (git\'s format) [default: $GUARDCTL_ALLOWED_SIGNERS, git\'s gpg.ssh.allowedSignersFile, else .guardctl/allowed_signers as committed on the team remote\'s default branch (never the work tree\'s copy)]' -r -F
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -l json -d 'Print exactly one JSON document on stdout; text, hints and progress go to stderr'
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -s q -l quiet -d 'Only print data and errors, no status lines'
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c guardctl -n "__fish_guardctl_using_subcommand explain" -s V -l version -d 'Print version'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "plan" -d 'Observe and write a signed plan (read-only: never changes the repository)'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "show" -d 'Render a plan: summary, branches, extremes, side effects, skipped branches'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "approve" -d 'Record a signed approval of exactly this plan, by a principal other than the planner'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "reject" -d 'Record a signed rejection of the plan; any valid rejection blocks apply'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "verify" -d 'Run every check apply runs (integrity, expiry, principal, approvals, policy, drift) without changing anything; exits with the code apply would give'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "inbox" -d 'List the plans published on the team remote that are neither applied nor expired: what each still needs from which review group, and whether your key may approve it'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "wait" -d 'Wait until the plan is approved (exit 0), rejected (12) or expired (11), or the time allowed runs out (75)'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "apply" -d 'Apply exactly the plan: refuses on drift, expiry, missing approvals, wrong principal or changed policy; backs up before it deletes; idempotent on replay'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "rollback" -d 'Restore the branches and config an applied plan deleted, from its backups'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "recover" -d 'Finish or abandon an interrupted apply or rollback, from its journal and the real refs'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "log" -d 'Show the audit trail and check it'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "whoami" -d 'Show the key in use, its fingerprint, and the principal it maps to'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "gc" -d 'Remove before-images (backup refs) past their retention'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "completions" -d 'Print shell completions for SHELL on stdout'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "demo" -d 'Run the whole loop on a throwaway repository, explaining each step'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "mcp" -d 'Serve guardctl as a Model Context Protocol server on stdin/stdout, for AI agents'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "hook" -d 'Put guardctl in front of an AI agent\'s own shell (docs/agents.md)'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "guard" -d 'Classify a command line before it runs: exit 0 when nothing in it is destructive; else plan exactly what it would destroy (signed with your key, written to guardctl\'s plan directory) and exit 3, saying how to have the plan approved and applied'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "doctor" -d 'Check the agent-shell hook\'s set-up end to end (read-only)'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "explain" -d 'Explain what the agent-shell gate would do with a command line, without planning it'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and not __fish_seen_subcommand_from plan show approve reject verify inbox wait apply rollback recover log whoami gc completions demo mcp hook guard doctor explain help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and __fish_seen_subcommand_from plan" -f -a "stale-branches" -d 'Local branches that are safe to delete'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and __fish_seen_subcommand_from plan" -f -a "remote-branches" -d 'A remote\'s branches that are safe to delete, as the remote holds them now'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and __fish_seen_subcommand_from plan" -f -a "tags" -d 'Tags that are safe to delete, here or (with --remote) on a remote'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and __fish_seen_subcommand_from plan" -f -a "exec" -d 'Any destructive command, gated by its preview'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "claude-code" -d 'Claude Code\'s PreToolUse hook: reads the tool call (JSON) on stdin. A Bash command that destroys nothing: exit 0, no output. One that does: planned with the agent\'s key and denied (exit 2; the reason, the plan and what to run next on stderr). Every failure is exit 2 too: a hook that fails open is no gate'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "gemini-cli" -d 'Gemini CLI\'s BeforeTool hook (matcher `run_shell_command`): as `hook claude-code`, for Gemini CLI\'s payload. Allowed: exit 0 with `{}` on stdout; denied: exit 2, the reason on stderr. Every failure is exit 2'
complete -c guardctl -n "__fish_guardctl_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "install" -d 'Print (or, with --write, merge into the settings file) the Claude Code settings that run `guardctl hook claude-code` before every Bash command, with this command\'s --key and --allowed-signers'
