//! Running another program (git, ssh-keygen, guardctl itself), one way: the command line is
//! kept for every error, stdin is closed unless input is given (a child never waits on the
//! user's terminal), the input is written from its own thread while both output pipes are
//! read (so neither side can fill a pipe and block the other), and a failure's stderr is
//! escaped before anyone prints it.
//!
//! Environment: a child inherits guardctl's environment minus what the caller removes
//! (`env_remove`), or starts empty (`env_clear`) and gets exactly what the caller sets.
//!
//! Two ways to run: [`Process::output`] (or [`Process::checked`], [`Process::status`]) runs to
//! the end; [`Process::spawn`] returns the [`Running`] child for a caller that must talk to it
//! while it runs (the streaming `git update-ref --stdin` transaction) or learn its process id
//! before it ends (a journaled `git push`). A running child's stderr is drained by a thread
//! from the start, so it can never fill its pipe and stall the child.
//!
//! No other module names `std::process::Command` (`tests/cli/layers.rs` checks it).

use crate::error::Error;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
pub use std::process::{ChildStdin, ChildStdout, ExitStatus, Output};
use std::thread::JoinHandle;

/// A program to run, with the command line it is reported as.
pub struct Process {
    cmd: Command,
    line: String,
    /// The length of the line's first word (the program as named).
    program_len: usize,
}

impl Process {
    pub fn new(program: impl AsRef<OsStr>) -> Process {
        let line = program.as_ref().to_string_lossy().into_owned();
        Process {
            cmd: Command::new(program),
            program_len: line.len(),
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

    /// The name the program sees as its own (`argv[0]`), and the first word of the command
    /// line errors name: a private copy of a program still runs as the name the user gave.
    pub fn arg0(mut self, name: impl AsRef<OsStr>) -> Process {
        use std::os::unix::process::CommandExt;
        let name = name.as_ref();
        let word = name.to_string_lossy();
        self.line.replace_range(..self.program_len, &word);
        self.program_len = word.len();
        self.cmd.arg0(name);
        self
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

    /// Run to the end with guardctl's own stdin (the person's terminal), collecting stdout
    /// and stderr: the one exception to "a child never waits on the user's terminal", for a
    /// program that must ask that person something (`ssh-add`'s passphrase prompt), run only
    /// where guardctl may prompt. Any exit status is returned.
    pub fn on_terminal(mut self) -> Result<Output, Error> {
        self.cmd
            .stdin(Stdio::inherit())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.cmd.output().map_err(|e| {
            Error::internal(format!("cannot run `{}`", crate::text::safe(&self.line))).caused_by(e)
        })
    }

    /// Run to the end with stdin closed and stdout/stderr shared with guardctl's own (the
    /// demo shows what each step prints as it happens). Any exit status is returned.
    pub fn status(mut self) -> Result<std::process::ExitStatus, Error> {
        self.cmd.stdin(Stdio::null()).status().map_err(|e| {
            Error::internal(format!("cannot run `{}`", crate::text::safe(&self.line))).caused_by(e)
        })
    }

    /// Start the program and return at once, stdout piped to the caller, stderr drained by a
    /// thread (see [`Running::stderr`]); stdin is piped when `with_stdin`, else closed.
    pub fn spawn(mut self, with_stdin: bool) -> Result<Running, Error> {
        self.cmd
            .stdin(if with_stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self.cmd.spawn().map_err(|e| {
            Error::internal(format!("cannot run `{}`", crate::text::safe(&self.line))).caused_by(e)
        })?;
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                bytes
            })
        });
        Ok(Running {
            child,
            line: self.line,
            stderr,
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

/// Run `program` (as `arg0`, with `args`) as a child, keeping the environment and the
/// standard streams, and wait for it: the sandbox's launcher's last step (the child is the
/// first process of the sandbox's PID namespace).
pub fn run_as(
    program: &OsStr,
    arg0: &OsStr,
    args: &[std::ffi::OsString],
) -> std::io::Result<std::process::ExitStatus> {
    use std::os::unix::process::CommandExt;
    Command::new(program).arg0(arg0).args(args).status()
}

/// Run `program` (as `arg0`, with `args`) as a child that dies with the calling thread
/// (`PR_SET_PDEATHSIG`) and inherits no descriptor but 0–2, keeping the environment and the
/// standard streams, and wait for it at most `limit`: the effect trial's launcher's last
/// step (the child is the first process of the trial's PID namespace, so killing it kills
/// everything the line started, and its reaping returns only once they are gone).
///
/// `setup` runs in the child between fork and exec (the trial's child mounts its `/proc`,
/// pivots into the trial's root and restricts itself there); when it fails, the child writes
/// its words to stderr and exits with `setup_failed` without running `program`. `wait` is
/// called instead of sleeping between checks, with how long it may take (the trial's
/// launcher answers the line's DNS queries meanwhile).
/// `Ok(None)`: the limit passed, the child was killed and reaped.
pub fn run_as_until(
    program: &OsStr,
    arg0: &OsStr,
    args: &[std::ffi::OsString],
    limit: std::time::Duration,
    mut setup: impl FnMut() -> Result<(), String> + Send + Sync + 'static,
    setup_failed: i32,
    wait: &mut dyn FnMut(std::time::Duration),
) -> std::io::Result<Option<std::process::ExitStatus>> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.arg0(arg0).args(args);
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before exec. prctl, close_range and _exit
    // are async-signal-safe. `setup` allocates and writes to stderr, which is sound here
    // only because the caller (the sandbox's launcher) is single-threaded: no other thread
    // can have held the allocator's or stderr's lock at the fork. close_range only marks
    // descriptors close-on-exec (std's own error pipe is already), so nothing the child
    // still needs before exec is closed.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            let _ = libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC);
            if let Err(why) = setup() {
                let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{why}\n").as_bytes());
                libc::_exit(setup_failed);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if start.elapsed() >= limit {
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        wait(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(20));
    }
}

/// What [`Process::bounded`] collected.
#[derive(Debug)]
pub struct Bounded {
    /// `None`: killed at the limit.
    pub status: Option<ExitStatus>,
    /// The first `stdout_cap` bytes of stdout (the rest was read and dropped).
    pub stdout: Vec<u8>,
    /// The last `stderr_keep` bytes of stderr.
    pub stderr: Vec<u8>,
}

impl Process {
    /// Run with stdin closed for at most `limit` (then kill it, SIGKILL, and reap it),
    /// reading both outputs in bounded memory: the first `stdout_cap` bytes of stdout, the
    /// last `stderr_keep` bytes of stderr. Fails only when the program cannot be run.
    pub fn bounded(
        mut self,
        limit: std::time::Duration,
        stdout_cap: usize,
        stderr_keep: usize,
    ) -> Result<Bounded, Error> {
        let line = self.line.clone();
        let cannot_run = |e: std::io::Error| {
            Error::internal(format!("cannot run `{}`", crate::text::safe(&line))).caused_by(e)
        };
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self.cmd.spawn().map_err(cannot_run)?;
        let drain = |pipe: Option<Box<dyn Read + Send>>, head: usize, tail: usize| {
            std::thread::spawn(move || {
                let mut kept: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
                let mut first = Vec::new();
                let Some(mut pipe) = pipe else {
                    return (first, Vec::new());
                };
                let mut buf = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let room = head.saturating_sub(first.len()).min(n);
                    first.extend_from_slice(&buf[..room]);
                    kept.extend(&buf[..n]);
                    if kept.len() > tail {
                        let excess = kept.len() - tail;
                        kept.drain(..excess);
                    }
                }
                (first, kept.into_iter().collect())
            })
        };
        let out = drain(
            child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
            stdout_cap,
            0,
        );
        let err = drain(
            child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
            0,
            stderr_keep,
        );
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(1);
        let status = loop {
            if let Some(status) = child.try_wait().map_err(cannot_run)? {
                break Some(status);
            }
            if start.elapsed() >= limit {
                let _ = child.kill();
                child.wait().map_err(cannot_run)?;
                break None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(20));
        };
        let stdout = out.join().map(|(first, _)| first).unwrap_or_default();
        let stderr = err.join().map(|(_, kept)| kept).unwrap_or_default();
        Ok(Bounded {
            status,
            stdout,
            stderr,
        })
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

/// A started program (from [`Process::spawn`]). Dropping it neither kills nor waits for the
/// child: a caller that must not leave one behind calls [`Running::kill`] or [`Running::wait`].
pub struct Running {
    child: Child,
    line: String,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Running {
    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The command line, as [`Process::line`].
    pub fn line(&self) -> &str {
        &self.line
    }

    /// The write end of the child's stdin (once; `None` without `with_stdin`).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// The read end of the child's stdout (once).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Kill the child and reap it (an error path: whatever it was doing is abandoned).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Wait for the child to exit.
    pub fn wait(&mut self) -> Result<ExitStatus, Error> {
        self.child.wait().map_err(|e| {
            Error::internal(format!("`{}` did not finish", crate::text::safe(&self.line))).caused_by(e)
        })
    }

    /// Everything the child wrote to stderr, once it has closed it (normally by exiting: call
    /// this after its stdin is closed, or it may wait for the child forever). Not escaped.
    /// Empty the second time.
    pub fn stderr(&mut self) -> Vec<u8> {
        self.stderr
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Close stdin (if still held), read the rest of stdout (if not taken), wait for the
    /// child, and collect its stderr.
    pub fn finish(mut self) -> Result<Output, Error> {
        drop(self.child.stdin.take());
        let mut stdout = Vec::new();
        if let Some(mut pipe) = self.child.stdout.take() {
            pipe.read_to_end(&mut stdout).map_err(|e| {
                Error::internal(format!(
                    "cannot read the output of `{}`",
                    crate::text::safe(&self.line)
                ))
                .caused_by(e)
            })?;
        }
        let status = self.wait()?;
        Ok(Output {
            status,
            stdout,
            stderr: self.stderr(),
        })
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
    fn a_spawned_child_is_fed_and_read_while_it_runs() {
        // Line by line, as the update-ref transaction talks to git: each answer is read
        // before the next line is sent, while the child's stderr (more than a pipe holds)
        // is drained on its own.
        let mut child = Process::new("sh")
            .args([
                "-c",
                "head -c 200000 /dev/zero >&2; while read l; do echo \"got $l\"; done; exit 4",
            ])
            .spawn(true)
            .unwrap();
        let mut stdin = child.take_stdin().unwrap();
        let mut stdout = std::io::BufReader::new(child.take_stdout().unwrap());
        for word in ["one", "two"] {
            writeln!(stdin, "{word}").unwrap();
            let mut line = String::new();
            std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
            assert_eq!(line, format!("got {word}\n"));
        }
        drop(stdin);
        assert_eq!(child.wait().unwrap().code(), Some(4));
        assert_eq!(child.stderr().len(), 200_000);
    }

    #[test]
    fn a_spawned_child_without_stdin_finishes_with_both_outputs() {
        let child = Process::new("sh")
            .args(["-c", "cat; echo out; echo err >&2"])
            .spawn(false)
            .unwrap();
        assert!(child.id() > 0);
        let out = child.finish().unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn arg0_is_what_the_program_sees_and_what_errors_name() {
        let p = Process::new("/bin/sh").arg0("my-shell").args(["-c", "echo $0"]);
        assert_eq!(p.line(), "my-shell -c echo $0");
        assert_eq!(p.checked(None).unwrap().stdout, b"my-shell\n");
        let e = Process::new("/nonexistent/copy")
            .arg0("tool")
            .arg("x")
            .output(None)
            .unwrap_err();
        assert!(e.message.contains("cannot run `tool x`"), "{}", e.message);
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
