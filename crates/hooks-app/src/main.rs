//! The `hooks-app` binary. Everything lives in the library.

fn main() -> std::process::ExitCode {
    hooks_app::run()
}
