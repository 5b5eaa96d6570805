//! What an HTTP edge reads from a request head, pure: the query's
//! `collect[]` values, whether gzip is accepted, Basic credentials.

use base64::Engine as _;
use hyper::header::{HeaderName, HeaderValue};
use zeroize::Zeroizing;

use super::secret::Secret;

/// The `collect[]` values of a query string, percent-decoded; `Err` with
/// the raw value of one that is not percent-encoded UTF-8.
pub fn collect_params(query: &str) -> Result<Vec<String>, String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| matches!(percent_decode(k).as_deref(), Some("collect[]")))
        .map(|(_, v)| percent_decode(v).ok_or_else(|| v.to_string()))
        .collect()
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Whether an Accept-Encoding header accepts gzip: gzip named with a
/// q above 0, or not named and `*` with a q above 0 (`gzip;q=0, *` does
/// not).
pub fn accepts_gzip(h: Option<&str>) -> bool {
    let Some(h) = h else { return false };
    let (mut gzip, mut any) = (None, None);
    for e in h.split(',') {
        let mut p = e.split(';').map(str::trim);
        let coding = p.next().unwrap_or("").to_ascii_lowercase();
        let q = p
            .filter_map(|x| x.strip_prefix("q=").or_else(|| x.strip_prefix("Q=")))
            .next()
            .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())
            .unwrap_or(0.0);
        match coding.as_str() {
            "gzip" | "x-gzip" => gzip = Some(q > 0.0),
            "*" => any = Some(q > 0.0),
            _ => {}
        }
    }
    gzip.or(any).unwrap_or(false)
}

/// The user and password of a Basic Authorization header.
pub fn basic_credentials(h: &HeaderValue) -> Option<(String, Secret)> {
    let v = h.to_str().ok()?;
    let (scheme, b64) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = Zeroizing::new(
        base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .ok()?,
    );
    let colon = raw.iter().position(|&c| c == b':')?;
    let user = String::from_utf8(raw[..colon].to_vec()).ok()?;
    Some((user, Secret::from(raw[colon + 1..].to_vec())))
}

/// hyper's own answer to a head it could not parse (400, 414, 431: a
/// head with no content type, which every answer of the edge's own has),
/// rewritten with `Connection: close` and the `extra` headers; `None` for
/// anything else.
pub fn automatic_answer(head: &[u8], extra: &[(HeaderName, HeaderValue)]) -> Option<Vec<u8>> {
    if !head.starts_with(b"HTTP/1.1 4") {
        return None;
    }
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let fields = head[..end].to_ascii_lowercase();
    if fields.windows(13).any(|w| w == b"content-type:") {
        return None;
    }
    let status_end = head.windows(2).position(|w| w == b"\r\n")?;
    let mut out = head[..status_end + 2].to_vec();
    out.extend_from_slice(b"content-length: 0\r\nconnection: close\r\n");
    for (k, v) in extra {
        out.extend_from_slice(k.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collect_params_are_decoded() {
        assert_eq!(
            collect_params("collect%5B%5D=errors&x=1&collect[]=vl"),
            Ok(vec!["errors".to_string(), "vl".to_string()])
        );
        assert_eq!(collect_params(""), Ok(vec![]));
        assert_eq!(collect_params("x=%zz"), Ok(vec![]), "not a collect[]");
        assert_eq!(collect_params("collect[]=%zz"), Err("%zz".into()));
        assert_eq!(collect_params("collect[]=%ff%fe"), Err("%ff%fe".into()));
    }

    #[test]
    fn gzip_is_taken_when_accepted() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, gzip;q=0.5")));
        assert!(accepts_gzip(Some("*")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("gzip;q=0, *")));
        assert!(!accepts_gzip(Some("*, gzip;q=0.0")));
        assert!(!accepts_gzip(Some("*;q=0")));
        assert!(!accepts_gzip(Some("gzip;q=x")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn basic_credentials_decode() {
        let h = HeaderValue::from_static("Basic YWxpY2U6czNjcmV0OnRvbw==");
        let (user, pass) = basic_credentials(&h).unwrap();
        assert_eq!(
            (user.as_str(), pass.expose()),
            ("alice", &b"s3cret:too"[..])
        );
        assert!(basic_credentials(&HeaderValue::from_static("Bearer x")).is_none());
        assert!(basic_credentials(&HeaderValue::from_static("Basic !!")).is_none());
    }

    #[test]
    fn hypers_own_answers_get_the_extra_headers() {
        let extra = [(
            HeaderName::from_static("x-frame-options"),
            HeaderValue::from_static("deny"),
        )];
        let own =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(automatic_answer(own, &extra).unwrap()).unwrap();
        assert_eq!(
            out,
            "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\nx-frame-options: deny\r\n\r\n"
        );
        let ours = b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\nno\n";
        assert_eq!(automatic_answer(ours, &extra), None);
        assert_eq!(automatic_answer(b"HTTP/1.1 200 OK\r\n\r\n", &extra), None);
        assert_eq!(
            automatic_answer(b"HTTP/1.1 400 Bad", &extra),
            None,
            "not a whole head"
        );
        assert_eq!(automatic_answer(b"0\r\n\r\n", &extra), None);
    }
}
