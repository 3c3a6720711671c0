//! The whole hooks-app — every command, the daemon, `claude-hook`, HTTP and the page — with
//! two adapters of this crate besides the built-in ones: `--runner script` and
//! `--store memory:`.

fn main() -> std::process::ExitCode {
    hooks_app::Adapters::new()
        .runner("script", hooks_example_script_agent::ScriptAdapter)
        .store("memory", hooks_example_script_agent::memory_store)
        .run()
}
