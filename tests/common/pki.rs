//! TLS for the metrics endpoint's tests: a CA, a server certificate for
//! 127.0.0.1 and a client certificate made with openssl, and curl's HTTP
//! status for a URL.

use std::path::Path;
use std::process::Command;

pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate.
pub fn make_pki(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=ibpm test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ];
    ca.extend(ec);
    openssl(dir, &ca);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    for who in ["server", "client"] {
        let (key, csr, pem, ext) = (
            format!("{who}.key"),
            format!("{who}.csr"),
            format!("{who}.pem"),
            format!("{who}.ext"),
        );
        let mut req = vec![
            "req",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            &key,
            "-out",
            &csr,
        ];
        req.extend(ec);
        openssl(dir, &req);
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-days",
                "2",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &pem,
                "-extfile",
                &ext,
            ],
        );
    }
}

/// The PKI of [`make_pki`] in `dir` and `dir/web.yml`: TLS with client
/// certificates verified against the CA, and one basic-auth user (bcrypt
/// cost 4).
pub fn tls_web_config(dir: &Path, user: &str, password: &str) {
    make_pki(dir);
    let hash = bcrypt::hash(password, 4).expect("bcrypt");
    std::fs::write(
        dir.join("web.yml"),
        format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n\
             basic_auth_users:\n  {user}: {hash}\n"
        ),
    )
    .expect("write web.yml");
}

/// curl's HTTP status for `url` with `args` (000 when no HTTP answer).
pub fn curl(url: &str, args: &[&str]) -> String {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "20",
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("run curl");
    String::from_utf8_lossy(&out.stdout).to_string()
}
