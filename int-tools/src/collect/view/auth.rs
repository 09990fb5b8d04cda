//! `--http-token-file FILE`: the view asks every request for the file's
//! token, as a bearer token (`Authorization: Bearer TOKEN`, for scripts)
//! or as the password of HTTP Basic authentication with any user name
//! (a browser's own prompt). The probes (`/healthz`, `/readyz`) are not
//! behind it. The token travels in clear over HTTP: across a network, a
//! reverse proxy with TLS in front (docs/deployment.md).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use subtle::ConstantTimeEq;

/// The token, never shown (its `Debug` says only that there is one).
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

    /// Whether an `Authorization` header carries the token.
    fn admits(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(value) = authorization.and_then(|v| v.to_str().ok()) else { return false };
        let (scheme, credentials) = value.trim().split_once(' ').unwrap_or((value, ""));
        let credentials = credentials.trim();
        let offered = if scheme.eq_ignore_ascii_case("bearer") {
            credentials.as_bytes().to_vec()
        } else if scheme.eq_ignore_ascii_case("basic") {
            let decoded = base64::engine::general_purpose::STANDARD.decode(credentials).unwrap_or_default();
            match decoded.iter().position(|b| *b == b':') {
                Some(colon) => decoded.get(colon + 1..).unwrap_or_default().to_vec(),
                None => return false,
            }
        } else {
            return false;
        };
        // In constant time: the answer's timing tells nothing of the token.
        offered.len() == self.0.len() && bool::from(offered.ct_eq(&self.0))
    }
}

/// The view's guard: a request without the token gets 401, with the
/// challenge that makes a browser ask for it.
pub async fn check(State(token): State<Arc<Token>>, request: Request, next: Next) -> Response {
    if token.admits(request.headers().get(header::AUTHORIZATION)) {
        return next.run(request).await;
    }
    let challenge = "Basic realm=\"int-tools collect\", charset=\"UTF-8\"";
    let body = "collect's view asks for its token (--http-token-file): as the password of \
                any user, or as `Authorization: Bearer TOKEN`\n";
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_or_basic_with_any_user() {
        let token = Token(b"s3cret-token".to_vec());
        let admits = |value: &str| token.admits(Some(&HeaderValue::from_str(value).unwrap()));
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
        assert!(!token.admits(None));
    }
}
