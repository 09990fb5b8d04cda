//! `--http-tls-cert FILE --http-tls-key FILE`: the view speaks HTTPS
//! (TLS 1.3, rustls on ring: what the NATS client already builds), with
//! the certificate chain and private key of two PEM files. Every problem
//! with them stops collect at start, each named with its file; SIGHUP
//! reads both again (a renewed certificate), keeping the pair before when
//! the new one does not serve.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// One problem with the TLS flags or their files.
#[derive(Debug, thiserror::Error)]
pub enum TlsProblem {
    #[error("--http-tls-cert needs --http-tls-key: the certificate's private key (PEM; docs/deployment.md makes both with openssl)")]
    CertWithoutKey,
    #[error("--http-tls-key needs --http-tls-cert: the certificate chain (PEM), server's first (docs/deployment.md)")]
    KeyWithoutCert,
    #[error("{flag} {}: {source}", path.display())]
    Read { flag: &'static str, path: PathBuf, source: std::io::Error },
    #[error("--http-tls-cert {}: no certificate (`-----BEGIN CERTIFICATE-----`) in it{}", path.display(), swapped(*holds_other))]
    NoCertificate { path: PathBuf, holds_other: bool },
    #[error("--http-tls-key {}: no private key (`-----BEGIN PRIVATE KEY-----`, or an RSA or EC key) in it{}", path.display(), swapped(*holds_other))]
    NoKey { path: PathBuf, holds_other: bool },
    #[error("{flag} {}: not PEM as expected: {why}", path.display())]
    Pem { flag: &'static str, path: PathBuf, why: String },
    #[error("--http-tls-cert {} with --http-tls-key {}: {why} (the key must be the one the certificate was made for)", cert.display(), key.display())]
    Refused { cert: PathBuf, key: PathBuf, why: rustls::Error },
}

fn swapped(holds_other: bool) -> &'static str {
    if holds_other {
        ": it holds the other one (are --http-tls-cert and --http-tls-key swapped?)"
    } else {
        ""
    }
}

/// Every problem found with the TLS flags, at once.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct TlsError(pub Vec<TlsProblem>);

/// The files and the server's TLS settings last made from them.
#[derive(Debug)]
pub struct Tls {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<ServerConfig>>,
}

impl Tls {
    /// None without either flag; both files read now.
    pub fn open(cert: Option<&Path>, key: Option<&Path>) -> Result<Option<Tls>, TlsError> {
        let (cert, key) = match (cert, key) {
            (None, None) => return Ok(None),
            (Some(_), None) => return Err(TlsError(vec![TlsProblem::CertWithoutKey])),
            (None, Some(_)) => return Err(TlsError(vec![TlsProblem::KeyWithoutCert])),
            (Some(cert), Some(key)) => (cert.to_path_buf(), key.to_path_buf()),
        };
        let config = server_config(&cert, &key)?;
        Ok(Some(Tls { cert, key, current: RwLock::new(Arc::new(config)) }))
    }

    /// What a new connection's handshake is made with: the pair read last.
    pub fn acceptor(&self) -> Option<TlsAcceptor> {
        self.current.read().ok().map(|config| TlsAcceptor::from(Arc::clone(&config)))
    }

    /// Reads both files again (SIGHUP); the connections open keep theirs.
    pub fn reload(&self) {
        let (cert, key) = (self.cert.display(), self.key.display());
        match server_config(&self.cert, &self.key) {
            Ok(config) => {
                if let Ok(mut current) = self.current.write() {
                    *current = Arc::new(config);
                }
                log::info!("collect: SIGHUP: reloaded --http-tls-cert {cert} and --http-tls-key {key}");
            }
            Err(error) => {
                let error = error.to_string().replace('\n', "; ");
                log::warn!("collect: SIGHUP: {error}; keeping the certificate and key before");
            }
        }
    }
}

/// The server's TLS settings from the two files: HTTP/1.1 (ALPN), TLS 1.3.
fn server_config(cert_path: &Path, key_path: &Path) -> Result<ServerConfig, TlsError> {
    let (chain, key) = match (certificates(cert_path), private_key(key_path)) {
        (Ok(chain), Ok(key)) => (chain, key),
        (chain, key) => return Err(TlsError(chain.err().into_iter().chain(key.err()).collect())),
    };
    let refused =
        |why| TlsError(vec![TlsProblem::Refused { cert: cert_path.into(), key: key_path.into(), why }]);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(refused)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(refused)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsProblem> {
    let flag = "--http-tls-cert";
    let pem = std::fs::read(path).map_err(|source| TlsProblem::Read { flag, path: path.into(), source })?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|why| TlsProblem::Pem { flag, path: path.into(), why: why.to_string() })?;
    if chain.is_empty() {
        let holds_other = PrivateKeyDer::from_pem_slice(&pem).is_ok();
        return Err(TlsProblem::NoCertificate { path: path.into(), holds_other });
    }
    Ok(chain)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsProblem> {
    let flag = "--http-tls-key";
    let pem = std::fs::read(path).map_err(|source| TlsProblem::Read { flag, path: path.into(), source })?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|why| match why {
        rustls::pki_types::pem::Error::NoItemsFound => {
            let holds_other = CertificateDer::from_pem_slice(&pem).is_ok();
            TlsProblem::NoKey { path: path.into(), holds_other }
        }
        why => TlsProblem::Pem { flag, path: path.into(), why: why.to_string() },
    })
}
