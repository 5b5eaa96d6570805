//! The web configuration file as `ibpm-agentx check-config` and `run` read
//! it, as strict as exporter-toolkit: files it names read bounded
//! (`/dev/zero` and a FIFO refused within seconds, naming the key), deep
//! nesting refused before the YAML parser sees it, and headers beyond the
//! security headers refused with their line.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::pki::make_pki;

/// `ibpm-agentx CMD --config conf`: exit code and stderr, killed after 20 s.
fn agent(cmd: &str, conf: &Path) -> (i32, String, Duration) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args([cmd, "--config", conf.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = start + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd} did not end within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code().unwrap_or(-1), err, start.elapsed())
}

fn setup(web: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("web.yml"), web).unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(
        &conf,
        "[agentx]\nenabled = false\n[fabric]\nsweep_interval = 3600\n[metrics]\n\
         listen = \"127.0.0.1:0\"\nweb_config = \"web.yml\"\n",
    )
    .unwrap();
    (dir, conf)
}

#[test]
fn dev_zero_and_a_fifo_are_refused_naming_the_key() {
    let fifo_dir = tempfile::tempdir().unwrap();
    let fifo = fifo_dir.path().join("cert.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for key in ["cert_file", "key_file", "client_ca_file"] {
        for named in [Path::new("/dev/zero"), fifo.as_path()] {
            let mut files = [
                ("cert_file", "server.pem".to_string()),
                ("key_file", "server.key".to_string()),
                ("client_ca_file", "ca.pem".to_string()),
            ];
            for f in &mut files {
                if f.0 == key {
                    f.1 = named.display().to_string();
                }
            }
            let web = format!(
                "tls_server_config:\n  cert_file: {}\n  key_file: {}\n  \
                 client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {}\n",
                files[0].1, files[1].1, files[2].1
            );
            let (dir, conf) = setup(&web);
            // The other files are real, so the one named is what fails.
            make_pki(dir.path());
            for cmd in ["check-config", "run"] {
                let (code, err, took) = agent(cmd, &conf);
                println!(
                    "{cmd} with {key} = {}: {code} after {took:?}: {err}",
                    named.display()
                );
                assert_ne!(code, 0, "{err}");
                assert!(
                    err.contains(&format!("tls_server_config.{key}")) && err.contains("web.yml:"),
                    "{err}"
                );
                assert!(err.contains("not a regular file"), "{err}");
                assert!(took < Duration::from_secs(5), "{took:?}");
            }
        }
    }
}

#[test]
fn framing_headers_are_refused_with_their_line() {
    let (_dir, conf) = setup(
        "http_server_config:\n  headers:\n    X-Frame-Options: deny\n    Content-Length: \"3\"\n",
    );
    let (code, err, _) = agent("check-config", &conf);
    assert_ne!(code, 0);
    assert!(err.contains("web.yml:4"), "{err}");
    assert!(err.contains("Content-Length"), "{err}");
    assert!(err.contains("only the security headers"), "{err}");
}

#[test]
fn deep_nesting_and_large_files_are_refused_at_once() {
    let deep = format!(
        "basic_auth_users: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let (dir, conf) = setup(&deep);
    let (code, err, took) = agent("check-config", &conf);
    assert_ne!(code, 0);
    assert!(
        err.contains("more than the 65536 allowed"),
        "the 64 KiB cap first: {err}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    let deep = format!(
        "basic_auth_users: {}{}\n",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    std::fs::write(dir.path().join("web.yml"), deep).unwrap();
    let (code, err, took) = agent("check-config", &conf);
    assert_ne!(code, 0);
    assert!(err.contains("nested 20000 deep"), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}
