//! A NATS client for what collect needs, over one blocking TCP connection:
//! the core protocol (INFO, CONNECT, PUB and HPUB, SUB, MSG and HMSG,
//! PING/PONG) and the JetStream requests built on it (a stream created or
//! checked, publishes acknowledged by the stream, a durable pull consumer
//! fetched and acknowledged). The protocol is NATS's text protocol
//! (docs.nats.io, "Client Protocol"); JetStream's API is JSON requests on
//! `$JS.API.` subjects.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The largest message this client sends or takes (NATS's default
/// max_payload is 1 MiB; a server may allow more, up to 64 MiB).
pub const MAX_MESSAGE: usize = 1 << 20;

/// Where a NATS server is and who we are to it.
#[derive(Debug, Clone)]
pub struct Server {
    /// `host:port`.
    pub address: String,
    pub user: Option<(String, String)>,
}

impl Server {
    /// `nats://[user:password@]host:port` (the port defaults to 4222).
    pub fn parse(url: &str) -> Result<Server, String> {
        let hint = "give it as nats://HOST:PORT, e.g. nats://127.0.0.1:4222";
        let rest = url.strip_prefix("nats://").ok_or_else(|| format!("{url:?}: {hint}"))?;
        let (user, host) = match rest.rsplit_once('@') {
            Some((credentials, host)) => {
                let (name, password) = credentials.split_once(':').unwrap_or((credentials, ""));
                (Some((name.to_string(), password.to_string())), host)
            }
            None => (None, rest),
        };
        let host = host.trim_end_matches('/');
        if host.is_empty() || host.contains('/') {
            return Err(format!("{url:?}: {hint}"));
        }
        let address = if host.rsplit_once(':').is_some_and(|(_, port)| port.parse::<u16>().is_ok()) {
            host.to_string()
        } else {
            format!("{host}:4222")
        };
        address.to_socket_addrs().map_err(|e| format!("{url:?}: {e}; {hint}"))?;
        Ok(Server { address, user })
    }
}

/// A message received: its subject, where to reply (JetStream's ack
/// subject), its status line for a header-only status message, its
/// payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub subject: String,
    pub reply: Option<String>,
    /// `NATS/1.0 404 No Messages` and the like: JetStream's status, with
    /// no payload of interest.
    pub status: Option<u16>,
    /// Its headers, `Key: Value`, in order.
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
    /// The length of a message larger than [`MAX_MESSAGE`]: its bytes
    /// were read past and dropped (no headers, no payload), so that the
    /// connection goes on with the next one.
    pub oversized: Option<usize>,
}

impl Message {
    pub fn header(&self, key: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.as_str())
    }
}

/// One connection to a NATS server.
pub struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    /// This connection's inbox prefix (`_INBOX.<unique>.`).
    inbox: String,
    next_sid: u64,
}

impl Connection {
    pub fn connect(server: &Server, name: &str, timeout: Duration) -> std::io::Result<Connection> {
        let address = server
            .address
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other(format!("{}: no address", server.address)))?;
        let stream = TcpStream::connect_timeout(&address, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        let mut connection = Connection {
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
            inbox: format!("_INBOX.{}.", unique()),
            next_sid: 1,
        };
        let info = connection.line()?;
        if !info.starts_with("INFO ") {
            return Err(std::io::Error::other(format!("not a NATS server: {info:?}")));
        }
        let mut options = json!({"verbose": false, "pedantic": false, "headers": true, "no_responders": true,
                                 "name": name, "lang": "rust", "version": env!("CARGO_PKG_VERSION"), "protocol": 1});
        if let (Some((user, pass)), Some(fields)) = (&server.user, options.as_object_mut()) {
            fields.insert("user".into(), json!(user));
            fields.insert("pass".into(), json!(pass));
        }
        write!(connection.writer, "CONNECT {options}\r\nPING\r\n")?;
        loop {
            match connection.line()?.as_str() {
                "PONG" => return Ok(connection),
                "+OK" | "PING" => {}
                error => return Err(std::io::Error::other(format!("NATS refused the connection: {error}"))),
            }
        }
    }

    /// How long [`Connection::next_message`] waits for a message.
    pub fn set_wait(&mut self, wait: Duration) -> std::io::Result<()> {
        self.reader.get_ref().set_read_timeout(Some(wait.max(Duration::from_millis(1))))
    }

    /// A subject of this connection's inbox.
    pub fn inbox(&self, tail: &str) -> String {
        format!("{}{tail}", self.inbox)
    }

    /// Subscribes to `subject`; returns the subscription id.
    pub fn subscribe(&mut self, subject: &str) -> std::io::Result<u64> {
        let sid = self.next_sid;
        self.next_sid += 1;
        write!(self.writer, "SUB {subject} {sid}\r\n")?;
        Ok(sid)
    }

    /// Publishes `payload` to `subject` with optional headers and reply.
    pub fn publish(
        &mut self,
        subject: &str,
        reply: Option<&str>,
        headers: &[(&str, &str)],
        payload: &[u8],
    ) -> std::io::Result<()> {
        if payload.len() > MAX_MESSAGE {
            return Err(std::io::Error::other(format!(
                "{} bytes: over the {MAX_MESSAGE} a message holds",
                payload.len()
            )));
        }
        let reply = reply.map(|r| format!(" {r}")).unwrap_or_default();
        if headers.is_empty() {
            write!(self.writer, "PUB {subject}{reply} {}\r\n", payload.len())?;
        } else {
            let mut block = String::from("NATS/1.0\r\n");
            for (key, value) in headers {
                block.push_str(&format!("{key}: {value}\r\n"));
            }
            block.push_str("\r\n");
            write!(
                self.writer,
                "HPUB {subject}{reply} {} {}\r\n{block}",
                block.len(),
                block.len() + payload.len()
            )?;
        }
        self.writer.write_all(payload)?;
        self.writer.write_all(b"\r\n")
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }

    /// The next message, answering the server's PINGs; `None` when none
    /// came within the read timeout.
    pub fn next_message(&mut self) -> std::io::Result<Option<Message>> {
        loop {
            let line = match self.line() {
                Ok(line) => line,
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    return Ok(None)
                }
                Err(e) => return Err(e),
            };
            let words: Vec<&str> = line.split(' ').collect();
            match words.first().copied() {
                Some("MSG") => return self.message(&words, false).map(Some),
                Some("HMSG") => return self.message(&words, true).map(Some),
                Some("PING") => self.writer.write_all(b"PONG\r\n")?,
                Some("+OK" | "PONG" | "INFO") => {}
                _ => return Err(std::io::Error::other(format!("NATS: {line}"))),
            }
        }
    }

    /// The payload and headers of a MSG or HMSG whose line is `words`.
    fn message(&mut self, words: &[&str], headers: bool) -> std::io::Result<Message> {
        let bad = || std::io::Error::other(format!("NATS: a malformed message line {:?}", words.join(" ")));
        let numbers = if headers { 2 } else { 1 };
        if words.len() < 3 + numbers || words.len() > 4 + numbers {
            return Err(bad());
        }
        let word = |i: usize| words.get(i).copied().ok_or_else(bad);
        let total: usize = word(words.len() - 1)?.parse().map_err(|_| bad())?;
        let header_len: usize = if headers { word(words.len() - 2)?.parse().map_err(|_| bad())? } else { 0 };
        if header_len > total {
            return Err(bad());
        }
        let reply = (words.len() == 4 + numbers).then(|| word(3)).transpose()?.map(str::to_string);
        let subject = word(1)?.to_string();
        if total > MAX_MESSAGE {
            return self.read_past(subject, reply, total);
        }
        let mut body = vec![0u8; total + 2];
        std::io::Read::read_exact(&mut self.reader, &mut body)?;
        body.truncate(total);
        let payload = body.split_off(header_len);
        let status = if headers { status_of(&body) } else { None };
        let headers = headers_of(&body);
        Ok(Message { subject, reply, status, headers, payload, oversized: None })
    }

    /// A message too large to take: its `total` bytes (and the line's
    /// end) read and dropped, so the next message is read where it starts.
    /// Failing here would close the connection with the message unread,
    /// and the server deliver it again, for ever.
    fn read_past(
        &mut self,
        subject: String,
        reply: Option<String>,
        total: usize,
    ) -> std::io::Result<Message> {
        let skip = total as u64 + 2;
        let skipped = std::io::copy(&mut std::io::Read::take(&mut self.reader, skip), &mut std::io::sink())?;
        if skipped < skip {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "NATS closed the connection"));
        }
        Ok(Message {
            subject,
            reply,
            status: None,
            headers: Vec::new(),
            payload: Vec::new(),
            oversized: Some(total),
        })
    }

    fn line(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        let read = std::io::Read::take(&mut self.reader, 4096).read_line(&mut line)?;
        if read == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "NATS closed the connection"));
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }

    /// A request and its one reply (JetStream's API), waited for until
    /// `timeout`; messages of other subjects in between are handed to
    /// `other`.
    pub fn request(
        &mut self,
        subject: &str,
        payload: &Value,
        timeout: Duration,
        other: &mut dyn FnMut(Message),
    ) -> std::io::Result<Value> {
        let reply = self.inbox(&format!("r{}", self.next_sid));
        let sid = self.subscribe(&reply)?;
        self.publish(subject, Some(&reply), &[], payload.to_string().as_bytes())?;
        self.flush()?;
        let deadline = Instant::now() + timeout;
        let answer = loop {
            if Instant::now() >= deadline {
                break Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("{subject}: no answer"),
                ));
            }
            match self.next_message()? {
                Some(message) if message.subject == reply && message.status == Some(503) => {
                    break Err(std::io::Error::other(format!(
                        "{subject}: no responders (no JetStream on this server? start nats-server with -js)"
                    )));
                }
                Some(message) if message.subject == reply => {
                    break serde_json::from_slice(&message.payload)
                        .map_err(|e| std::io::Error::other(format!("{subject}: {e}")));
                }
                Some(message) => other(message),
                None => {}
            }
        };
        write!(self.writer, "UNSUB {sid}\r\n")?;
        answer
    }
}

/// The status code of a header block `NATS/1.0 404 No Messages`.
fn status_of(headers: &[u8]) -> Option<u16> {
    let first = headers.split(|b| *b == b'\r').next()?;
    let text = std::str::from_utf8(first).ok()?;
    text.strip_prefix("NATS/1.0 ")?.split(' ').next()?.parse().ok()
}

/// The `Key: Value` lines of a header block (after its `NATS/1.0` line).
fn headers_of(block: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(block)
        .split("\r\n")
        .skip(1)
        .filter_map(|line| line.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
        .collect()
}

/// A name no other connection has: the process, the time.
fn unique() -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{:x}{:x}", std::process::id(), nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_read() {
        let server = Server::parse("nats://u:p@127.0.0.1:4333").unwrap();
        assert_eq!(server.address, "127.0.0.1:4333");
        assert_eq!(server.user, Some(("u".into(), "p".into())));
        assert_eq!(Server::parse("nats://127.0.0.1").unwrap().address, "127.0.0.1:4222");
        assert!(Server::parse("http://127.0.0.1:4222").is_err());
        assert!(Server::parse("nats://").is_err());
    }

    #[test]
    fn statuses_read() {
        assert_eq!(status_of(b"NATS/1.0 404 No Messages\r\n\r\n"), Some(404));
        assert_eq!(status_of(b"NATS/1.0\r\nNats-Msg-Id: 1\r\n\r\n"), None);
        assert_eq!(
            headers_of(b"NATS/1.0\r\nInt-Schema: 1\r\n\r\n"),
            [("Int-Schema".to_string(), "1".to_string())]
        );
    }
}
