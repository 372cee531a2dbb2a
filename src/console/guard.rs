//! What keeps other web pages from using the console through the browser of someone who has
//! it open: its form posts come only from its own pages, and its pages cannot be framed.
//!
//! A form post must pass two checks. The browser's own word first: `Sec-Fetch-Site` must be
//! `same-origin` and `Origin` must name this server, when they are sent (browsers send them;
//! curl does not). Then a token that only this process's pages carry ([`CsrfToken`]), so a
//! browser too old to send either header is covered as well.

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// What a refused form post says when its token is missing or not this process's.
pub const STALE_FORM: &str = "this form did not come from this console (or the console was restarted since the page was loaded): reload the page and send again";

/// A random token made when the console starts, carried by its forms: another site cannot
/// read it, so it cannot post a form that has it.
pub struct CsrfToken(String);

impl CsrfToken {
    /// 256 bits from the operating system's generator.
    pub fn generate() -> CsrfToken {
        let mut bytes = [0u8; 32];
        // Without the OS's randomness, no token is made that anyone could guess: every form
        // is refused ("reload the page"), which is safe.
        let text = match getrandom::fill(&mut bytes) {
            Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
            Err(_) => String::new(),
        };
        CsrfToken(text)
    }

    /// The token, to put in a form.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether a posted value is the token (compared in constant time).
    pub fn matches(&self, posted: Option<&str>) -> bool {
        let Some(posted) = posted else {
            return false;
        };
        if self.0.is_empty() || posted.len() != self.0.len() {
            return false;
        }
        posted
            .bytes()
            .zip(self.0.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }
}

/// Why a request that the browser says came from another site is refused, if it is.
fn cross_site(headers: &HeaderMap) -> Option<String> {
    if let Some(site) = headers.get("sec-fetch-site") {
        if site.as_bytes() != b"same-origin" {
            return Some(format!(
                "the browser says this form was sent from another site (Sec-Fetch-Site: {})",
                String::from_utf8_lossy(site.as_bytes())
            ));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        let authority = origin.split_once("://").map(|(_, a)| a);
        let host = headers.get(header::HOST).map(|h| h.as_bytes());
        if authority.map(str::as_bytes) != host {
            return Some(format!(
                "this form was sent from {origin}, not from this console"
            ));
        }
    }
    None
}

/// The middleware of the form posts: a request from another site is refused before its body
/// is read, and nothing changes.
pub async fn same_origin_only(request: Request, next: Next) -> Response {
    match cross_site(request.headers()) {
        Some(why) => super::failure(
            StatusCode::FORBIDDEN,
            format!("refused: {why}; the console takes answers only from its own pages"),
        ),
        None => next.run(request).await,
    }
}

/// Scripts only from the console itself (no inline script, no `eval`), styles from itself or
/// inline (the graph's SVG carries its own), nothing fetched elsewhere, forms posted only to
/// itself, and no framing at all.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The middleware of every console response: the CSP above, `X-Frame-Options: DENY` for
/// browsers that predate `frame-ancestors`, no MIME sniffing, no caching (pages show task
/// tokens), and a referrer only to itself (which keeps `Origin` on its own form posts: with
/// `no-referrer` a browser sends `Origin: null`).
pub async fn page_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_matches_only_itself() {
        let token = CsrfToken::generate();
        assert_eq!(token.as_str().len(), 64);
        assert!(token.matches(Some(token.as_str())));
        assert!(!token.matches(None));
        assert!(!token.matches(Some("")));
        assert!(!token.matches(Some(&"0".repeat(64))));
        assert_ne!(CsrfToken::generate().as_str(), token.as_str());
    }

    #[test]
    fn cross_site_posts_are_named() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            h
        };
        assert!(cross_site(&headers(&[("host", "127.0.0.1:8083")])).is_none());
        assert!(cross_site(&headers(&[
            ("host", "127.0.0.1:8083"),
            ("origin", "http://127.0.0.1:8083"),
            ("sec-fetch-site", "same-origin"),
        ]))
        .is_none());
        for bad in [
            &[
                ("host", "127.0.0.1:8083"),
                ("origin", "http://evil.example"),
            ][..],
            &[("host", "127.0.0.1:8083"), ("origin", "null")][..],
            &[("host", "127.0.0.1:8083"), ("sec-fetch-site", "cross-site")][..],
            &[("host", "127.0.0.1:8083"), ("sec-fetch-site", "same-site")][..],
        ] {
            assert!(cross_site(&headers(bad)).is_some(), "{bad:?}");
        }
    }
}
