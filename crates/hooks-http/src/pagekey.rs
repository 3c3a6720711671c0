//! The page's proof, both ways: the daemon's own key pair proves to the page that it is
//! the user's daemon, and the page's key (made in the browser at login, never leaving it)
//! proves each request.
//!
//! Whoever holds the page's port holds its browser origin, and so everything the page
//! keeps there. What the page keeps is useless elsewhere: its session id names a login;
//! its private key is a non-extractable WebCrypto key (a script can have the browser sign
//! with it, never read it); the daemon's public key is public. A request carries
//! `Authorization: Page <id> <nonce> <signature>`: the signature, by the page's key, is
//! over a nonce this daemon issued and takes back on first use, so a signature seen by
//! anyone else is worth nothing. And before the page signs anything it asks the server to
//! sign the page's own random challenge with the daemon's key, which only the user's
//! daemon reads (`<data-dir>/page.key`, private); a server that cannot is sent nothing.
//! Both keys are ECDSA P-256 with SHA-256 and fixed-size signatures (WebCrypto's form),
//! done with `ring`, which the PostgreSQL store's TLS already brings.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use hooks_platform::files::write_private;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    UnparsedPublicKey,
};

/// The file holding the daemon's key pair for the page (PKCS#8 as hex, private).
pub const PAGE_KEY_FILE: &str = "page.key";

/// What the daemon signs to answer the page's challenge `c` with its nonce.
pub fn challenge_message(c: &str, nonce: &str) -> String {
    format!("hooks-app page challenge\n{c}\n{nonce}")
}

/// What the page signs to send a request of its session `id` with a nonce.
pub fn request_message(id: &str, nonce: &str) -> String {
    format!("hooks-app page request\n{id}\n{nonce}")
}

/// How long an issued nonce may wait for its request.
const NONCE_TTL: Duration = Duration::from_secs(60);

/// How many nonces may wait at once: the oldest goes first beyond it, so asking for
/// challenges without end holds a bounded amount of memory.
const MAX_NONCES: usize = 1024;

/// The daemon's key pair and the nonces it issued that no request has used yet.
pub(crate) struct PageKeys {
    pair: Result<EcdsaKeyPair, String>,
    rng: SystemRandom,
    nonces: std::sync::Mutex<VecDeque<(String, Instant)>>,
}

/// A challenge's answer: a fresh nonce and the daemon's signature over the page's
/// challenge and it.
pub(crate) struct Proof {
    pub(crate) nonce: String,
    pub(crate) proof: String,
}

impl PageKeys {
    /// The daemon's key pair from `<data_dir>/page.key`, made there when there is none.
    /// A key that cannot be read or made leaves the page without logins (each says why).
    pub(crate) fn load(data_dir: &Path) -> Self {
        let rng = SystemRandom::new();
        Self {
            pair: key_pair(&data_dir.join(PAGE_KEY_FILE), &rng),
            rng,
            nonces: std::sync::Mutex::new(VecDeque::new()),
        }
    }

    fn pair(&self) -> Result<&EcdsaKeyPair, String> {
        self.pair.as_ref().map_err(Clone::clone)
    }

    /// The daemon's public key (an uncompressed P-256 point) as hex: the page keeps it
    /// at login.
    pub(crate) fn public_hex(&self) -> Result<String, String> {
        Ok(hex(self.pair()?.public_key().as_ref()))
    }

    /// Answers the page's challenge `c` (hex, 16 to 64 bytes) with a new nonce, signed
    /// together with it.
    pub(crate) fn prove(&self, c: &str) -> Result<Proof, String> {
        if !(32..=128).contains(&c.len()) || !c.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("c must be 16 to 64 random bytes as hex".to_owned());
        }
        let pair = self.pair()?;
        let mut n = [0u8; 32];
        ring::rand::SecureRandom::fill(&self.rng, &mut n)
            .map_err(|_| "no randomness for a nonce".to_owned())?;
        let nonce = hex(&n);
        let sig = pair
            .sign(&self.rng, challenge_message(c, &nonce).as_bytes())
            .map_err(|_| "could not sign the challenge".to_owned())?;
        let mut nonces = lock(&self.nonces);
        let now = Instant::now();
        nonces.retain(|(_, until)| *until > now);
        while nonces.len() >= MAX_NONCES {
            nonces.pop_front();
        }
        nonces.push_back((nonce.clone(), now + NONCE_TTL));
        Ok(Proof {
            nonce,
            proof: hex(sig.as_ref()),
        })
    }

    /// Takes back an issued nonce: true once, if this daemon issued it and it has not
    /// lapsed.
    pub(crate) fn take_nonce(&self, nonce: &str) -> bool {
        let mut nonces = lock(&self.nonces);
        let now = Instant::now();
        nonces.retain(|(_, until)| *until > now);
        match nonces
            .iter()
            .position(|(n, _)| same(n.as_bytes(), nonce.as_bytes()))
        {
            Some(i) => {
                nonces.remove(i);
                true
            }
            None => false,
        }
    }
}

/// Whether `sig` (hex) is the page key `key`'s signature of `message`.
pub(crate) fn signed_by(key: &[u8], message: &str, sig: &str) -> bool {
    let Some(sig) = unhex(sig) else { return false };
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key)
        .verify(message.as_bytes(), &sig)
        .is_ok()
}

/// A page's public key as it comes from the browser (`exportKey("raw")`: an uncompressed
/// P-256 point, hex), or why it is not one.
pub(crate) fn page_public_key(hex_key: &str) -> Result<Vec<u8>, String> {
    match unhex(hex_key) {
        Some(k) if k.len() == 65 && k[0] == 4 => Ok(k),
        _ => Err("must be an uncompressed P-256 public key (65 bytes) as hex".to_owned()),
    }
}

fn key_pair(p: &Path, rng: &SystemRandom) -> Result<EcdsaKeyPair, String> {
    let kept = match hooks_platform::read_regular(p, hooks_platform::ReadLimit::bytes(4096)) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("could not read {}: {e}", p.display())),
    };
    let pkcs8 = match kept {
        Some(b) => unhex(String::from_utf8_lossy(&b).trim())
            .ok_or_else(|| format!("{} is not a key this daemon wrote", p.display()))?,
        None => {
            let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, rng)
                .map_err(|_| "could not make the page's key".to_owned())?;
            write_private(p, &format!("{}\n", hex(doc.as_ref())))
                .map_err(|e| format!("could not write {}: {e}", p.display()))?;
            doc.as_ref().to_vec()
        }
    };
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, rng)
        .map_err(|_| format!("{} is not a key this daemon wrote", p.display()))
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Equal, in a time that does not depend on where they differ (`subtle`'s comparison).
fn same(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.len() > 4096 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_key(rng: &SystemRandom) -> EcdsaKeyPair {
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, rng).unwrap();
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), rng).unwrap()
    }

    #[test]
    fn the_daemon_key_is_kept_private_and_proves_the_same_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let first = PageKeys::load(dir.path());
        let public = first.public_hex().unwrap();
        let p = first.prove(&"ab".repeat(32)).unwrap();
        let again = PageKeys::load(dir.path());
        assert_eq!(
            again.public_hex().unwrap(),
            public,
            "the same key after a restart"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(PAGE_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // The proof verifies with the public key the page keeps, and with nothing else.
        let key = unhex(&public).unwrap();
        let msg = challenge_message(&"ab".repeat(32), &p.nonce);
        assert!(signed_by(&key, &msg, &p.proof));
        assert!(!signed_by(
            &key,
            &challenge_message(&"cd".repeat(32), &p.nonce),
            &p.proof
        ));
        let other = PageKeys::load(tempfile::tempdir().unwrap().path());
        assert!(!signed_by(
            &unhex(&other.public_hex().unwrap()).unwrap(),
            &msg,
            &p.proof
        ));
    }

    #[test]
    fn a_nonce_is_taken_once_and_only_if_issued() {
        let dir = tempfile::tempdir().unwrap();
        let keys = PageKeys::load(dir.path());
        let p = keys.prove(&"01".repeat(16)).unwrap();
        assert!(!keys.take_nonce(&"00".repeat(32)), "never issued");
        assert!(keys.take_nonce(&p.nonce));
        assert!(!keys.take_nonce(&p.nonce), "used");
        assert!(keys.prove("short").is_err());
        assert!(keys.prove(&"zz".repeat(32)).is_err());
        // A flood of challenges holds a bounded number of nonces, the newest.
        let first = keys.prove(&"01".repeat(16)).unwrap();
        let mut last = None;
        for _ in 0..MAX_NONCES {
            last = Some(keys.prove(&"01".repeat(16)).unwrap());
        }
        assert!(!keys.take_nonce(&first.nonce), "the oldest went first");
        assert!(keys.take_nonce(&last.unwrap().nonce));
        assert!(lock(&keys.nonces).len() < MAX_NONCES);
    }

    #[test]
    fn a_page_signature_is_checked_against_its_own_key() {
        let rng = SystemRandom::new();
        let page = page_key(&rng);
        let key = page_public_key(&hex(page.public_key().as_ref())).unwrap();
        let msg = request_message("id", "nonce");
        let sig = hex(page.sign(&rng, msg.as_bytes()).unwrap().as_ref());
        assert!(signed_by(&key, &msg, &sig));
        assert!(!signed_by(&key, &request_message("id", "other"), &sig));
        assert!(!signed_by(&key, &msg, "zz"));
        let other = page_key(&rng);
        assert!(!signed_by(other.public_key().as_ref(), &msg, &sig));
        assert!(page_public_key("04").is_err());
        assert!(page_public_key(&format!("05{}", "00".repeat(64))).is_err());
    }

    #[test]
    fn a_key_file_not_written_here_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(PAGE_KEY_FILE), "not hex\n").unwrap();
        let keys = PageKeys::load(dir.path());
        let e = keys.public_hex().unwrap_err();
        assert!(e.contains(PAGE_KEY_FILE), "{e}");
        assert!(keys.prove(&"01".repeat(16)).is_err());
    }
}
