//! Reading a transcript's facts at 1 MB, 10 MB and 100 MB.
//! Prints one JSON object; run by `cargo xtask bench`. `--quick` repeats less.

use std::io::{BufWriter, Write};
use std::time::Instant;

use hooks_meta::read_facts_counted;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let reps = if quick { 5 } else { 50 };
    let dir = tempfile::tempdir().expect("temp dir");
    let user = format!(
        "{{\"type\":\"user\",\"isSidechain\":false,\"cwd\":\"/w\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}\n",
        "x".repeat(3900)
    );
    let assistant = "{\"type\":\"assistant\",\"isSidechain\":false,\"cwd\":\"/w\",\"message\":{\"id\":\"m\",\"model\":\"claude-x\",\"content\":[{\"type\":\"text\",\"text\":\"ok\\nDONE\"}],\"usage\":{\"input_tokens\":5,\"cache_creation_input_tokens\":10,\"cache_read_input_tokens\":20}}}\n";
    let mut rows = Vec::new();
    for mb in [1u64, 10, 100] {
        let path = dir.path().join(format!("t{mb}.jsonl"));
        let mut w = BufWriter::new(std::fs::File::create(&path).expect("create"));
        let mut written = 0u64;
        let mut i = 0u64;
        while written < mb * 1_000_000 {
            let line = if i % 10 == 9 {
                assistant
            } else {
                user.as_str()
            };
            w.write_all(line.as_bytes()).expect("write");
            written += line.len() as u64;
            i += 1;
        }
        w.write_all(assistant.as_bytes()).expect("write");
        drop(w);
        let (_, bytes_read) = read_facts_counted(&path).expect("facts");
        let t = Instant::now();
        for _ in 0..reps {
            let (f, _) = read_facts_counted(&path).expect("facts");
            assert_eq!(f.context_tokens, Some(35));
        }
        let per = t.elapsed().as_secs_f64() / f64::from(reps);
        rows.push(format!(
            "{{\"megabytes\":{mb},\"msPerRead\":{:.4},\"bytesRead\":{bytes_read}}}",
            per * 1000.0
        ));
    }
    println!("{{\"transcript\":[{}]}}", rows.join(","));
}
