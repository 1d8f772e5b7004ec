//! Running another program (git, ssh-keygen, guardctl itself), one way: the command line is
//! kept for every error, stdin is closed unless input is given (a child never waits on the
//! user's terminal), the input is written from its own thread while both output pipes are
//! read (so neither side can fill a pipe and block the other), and a failure's stderr is
//! escaped before anyone prints it.
//!
//! Environment: a child inherits guardctl's environment minus what the caller removes
//! (`env_remove`), or starts empty (`env_clear`) and gets exactly what the caller sets.
//!
//! Not here: the streaming `git update-ref --stdin` transaction (`repo::mutate`, which talks to
//! git line by line) and the planned commands of `exec` plans (`ops::exec`, which runs them
//! from pinned copies with the plan's own environment); both build on `std::process` directly.

use crate::error::Error;
use std::ffi::OsStr;
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// A program to run, with the command line it is reported as.
pub struct Process {
    cmd: Command,
    line: String,
}

impl Process {
    pub fn new(program: impl AsRef<OsStr>) -> Process {
        let line = program.as_ref().to_string_lossy().into_owned();
        Process {
            cmd: Command::new(program),
            line,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Process {
        self.line.push(' ');
        self.line.push_str(&arg.as_ref().to_string_lossy());
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(self, args: I) -> Process
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        args.into_iter().fold(self, Process::arg)
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Process {
        self.cmd.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Process {
        self.cmd.env_remove(key);
        self
    }

    pub fn env_clear(mut self) -> Process {
        self.cmd.env_clear();
        self
    }

    /// Send the child's stdout to guardctl's stderr (for [`Process::status`]): under `--json`
    /// stdout carries only guardctl's one document.
    pub fn stdout_to_stderr(mut self) -> Process {
        self.cmd.stdout(std::io::stderr());
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<std::path::Path>) -> Process {
        self.cmd.current_dir(dir);
        self
    }

    /// The command line as errors name it (arguments joined by spaces, not escaped: pass it
    /// through `text::safe` before printing it to a terminal).
    pub fn line(&self) -> &str {
        &self.line
    }

    /// Run to the end with `input` on stdin (`None`: stdin is closed), collecting stdout and
    /// stderr. Fails only when the program cannot be run or its pipes fail; any exit status
    /// is returned.
    pub fn output(mut self, input: Option<&[u8]>) -> Result<Output, Error> {
        let cannot_run = |e: std::io::Error| {
            Error::internal(format!("cannot run `{}`", crate::text::safe(&self.line))).caused_by(e)
        };
        self.cmd
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self.cmd.spawn().map_err(cannot_run)?;
        let stdin = child.stdin.take();
        std::thread::scope(|s| {
            let writer = s.spawn(move || match (stdin, input) {
                // A child that exits without reading all of its input closes the pipe: that is
                // its business, and its status says how it went.
                (Some(mut pipe), Some(bytes)) => match pipe.write_all(bytes) {
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
                    _ => Ok(()),
                },
                _ => Ok(()),
            });
            let out = child.wait_with_output().map_err(cannot_run)?;
            match writer.join() {
                Ok(Ok(())) => Ok(out),
                Ok(Err(e)) => Err(cannot_run(e)),
                Err(_) => Err(Error::internal(format!(
                    "writing the input of `{}` failed",
                    crate::text::safe(&self.line)
                ))),
            }
        })
    }

    /// Run to the end with stdin closed and stdout/stderr shared with guardctl's own (the
    /// demo shows what each step prints as it happens). Any exit status is returned.
    pub fn status(mut self) -> Result<std::process::ExitStatus, Error> {
        self.cmd.stdin(Stdio::null()).status().map_err(|e| {
            Error::internal(format!("cannot run `{}`", crate::text::safe(&self.line))).caused_by(e)
        })
    }

    /// `output`, and a status other than success is an error naming the command line, with its
    /// stderr (escaped) as the cause.
    pub fn checked(self, input: Option<&[u8]>) -> Result<Output, Error> {
        let line = self.line.clone();
        let out = self.output(input)?;
        if out.status.success() {
            Ok(out)
        } else {
            Err(failed(&line, &out))
        }
    }
}

/// The error for a run that ended unsuccessfully: the command line and its status, its stderr
/// (escaped, trimmed) as the cause.
pub fn failed(line: &str, out: &Output) -> Error {
    let err = Error::internal(format!("`{}` failed ({})", crate::text::safe(line), out.status));
    let stderr = String::from_utf8_lossy(&out.stderr);
    match stderr.trim() {
        "" => err,
        text => err.caused_by(crate::text::safe(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_larger_than_a_pipe_is_written_while_both_outputs_are_read() {
        // 4 MiB in, echoed to stdout and (a copy) to stderr: a runner that wrote all input
        // before reading, or read one pipe to the end first, would block forever here.
        let input = vec![b'x'; 4 << 20];
        let out = Process::new("sh")
            .args(["-c", "tee /dev/stderr"])
            .checked(Some(&input))
            .unwrap();
        assert_eq!(out.stdout.len(), input.len());
        assert_eq!(out.stderr.len(), input.len());
    }

    #[test]
    fn stdin_is_closed_without_input() {
        let out = Process::new("sh")
            .args(["-c", "cat; echo done"])
            .checked(None)
            .unwrap();
        assert_eq!(out.stdout, b"done\n");
    }

    #[test]
    fn a_failure_names_the_command_line_and_its_escaped_stderr() {
        let e = Process::new("sh")
            .args(["-c", "printf 'bad \\033]0;title\\007 thing' >&2; exit 3"])
            .checked(None)
            .unwrap_err();
        assert!(e.message.contains("`sh -c printf"), "{}", e.message);
        assert!(e.message.contains("exit status: 3"), "{}", e.message);
        assert!(!e.causes[0].contains('\u{1b}'), "{:?}", e.causes);
        assert!(e.causes[0].contains("bad"), "{:?}", e.causes);
    }

    #[test]
    fn a_program_that_cannot_run_is_an_error_naming_it() {
        let e = Process::new("/nonexistent/guardctl-test-program")
            .arg("--flag")
            .output(None)
            .unwrap_err();
        assert!(
            e.message
                .contains("cannot run `/nonexistent/guardctl-test-program --flag`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn the_environment_is_inherited_unless_cleared() {
        let run = |p: Process| {
            String::from_utf8(
                p.args(["-c", "echo \"[$GUARDCTL_PROCESS_TEST]\""])
                    .checked(None)
                    .unwrap()
                    .stdout,
            )
            .unwrap()
        };
        let set = || Process::new("/bin/sh").env("GUARDCTL_PROCESS_TEST", "yes");
        assert_eq!(run(set()), "[yes]\n");
        assert_eq!(run(set().env_remove("GUARDCTL_PROCESS_TEST")), "[]\n");
        assert_eq!(run(Process::new("/bin/sh").env_clear()), "[]\n");
    }
}
