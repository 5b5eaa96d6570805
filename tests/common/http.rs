//! HTTP on loopback for the tests: a GET, and a Prometheus server that
//! scrapes a target and answers instant queries.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{ChildGuard, free_tcp_port};

/// A GET of `path` on 127.0.0.1:`port` with extra header lines (HTTP/1.1,
/// the connection closed after it): the status, the head and the body
/// (de-chunked).
pub fn get(port: u16, path: &str, headers: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{headers}\r\n"
    )
    .unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let end = resp.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&resp[..end]).to_string();
    let status = head[9..12].parse().unwrap();
    let body = resp[end + 4..].to_vec();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(&body)
    } else {
        body
    };
    (status, head, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        b = &b[eol + 2..];
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[..n]);
        b = &b[n + 2..];
    }
}

/// Prometheus on a loopback port, scraping `target` every second.
pub struct Prometheus {
    _guard: ChildGuard,
    port: u16,
}

impl Prometheus {
    pub fn start(dir: &Path, target: &str) -> Prometheus {
        Prometheus::start_with(dir, target, "")
    }

    /// `job`: more keys of the scrape job (scheme, tls_config, basic_auth).
    pub fn start_with(dir: &Path, target: &str, job: &str) -> Prometheus {
        let port = free_tcp_port();
        let conf = dir.join("prometheus.yml");
        std::fs::write(
            &conf,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: infiniband\n{job}    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", conf.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("run prometheus (Debian's prometheus package)");
        Prometheus {
            _guard: ChildGuard::new("prometheus", child),
            port,
        }
    }

    /// The vector result of an instant query: (labels, value) per series.
    pub fn query(&self, q: &str) -> Option<Vec<(BTreeMap<String, String>, String)>> {
        let enc: String = q
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        drop(s);
        let (status, _, body) = get(self.port, &format!("/api/v1/query?query={enc}"), "");
        if status != 200 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
        let result = v["data"]["result"].as_array()?;
        Some(
            result
                .iter()
                .map(|r| {
                    let labels = r["metric"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect();
                    (labels, r["value"][1].as_str().unwrap().to_string())
                })
                .collect(),
        )
    }
}

/// `promtool check metrics` of a text exposition finds nothing to say.
pub fn promtool_check_metrics(text: &[u8]) {
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    lint.stdin.take().unwrap().write_all(text).unwrap();
    let out = lint.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
