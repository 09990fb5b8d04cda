//! Just enough HTTP/1.1 for a metrics page and a database write: a server
//! that answers GETs from a page function, one request per connection, and
//! a client that POSTs a body and reads the answer (its head parsed by
//! httparse, its body whole or chunked). Both sides close the connection
//! after each exchange, so neither needs pipelining.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A page: its status, content type and body.
pub struct Page {
    /// 200, or 503 for a probe that is not ready.
    pub status: Status,
    pub content_type: &'static str,
    pub body: String,
}

/// The statuses a page may answer with (any other path is a 404).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Unavailable,
}

impl Page {
    /// A page found: 200.
    pub fn ok(content_type: &'static str, body: String) -> Page {
        Page { status: Status::Ok, content_type, body }
    }
}

/// Answers GET requests on `listener` until `quit`: `page(path)` gives the
/// page, `None` a 404. Requests are served one at a time.
pub fn serve(
    listener: TcpListener,
    page: impl Fn(&str) -> Option<Page>,
    quit: &AtomicBool,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    while !quit.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                // A client that goes away costs only its own answer.
                let _ = answer(stream, &page);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    Ok(())
}

fn answer(mut stream: TcpStream, page: &impl Fn(&str) -> Option<Page>) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    let head = read_head(&mut stream)?;
    let mut words = head.split_whitespace();
    let found = match (words.next(), words.next()) {
        (Some("GET"), Some(path)) => page(path),
        _ => None,
    };
    let (status, content_type, body) = match found {
        Some(page) => {
            let status = match page.status {
                Status::Ok => "200 OK",
                Status::Unavailable => "503 Service Unavailable",
            };
            (status, page.content_type, page.body)
        }
        None => ("404 Not Found", "text/plain", "not found\n".to_string()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(response.as_bytes())?;
    stream.write_all(body.as_bytes())
}

/// Reads up to the blank line that ends a request or response head (at
/// most 8 KB); returns what was read, body bytes included.
fn read_head(stream: &mut TcpStream) -> io::Result<String> {
    let mut head = [0u8; 8192];
    let mut len = 0;
    let ended = |bytes: &[u8]| bytes.windows(4).any(|w| w == b"\r\n\r\n");
    while len < head.len() && !ended(head.get(..len).unwrap_or_default()) {
        match stream.read(head.get_mut(len..).unwrap_or_default())? {
            0 => break,
            n => len += n,
        }
    }
    Ok(String::from_utf8_lossy(head.get(..len).unwrap_or_default()).into_owned())
}

/// What a server answered: the status code and the body (chunks joined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// Headers an answer may have at most.
const HEADERS: usize = 64;

/// POSTs `body` to `path` on `server` (`host` for the Host header, and an
/// Authorization header where given) and returns the answer; `timeout`
/// bounds the connect and each read and write.
pub fn post(
    server: SocketAddr,
    host: &str,
    path: &str,
    body: &[u8],
    authorization: Option<&str>,
    timeout: Duration,
) -> io::Result<Answer> {
    let mut stream = TcpStream::connect_timeout(&server, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let authorization = authorization.map(|value| format!("Authorization: {value}\r\n")).unwrap_or_default();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{authorization}Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    // The server closes after answering: read it all (bounded by the
    // timeout and by room for an error that quotes the whole body).
    let mut answer = Vec::new();
    let most = 2 * body.len() as u64 + 64 * 1024;
    stream.take(most).read_to_end(&mut answer)?;
    read_answer(&answer)
}

/// A whole answer's status and body: `Content-Length`'s bytes, or the
/// chunks of `Transfer-Encoding: chunked` joined, or all that follows the
/// head.
pub fn read_answer(bytes: &[u8]) -> io::Result<Answer> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("HTTP answer: {what}"));
    let mut headers = [httparse::EMPTY_HEADER; HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Err(invalid("its head is cut short")),
        Err(error) => return Err(invalid(&error.to_string())),
    };
    let status = response.code.ok_or_else(|| invalid("no status"))?;
    let header =
        |name: &str| response.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value);
    let rest = bytes.get(head..).unwrap_or_default();
    let chunked = header("transfer-encoding")
        .is_some_and(|v| String::from_utf8_lossy(v).to_ascii_lowercase().contains("chunked"));
    let length = header("content-length").and_then(|v| std::str::from_utf8(v).ok()?.trim().parse().ok());
    let body = match (chunked, length) {
        (true, _) => dechunked(rest).map_err(|()| invalid("a chunk's size is not hexadecimal"))?,
        (false, Some(length)) => rest.get(..length).unwrap_or(rest).to_vec(),
        (false, None) => rest.to_vec(),
    };
    Ok(Answer { status, body: String::from_utf8_lossy(&body).into_owned() })
}

/// A chunked body's chunks joined (RFC 9112 section 7.1), as far as they
/// came: a cut last chunk gives what it holds.
fn dechunked(mut rest: &[u8]) -> Result<Vec<u8>, ()> {
    let mut body = Vec::with_capacity(rest.len());
    while let httparse::Status::Complete((line, size)) = httparse::parse_chunk_size(rest).map_err(|_| ())? {
        let data = rest.get(line..).unwrap_or_default();
        let size = usize::try_from(size).unwrap_or(usize::MAX).min(data.len());
        if size == 0 {
            break;
        }
        body.extend_from_slice(data.get(..size).unwrap_or_default());
        let after = data.get(size..).unwrap_or_default();
        rest = after.strip_prefix(b"\r\n").unwrap_or(after);
    }
    Ok(body)
}

/// HTTP Basic authentication's header value for `user` and `password`
/// (RFC 7617: base64 of `user:password`).
pub fn basic_auth(user: &str, password: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = format!("{user}:{password}").into_bytes();
    let mut out = String::from("Basic ");
    for chunk in bytes.chunks(3) {
        let word = chunk.iter().enumerate().fold(0u32, |w, (i, b)| w | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            let sextet = (word >> (18 - 6 * i)) & 63;
            let symbol =
                if i <= chunk.len() { ALPHABET.get(sextet as usize).copied().unwrap_or(b'=') } else { b'=' };
            out.push(char::from(symbol));
        }
    }
    out
}

/// A Prometheus label value as the text format wants it: backslash, quote
/// and newline escaped.
pub fn prometheus_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7617's example, and the three paddings.
    #[test]
    fn basic_auth_is_base64() {
        assert_eq!(basic_auth("Aladdin", "open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(basic_auth("a", "b"), "Basic YTpi");
        assert_eq!(basic_auth("ab", "c"), "Basic YWI6Yw==");
        assert_eq!(basic_auth("ab", "cd"), "Basic YWI6Y2Q=");
    }
    use std::sync::Arc;

    /// influxd 1.x's error of a refused write comes chunked when it is
    /// long: the body is the chunks' data joined, never a chunk's size.
    #[test]
    fn an_answer_reads_chunked_and_sized_bodies() {
        let text = "{\"error\":\"partial write: unable to parse 'a b': invalid field format dropped=0\"}";
        let (first, second) = text.split_at(20);
        let chunked = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n{:X};ext=1\r\n{second}\r\n0\r\n\r\n",
            first.len(),
            second.len()
        );
        assert_eq!(read_answer(chunked.as_bytes()).unwrap(), Answer { status: 400, body: text.into() });
        let sized = "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\nnone and more";
        assert_eq!(read_answer(sized.as_bytes()).unwrap(), Answer { status: 404, body: "none".into() });
        let closed = "HTTP/1.0 204 No Content\r\n\r\n";
        assert_eq!(read_answer(closed.as_bytes()).unwrap(), Answer { status: 204, body: String::new() });
        // Cut short: what came.
        let cut = "HTTP/1.1 400 Bad\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc";
        assert_eq!(read_answer(cut.as_bytes()).unwrap().body, "abc");
        for bad in [
            "HTTP/1.1 400 Bad\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc",
            "HTTP/1.1 20",
            "SSH-2.0\r\n\r\n",
        ] {
            assert!(read_answer(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_page_is_served_and_a_post_reads_its_status() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let quit = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&quit);
        let server = std::thread::spawn(move || {
            serve(
                listener,
                |path| (path == "/metrics").then(|| Page::ok("text/plain", "up 1\n".into())),
                &stop,
            )
        });
        let mut stream = TcpStream::connect(address).unwrap();
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("\r\n\r\nup 1\n"), "{text}");
        // Not a GET of a known page: 404, through the client.
        let answer = post(address, "x", "/write", b"a b=1", None, Duration::from_secs(2)).unwrap();
        assert_eq!(answer, Answer { status: 404, body: "not found\n".into() });
        quit.store(true, Ordering::Relaxed);
        server.join().unwrap().unwrap();
    }
}
