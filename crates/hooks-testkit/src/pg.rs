//! A PostgreSQL server for tests.
//!
//! [`database`] hands each caller a fresh, empty database and its URL. The server is the one
//! `HOOKS_TEST_DATABASE_URL` names when it is set (its user must be allowed to create
//! databases); otherwise a private, throwaway server is started once per test process:
//! `initdb` into a temp folder, trust authentication, listening on 127.0.0.1 at a free port
//! (and on a socket in its folder). Run as root, it runs as the `postgres` user, since the
//! server refuses to run as root. It stops, and its folder goes, when the test process
//! exits: a small shell keeps it, and ends it when its stdin (a pipe from this process)
//! closes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The variable naming a server to use instead of a private one.
pub const DATABASE_URL_VAR: &str = "HOOKS_TEST_DATABASE_URL";

/// Set (to anything), the private server keeps its durability settings (fsync on): for
/// benchmarks. Tests run without, for speed.
pub const DURABLE_VAR: &str = "HOOKS_TEST_PG_DURABLE";

struct Server {
    /// `postgres://user@host:port` (no database).
    base: String,
    /// The certificate authority of a server that takes TLS connections only.
    ca: Option<PathBuf>,
    /// The folder with `psql`, when known.
    bin: Option<PathBuf>,
    /// Keeps the private server's stdin open for as long as this process lives.
    _keep: Option<Mutex<(Child, ChildStdin)>>,
}

static SERVER: OnceLock<Server> = OnceLock::new();
static TLS_SERVER: OnceLock<Server> = OnceLock::new();
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The folder holding PostgreSQL's server programs: the newest `/usr/lib/postgresql/*/bin`,
/// else `pg_config --bindir`, else the folder of `initdb` on PATH.
pub fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    found.sort();
    if let Some((_, b)) = found.pop() {
        return Some(b);
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let b = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if b.join("initdb").is_file() {
            return Some(b);
        }
    }
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
    })
}

fn missing() -> ! {
    panic!(
        "the PostgreSQL tests need a server: PostgreSQL's server programs (initdb, postgres) \
         were not found in /usr/lib/postgresql/*/bin, by pg_config or on PATH. Install them \
         (Debian: apt-get install postgresql), or set {DATABASE_URL_VAR} to a server where \
         this user may create databases."
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// What a server that takes TLS only needs: a certificate authority, a server certificate
/// for 127.0.0.1 and localhost signed by it, and a pg_hba.conf with `hostssl` lines only.
const TLS_SETUP: &str = r#"set -e
cd "$PGDIR"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=hooks-test-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
  -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost
basicConstraints=critical,CA:FALSE
extendedKeyUsage=serverAuth
' > ext.cnf
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out server.crt 2>/dev/null
chmod 600 server.key
printf 'local all all trust
hostssl all all 127.0.0.1/32 trust
' > data/pg_hba.conf
"#;

fn start_private(tls: bool) -> Server {
    let bin = bin_dir().unwrap_or_else(|| missing());
    let root = unsafe { libc::geteuid() } == 0;
    // Not a tempfile::TempDir: the shell that keeps the server removes it when it stops.
    let dir = tempfile::Builder::new()
        .prefix("hooks-pg-")
        .tempdir()
        .expect("temp folder for the server")
        .keep();
    if root {
        let ok = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "running as root, the test server runs as the postgres user, which must exist \
             (Debian's postgresql package creates it)"
        );
    }
    let as_user = |script: &str| -> Command {
        let mut c = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "sh", "-c", script]);
            c
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", script]);
            c
        };
        c.env("PGBIN", &bin).env("PGDIR", &dir);
        c
    };
    let out = as_user(
        "\"$PGBIN/initdb\" -D \"$PGDIR/data\" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 2>&1 || \"$PGBIN/initdb\" -D \"$PGDIR/data\" -U postgres --auth=trust --no-sync -E UTF8 2>&1",
    )
    .output()
    .expect("run initdb");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    if tls {
        let out = as_user(TLS_SETUP).output().expect("run openssl");
        assert!(
            out.status.success(),
            "making the test server's certificates failed (openssl is needed): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tls_args = if tls {
        "-c ssl=on -c ssl_cert_file=\"$PGDIR/server.crt\" -c ssl_key_file=\"$PGDIR/server.key\""
    } else {
        ""
    };
    for attempt in 0..5 {
        let port = free_port();
        // The server's output goes to a log in its folder; the shell prints `ready` once it
        // accepts connections, and ends it when stdin closes.
        // Tests trade durability for speed; benchmarks ask for a durable server.
        let speed = if std::env::var_os(DURABLE_VAR).is_some() {
            ""
        } else {
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        };
        let script = format!(
            "\"$PGBIN/postgres\" -D \"$PGDIR/data\" -p {port} -c listen_addresses=127.0.0.1 \
             -k \"$PGDIR\" {speed} {tls_args} \
             -c max_connections=200 >\"$PGDIR/log\" 2>&1 & pid=$!; \
             i=0; until \"$PGBIN/pg_isready\" -q -h 127.0.0.1 -p {port}; do \
               if ! kill -0 $pid 2>/dev/null; then echo failed; exit 1; fi; \
               i=$((i+1)); [ $i -gt 600 ] && {{ echo failed; kill $pid; exit 1; }}; sleep 0.05; done; \
             echo ready; read _; kill -INT $pid; wait $pid; rm -rf \"$PGDIR\""
        );
        let mut child = as_user(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start postgres");
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
        if line.trim() == "ready" {
            let stdin = child.stdin.take().expect("stdin");
            return Server {
                base: format!("postgres://postgres@127.0.0.1:{port}"),
                ca: tls.then(|| dir.join("ca.crt")),
                bin: Some(bin),
                _keep: Some(Mutex::new((child, stdin))),
            };
        }
        let _ = child.wait();
        if attempt == 4 {
            let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
            panic!("the test PostgreSQL server did not start:\n{log}");
        }
    }
    unreachable!()
}

fn server() -> &'static Server {
    SERVER.get_or_init(|| match std::env::var(DATABASE_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => {
            let url = url.trim().trim_end_matches('/');
            // The URL's database, if any, is where databases are created from.
            Server {
                base: url.to_owned(),
                ca: None,
                bin: bin_dir(),
                _keep: None,
            }
        }
        _ => start_private(false),
    })
}

/// `psql`: beside the server's programs, else on PATH.
fn psql(s: &Server) -> PathBuf {
    s.bin
        .as_ref()
        .map(|b| b.join("psql"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("psql"))
}

/// The URL of a fresh, empty database on the test server, created for the caller.
pub fn database() -> String {
    create_on(server())
}

/// A fresh database on a private server that takes TLS connections only (its own, even
/// with `HOOKS_TEST_DATABASE_URL`), and the file of the certificate authority that signed
/// its certificate (for 127.0.0.1 and localhost).
pub fn tls_database() -> (String, PathBuf) {
    let s = TLS_SERVER.get_or_init(|| start_private(true));
    let ca =
        s.ca.clone()
            .expect("a TLS server has a certificate authority");
    (create_on(s), ca)
}

fn create_on(s: &Server) -> String {
    let name = format!(
        "hooks_t_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let admin = admin_url(&s.base);
    let t = Instant::now();
    loop {
        let out = Command::new(psql(s))
            .arg(&admin)
            .args(["-q", "-v", "ON_ERROR_STOP=1", "-c"])
            .arg(format!("CREATE DATABASE {name}"))
            .output()
            .expect("run psql");
        if out.status.success() {
            break;
        }
        // CREATE DATABASE copies template1 and fails while another one is doing the same.
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            err.contains("is being accessed by other users")
                && t.elapsed() < Duration::from_secs(30),
            "could not create a test database: {err}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    with_database(&s.base, &name)
}

/// `base` pointed at the `postgres` database (for creating others).
fn admin_url(base: &str) -> String {
    if has_database(base) {
        base.to_owned()
    } else {
        with_database(base, "postgres")
    }
}

fn has_database(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    path.split_once('/').is_some_and(|(_, db)| !db.is_empty())
}

/// `base` with its database replaced by `name`, its query kept.
fn with_database(base: &str, name: &str) -> String {
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (base, None),
    };
    let (scheme, rest) = head.split_once("://").unwrap_or(("postgres", head));
    let authority = rest.split('/').next().unwrap_or(rest);
    match query {
        Some(q) => format!("{scheme}://{authority}/{name}?{q}"),
        None => format!("{scheme}://{authority}/{name}"),
    }
}

/// Whether a private server was started in this process (rather than the variable's).
pub fn is_private() -> bool {
    server()._keep.is_some()
}

/// The server's folder of programs, if known (for tests that run `pg_dump` and the like).
pub fn programs() -> Option<&'static Path> {
    server().bin.as_deref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            with_database("postgres://u@h:5/db?sslmode=disable", "x"),
            "postgres://u@h:5/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h:5", "x"), "postgres://u@h:5/x");
        assert!(!has_database("postgres://u@h:5"));
        assert!(has_database("postgres://u@h:5/db"));
        assert!(!has_database("postgres://u@h:5/?sslmode=disable"));
    }
}
