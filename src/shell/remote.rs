//! Commands that run elsewhere: `ssh HOST COMMAND…`, and GNU `parallel`/`sem`, whose
//! command template runs once per argument (on other hosts with `-S`). A remote line is
//! Safe only when it would be Safe here and assumes nothing; anything else is a Known
//! refusal, since no trial can see another host.

use super::words::{self, Dir, Word};
use super::{Action, Classifier, Facts, Finding, Reading, literal_all, shell_words};
use std::path::PathBuf;

impl Classifier<'_> {
    /// `line` read on its own, as a command another host runs: nothing of this line's
    /// variables or temporary files carries over.
    fn elsewhere(&self, line: &str) -> Reading {
        let script = match words::nested(line, Dir::Known(PathBuf::new()), self.depth) {
            Ok(s) => s,
            Err(e) => return Reading::Try(e.0),
        };
        let mut inner = Classifier {
            rules: self.rules,
            depth: self.depth + 1,
            stdin: words::Stdin::Inherited,
            facts: Facts::default(),
            untried: None,
            assumptions: Vec::new(),
        };
        let mut found = Vec::new();
        inner.script(script, &mut found);
        // What a Safe reading assumes (a fetch that does not prune, a temporary path) cannot
        // be confirmed on another host.
        if let (None, Some(a)) = (&inner.untried, inner.assumptions.first()) {
            inner.untried = Some(format!("it assumes {a:?}, which only that host could confirm"));
        }
        match (found.is_empty(), inner.untried) {
            (false, _) => Reading::Known(found),
            (true, Some(why)) => Reading::Try(why),
            (true, None) => Reading::Safe,
        }
    }

    /// `ssh [OPTIONS] HOST [COMMAND…]`: the command runs on another host, where no trial can
    /// look. Safe when the remote line would be Safe here; any other remote line, a script
    /// fed to the remote shell, or a login shell is refused with the plan line that gates it.
    /// An option that runs a local program (`ProxyCommand`, `LocalCommand`, a config file)
    /// is left to the trial.
    pub(super) fn ssh(&mut self, args: &[Word], dir: Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        let with_value = [
            "-B", "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-P",
            "-p", "-Q", "-R", "-S", "-W", "-w",
        ];
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let Some(a) = w.literal() else {
                return Err(format!("`ssh {}`: only the shell knows that word", w.text()));
            };
            if a == "--" {
                i += 1;
                break;
            }
            if !a.starts_with('-') {
                break;
            }
            let value = if with_value.contains(&a) {
                i += 1;
                args.get(i).map(Word::text).unwrap_or_default().to_string()
            } else {
                a.to_string()
            };
            let lower = value.to_ascii_lowercase();
            if a.starts_with("-F")
                || lower.contains("command")
                || lower.contains("proxyjump=") && lower.contains(' ')
            {
                return Err(format!("`ssh {a} {value}` may run a local program"));
            }
            i += 1;
        }
        let remote = &args[(i + 1).min(args.len())..];
        let here = match &dir {
            Dir::Known(d) => d.clone(),
            Dir::Unknown => PathBuf::new(),
        };
        let mut command = vec!["ssh".to_string()];
        command.extend(args.iter().map(|w| w.text().to_string()));
        let line = literal_all(remote).map(|w| w.join(" "));
        let reading = match &line {
            Some(l) if !l.trim().is_empty() => self.elsewhere(l),
            _ => Reading::Try(String::new()),
        };
        if reading == Reading::Safe {
            return Ok(());
        }
        let what = match &line {
            Some(l) if !l.trim().is_empty() => format!("runs `{l}` on another host"),
            Some(_) => "runs a shell on another host".to_string(),
            None => "runs a command only the shell knows on another host".to_string(),
        };
        found.push(Finding {
            command: shell_words(&command),
            dir: here,
            reason: what.clone(),
            action: Action::Refuse {
                why: format!(
                    "it {what}: guardctl cannot see its effect; plan it with `guardctl plan exec --preview '<a command that lists what it destroys>' -- {}`",
                    shell_words(&command)
                ),
            },
        });
        Ok(())
    }

    /// GNU `parallel [OPTIONS] TEMPLATE ::: ARGS…` (`::::` FILES) and `sem [OPTIONS]
    /// COMMAND`: the template is a shell line run once per argument, `{}` (and `{.}`,
    /// `{1}`…) standing for it, or the argument appended. Literal arguments are put in; any
    /// other argument is a word only the shell knows. With `-S`/`--sshlogin` the lines run on
    /// other hosts: Safe or refused, as `ssh`.
    pub(super) fn parallel(
        &mut self,
        program: &str,
        args: &[Word],
        dir: Dir,
        found: &mut Vec<Finding>,
    ) -> Result<(), String> {
        const VALUED: &[&str] = &[
            "-j",
            "--jobs",
            "-P",
            "--max-procs",
            "-S",
            "--sshlogin",
            "--slf",
            "--sshloginfile",
            "-a",
            "--arg-file",
            "--colsep",
            "-C",
            "-d",
            "--delimiter",
            "-E",
            "-I",
            "-n",
            "--max-args",
            "-N",
            "-L",
            "-l",
            "--delay",
            "--timeout",
            "--retries",
            "--halt",
            "--tagstring",
            "--basefile",
            "--bf",
            "--return",
            "--env",
            "--id",
            "--memfree",
            "--load",
            "--nice",
            "--termseq",
            "--shebang-wrap",
        ];
        const WRITES: &[&str] = &[
            "--joblog",
            "--results",
            "--res",
            "--files",
            "--output-as-files",
            "--tmpdir",
            "--workdir",
            "--wd",
            "--trc",
            "--transfer",
            "--cleanup",
            "--shebang",
        ];
        let mut remote = false;
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let Some(a) = w.literal() else {
                return Err(format!(
                    "`{program} {}`: only the shell knows that word",
                    w.text()
                ));
            };
            if a == "--" {
                i += 1;
                break;
            }
            if !a.starts_with('-') || a.starts_with(":::") {
                break;
            }
            let name = a.split('=').next().unwrap_or(a);
            if WRITES.contains(&name) {
                return Err(format!("`{program} {a}` writes files of its own"));
            }
            remote |= matches!(name, "-S" | "--sshlogin" | "--slf" | "--sshloginfile") || a.starts_with("-S");
            i += if VALUED.contains(&a) { 2 } else { 1 };
        }
        let rest = &args[i.min(args.len())..];
        let split = rest
            .iter()
            .position(|w| w.literal().is_some_and(|a| a.starts_with(":::")))
            .unwrap_or(rest.len());
        let template = literal_all(&rest[..split])
            .ok_or_else(|| format!("`{program}`'s command holds a word only the shell knows"))?;
        let groups: Vec<&[Word]> = rest[split..]
            .split(|w| w.literal().is_some_and(|a| a.starts_with(":::")))
            .skip(1)
            .collect();
        let from_files = rest[split..]
            .iter()
            .any(|w| w.literal().is_some_and(|a| a.starts_with("::::")));
        // The arguments, when the line spells them all and they come one group at a time.
        let literal_args = match groups.as_slice() {
            [one] if !from_files && one.len() <= 32 => literal_all(one),
            _ => None,
        };
        let mut lines = Vec::new();
        if template.is_empty() {
            // `parallel ::: 'cmd1' 'cmd2'`: the arguments are the commands.
            if program == "sem" || split == rest.len() {
                return Err(format!("`{program}` reads its commands from its input"));
            }
            lines = literal_args.ok_or_else(|| format!("`{program}` runs commands only the shell knows"))?;
        } else {
            let template = template.join(" ");
            let fill = |arg: &str| {
                if program == "sem" {
                    return template.clone();
                }
                if template.contains('{') {
                    let mut t = template.replace("{}", arg);
                    // `{.}`, `{/}`, `{1}`…: a value only the run knows.
                    while let Some(at) = t.find('{') {
                        match t[at..].find('}') {
                            Some(end) => t.replace_range(at..at + end + 1, "\"$__PARALLEL_ARG\""),
                            None => break,
                        }
                    }
                    t
                } else {
                    format!("{template} {arg}")
                }
            };
            match &literal_args {
                Some(list) if !list.is_empty() => {
                    lines.extend(list.iter().map(|a| fill(&shell_words(std::slice::from_ref(a)))))
                }
                _ => lines.push(fill("\"$__PARALLEL_ARG\"")),
            }
        }
        for line in lines {
            if remote {
                if self.elsewhere(&line) != Reading::Safe {
                    let mut command = vec![program.to_string()];
                    command.extend(args.iter().map(|w| w.text().to_string()));
                    found.push(Finding {
                        command: shell_words(&command),
                        dir: PathBuf::new(),
                        reason: format!("runs `{line}` on other hosts"),
                        action: Action::Refuse {
                            why: format!(
                                "it runs `{line}` on another host: guardctl cannot see its effect; plan it with `guardctl plan exec --preview '<a command that lists what it destroys>' -- {}`",
                                shell_words(&command)
                            ),
                        },
                    });
                    return Ok(());
                }
            } else {
                self.nested(&line, dir.clone(), found)?;
            }
        }
        Ok(())
    }
}
