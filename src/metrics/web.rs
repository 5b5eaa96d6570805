//! The web configuration file of Prometheus exporters
//! (prometheus/exporter-toolkit's web-configuration.md): TLS, client
//! certificates, basic-auth users with bcrypt hashes and response headers,
//! read once at start (and by `check-config`). Relative paths are read from
//! the file's directory, as exporter-toolkit reads them. An error names the
//! file, the line and the key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The largest web configuration file read.
const MAX_FILE: u64 = 1 << 20;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    http_server_config: Option<HttpFile>,
    #[serde(default)]
    basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    #[serde(default)]
    cert_file: String,
    #[serde(default)]
    key_file: String,
    #[serde(default)]
    client_auth_type: Option<String>,
    #[serde(default)]
    client_ca_file: Option<String>,
    #[serde(default)]
    min_version: Option<String>,
    #[serde(default)]
    max_version: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct HttpFile {
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// HTTP/2 is not served; `false` (or absent) is accepted.
    #[serde(default)]
    http2: Option<bool>,
}

/// A web configuration file, checked: what the HTTP edge serves with.
#[derive(Clone, Default)]
pub struct WebConfig {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Basic-auth users and their bcrypt hashes (empty: no authentication).
    pub users: BTreeMap<String, String>,
    /// Headers added to every response.
    pub headers: Vec<(hyper::http::HeaderName, hyper::http::HeaderValue)>,
    /// Client certificates are required.
    pub client_certs: bool,
}

impl fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfig")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.len())
            .field("headers", &self.headers.len())
            .field("client_certs", &self.client_certs)
            .finish()
    }
}

/// What is wrong with a web configuration file, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// The dotted key (`tls_server_config.cert_file`).
    pub key: Option<String>,
    pub reason: String,
}

impl fmt::Display for WebConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}",
            crate::ib::Escaped(&self.file.display().to_string())
        )?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": key `{}`", crate::ib::Escaped(k))?;
        }
        write!(f, ": {}", crate::ib::Escaped(&self.reason))
    }
}

impl std::error::Error for WebConfigError {}

/// The line (1-based) where `key` is written under `section` (or at the
/// top level): the first line that starts, after its indentation, with
/// `key:` after the section's own line.
fn key_line(text: &str, section: Option<&str>, key: &str) -> Option<usize> {
    let mut in_section = section.is_none();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indented = trimmed.len() != line.len();
        if let Some(s) = section
            && !indented
            && !trimmed.is_empty()
            && !trimmed.starts_with('#')
        {
            in_section = trimmed.starts_with(&format!("{s}:"));
            continue;
        }
        if in_section && trimmed.starts_with(&format!("{key}:")) {
            return Some(i + 1);
        }
    }
    None
}

impl WebConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<WebConfig, WebConfigError> {
        let err = |line, key: Option<String>, reason: String| WebConfigError {
            file: path.to_path_buf(),
            line,
            key,
            reason,
        };
        let text = crate::files::read_untrusted(path, MAX_FILE)
            .and_then(|b| {
                String::from_utf8(b).map_err(|_| {
                    std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text")
                })
            })
            .map_err(|e| err(None, None, format!("cannot read: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        WebConfig::parse(&text, dir).map_err(|(line, key, reason)| err(line, key, reason))
    }

    /// Checks the text of a web configuration file; paths in it are read
    /// from `dir`.
    pub fn parse(
        text: &str,
        dir: &Path,
    ) -> Result<WebConfig, (Option<usize>, Option<String>, String)> {
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            serde_norway::from_str(text).map_err(|e| {
                let line = e.location().map(|l| l.line());
                let msg = e.to_string();
                // serde_norway says "key: message at line L column C".
                let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
                (line, None, msg)
            })?
        };
        let at = |section: Option<&str>, key: &str, reason: String| {
            let dotted = match section {
                Some(s) => format!("{s}.{key}"),
                None => key.to_string(),
            };
            (key_line(text, section, key), Some(dotted), reason)
        };
        let mut users = BTreeMap::new();
        for (user, hash) in file.basic_auth_users.unwrap_or_default() {
            if user.is_empty() || user.contains(':') {
                return Err(at(
                    Some("basic_auth_users"),
                    &user,
                    "a user name is not empty and has no `:`".into(),
                ));
            }
            if hash.parse::<bcrypt::HashParts>().is_err() {
                return Err(at(
                    Some("basic_auth_users"),
                    &user,
                    "not a bcrypt hash ($2a$, $2b$ or $2y$; htpasswd -nBC 10 makes one)".into(),
                ));
            }
            users.insert(user, hash);
        }
        let mut headers = Vec::new();
        if let Some(h) = file.http_server_config {
            if h.http2 == Some(true) {
                return Err(at(
                    Some("http_server_config"),
                    "http2",
                    "HTTP/2 is not served; HTTP/1.1 is".into(),
                ));
            }
            for (k, v) in h.headers {
                let name = hyper::http::HeaderName::from_bytes(k.as_bytes());
                let value = hyper::http::HeaderValue::from_str(&v);
                match (name, value) {
                    (Ok(n), Ok(v)) => headers.push((n, v)),
                    _ => {
                        return Err(at(
                            Some("headers"),
                            &k,
                            "not a valid HTTP header name and value".into(),
                        ));
                    }
                }
            }
        }
        let (tls, client_certs) = match file.tls_server_config {
            None => (None, false),
            Some(t) => {
                let (cfg, client) = tls_config(&t, dir)
                    .map_err(|(key, reason)| at(Some("tls_server_config"), key, reason))?;
                (Some(Arc::new(cfg)), client)
            }
        };
        Ok(WebConfig {
            tls,
            users,
            headers,
            client_certs,
        })
    }
}

type Refusal = (&'static str, String);

fn read_pem_certs(path: &Path, key: &'static str) -> Result<Vec<CertificateDer<'static>>, Refusal> {
    let iter = CertificateDer::pem_file_iter(path)
        .map_err(|e| (key, format!("cannot read {}: {e}", path.display())))?;
    let certs: Vec<_> = iter.collect::<Result<_, _>>().map_err(|e| {
        (
            key,
            format!("{}: not PEM certificates: {e}", path.display()),
        )
    })?;
    if certs.is_empty() {
        return Err((key, format!("{}: holds no certificate", path.display())));
    }
    Ok(certs)
}

fn tls_version(v: &str, key: &'static str) -> Result<u8, Refusal> {
    match v {
        "TLS12" => Ok(2),
        "TLS13" => Ok(3),
        "TLS10" | "TLS11" => Err((key, format!("{v} is not offered: TLS12 and TLS13 are"))),
        _ => Err((key, format!("`{v}` is not a TLS version (TLS12, TLS13)"))),
    }
}

/// The rustls configuration of a `tls_server_config`, and whether it
/// requires client certificates.
fn tls_config(t: &TlsFile, dir: &Path) -> Result<(rustls::ServerConfig, bool), Refusal> {
    if t.cert_file.is_empty() {
        return Err(("cert_file", "is required with tls_server_config".into()));
    }
    if t.key_file.is_empty() {
        return Err(("key_file", "is required with tls_server_config".into()));
    }
    let certs = read_pem_certs(&dir.join(&t.cert_file), "cert_file")?;
    let key_path = dir.join(&t.key_file);
    let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| {
        (
            "key_file",
            format!("{}: no PEM private key: {e}", key_path.display()),
        )
    })?;
    let min = tls_version(t.min_version.as_deref().unwrap_or("TLS12"), "min_version")?;
    let max = tls_version(t.max_version.as_deref().unwrap_or("TLS13"), "max_version")?;
    if min > max {
        return Err(("min_version", "is above max_version".into()));
    }
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        [(2, &rustls::version::TLS12), (3, &rustls::version::TLS13)]
            .into_iter()
            .filter(|(v, _)| (min..=max).contains(v))
            .map(|(_, p)| p)
            .collect();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| ("min_version", e.to_string()))?;
    let auth = t.client_auth_type.as_deref().unwrap_or("NoClientCert");
    let (builder, required) = match auth {
        "NoClientCert" => (builder.with_no_client_auth(), false),
        "VerifyClientCertIfGiven" | "RequireAndVerifyClientCert" => {
            let Some(ca) = t.client_ca_file.as_deref().filter(|c| !c.is_empty()) else {
                return Err((
                    "client_ca_file",
                    format!("is required with client_auth_type {auth}"),
                ));
            };
            let mut roots = rustls::RootCertStore::empty();
            for c in read_pem_certs(&dir.join(ca), "client_ca_file")? {
                roots
                    .add(c)
                    .map_err(|e| ("client_ca_file", format!("not a CA certificate: {e}")))?;
            }
            let mut v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                Arc::clone(&provider),
            );
            let required = auth == "RequireAndVerifyClientCert";
            if !required {
                v = v.allow_unauthenticated();
            }
            let verifier = v.build().map_err(|e| ("client_ca_file", e.to_string()))?;
            (builder.with_client_cert_verifier(verifier), required)
        }
        "RequestClientCert" | "RequireAnyClientCert" => {
            return Err((
                "client_auth_type",
                format!(
                    "{auth} accepts certificates nobody verified; use VerifyClientCertIfGiven or RequireAndVerifyClientCert with client_ca_file"
                ),
            ));
        }
        other => {
            return Err((
                "client_auth_type",
                format!(
                    "`{other}` is not one of NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"
                ),
            ));
        }
    };
    if t.client_auth_type.is_none() && t.client_ca_file.is_some() {
        return Err((
            "client_ca_file",
            "client_auth_type says what it is for (VerifyClientCertIfGiven or RequireAndVerifyClientCert)".into(),
        ));
    }
    let mut cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| ("key_file", format!("does not fit cert_file: {e}")))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((cfg, required))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_plain_http_without_auth() {
        let w = WebConfig::parse("", Path::new("/nonexistent")).unwrap();
        assert!(w.tls.is_none() && w.users.is_empty());
    }

    #[test]
    fn errors_name_line_and_key() {
        let e = WebConfig::parse(
            "tls_server_config:\n  cert_file: a\n  ciphers: [x]\n",
            Path::new("/"),
        )
        .err()
        .unwrap();
        assert_eq!(e.0, Some(3), "{e:?}");
        assert!(e.2.contains("unknown field `ciphers`"), "{e:?}");
        let e = WebConfig::parse(
            "tls_server_config:\n  cert_file: /nonexistent/c.pem\n  key_file: k.pem\n",
            Path::new("/"),
        )
        .err()
        .unwrap();
        assert_eq!(
            (e.0, e.1.as_deref()),
            (Some(2), Some("tls_server_config.cert_file"))
        );
        let e = WebConfig::parse("basic_auth_users:\n  alice: plain\n", Path::new("/"))
            .err()
            .unwrap();
        assert_eq!(
            (e.0, e.1.as_deref()),
            (Some(2), Some("basic_auth_users.alice"))
        );
        assert!(e.2.contains("bcrypt"));
        let e = WebConfig::parse("http_server_config:\n  http2: true\n", Path::new("/"))
            .err()
            .unwrap();
        assert_eq!(
            (e.0, e.1.as_deref()),
            (Some(2), Some("http_server_config.http2"))
        );
    }

    #[test]
    fn users_keep_their_hashes_and_debug_shows_none() {
        let hash = "$2y$04$0nW5ul3Ck6T7DqjvsbtGuOyGkdkv0u.S5yUSyUuRfd5kF9qKqyrTi";
        let w = WebConfig::parse(
            &format!("basic_auth_users:\n  alice: {hash}\n"),
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(w.users.get("alice").map(String::as_str), Some(hash));
        assert!(!format!("{w:?}").contains("$2y$"));
    }
}
