//! The one question guardctl asks a person: "type the first 8 hex digits of the plan id".
//! Keys are read raw, so Ctrl-C, Esc and Ctrl-D are answers, not signals: each ends the
//! prompt with a newline and a plain word, and the caller records nothing (a Ctrl-C that
//! killed the process left the cursor after the prompt and exit 130).
//!
//! Not here: whether a person may be asked at all (`Ui::may_prompt`), what counts as the
//! right answer (the caller compares).

use dialoguer::console::{Key, Term};
use std::io::Write;

/// How the question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Enter was pressed after these characters.
    Typed(String),
    /// Ctrl-C or Esc.
    Cancelled,
    /// Ctrl-D on an empty line (end of input).
    EndOfInput,
}

/// Edit a line from `keys` the way a terminal's line discipline would: printable characters
/// are added (and echoed to `echo`), Backspace removes one.
pub fn read_line(
    mut next: impl FnMut() -> std::io::Result<Key>,
    echo: &mut dyn Write,
) -> std::io::Result<Answer> {
    let mut line = String::new();
    loop {
        match next()? {
            Key::Enter => return Ok(Answer::Typed(line)),
            Key::CtrlC | Key::Escape => return Ok(Answer::Cancelled),
            Key::Char('\u{4}') if line.is_empty() => return Ok(Answer::EndOfInput),
            Key::Backspace if line.pop().is_some() => write!(echo, "\u{8} \u{8}")?,
            Key::Char(c) if !c.is_control() => {
                line.push(c);
                write!(echo, "{c}")?;
            }
            _ => {}
        }
        echo.flush()?;
    }
}

/// Ask `question` on the terminal (stderr) and read the answer, ending with a newline
/// whatever the answer.
pub fn ask(question: &str) -> std::io::Result<Answer> {
    let term = Term::stderr();
    let mut echo = Term::stderr();
    write!(echo, "{question}: ")?;
    echo.flush()?;
    let answer = read_line(|| term.read_key_raw(), &mut echo);
    writeln!(echo)?;
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(keys: Vec<Key>) -> (Answer, String) {
        let mut keys = keys.into_iter();
        let mut echo = Vec::new();
        let a = read_line(|| Ok(keys.next().unwrap_or(Key::Enter)), &mut echo).unwrap();
        (a, String::from_utf8(echo).unwrap())
    }

    #[test]
    fn enter_ends_the_line_and_backspace_edits_it() {
        let (a, echo) = run(vec![
            Key::Char('a'),
            Key::Char('x'),
            Key::Backspace,
            Key::Char('b'),
            Key::Enter,
        ]);
        assert_eq!(a, Answer::Typed("ab".into()));
        assert!(echo.starts_with("ax"));
    }

    #[test]
    fn ctrl_c_and_esc_cancel_and_ctrl_d_on_an_empty_line_ends_input() {
        assert_eq!(run(vec![Key::Char('1'), Key::CtrlC]).0, Answer::Cancelled);
        assert_eq!(run(vec![Key::Escape]).0, Answer::Cancelled);
        assert_eq!(run(vec![Key::Char('\u{4}')]).0, Answer::EndOfInput);
        // Ctrl-D after some digits is ignored, as a terminal would.
        assert_eq!(
            run(vec![Key::Char('1'), Key::Char('\u{4}'), Key::Enter]).0,
            Answer::Typed("1".into())
        );
    }
}
