//! `--http-users-file FILE`: the users the view admits with HTTP Basic
//! authentication, one `user:hash` a line, the hash bcrypt's (`$2y$`,
//! `$2b$`, `$2a$`): what `htpasswd -B` writes, so one file serves collect,
//! nginx and Apache alike. Blank lines and `#` comments are skipped. No
//! password and no hash is ever written to a message: a bad line is
//! named by its number.
//!
//! bcrypt is slow on purpose, so a browser (which sends its credentials
//! with every request, the page's polls included) would pay it again and
//! again: credentials once admitted are kept as an HMAC under a key drawn
//! at start, and compared as such until the file is read again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ring::hmac;

/// The costs accepted: bcrypt's least, up to what answers within about
/// a second (each step doubles the work of every login).
const COSTS: std::ops::RangeInclusive<u32> = 4..=14;

/// How many admitted credentials are kept before the set starts anew.
const ADMITTED_KEPT: usize = 256;

/// The users and their hashes, never shown (`Debug` says how many).
pub struct Users {
    hashes: HashMap<String, String>,
    key: hmac::Key,
    admitted: Mutex<HashSet<[u8; 32]>>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Users({} user(s))", self.hashes.len())
    }
}

/// Why the users file cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum UsersError {
    #[error("--http-users-file {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("--http-users-file {}: no user in it: write `user:hash` lines, e.g. `htpasswd -B -c {} alice`", path.display(), path.display())]
    Empty { path: PathBuf },
    #[error("--http-users-file {} line {line}: {why}", path.display())]
    Line { path: PathBuf, line: usize, why: LineError },
    #[error("--http-users-file: no random key for the admitted credentials")]
    Random,
}

/// What is wrong with one line (its text is never shown: it holds a hash).
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("not `user:hash` (write it with `htpasswd -B FILE USER`)")]
    NoColon,
    #[error("the user name is empty")]
    NoUser,
    #[error("user {0:?} is given twice")]
    Twice(String),
    #[error("the hash is not bcrypt's (`$2y$`, as `htpasswd -B` writes; htpasswd's default MD5, SHA-1 and crypt are too weak to accept)")]
    NotBcrypt,
    #[error("bcrypt cost {0} is outside {least} to {most} (`htpasswd -B -C 10`)", least = COSTS.start(), most = COSTS.end())]
    Cost(u32),
}

impl Users {
    /// Reads the file whole; any bad line refuses it, named by number.
    pub fn read(path: &Path) -> Result<Users, UsersError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| UsersError::Read { path: path.to_path_buf(), source })?;
        let mut hashes = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let refused = |why| UsersError::Line { path: path.to_path_buf(), line: index + 1, why };
            let (user, hash) = parse_line(line).map_err(refused)?;
            if hashes.insert(user.to_string(), hash.to_string()).is_some() {
                return Err(refused(LineError::Twice(user.to_string())));
            }
        }
        if hashes.is_empty() {
            return Err(UsersError::Empty { path: path.to_path_buf() });
        }
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
            .map_err(|_| UsersError::Random)?;
        Ok(Users { hashes, key, admitted: Mutex::new(HashSet::new()) })
    }

    pub fn count(&self) -> usize {
        self.hashes.len()
    }

    /// Whether `user` with `password` is admitted: at once for credentials
    /// admitted before, else bcrypt's verdict (slow: call it off the
    /// server's thread, see [`Users::admitted_before`]).
    pub fn admits(&self, user: &str, password: &[u8]) -> bool {
        if self.admitted_before(user, password) {
            return true;
        }
        // An unknown user is checked against another's hash, refused
        // whatever it says: a wrong user takes as long as a wrong password,
        // so the answer's timing tells no user name.
        let known = self.hashes.get(user);
        let Some(hash) = known.or_else(|| self.hashes.values().next()) else { return false };
        let right = bcrypt::verify(password, hash).unwrap_or(false) && known.is_some();
        if right {
            if let Ok(mut admitted) = self.admitted.lock() {
                if admitted.len() >= ADMITTED_KEPT {
                    admitted.clear();
                }
                admitted.insert(self.tag(user, password));
            }
        }
        right
    }

    /// Whether these credentials were admitted since the file was read:
    /// quick, no bcrypt.
    pub fn admitted_before(&self, user: &str, password: &[u8]) -> bool {
        let tag = self.tag(user, password);
        self.admitted.lock().is_ok_and(|admitted| admitted.contains(&tag))
    }

    fn tag(&self, user: &str, password: &[u8]) -> [u8; 32] {
        let mut context = hmac::Context::with_key(&self.key);
        // The user's length first: "ab" + "c" and "a" + "bc" differ.
        context.update(&(user.len() as u64).to_le_bytes());
        context.update(user.as_bytes());
        context.update(password);
        let mut tag = [0u8; 32];
        tag.iter_mut().zip(context.sign().as_ref()).for_each(|(t, s)| *t = *s);
        tag
    }
}

/// A line's user and hash, the hash checked as bcrypt's within [`COSTS`].
fn parse_line(line: &str) -> Result<(&str, &str), LineError> {
    let (user, hash) = line.split_once(':').ok_or(LineError::NoColon)?;
    if user.is_empty() {
        return Err(LineError::NoUser);
    }
    let parts: bcrypt::HashParts = hash.parse().map_err(|_| LineError::NotBcrypt)?;
    let cost = parts.get_cost();
    if !COSTS.contains(&cost) {
        return Err(LineError::Cost(cost));
    }
    Ok((user, hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(text: &str) -> Result<Users, UsersError> {
        static FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let file = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("int-tools-users-{}-{file}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let read = Users::read(&path);
        let _ = std::fs::remove_file(&path);
        read
    }

    #[test]
    fn right_password_admitted_then_remembered_wrong_ones_and_unknown_users_not() {
        let hash = bcrypt::hash("open sesame", 4).unwrap().replacen("$2b$", "$2y$", 1);
        let users = users(&format!("# the ops team\n\nalice:{hash}\n")).unwrap();
        assert_eq!(users.count(), 1);
        assert!(!users.admitted_before("alice", b"open sesame"));
        assert!(users.admits("alice", b"open sesame"));
        assert!(users.admitted_before("alice", b"open sesame"));
        for (user, password) in [("alice", "open sesame!"), ("alice", ""), ("bob", "open sesame"), ("", "")] {
            assert!(!users.admits(user, password.as_bytes()), "{user}:{password}");
        }
        assert_eq!(format!("{users:?}"), "Users(1 user(s))");
    }

    #[test]
    fn bad_lines_are_named_by_number_and_never_shown() {
        let good = bcrypt::hash("x", 4).unwrap();
        let cases = [
            (format!("alice:{good}\nbob\n"), "line 2: not `user:hash`"),
            (format!(":{good}\n"), "line 1: the user name is empty"),
            (format!("a:{good}\na:{good}\n"), "line 2: user \"a\" is given twice"),
            ("alice:$apr1$abcdefgh$0123456789012345678901\n".into(), "line 1: the hash is not bcrypt's"),
            ("alice:plain-password\n".into(), "line 1: the hash is not bcrypt's"),
            (
                format!("alice:{}\n", good.replacen("$04$", "$15$", 1)),
                "line 1: bcrypt cost 15 is outside 4 to 14",
            ),
            ("# only a comment\n\n".into(), "no user in it"),
        ];
        for (text, said) in cases {
            let error = users(&text).unwrap_err().to_string();
            assert!(error.contains(said), "{error}");
            assert!(!error.contains(&good[7..]) && !error.contains("plain-password"), "{error}");
            assert!(!error.contains("0123456789012345678901"), "{error}");
        }
    }
}
