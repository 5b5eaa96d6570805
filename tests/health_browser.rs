//! The status page in a real browser: Debian's Chromium, headless, loads
//! it from a running agent over TLS with basic auth (the certificate
//! pinned by its public key, the credentials in the URL), sees the lost
//! link's row and no console message (and `ibpm-agentx health` reads
//! the same agent with the CA file and the password), and keeps a screenshot of the page
//! at a phone's width as a test artifact (target/test-artifacts/).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::health::HealthAgent;
use common::pki::make_pki;
use common::{ChildGuard, wait_until};
use ibpm_agentx::ib::health::Condition;
use ibpm_agentx::metrics::page::escape;

/// Where test artifacts are kept.
fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// base64 of the SHA-256 of the server certificate's public key (what
/// Chromium's --ignore-certificate-errors-spki-list takes).
fn spki_pin(dir: &Path) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(
            "openssl x509 -in server.pem -pubkey -noout | openssl pkey -pubin -outform der \
             | openssl dgst -sha256 -binary | openssl base64 -A",
        )
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Runs headless Chromium with `args` in a fresh profile under `dir`,
/// stopped by PID after 90 s at most: its standard output and its log.
fn chromium(dir: &Path, run: &str, pin: &str, args: &[&str]) -> (String, String) {
    let profile = dir.join(format!("profile-{run}"));
    let (out, err) = (
        dir.join(format!("{run}.out")),
        dir.join(format!("{run}.log")),
    );
    let child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--ignore-certificate-errors-spki-list={pin}"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("run chromium (scripts/install-deps installs it)");
    let mut guard = ChildGuard::new("chromium", child);
    wait_until(
        "chromium to finish",
        Duration::from_secs(90),
        Duration::from_millis(100),
        || !guard.running(),
    );
    let status = guard.stop().expect("an exit status");
    let (o, e) = (
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default(),
    );
    assert!(status.success(), "chromium {args:?}: {status}\n{e}");
    (o, e)
}

/// The console messages Chromium logged (`INFO:CONSOLE:N] "…", source:`).
fn console(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn chromium_shows_the_unhealthy_link_over_tls_with_basic_auth() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    make_pki(d);
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    std::fs::write(
        d.join("web.yml"),
        format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n\
             basic_auth_users:\n  oncall: {hash}\n"
        ),
    )
    .unwrap();
    let a = HealthAgent::start(d, "web_config = \"web.yml\"");
    let (x, y) = a.switch_link();
    assert!(a.sim.set_link(x.0, x.1, false));
    let cache = a.agent.as_ref().unwrap().cache().clone();
    wait_until(
        "the lost link's verdict",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            let h = cache.load().health.clone();
            [x, y].iter().all(|&(g, p)| {
                h.port(g, p)
                    .is_some_and(|v| v.mark(Condition::LinkLost).is_some())
            })
        },
    );
    let pin = spki_pin(d);
    let url = format!("https://oncall:s3cret@127.0.0.1:{}/", a.port);

    // Without credentials: the agent's 401 (headless Chromium has no
    // prompt: the load fails), not the page.
    let (dom, alog) = chromium(
        d,
        "anonymous",
        &pin,
        &["--dump-dom", &format!("https://127.0.0.1:{}/", a.port)],
    );
    assert!(
        alog.contains("ERR_INVALID_AUTH_CREDENTIALS") && !dom.contains("Unhealthy links"),
        "{dom}\n{alog}"
    );

    // With them: the page, the lost link's row with both ends' names, and
    // nothing on the console.
    let (dom, log) = chromium(d, "dom", &pin, &["--dump-dom", &url]);
    assert!(dom.contains("id=\"status\">unhealthy</span>"), "{dom}");
    let (nx, ny) = (escape(&a.name(x)), escape(&a.name(y)));
    let row = dom
        .split("<tr class=\"link\">")
        .skip(1)
        .find(|r| r.contains(&nx) && r.contains(&ny))
        .unwrap_or_else(|| panic!("no row for {nx} and {ny}:\n{dom}"));
    assert!(row.contains("class=\"c link_lost\""), "{row}");
    assert!(
        console(&log).is_empty(),
        "console messages:\n{}",
        console(&log).join("\n")
    );

    // `ibpm-agentx health` over the same TLS and basic auth.
    let health = |password: &str| {
        Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
            .args(["health", "--url", &format!("https://127.0.0.1:{}", a.port)])
            .arg("--cacert")
            .arg(d.join("ca.pem"))
            .args(["--user", "oncall"])
            .env("IBPM_AGENTX_PASSWORD", password)
            .output()
            .expect("run ibpm-agentx health")
    };
    let out = health("s3cret");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.lines()
            .any(|l| l.contains("link lost") && l.contains(&a.name(x)) && l.contains(&a.name(y))),
        "{text}"
    );
    let out = health("wrong");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("answered 401"), "{err}");

    // A screenshot at a phone's width, kept.
    let shot = artifacts().join("health-page-phone.png");
    let _ = std::fs::remove_file(&shot);
    let (_, log) = chromium(
        d,
        "shot",
        &pin,
        &[
            "--hide-scrollbars",
            "--window-size=412,1600",
            &format!("--screenshot={}", shot.display()),
            &url,
        ],
    );
    assert!(console(&log).is_empty(), "{log}");
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{}",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());
}
