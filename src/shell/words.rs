//! From a shell command line to the simple commands it would run, through a real shell parser
//! (`brush-parser`, a bash-compatible one): quotes, `&&`, `||`, `;`, pipes, subshells,
//! compound commands, assignments and redirections are the parser's business, not ours.
//!
//! What comes out is every simple command the line may run (the bodies of `if`, loops and
//! functions included, and every command substitution `$(...)`, backquote and process
//! substitution wherever it appears), each with its words and the directory it runs in as far
//! as a literal `cd` tells. A word whose value is only known when the shell runs (a variable,
//! a substitution, a glob, a tilde, brace expansion) is [`Word::Dynamic`]: guardctl never
//! guesses what it expands to.

use brush_parser::ast;
use brush_parser::word::{WordPiece, WordPieceWithSource};
use std::path::PathBuf;

/// How deep substitutions and `sh -c` scripts may nest before the line is called unparseable:
/// a bound on work for input that is, in the end, an attacker's.
pub const MAX_DEPTH: usize = 8;

/// How a parse failure's reason starts.
const PARSER_REFUSES: &str = "the shell parser refuses it";

/// How deep brackets and compound commands may nest in one script. The parser and the walker
/// recurse once per level: 3,000 nested subshells overflowed a thread's 2 MiB stack, and a
/// stack overflow aborts the process — an exit status the harness takes for "no objection".
/// Counted before parsing, so no input reaches the recursion deeper than this.
pub const MAX_NESTING: usize = 64;

/// One word of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// Its value after quote removal: what the program receives.
    Literal(String),
    /// Known only when the shell expands it; the text as written.
    Dynamic(String),
}

impl Word {
    pub fn literal(&self) -> Option<&str> {
        match self {
            Word::Literal(s) => Some(s),
            Word::Dynamic(_) => None,
        }
    }

    /// As written (dynamic) or as the program receives it (literal), for messages.
    pub fn text(&self) -> &str {
        match self {
            Word::Literal(s) | Word::Dynamic(s) => s,
        }
    }
}

/// The directory a command runs in, relative to where the line starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dir {
    /// The starting directory joined with this (empty: the starting directory itself).
    Known(PathBuf),
    /// A `cd` whose target is dynamic, `cd -`, or one inside a pipeline.
    Unknown,
}

/// A simple command as the shell would run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    /// The variables the command line assigns for this command (`NAME=value cmd`), with
    /// their values.
    pub assigns: Vec<(String, Word)>,
    /// The command word and its arguments.
    pub words: Vec<Word>,
    pub dir: Dir,
    /// What its standard input is, where the line says: a shell reads its script there.
    pub stdin: Stdin,
}

/// A command's standard input, as far as the line tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stdin {
    /// Whatever the line's own standard input is.
    Inherited,
    /// The line redirects some input somewhere (`{ bash; } <<< …`, `exec 0< …`, `< <(…)`):
    /// this command's may be that.
    Unknown,
    /// The output of the command before it in a pipeline.
    Pipe,
    /// A here-string or here-document: its text (dynamic when it holds expansions).
    Text(Word),
}

/// Everything a line may run, and what else about it decides whether it can destroy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// Every simple command, in order.
    pub commands: Vec<Simple>,
    /// The files its output redirections open for writing (`> f`, `>> f`, `>| f`, `&> f`,
    /// `<> f`, `>&f`): each may truncate or change a file.
    pub writes: Vec<Word>,
    /// Every variable it assigns, wherever: before a command, alone, or as an argument of
    /// `export`, `declare`, `local`, `readonly`, `typeset` (a bare `export NAME` has an empty
    /// dynamic value: what it exports is not on the line).
    pub assigns: Vec<(String, Word)>,
    /// The functions it defines: a later word may call one under a program's name.
    pub functions: Vec<String>,
}

impl Script {
    fn absorb(&mut self, other: Script) {
        self.commands.extend(other.commands);
        self.writes.extend(other.writes);
        self.assigns.extend(other.assigns);
        self.functions.extend(other.functions);
    }
}

/// Why a line cannot be read with confidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparseable(pub String);

/// How a line nested too deeply to read is described (the reader refuses it).
pub const TOO_DEEP: &str = "it nests brackets or compound commands more than";

/// Every simple command of `line`, in order.
pub fn commands(line: &str) -> Result<Vec<Simple>, Unparseable> {
    script(line).map(|s| s.commands)
}

/// What `line` may run, and the writes, assignments and functions that come with it.
pub fn script(line: &str) -> Result<Script, Unparseable> {
    let mut walker = Walker::new(0);
    walker.script(line, Dir::Known(PathBuf::new()))?;
    let (code_text, arithmetic) = (walker.code_text, walker.arithmetic);
    let out = walker.finish()?;
    // bash evaluates a variable's value as an expression again in arithmetic (`x='a[$(rm
    // -rf y)]'; echo $((x))`): quoted code and arithmetic in one line may run the code.
    if code_text && arithmetic {
        return Err(Unparseable(
            "it holds a quoted command substitution and an arithmetic expression, which bash may run".into(),
        ));
    }
    Ok(out)
}

/// The simple commands of a script run by `sh -c SCRIPT` or `eval`, in `dir`: nested one
/// level deeper than `depth`.
pub fn nested(script: &str, dir: Dir, depth: usize) -> Result<Script, Unparseable> {
    let mut walker = Walker::new(depth + 1);
    if walker.depth > MAX_DEPTH {
        return Err(Unparseable("commands nested too deep".into()));
    }
    walker.script(script, dir)?;
    walker.finish()
}

fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions {
        // `@(...)` and friends are globs: an agent's line is read as bash reads it.
        enable_extended_globbing: true,
        ..Default::default()
    }
}

struct Walker {
    out: Script,
    depth: usize,
    /// A literal word holds `$(` or a backquote: code as text.
    code_text: bool,
    /// The line evaluates arithmetic (`((…))`, `$((…))`, `[[ … ]]`, `let`, `declare -i`).
    arithmetic: bool,
    /// Functions the line defines whose bodies change directory.
    moving_functions: Vec<String>,
    /// The line sets CDPATH: a `cd` may go elsewhere than its operand says.
    cdpath: bool,
    /// The line redirects input somewhere, or substitutes a process.
    input_redirect: bool,
    /// The line sets one of git's variables (`GIT_CONFIG_COUNT=1`, `export GIT_SSH_COMMAND`).
    git_env: bool,
    /// The word being read has a `[` with a `]` after it: unquoted, that is a glob.
    bracket_glob: bool,
}

/// Variables whose values bash runs as code (prompts, traces, start-up files).
const CODE_VARIABLES: &[&str] = &[
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "BASH_ENV",
    "ENV",
];

impl Walker {
    fn new(depth: usize) -> Walker {
        Walker {
            out: Script::default(),
            depth,
            code_text: false,
            arithmetic: false,
            moving_functions: Vec::new(),
            cdpath: false,
            input_redirect: false,
            git_env: false,
            bracket_glob: false,
        }
    }

    /// The commands found, each whose input the line may have redirected marked so.
    fn finish(mut self) -> Result<Script, Unparseable> {
        if self.git_env
            && self.out.commands.iter().any(|c| {
                c.words
                    .iter()
                    .any(|w| w.literal().is_some_and(|t| t.rsplit('/').next() == Some("git")))
            })
        {
            return Err(Unparseable(
                "it sets git's environment (GIT_*) for a git it runs".into(),
            ));
        }
        if self.input_redirect {
            for c in &mut self.out.commands {
                if c.stdin == Stdin::Inherited {
                    c.stdin = Stdin::Unknown;
                }
            }
        }
        Ok(self.out)
    }

    fn script(&mut self, text: &str, dir: Dir) -> Result<Dir, Unparseable> {
        if nesting(text) > MAX_NESTING {
            return Err(Unparseable(format!("{TOO_DEEP} {MAX_NESTING} levels deep")));
        }
        let mut parser = brush_parser::Parser::new(std::io::Cursor::new(text), &options());
        let program = parser
            .parse_program()
            .map_err(|e| Unparseable(format!("{PARSER_REFUSES}: {e}")))?;
        let mut dir = dir;
        for list in &program.complete_commands {
            dir = self.list(list, dir)?;
        }
        Ok(dir)
    }

    fn list(&mut self, list: &ast::CompoundList, mut dir: Dir) -> Result<Dir, Unparseable> {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            dir = self.pipeline(&and_or.first, dir)?;
            for next in &and_or.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                dir = self.pipeline(p, dir)?;
            }
        }
        Ok(dir)
    }

    fn pipeline(&mut self, p: &ast::Pipeline, dir: Dir) -> Result<Dir, Unparseable> {
        if p.seq.len() == 1 {
            return self.command(&p.seq[0], dir);
        }
        // Each part of a pipeline runs in a subshell: a `cd` there moves nothing after it,
        // but where the later parts run is then not worth guessing.
        let mut after = dir.clone();
        for (i, c) in p.seq.iter().enumerate() {
            let first = self.out.commands.len();
            if self.command(c, dir.clone())? != dir {
                after = Dir::Unknown;
            }
            if i > 0 {
                // The first command this part runs reads the pipe (unless it redirects).
                if let Some(s) = self.out.commands.get_mut(first)
                    && s.stdin == Stdin::Inherited
                {
                    s.stdin = Stdin::Pipe;
                }
            }
        }
        Ok(after)
    }

    fn command(&mut self, c: &ast::Command, dir: Dir) -> Result<Dir, Unparseable> {
        match c {
            ast::Command::Simple(s) => self.simple(s, dir),
            ast::Command::Compound(compound, redirects) => {
                if let Some(r) = redirects {
                    for redirect in &r.0 {
                        self.redirect(redirect, &dir)?;
                    }
                }
                self.compound(compound, dir)
            }
            ast::Command::Function(f) => {
                self.out.functions.push(f.fname.value.clone());
                // Defined here, maybe called later: its body counts as run, where it is.
                if self.compound(&f.body.0, dir.clone())? != dir {
                    self.moving_functions.push(f.fname.value.clone());
                }
                Ok(dir)
            }
            ast::Command::ExtendedTest(test, _) => {
                self.arithmetic = true;
                self.opaque(&test.expr.to_string())?;
                Ok(dir)
            }
        }
    }

    fn compound(&mut self, c: &ast::CompoundCommand, dir: Dir) -> Result<Dir, Unparseable> {
        use ast::CompoundCommand as C;
        match c {
            C::BraceGroup(g) => self.list(&g.list, dir),
            // A subshell's `cd` ends with it.
            C::Subshell(s) => self.list(&s.list, dir.clone()).map(|_| dir),
            C::IfClause(i) => {
                let mut d = self.list(&i.condition, dir.clone())?;
                d = merge(d, self.list(&i.then, dir.clone())?);
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        d = merge(d, self.list(cond, dir.clone())?);
                    }
                    d = merge(d, self.list(&e.body, dir.clone())?);
                }
                Ok(merge(d, dir))
            }
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w, &dir)?;
                }
                let d = self.list(&f.body.list, dir.clone())?;
                Ok(merge(d, dir))
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                let d = self.list(&w.0, dir.clone())?;
                let d = merge(d, self.list(&w.1.list, dir.clone())?);
                Ok(merge(d, dir))
            }
            C::CaseClause(c) => {
                self.word(&c.value, &dir)?;
                let mut d = dir.clone();
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(p, &dir)?;
                    }
                    if let Some(cmd) = &item.cmd {
                        d = merge(d, self.list(cmd, dir.clone())?);
                    }
                }
                Ok(d)
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    self.opaque(&e.to_string())?;
                }
                let d = self.list(&f.body.list, dir.clone())?;
                Ok(merge(d, dir))
            }
            C::Arithmetic(a) => {
                self.arithmetic(&a.expr.value, &dir)?;
                Ok(dir)
            }
            C::Coprocess(c) => {
                self.command(&c.body, dir.clone())?;
                Ok(dir)
            }
        }
    }

    /// Text the walker does not take apart (arithmetic, `[[ ]]`): it runs nothing unless it
    /// holds a substitution, which is then beyond what guardctl reads with confidence.
    fn opaque(&mut self, text: &str) -> Result<(), Unparseable> {
        if text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(") {
            return Err(Unparseable(
                "a command substitution inside an arithmetic or `[[ ]]` expression".into(),
            ));
        }
        Ok(())
    }

    /// `((…))` and `$((…))`. bash reads them as arithmetic only when that parses, and
    /// otherwise as nested subshells (`( ( rm -rf x ) )`, `((rm -rf x) )`; dash always
    /// does): the parser here takes the arithmetic reading. So the text is also read as a
    /// script, and whatever commands it would run are judged. Genuine arithmetic (`i++`,
    /// `x = 1 + 2`) reads as commands of no rule's program, or not at all.
    fn arithmetic(&mut self, text: &str, dir: &Dir) -> Result<(), Unparseable> {
        self.arithmetic = true;
        // Text that is an arithmetic expression runs only its command substitutions.
        if let Some(substitutions) = arithmetic_expression(text) {
            for script in substitutions {
                let found = nested(script, dir.clone(), self.depth)?;
                self.out.absorb(found);
            }
            return Ok(());
        }
        self.opaque(text)?;
        // Only what parses as a script can run as one; but a script too deep to read is
        // unreadable, not harmless (18 nested `( (` once hid a whole line this way).
        match nested(text, dir.clone(), self.depth) {
            Ok(found) => self.out.absorb(found),
            Err(e) if e.0.starts_with(PARSER_REFUSES) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn simple(&mut self, s: &ast::SimpleCommand, dir: Dir) -> Result<Dir, Unparseable> {
        let mut assigns = Vec::new();
        let mut words = Vec::new();
        let mut stdin = Stdin::Inherited;
        let prefix: Vec<&ast::CommandPrefixOrSuffixItem> = s.prefix.iter().flat_map(|p| p.0.iter()).collect();
        let suffix: Vec<&ast::CommandPrefixOrSuffixItem> = s.suffix.iter().flat_map(|p| p.0.iter()).collect();
        for (i, item) in prefix.iter().chain(&suffix).enumerate() {
            if i == prefix.len()
                && let Some(w) = &s.word_or_name
            {
                words.push(self.word(w, &dir)?);
            }
            if let ast::CommandPrefixOrSuffixItem::IoRedirect(r) = item
                && let Some(text) = self.stdin_text(r, &dir)?
            {
                stdin = Stdin::Text(text);
            }
            self.item(item, &dir, &mut assigns, &mut words)?;
        }
        if suffix.is_empty()
            && let Some(w) = &s.word_or_name
        {
            words.push(self.word(w, &dir)?);
        }
        for (name, value) in &assigns {
            if CODE_VARIABLES.contains(&name.as_str()) {
                return Err(Unparseable(format!(
                    "it sets {name}, whose value bash runs as code"
                )));
            }
            if name == "CDPATH" {
                self.cdpath = true;
            }
            self.git_env |= git_variable(name) && !harmless_value(name, value);
        }
        self.out.assigns.extend(assigns.iter().cloned());
        if words.is_empty() {
            // Only assignments (`X=$(...)`): their substitutions were collected.
            return Ok(dir);
        }
        let head: Vec<Option<&str>> = words.iter().take(2).map(Word::literal).collect();
        let next = match head.as_slice() {
            [Some("cd" | "pushd"), ..] => self.cd(&dir, &words[1..]),
            [Some("builtin" | "command"), Some("cd" | "pushd")] => self.cd(&dir, &words[2..]),
            [Some("popd"), ..] | [Some("builtin" | "command"), Some("popd")] => Dir::Unknown,
            [
                Some("let" | "declare" | "typeset" | "local" | "readonly" | "export"),
                ..,
            ] => {
                self.arithmetic = true;
                for w in words[1..].iter().filter(|w| !w.text().starts_with('-')) {
                    let (name, value) = match w.text().split_once('=') {
                        Some((n, v)) => (
                            n.to_string(),
                            match w {
                                Word::Literal(_) => Word::Literal(v.to_string()),
                                Word::Dynamic(_) => Word::Dynamic(v.to_string()),
                            },
                        ),
                        None => (w.text().to_string(), Word::Dynamic(String::new())),
                    };
                    if CODE_VARIABLES.contains(&name.as_str()) {
                        return Err(Unparseable(format!(
                            "it sets {name}, whose value bash runs as code"
                        )));
                    }
                    self.git_env |= git_variable(&name) && !harmless_value(&name, &value);
                    self.out.assigns.push((name, value));
                }
                dir.clone()
            }
            // A script that may move the shell: where later commands run is unknown.
            [Some("eval" | "source" | "." | "exec"), ..] => {
                let moves = words.iter().any(|w| {
                    w.literal()
                        .is_none_or(|t| t.contains("cd") || t.contains("pushd") || t.contains("popd"))
                });
                if moves { Dir::Unknown } else { dir.clone() }
            }
            [Some(name), ..] if self.moving_functions.iter().any(|f| f == name) => Dir::Unknown,
            _ => dir.clone(),
        };
        self.out.commands.push(Simple {
            assigns,
            words,
            dir,
            stdin,
        });
        Ok(next)
    }

    /// Where `cd ARGS` leaves the shell, as bash's logical `cd` does (`sub/..` is here, not
    /// where a symbolic link `sub` leads).
    fn cd(&self, dir: &Dir, args: &[Word]) -> Dir {
        let Dir::Known(base) = dir else {
            return Dir::Unknown;
        };
        if self.cdpath || args.iter().any(|w| w.literal() == Some("-P")) {
            return Dir::Unknown;
        }
        let operands: Vec<&Word> = args
            .iter()
            .filter(|w| !matches!(w.literal(), Some("-L" | "-e" | "--")))
            .collect();
        match operands.as_slice() {
            [Word::Literal(target)] if target != "-" && !target.is_empty() => {
                Dir::Known(logical(&base.join(target)))
            }
            // `cd` alone goes home; `cd -` back; a dynamic target anywhere.
            _ => Dir::Unknown,
        }
    }

    /// The text a here-string or here-document gives standard input, when `r` is one for it.
    fn stdin_text(&mut self, r: &ast::IoRedirect, dir: &Dir) -> Result<Option<Word>, Unparseable> {
        let to_stdin = |fd: &Option<ast::IoFd>| fd.as_ref().is_none_or(|fd| fd.to_string() == "0");
        match r {
            ast::IoRedirect::HereString(fd, w) if to_stdin(fd) => Ok(Some(self.word(w, dir)?)),
            ast::IoRedirect::HereDocument(fd, doc) if to_stdin(fd) => Ok(Some(if doc.requires_expansion {
                self.word(&doc.doc, dir)?
            } else {
                Word::Literal(doc.doc.value.clone())
            })),
            _ => Ok(None),
        }
    }

    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        dir: &Dir,
        assigns: &mut Vec<(String, Word)>,
        words: &mut Vec<Word>,
    ) -> Result<(), Unparseable> {
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::IoRedirect(r) => self.redirect(r, dir),
            I::Word(w) => {
                words.push(self.word(w, dir)?);
                Ok(())
            }
            I::AssignmentWord(a, w) => {
                if words.is_empty() {
                    let name = match &a.name {
                        ast::AssignmentName::VariableName(n) => n.clone(),
                        ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
                    };
                    let value = match &a.value {
                        ast::AssignmentValue::Scalar(v) => self.word(v, dir)?,
                        ast::AssignmentValue::Array(items) => {
                            for (k, v) in items {
                                if let Some(k) = k {
                                    self.word(k, dir)?;
                                }
                                self.word(v, dir)?;
                            }
                            Word::Dynamic(w.value.clone())
                        }
                    };
                    // `a[i]=x`: the subscript is arithmetic bash evaluates.
                    let value = match &a.name {
                        ast::AssignmentName::VariableName(_) => value,
                        ast::AssignmentName::ArrayElementName(_, subscript) => {
                            if subscript.contains(['$', '`']) {
                                return Err(Unparseable(
                                    "an array subscript holds an expansion, which bash evaluates as arithmetic and may run code"
                                        .into(),
                                ));
                            }
                            Word::Dynamic(w.value.clone())
                        }
                    };
                    assigns.push((name, value));
                    Ok(())
                } else {
                    // After the command word, `a=b` is an argument (`env X=1 cmd`).
                    words.push(self.word(w, dir)?);
                    Ok(())
                }
            }
            I::ProcessSubstitution(_, sub) => {
                self.input_redirect = true;
                self.list(&sub.list, dir.clone())?;
                words.push(Word::Dynamic("<(...)".into()));
                Ok(())
            }
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect, dir: &Dir) -> Result<(), Unparseable> {
        use ast::IoFileRedirectKind as K;
        self.input_redirect |= match r {
            ast::IoRedirect::File(_, kind, target) => {
                matches!(kind, K::Read | K::ReadAndWrite | K::DuplicateInput)
                    || matches!(target, ast::IoFileRedirectTarget::ProcessSubstitution(..))
            }
            ast::IoRedirect::HereDocument(..) | ast::IoRedirect::HereString(..) => true,
            ast::IoRedirect::OutputAndError(..) => false,
        };
        match r {
            ast::IoRedirect::File(_, kind, target) => match target {
                ast::IoFileRedirectTarget::Filename(w) | ast::IoFileRedirectTarget::Duplicate(w) => {
                    let file = self.word(w, dir)?;
                    // `>&2` duplicates a descriptor; `>&file` opens the file as `&>` does.
                    let descriptor = matches!(target, ast::IoFileRedirectTarget::Duplicate(_))
                        && (file.text() == "-" || file.text().chars().all(|c| c.is_ascii_digit()));
                    let writes = matches!(
                        kind,
                        K::Write | K::Append | K::Clobber | K::ReadAndWrite | K::DuplicateOutput
                    );
                    if writes && !descriptor {
                        self.out.writes.push(file);
                    }
                    Ok(())
                }
                ast::IoFileRedirectTarget::Fd(_) => Ok(()),
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                    self.list(&sub.list, dir.clone()).map(|_| ())
                }
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.word(&doc.doc, dir)?;
                }
                Ok(())
            }
            ast::IoRedirect::HereString(_, w) => self.word(w, dir).map(|_| ()),
            ast::IoRedirect::OutputAndError(w, _) => {
                let file = self.word(w, dir)?;
                self.out.writes.push(file);
                Ok(())
            }
        }
    }

    /// A word's value, collecting the commands its substitutions run.
    fn word(&mut self, w: &ast::Word, dir: &Dir) -> Result<Word, Unparseable> {
        // `${!x}` reads the variable x names; a name like `a[$(…)]` runs the substitution.
        if w.value.contains("${!") {
            return Err(Unparseable(
                "an indirect expansion (`${!…}`) evaluates a name only the running line knows, which may run code".into(),
            ));
        }
        let pieces = brush_parser::word::parse(&w.value, &options())
            .map_err(|e| Unparseable(format!("cannot read the word `{}`: {e}", w.value)))?;
        let mut value = String::new();
        // bash reads `[` as a glob only with a `]` after it: `[ -f x ]`'s `[` is a word.
        let outer = self.bracket_glob;
        self.bracket_glob = w.value.find('[').is_some_and(|i| w.value[i..].contains(']'));
        let literal = self.pieces(&pieces, dir, false, &mut value);
        self.bracket_glob = outer;
        let literal = literal?;
        Ok(if literal {
            Word::Literal(value)
        } else {
            Word::Dynamic(w.value.clone())
        })
    }

    /// Appends the pieces' literal value to `value`; false when any part is dynamic.
    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        dir: &Dir,
        quoted: bool,
        value: &mut String,
    ) -> Result<bool, Unparseable> {
        let mut literal = true;
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t) => {
                    // Unquoted, these make a glob or a brace expansion: the shell decides.
                    // (`{}` alone, as `find -exec` takes it, is text to bash.)
                    let braces = t.contains('{') && (t.contains(',') || t.contains(".."));
                    if !quoted && (t.contains(['*', '?']) || (self.bracket_glob && t.contains('[')) || braces)
                    {
                        literal = false;
                    }
                    value.push_str(t);
                }
                WordPiece::SingleQuotedText(t) => {
                    self.code_text |= t.contains("$(") || t.contains('`');
                    value.push_str(t);
                }
                WordPiece::EscapeSequence(e) => {
                    // `\$\(…\)` and `` \` `` spell a substitution bash may evaluate later, as
                    // quotes do (`v=x[\$\(rm\ y\)]; echo $((v))`).
                    self.code_text |= e == "\\$" || e == "\\`";
                    value.push_str(e.strip_prefix('\\').unwrap_or(e))
                }
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    literal &= self.pieces(inner, dir, true, value)?;
                }
                WordPiece::CommandSubstitution(script) | WordPiece::BackquotedCommandSubstitution(script) => {
                    let found = nested(script, dir.clone(), self.depth)?;
                    self.out.absorb(found);
                    literal = false;
                }
                WordPiece::ParameterExpansion(e) => {
                    // `${x:-$(cmd)}` runs cmd: what the expansion holds is read as a script.
                    // Its inner words are kept as text: look for a substitution there.
                    let text = format!("{e:?}");
                    if text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(")
                    {
                        return Err(Unparseable(
                            "a command substitution inside a parameter expansion".into(),
                        ));
                    }
                    literal = false;
                }
                WordPiece::AnsiCQuotedText(_) | WordPiece::TildeExpansion(_) => literal = false,
                WordPiece::ArithmeticExpression(e) => {
                    self.arithmetic(&e.value, dir)?;
                    literal = false;
                }
            }
        }
        Ok(literal)
    }
}

/// An upper bound on how deep `text` nests, counted without parsing: `(`, `{` and `[` open a
/// level and their closers end one (outside single quotes, not escaped; inside double quotes
/// too, where `$(` and `${` nest), and so do the words that open and close compound commands
/// (`if`…`fi`, `for`/`while`/`until`/`select`…`done`, `case`…`esac`). Conservative: a
/// bracket in a here-document counts as well.
fn nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut word = String::new();
    let mut chars = text.chars();
    let mut single = false;
    let end_word = |word: &mut String, depth: &mut usize, max: &mut usize| {
        match word.as_str() {
            "if" | "for" | "while" | "until" | "select" | "case" => {
                *depth += 1;
                *max = (*max).max(*depth);
            }
            "fi" | "done" | "esac" => *depth = depth.saturating_sub(1),
            _ => {}
        }
        word.clear();
    };
    while let Some(c) = chars.next() {
        if single {
            single = c != '\'';
            continue;
        }
        match c {
            '\'' => single = true,
            '\\' => {
                chars.next();
            }
            '(' | '{' | '[' => {
                end_word(&mut word, &mut depth, &mut max);
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' | ']' => {
                end_word(&mut word, &mut depth, &mut max);
                depth = depth.saturating_sub(1);
            }
            c if c.is_alphanumeric() || c == '_' => word.push(c),
            _ => end_word(&mut word, &mut depth, &mut max),
        }
    }
    end_word(&mut word, &mut depth, &mut max);
    max
}

/// When `text` is an arithmetic expression as bash reads one (operands — numbers, names,
/// `name[…]`, `$name`, `${…}`, `$(…)`, `(…)` — with unary, postfix and binary operators
/// between them, and nothing else), the command substitutions it holds; `None` for text that
/// is no such expression (`rm -rf x`: `x` follows an operand without an operator), which may
/// then be nested subshells.
fn arithmetic_expression(text: &str) -> Option<Vec<&str>> {
    const BINARY: &[&str] = &[
        "<<=", ">>=", "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=",
        "&=", "^=", "|=", "+", "-", "*", "/", "%", "<", ">", "&", "^", "|", "=", ",", "?", ":",
    ];
    let b = text.as_bytes();
    let mut subs = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    // Whether an operand is wanted next (true) or an operator (false).
    let mut want_operand = true;
    let skip_space = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // The end of a bracketed run starting at `open` (`(`, `[` or `{`), nested, or None.
    let close = |open: usize| -> Option<usize> {
        let (o, c) = match b[open] {
            b'(' => (b'(', b')'),
            b'[' => (b'[', b']'),
            _ => (b'{', b'}'),
        };
        let mut d = 0;
        for (k, &ch) in b.iter().enumerate().skip(open) {
            if ch == b'\'' || ch == b'"' || ch == b'`' {
                return None;
            }
            if ch == o {
                d += 1;
            } else if ch == c {
                d -= 1;
                if d == 0 {
                    return Some(k);
                }
            }
        }
        None
    };
    loop {
        skip_space(&mut i);
        if i >= b.len() {
            break;
        }
        if want_operand {
            let rest = &text[i..];
            if rest.starts_with("++") || rest.starts_with("--") {
                i += 2;
            } else if matches!(b[i], b'+' | b'-' | b'!' | b'~') {
                i += 1;
            } else if b[i] == b'(' {
                depth += 1;
                i += 1;
            } else if rest.starts_with("$(") {
                let end = close(i + 1)?;
                subs.push(&text[i + 2..end]);
                i = end + 1;
                want_operand = false;
            } else if rest.starts_with("${") {
                i = close(i + 1)? + 1;
                want_operand = false;
            } else if b[i] == b'$' || b[i].is_ascii_alphanumeric() || b[i] == b'_' {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'#') {
                    i += 1;
                }
                if i < b.len() && b[i] == b'[' {
                    let end = close(i)?;
                    // A subscript is an expression too.
                    subs.extend(arithmetic_expression(&text[i + 1..end])?);
                    i = end + 1;
                }
                want_operand = false;
            } else {
                return None;
            }
        } else {
            let rest = &text[i..];
            if rest.starts_with("++") || rest.starts_with("--") {
                i += 2;
            } else if b[i] == b')' {
                depth = depth.checked_sub(1)?;
                i += 1;
            } else if let Some(op) = BINARY.iter().find(|op| rest.starts_with(**op)) {
                i += op.len();
                want_operand = true;
            } else {
                return None;
            }
        }
    }
    (!want_operand && depth == 0).then_some(subs)
}

/// Where a later command runs after a branch that may or may not have run.
fn merge(a: Dir, b: Dir) -> Dir {
    if a == b { a } else { Dir::Unknown }
}

/// One of git's variables that points it at other files or makes it run a program
/// (`GIT_DIR`, `GIT_CONFIG_COUNT`, `GIT_SSH_COMMAND`, `GIT_EXTERNAL_DIFF`…); who and when a
/// commit is by, and tracing, are not.
pub fn git_variable(name: &str) -> bool {
    const HARMLESS: &[&str] = &[
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_TERMINAL_PROMPT",
        "GIT_OPTIONAL_LOCKS",
        "GIT_MERGE_AUTOEDIT",
        "GIT_FLUSH",
    ];
    name.starts_with("GIT_") && !HARMLESS.contains(&name) && !name.starts_with("GIT_TRACE")
}

/// A value of a program-running variable that runs nothing: `GIT_EDITOR=true` (an edit that
/// keeps the message), `GIT_PAGER=cat`. Every other value of such a variable may run a
/// program of the line's choosing.
pub fn harmless_value(name: &str, value: &Word) -> bool {
    let v = value.literal();
    match name {
        "GIT_EDITOR" | "GIT_SEQUENCE_EDITOR" | "EDITOR" | "VISUAL" => {
            matches!(v, Some("true" | ":" | "/bin/true" | "/usr/bin/true"))
        }
        "GIT_PAGER" | "PAGER" | "MANPAGER" => matches!(v, Some("cat" | "/bin/cat" | "/usr/bin/cat" | "")),
        _ => false,
    }
}

/// `path` with `.` and `..` taken away as text, as bash's logical directory does.
fn logical(path: &std::path::Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.components().next_back(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(words: &[&str]) -> Vec<Word> {
        words.iter().map(|w| Word::Literal(w.to_string())).collect()
    }

    fn words_of(line: &str) -> Vec<Vec<Word>> {
        commands(line).unwrap().into_iter().map(|s| s.words).collect()
    }

    #[test]
    fn quotes_are_removed_and_operators_split_commands() {
        assert_eq!(
            words_of(r#"git branch -D 'a b' "c" d\ e && rm -rf x; ls | wc -l || true"#),
            vec![
                lit(&["git", "branch", "-D", "a b", "c", "d e"]),
                lit(&["rm", "-rf", "x"]),
                lit(&["ls"]),
                lit(&["wc", "-l"]),
                lit(&["true"]),
            ]
        );
    }

    #[test]
    fn substitutions_are_commands_too_and_make_their_word_dynamic() {
        let found = words_of("echo $(rm -rf build) `git tag -d v1` \"$(git branch -D x)\"");
        assert_eq!(found[0], lit(&["rm", "-rf", "build"]));
        assert_eq!(found[1], lit(&["git", "tag", "-d", "v1"]));
        assert_eq!(found[2], lit(&["git", "branch", "-D", "x"]));
        assert_eq!(found[3][0], Word::Literal("echo".into()));
        assert!(found[3][1..].iter().all(|w| matches!(w, Word::Dynamic(_))));
    }

    #[test]
    fn variables_globs_tildes_and_braces_are_dynamic() {
        for line in [
            "rm -rf $X",
            "rm -rf *.o",
            "rm -rf ~/x",
            "rm -rf {a,b}",
            "rm -rf \"$X\"",
            "rm ${X}",
        ] {
            let found = words_of(line);
            assert!(
                matches!(found[0][2.min(found[0].len() - 1)], Word::Dynamic(_)),
                "{line}: {found:?}"
            );
        }
        // Quoted, a star is a star.
        assert_eq!(words_of("rm '*.o'")[0], lit(&["rm", "*.o"]));
    }

    #[test]
    fn cd_moves_later_commands_until_a_subshell_ends() {
        let found = commands("cd x && git push origin --delete y; (cd z; rm a); rm b").unwrap();
        let dirs: Vec<Dir> = found.iter().map(|s| s.dir.clone()).collect();
        assert_eq!(
            dirs,
            vec![
                Dir::Known("".into()),
                Dir::Known("x".into()),
                Dir::Known("x".into()),
                Dir::Known("x/z".into()),
                Dir::Known("x".into()),
            ]
        );
        let after_dynamic = commands("cd \"$D\"; rm -rf x").unwrap();
        assert_eq!(after_dynamic[1].dir, Dir::Unknown);
    }

    #[test]
    fn bodies_of_loops_conditions_and_functions_are_read() {
        let found = words_of("if true; then rm a; fi; for f in x; do git tag -d $f; done; f() { rm b; }");
        let programs: Vec<&str> = found.iter().map(|w| w[0].text()).collect();
        assert_eq!(programs, ["true", "rm", "git", "rm"]);
    }

    #[test]
    fn assignments_are_kept_apart_from_words() {
        let found = commands("LC_ALL=C git branch -D y").unwrap();
        assert_eq!(
            found[0].assigns,
            [("LC_ALL".to_string(), Word::Literal("C".into()))]
        );
        assert_eq!(found[0].words, lit(&["git", "branch", "-D", "y"]));
        // git's own variables point it elsewhere or make it run programs: unreadable.
        assert!(commands("GIT_DIR=/x git branch -D y").is_err());
    }

    #[test]
    fn nesting_past_the_limit_is_unparseable_before_any_recursion() {
        for n in [MAX_NESTING + 1, 3_000, 100_000] {
            for (open, close) in [
                ("( ", " )"),
                ("{ ", "; }"),
                ("$(", ")"),
                ("if true; then ", "; fi"),
            ] {
                let line = format!("{}ls{}", open.repeat(n), close.repeat(n));
                let e = commands(&line).unwrap_err();
                assert!(e.0.contains("levels deep"), "{open} x{n}: {e:?}");
            }
        }
        let nested = format!("{}ls{}", "{ ".repeat(MAX_NESTING), "; }".repeat(MAX_NESTING));
        assert_eq!(words_of(&nested), vec![lit(&["ls"])]);
        // Quoted brackets are text, and long flat lines are not deep.
        assert!(commands(&format!("echo '{}'", "(".repeat(1000))).is_ok());
        assert!(commands(&("true && ".repeat(20_000) + "ls")).is_ok());
    }

    #[test]
    fn double_parentheses_that_bash_would_run_as_subshells_are_read_as_commands() {
        for line in [
            "( ( rm -rf x ) )",
            "((rm -rf x) )",
            "((rm -rf x))",
            "echo $(( (rm -rf x) ))",
        ] {
            let found = words_of(line);
            assert!(found.contains(&lit(&["rm", "-rf", "x"])), "{line}: {found:?}");
        }
        // Genuine arithmetic runs no program a rule names.
        for line in ["((i++))", "(( x = 1 + 2 ))", "echo $((3 * 4))"] {
            assert!(commands(line).is_ok(), "{line}");
        }
    }

    #[test]
    fn what_the_parser_refuses_is_unparseable() {
        assert!(commands("rm -rf 'unterminated").is_err());
        assert!(commands("if then fi (").is_err());
    }
}
