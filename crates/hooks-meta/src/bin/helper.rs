//! Test helper: `stamp DATA_DIR HOOK FIRST COUNT` stamps (HOOK, `sN`) for N in
//! FIRST..FIRST+COUNT and prints `sN won` or `sN lost` for each. Built only with the
//! `test-helpers` feature.

use std::path::Path;
use std::process::ExitCode;

use hooks_core::ports::StampResult;
use hooks_core::{HookId, SessionId};
use hooks_meta::SessionFiles;

fn main() -> ExitCode {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (Some("stamp"), Some(dir), Some(hook), Some(first), Some(count)) = (
        a.first().map(String::as_str),
        a.get(1),
        a.get(2),
        a.get(3),
        a.get(4),
    ) else {
        eprintln!("usage: stamp DATA_DIR HOOK FIRST COUNT");
        return ExitCode::from(2);
    };
    let files = SessionFiles::new(Path::new(dir));
    let (Ok(hook), Ok(first), Ok(count)) = (
        HookId::parse(hook),
        first.parse::<u32>(),
        count.parse::<u32>(),
    ) else {
        eprintln!("error: bad arguments");
        return ExitCode::from(2);
    };
    for i in first..first + count {
        let Ok(s) = SessionId::parse(&format!("s{i}")) else {
            return ExitCode::FAILURE;
        };
        match files.stamp(&s, &hook, time::OffsetDateTime::now_utc()) {
            Ok(StampResult::Won) => println!("{s} won"),
            Ok(StampResult::Lost { .. }) => println!("{s} lost"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
