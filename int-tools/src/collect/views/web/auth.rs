//! Who the view admits: `--http-token-file FILE`, whose first line is a
//! token asked as a bearer token (`Authorization: Bearer TOKEN`, for
//! scripts) or as the password of HTTP Basic authentication with any user
//! name (a browser's own prompt); and `--http-users-file FILE`, users with
//! their own passwords ([`super::users`]). Either or both; the probes
//! (`/healthz`, `/readyz`) ask for neither. SIGHUP reads both files again.
//! Credentials travel in clear over plain HTTP: across a network, with
//! `--http-tls-cert` or a reverse proxy with TLS (docs/deployment.md).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use subtle::ConstantTimeEq;

use super::server::Counts;
use super::users::{Users, UsersError};

/// The token, never shown (its `Debug` says only that there is one).
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Why the token file cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("--http-token-file {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("--http-token-file {}: its first line is empty: write the token there (16 characters or more, e.g. `openssl rand -hex 16`)", path.display())]
    Empty { path: PathBuf },
}

impl Token {
    /// The file's first line, without its surrounding spaces.
    pub fn read(path: &Path) -> Result<Token, TokenError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| TokenError::Read { path: path.to_path_buf(), source })?;
        let token = text.lines().next().unwrap_or_default().trim();
        if token.is_empty() {
            return Err(TokenError::Empty { path: path.to_path_buf() });
        }
        Ok(Token(token.as_bytes().to_vec()))
    }

    /// Whether `offered` is the token, in constant time: the answer's
    /// timing tells nothing of the token.
    fn is(&self, offered: &[u8]) -> bool {
        offered.len() == self.0.len() && bool::from(offered.ct_eq(&self.0))
    }
}

/// The credentials of a request's `Authorization` header.
enum Offered {
    None,
    Bearer(Vec<u8>),
    Basic { user: String, password: Vec<u8> },
}

impl Offered {
    fn of(authorization: Option<&HeaderValue>) -> Offered {
        let Some(value) = authorization.and_then(|v| v.to_str().ok()) else { return Offered::None };
        let (scheme, credentials) = value.trim().split_once(' ').unwrap_or((value, ""));
        let credentials = credentials.trim();
        if scheme.eq_ignore_ascii_case("bearer") {
            return Offered::Bearer(credentials.as_bytes().to_vec());
        }
        if !scheme.eq_ignore_ascii_case("basic") {
            return Offered::None;
        }
        let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(credentials) else {
            return Offered::None;
        };
        let Some(colon) = decoded.iter().position(|b| *b == b':') else { return Offered::None };
        let (user, password) = decoded.split_at(colon);
        match String::from_utf8(user.to_vec()) {
            Ok(user) => Offered::Basic { user, password: password.get(1..).unwrap_or_default().to_vec() },
            Err(_) => Offered::None,
        }
    }
}

/// Why the credentials' files cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error(transparent)]
    Users(#[from] UsersError),
}

/// What the files held when last read.
#[derive(Debug)]
struct Credentials {
    token: Option<Token>,
    users: Option<Arc<Users>>,
}

impl Credentials {
    /// Whether `offered` is admitted: the token (bearer, or Basic's
    /// password with any user), or a user's password. bcrypt runs off the
    /// server's thread, so other connections are answered meanwhile.
    async fn admit(&self, offered: Offered) -> bool {
        let (user, password) = match offered {
            Offered::None => return false,
            Offered::Bearer(token) => return self.token.as_ref().is_some_and(|t| t.is(&token)),
            Offered::Basic { user, password } => (user, password),
        };
        if self.token.as_ref().is_some_and(|t| t.is(&password)) {
            return true;
        }
        let Some(users) = &self.users else { return false };
        if users.admitted_before(&user, &password) {
            return true;
        }
        let users = Arc::clone(users);
        tokio::task::spawn_blocking(move || users.admits(&user, &password)).await.unwrap_or(false)
    }
}

/// `--http-token-file` and `--http-users-file`: the paths, and what they
/// held when last read (SIGHUP reads them again).
#[derive(Debug)]
pub struct Access {
    token_file: Option<PathBuf>,
    users_file: Option<PathBuf>,
    current: RwLock<Arc<Credentials>>,
}

impl Access {
    /// None when neither file is given; both read now.
    pub fn open(token_file: Option<&Path>, users_file: Option<&Path>) -> Result<Option<Access>, AccessError> {
        if token_file.is_none() && users_file.is_none() {
            return Ok(None);
        }
        let token = token_file.map(Token::read).transpose()?;
        let users = users_file.map(Users::read).transpose()?.map(Arc::new);
        Ok(Some(Access {
            token_file: token_file.map(Path::to_path_buf),
            users_file: users_file.map(Path::to_path_buf),
            current: RwLock::new(Arc::new(Credentials { token, users })),
        }))
    }

    fn current(&self) -> Option<Arc<Credentials>> {
        self.current.read().ok().map(|current| Arc::clone(&current))
    }

    /// Reads each file again (SIGHUP); one that does not serve is kept as
    /// it was, with a warning that says why (never what it holds). What
    /// was taken is said once it is in force.
    pub fn reload(&self) {
        let Some(before) = self.current() else { return };
        let mut said = Vec::new();
        let token = self.token_file.as_deref().and_then(|path| match Token::read(path) {
            Ok(token) => {
                said.push((log::Level::Info, format!("reloaded --http-token-file {}", path.display())));
                Some(token)
            }
            Err(error) => {
                said.push((log::Level::Warn, format!("{error}; keeping the token before")));
                before.token.clone()
            }
        });
        let users = self.users_file.as_deref().and_then(|path| match Users::read(path) {
            Ok(users) => {
                let count = users.count();
                said.push((
                    log::Level::Info,
                    format!("reloaded --http-users-file {}: {count} user(s)", path.display()),
                ));
                Some(Arc::new(users))
            }
            Err(error) => {
                let kept = before.users.as_ref().map_or(0, |users| users.count());
                said.push((log::Level::Warn, format!("{error}; keeping the users before ({kept} user(s))")));
                before.users.clone()
            }
        });
        if let Ok(mut current) = self.current.write() {
            *current = Arc::new(Credentials { token, users });
        }
        for (level, line) in said {
            log::log!(level, "collect: SIGHUP: {line}");
        }
    }

    /// What a refused request is told: how to authenticate, not why it failed.
    fn asked_for(&self) -> &'static str {
        match (&self.token_file, &self.users_file) {
            (Some(_), Some(_)) => "collect's view asks for a user of --http-users-file, or its token \
                                   (--http-token-file) as any user's password or as `Authorization: Bearer TOKEN`\n",
            (None, Some(_)) => "collect's view asks for a user of --http-users-file and its password\n",
            _ => "collect's view asks for its token (--http-token-file): as the password of \
                  any user, or as `Authorization: Bearer TOKEN`\n",
        }
    }
}

/// The view's guard: a request without admitted credentials gets 401,
/// with the challenge that makes a browser ask for them.
pub async fn check(
    State((access, counts)): State<(Arc<Access>, Arc<Counts>)>,
    request: Request,
    next: Next,
) -> Response {
    let offered = Offered::of(request.headers().get(header::AUTHORIZATION));
    if let Some(credentials) = access.current() {
        if credentials.admit(offered).await {
            return next.run(request).await;
        }
    }
    counts.unauthorized.fetch_add(1, Ordering::Relaxed);
    let challenge = "Basic realm=\"int-tools collect\", charset=\"UTF-8\"";
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)], access.asked_for()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admits(credentials: &Credentials, value: &str) -> bool {
        let offered = Offered::of(Some(&HeaderValue::from_str(value).unwrap()));
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(credentials.admit(offered))
    }

    #[test]
    fn bearer_or_basic_with_any_user() {
        let credentials = Credentials { token: Some(Token(b"s3cret-token".to_vec())), users: None };
        let admits = |value: &str| admits(&credentials, value);
        assert!(admits("Bearer s3cret-token"));
        assert!(admits("bearer  s3cret-token "));
        assert!(admits(&int_os::http::basic_auth("ops", "s3cret-token")));
        assert!(admits(&int_os::http::basic_auth("", "s3cret-token")));
        for refused in [
            "Bearer s3cret-toke",
            "Bearer s3cret-token2",
            "Bearer ",
            "s3cret-token",
            "Basic !!!",
            "Basic czNjcmV0LXRva2Vu",
            &int_os::http::basic_auth("s3cret-token", "x"),
            "Digest s3cret-token",
        ] {
            assert!(!admits(refused), "{refused}");
        }
    }
}
