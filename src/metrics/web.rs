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
use zeroize::Zeroizing;

/// The largest web configuration file read.
const MAX_FILE: u64 = 64 * 1024;
/// The largest certificate, key or CA file read.
const MAX_PEM: u64 = 1 << 20;
/// The deepest nesting the YAML parser is given (its time grows as the
/// square of the depth); a web configuration file needs 3.
const MAX_DEPTH: usize = 16;

/// The headers `http_server_config.headers` may set, as exporter-toolkit
/// allows them, with the values it takes (empty: any). The agent's own
/// framing and content headers are never among them.
const SECURITY_HEADERS: &[(&str, &[&str])] = &[
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

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

/// The line (1-based) where the key at `path` is written: each key of
/// the path on a line that starts, after its indentation, with `key:`,
/// within the block of the one before (the first at the top level).
fn key_line(text: &str, path: &[&str]) -> Option<usize> {
    let mut lines = text.lines().enumerate();
    let mut parent: Option<usize> = None;
    for (depth, key) in path.iter().enumerate() {
        let (i, indent) = lines.find_map(|(i, line)| {
            let t = line.trim_start();
            let indent = line.len() - t.len();
            if t.is_empty() || t.starts_with('#') {
                return None;
            }
            let quoted = [
                format!("{key}:"),
                format!("\"{key}\":"),
                format!("'{key}':"),
            ];
            let at_level = match parent {
                None => indent == 0,
                Some(p) => indent > p,
            };
            (at_level && quoted.iter().any(|q| t.starts_with(q.as_str()))).then_some((i, indent))
        })?;
        if depth + 1 == path.len() {
            return Some(i + 1);
        }
        parent = Some(indent);
    }
    None
}

/// The deepest nesting of `text`: flow collections (`[`, `{`) outside
/// quotes and comments, on top of each line's block depth (its indentation
/// and leading `- `, `? ` indicators, a bound of the block nesting). A
/// quote starts a quoted scalar only where the YAML scanner starts one (at
/// the start of a scalar: after a space, a tab, `[`, `{`, `,` or `:`), so
/// a quote inside a plain scalar hides nothing; inside a single-quoted
/// scalar `''` is a quote, inside a double-quoted one `\"` is. A quoted
/// scalar ends with its line here (a longer one only counts more).
fn nesting(text: &str) -> usize {
    let (mut flow, mut deepest) = (0usize, 0usize);
    for line in text.lines() {
        let t = line.trim_start_matches([' ', '-', '?', '\t']);
        let block = line.len() - t.len();
        let mut quote = None;
        let mut prev = ' ';
        let mut chars = t.chars().peekable();
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some('"'), '\\') => {
                    chars.next();
                }
                (Some('\''), '\'') if chars.peek() == Some(&'\'') => {
                    chars.next();
                }
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') if matches!(prev, ' ' | '\t' | '[' | '{' | ',' | ':') => {
                    quote = Some(c)
                }
                (None, '#') if prev == ' ' || prev == '\t' => break,
                (None, '[' | '{') => flow += 1,
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
            prev = c;
            deepest = deepest.max(flow + block / 2);
        }
        deepest = deepest.max(flow + block / 2);
    }
    deepest
}

impl WebConfig {
    /// What `check-config` warns of: users whose hashes have different
    /// costs (an unknown user's check takes as long as the highest; a user
    /// of a lower cost answers sooner, and so tells it exists).
    pub fn warnings(&self) -> Vec<String> {
        let costs: std::collections::BTreeSet<u32> = self
            .users
            .values()
            .filter_map(|h| h.parse::<bcrypt::HashParts>().ok())
            .map(|p| p.get_cost())
            .collect();
        if costs.len() < 2 {
            return Vec::new();
        }
        let list: Vec<String> = costs.iter().map(u32::to_string).collect();
        vec![format!(
            "basic_auth_users: the hashes have different bcrypt costs ({}); a check of a \
             user of a lower cost answers sooner than one of an unknown user, so the time \
             tells that user exists: hash every password at one cost",
            list.join(", ")
        )]
    }

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
        let depth = nesting(text);
        if depth > MAX_DEPTH {
            return Err((
                None,
                None,
                format!(
                    "nested {depth} deep, more than the {MAX_DEPTH} a web configuration file may be"
                ),
            ));
        }
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
        let at =
            |path: &[&str], reason: String| (key_line(text, path), Some(path.join(".")), reason);
        let mut users = BTreeMap::new();
        for (user, hash) in file.basic_auth_users.unwrap_or_default() {
            if user.is_empty() || user.contains(':') {
                return Err(at(
                    &["basic_auth_users", &user],
                    "a user name is not empty and has no `:`".into(),
                ));
            }
            if hash.parse::<bcrypt::HashParts>().is_err() {
                return Err(at(
                    &["basic_auth_users", &user],
                    "not a bcrypt hash ($2a$, $2b$ or $2y$; htpasswd -nBC 10 makes one)".into(),
                ));
            }
            users.insert(user, hash);
        }
        let mut headers = Vec::new();
        if let Some(h) = file.http_server_config {
            if h.http2 == Some(true) {
                return Err(at(
                    &["http_server_config", "http2"],
                    "HTTP/2 is not served; HTTP/1.1 is".into(),
                ));
            }
            for (k, v) in h.headers {
                let refuse = |why: String| at(&["http_server_config", "headers", &k], why);
                let Some((name, allowed)) = SECURITY_HEADERS
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&k))
                else {
                    let names: Vec<&str> = SECURITY_HEADERS.iter().map(|(n, _)| *n).collect();
                    return Err(refuse(format!(
                        "`{}` cannot be set: only the security headers {} can",
                        k.escape_debug(),
                        names.join(", ")
                    )));
                };
                if !allowed.is_empty() && !allowed.iter().any(|a| a.eq_ignore_ascii_case(&v)) {
                    return Err(refuse(format!(
                        "`{}` is not one of {}",
                        v.escape_debug(),
                        allowed.join(", ")
                    )));
                }
                let name = hyper::http::HeaderName::from_bytes(name.as_bytes());
                match (name, hyper::http::HeaderValue::from_str(&v)) {
                    (Ok(n), Ok(value)) => headers.push((n, value)),
                    _ => return Err(refuse("not a valid HTTP header value".into())),
                }
            }
        }
        let (tls, client_certs) = match file.tls_server_config {
            None => (None, false),
            Some(t) => {
                let (cfg, client) = tls_config(&t, dir)
                    .map_err(|(key, reason)| at(&["tls_server_config", key], reason))?;
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

/// A file a key names, read bounded: a regular file of at most
/// [`MAX_PEM`] octets (a FIFO or a device is refused without being waited
/// on).
fn read_named(path: &Path, key: &'static str) -> Result<Zeroizing<Vec<u8>>, Refusal> {
    crate::files::read_untrusted(path, MAX_PEM)
        .map(Zeroizing::new)
        .map_err(|e| (key, format!("cannot read {}: {e}", path.display())))
}

fn read_pem_certs(path: &Path, key: &'static str) -> Result<Vec<CertificateDer<'static>>, Refusal> {
    let bytes = read_named(path, key)?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| {
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
    let key = PrivateKeyDer::from_pem_slice(&read_named(&key_path, "key_file")?).map_err(|e| {
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
    fn mixed_costs_are_warned_of() {
        let users = |costs: &[u32]| {
            let lines: Vec<String> = costs
                .iter()
                .enumerate()
                .map(|(i, c)| format!("  u{i}: {}", bcrypt::hash(b"x", *c).unwrap()))
                .collect();
            WebConfig::parse(
                &format!("basic_auth_users:\n{}\n", lines.join("\n")),
                Path::new("/"),
            )
            .unwrap()
        };
        assert!(users(&[4, 4]).warnings().is_empty());
        let w = users(&[4, 5]).warnings();
        assert!(w.len() == 1 && w[0].contains("(4, 5)"), "{w:?}");
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

    #[test]
    fn only_the_security_headers_can_be_set_and_errors_find_their_line() {
        let parse = |h: &str| {
            WebConfig::parse(
                &format!("# headers\nhttp_server_config:\n  headers:\n    {h}\n"),
                Path::new("/"),
            )
        };
        for bad in [
            "Content-Length: \"3\"",
            "Content-Type: text/html",
            "Connection: keep-alive",
            "Transfer-Encoding: chunked",
            "X-Frame-Options: allow",
        ] {
            let e = parse(bad).err().unwrap();
            let key = bad.split(':').next().unwrap();
            assert_eq!(e.0, Some(4), "{bad}: {e:?}");
            assert_eq!(
                e.1.as_deref(),
                Some(format!("http_server_config.headers.{key}").as_str())
            );
        }
        let w = parse("X-Frame-Options: DENY\n    x-content-type-options: nosniff\n    Content-Security-Policy: \"default-src 'self'\"").unwrap();
        let mut names: Vec<&str> = w.headers.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "content-security-policy",
                "x-content-type-options",
                "x-frame-options"
            ]
        );
    }

    #[test]
    fn deep_nesting_is_refused_before_the_parser_sees_it() {
        let flow = format!(
            "basic_auth_users: {}{}",
            "[".repeat(30_000),
            "]".repeat(30_000)
        );
        let block = format!("basic_auth_users:\n  {}x\n", "- ".repeat(20_000));
        for text in [flow, block] {
            let start = std::time::Instant::now();
            let e = WebConfig::parse(&text, Path::new("/")).err().unwrap();
            assert!(e.2.contains("nested"), "{e:?}");
            assert!(start.elapsed() < std::time::Duration::from_secs(1));
        }
        assert_eq!(nesting("a:\n  b: [1, {c: \"[[[\"}] # [[[\n"), 3);
        assert_eq!(nesting("a:\n  - - - b\n"), 4);
        // A quote inside a plain scalar starts nothing: the flow after it
        // counts, as the YAML scanner nests it.
        assert_eq!(nesting("a: b'[[[[\n"), 4);
        assert_eq!(nesting("a: [x\"[[{\n"), 4);
        assert_eq!(nesting("a: 'it''s [[[' [\n"), 1);
        assert_eq!(nesting("a: \"say \\\"[[\\\" \" [\n"), 1);
        let deep = format!("a: b'{}", "[".repeat(30_000));
        assert_eq!(nesting(&deep), 30_000);
    }

    #[test]
    fn a_file_a_key_names_is_read_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let big = dir.path().join("big.pem");
        std::fs::write(&big, vec![b'A'; (MAX_PEM + 1) as usize]).unwrap();
        for (key, path) in [
            ("cert_file", Path::new("/dev/zero")),
            ("cert_file", fifo.as_path()),
            ("cert_file", big.as_path()),
        ] {
            let start = std::time::Instant::now();
            let text = format!(
                "tls_server_config:\n  cert_file: {}\n  key_file: k.pem\n",
                path.display()
            );
            let e = WebConfig::parse(&text, dir.path()).err().unwrap();
            assert_eq!(
                e.1.as_deref(),
                Some(format!("tls_server_config.{key}").as_str())
            );
            assert_eq!(e.0, Some(2));
            assert!(e.2.contains("cannot read"), "{e:?}");
            assert!(start.elapsed() < std::time::Duration::from_secs(2));
        }
    }
}
