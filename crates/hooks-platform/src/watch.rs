//! Being told when a file is put in place in a folder: inotify on Linux, FSEvents or kqueue
//! (through notify) elsewhere.

use std::path::Path;

/// Calls `wake` each time `name` is renamed into `dir` or closed after writing there, for as
/// long as the process lives. An error means the folder cannot be watched (the caller then
/// polls).
pub fn watch(
    dir: &Path,
    name: &'static str,
    wake: Box<dyn Fn() + Send + Sync>,
) -> std::io::Result<()> {
    crate::imp::watch(dir, name, wake)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_rename_over_the_watched_name_wakes_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        watch(
            dir.path(),
            "hooks.json",
            Box::new(move || {
                let _ = tx.lock().map(|t| t.send(()));
            }),
        )
        .unwrap();
        std::fs::write(dir.path().join("other.json"), "{}").unwrap();
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "another file wakes nobody"
        );
        // Reading the watched file wakes nobody: a daemon reads it after every wake.
        std::fs::write(dir.path().join("hooks.json"), "{}").unwrap();
        while rx.recv_timeout(Duration::from_millis(300)).is_ok() {}
        for _ in 0..3 {
            std::fs::read(dir.path().join("hooks.json")).unwrap();
        }
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "a read is not a change"
        );
        let tmp = dir.path().join(".hooks.json.tmp");
        std::fs::write(&tmp, "{}").unwrap();
        std::fs::rename(&tmp, dir.path().join("hooks.json")).unwrap();
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "woken");
    }
}
