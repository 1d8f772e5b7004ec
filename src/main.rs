//! The guardctl binary: everything lives in the library (see `src/lib.rs`).

fn main() -> std::process::ExitCode {
    guardctl::main()
}
