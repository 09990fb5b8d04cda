//! collect run as a service for months: SIGHUP reloads the names and never
//! ends it, the probes (`/healthz`, `/readyz`) on both servers, `--log`
//! levels, and a periodic summary the journal can hold. The real binary,
//! no DPDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/collector.rs"]
mod collector;
#[path = "../../tests/common/files.rs"]
mod files;
#[path = "../../tests/common/running.rs"]
mod running;
#[path = "../../tests/common/servers.rs"]
mod servers;

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::Command;

use files::workdir;
use running::Collect;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// Status and body of `GET path` at `server`.
fn get(server: &str, path: &str) -> (u16, String) {
    let (status, whole) = ask(server, path, None);
    (status, whole.split_once("\r\n\r\n").unwrap().1.to_string())
}

/// Status and the whole answer of `GET path` at `server`, with an
/// `Authorization` header where given.
fn ask(server: &str, path: &str, authorization: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(server).unwrap();
    let header = authorization.map_or(String::new(), |value| format!("Authorization: {value}\r\n"));
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {server}\r\n{header}Connection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    (response.split(' ').nth(1).unwrap().parse().unwrap(), response)
}

/// SIGHUP reads `--names` again: the next records and the summary carry
/// the new name; a file that does not read keeps the names before and
/// says why; collect goes on and ends on SIGINT with its summary (SIGHUP
/// ended it, with no summary).
#[test]
fn sighup_reloads_the_names_and_never_ends_collect() {
    let dir = workdir("service-sighup");
    let names = dir.join("names.yaml");
    std::fs::write(&names, "nodes: {2: old-two}\n").unwrap();
    let mut collect = Collect::start(&[
        "--json",
        "--interval",
        "0",
        "--listen",
        "127.0.0.1:0",
        "--names",
        names.to_str().unwrap(),
    ]);
    let listen = collect.address("listening on ");
    let reports = collector::switch_reports();
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.send_to(&reports[0], &listen).unwrap();
    collect.printed("\"old-two\"");

    std::fs::write(&names, "nodes: {2: new-two}\n").unwrap();
    collect.signal("-HUP");
    let line = collect.said("SIGHUP");
    assert!(line.contains("reloaded --names") && line.contains("1 node(s)"), "{line}");
    sender.send_to(&reports[1], &listen).unwrap();
    let record: serde_json::Value = serde_json::from_str(&collect.printed("\"new-two\"")).unwrap();
    assert_eq!(record["hop_metadata"][1]["node_id_name"], "new-two", "{record}");

    std::fs::write(&names, "nodes: [2, 3\n").unwrap();
    collect.signal("-HUP");
    let line = collect.said("SIGHUP");
    assert!(line.contains("keeping the names before (1 node(s))"), "{line}");
    assert!(line.contains(names.to_str().unwrap()), "names the file: {line}");
    sender.send_to(&reports[2], &listen).unwrap();
    collect.printed("\"new-two\"");

    let (out, said) = collect.stop();
    let summary: serde_json::Value = serde_json::from_str(out.last().unwrap()).unwrap();
    let nodes = summary["summary"]["nodes"].as_array().unwrap();
    let two = nodes.iter().find(|n| n["node"] == 2).unwrap();
    assert_eq!(two["node_name"], "new-two", "{said}");
}

/// The probes on the web view and the metrics server: healthz 200 while
/// collect runs; readyz 200 with its receivers bound, 503 saying what is
/// missing while `--from-nats`'s consumer is not attached (no server
/// answers), 200 once it is (a nats-server). The probes answer a host the
/// view is not told of.
#[test]
fn healthz_and_readyz_on_both_servers() {
    let mut collect = Collect::start(&[
        "--quiet",
        "--listen",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
    ]);
    let metrics = collect.address("metrics on http://");
    let view = collect.address("view on http://");
    for server in [&view, &metrics] {
        assert_eq!(get(server, "/healthz"), (200, "ok\n".to_string()), "{server}");
        assert_eq!(get(server, "/readyz"), (200, "ready\n".to_string()), "{server}");
    }
    let mut stream = TcpStream::connect(&view).unwrap();
    write!(stream, "GET /readyz HTTP/1.1\r\nHost: probe.example\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    collect.stop();

    // An aggregator whose stream's server is away: alive, not ready.
    let mut collect = Collect::start(&[
        "--quiet",
        "--from-nats",
        "nats://127.0.0.1:1",
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
    ]);
    let metrics = collect.address("metrics on http://");
    let view = collect.address("view on http://");
    for server in [&view, &metrics] {
        assert_eq!(get(server, "/healthz").0, 200, "{server}");
        let (status, body) = get(server, "/readyz");
        assert_eq!(status, 503, "{server}: {body}");
        assert!(body.contains("consumer is not attached"), "{body}");
    }
    collect.stop();

    let dir = workdir("service-readyz-nats");
    let port = servers::free_port();
    let nats = servers::start_nats(&dir, port, &[]);
    let url = format!("nats://127.0.0.1:{port}");
    let mut collect = Collect::start(&["--quiet", "--from-nats", &url, "--metrics", "127.0.0.1:0"]);
    let metrics = collect.address("metrics on http://");
    // Ready once the consumer is made: a state, asked until it comes.
    while get(&metrics, "/readyz").0 == 503 {
        assert!(collect.running(), "collect ended: {}", collect.heard());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(get(&metrics, "/readyz"), (200, "ready\n".to_string()));
    collect.stop();
    servers::stop(nats);
}

/// `--log warn`: the info lines ("listening on", "view on") are not
/// written, the warnings are; the default (info) writes both.
#[test]
fn log_warn_hides_the_info_lines() {
    let args = ["--quiet", "--from-nats", "nats://127.0.0.1:1", "--http", "127.0.0.1:0"];
    let mut collect = Collect::start(&args);
    collect.said("view on http://");
    collect.said("(trying again)");
    let (_, said) = collect.stop();
    assert!(said.contains("aggregating stream"), "{said}");

    let mut collect = Collect::start(&[&args[..], &["--log", "warn"]].concat());
    collect.said("(trying again)");
    let (_, said) = collect.stop();
    assert!(!said.contains("view on") && !said.contains("aggregating"), "{said}");

    let refused = Command::new(BIN).args(["collect", "--log", "loud"]).output().unwrap();
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && text.contains("[possible values: error, warn, info, debug]"),
        "{text}"
    );
}

/// The packaged unit prints a summary a minute to the journal: at 50
/// nodes the periodic one stays about 30 lines (it was 155), naming the
/// worst node (the highest hop latency), link and flow (the slowest),
/// then how many more; the summary at exit lists every node.
#[test]
fn the_periodic_summary_is_bounded_and_names_the_worst() {
    use int_core::int21::HopMetadata;
    // 49 flows (UDP ports 1-49), each from its own node (101-149) to the
    // sink (node 9): 50 nodes, 49 links. Node 107 holds packets 900 µs,
    // the others 1-49 µs; flow 21's link to the sink takes 5 ms, the
    // others' 2 µs.
    let mut datagrams = Vec::new();
    for round in 0..3u64 {
        for port in 1..=49u16 {
            let node = 100 + u32::from(port);
            let latency = if node == 107 { 900_000 } else { 1000 * u32::from(port) };
            let t = 1_000_000_000 * round + 10_000_000 * u64::from(port);
            let egress = t + u64::from(latency);
            let hop = HopMetadata {
                node_id: Some(node),
                hop_latency: Some(latency),
                queue: Some((0, 1)),
                ingress_timestamp: Some(t),
                egress_timestamp: Some(egress),
                ..HopMetadata::default()
            };
            let link = if port == 21 { 5_000_000 } else { 2000 };
            let sequence = datagrams.len() as u32 + 1;
            datagrams.push(collector::stack_report(sequence, 9, port, &[hop], egress + link));
        }
    }
    let mut collect = Collect::start(&["--quiet", "--interval", "0.1", "--listen", "127.0.0.1:0"]);
    let listen = collect.address("listening on ");
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in &datagrams {
        sender.send_to(datagram, &listen).unwrap();
    }
    let header = format!("== summary: {} report(s)", datagrams.len());
    collect.printed(&header);
    let mut periodic = vec![header];
    loop {
        let line = collect.line();
        if line.starts_with("== summary") {
            break;
        }
        periodic.push(line);
    }
    let text = periodic.join("\n");
    println!("{text}");
    assert!(periodic.len() <= 30, "{} lines:\n{text}", periodic.len());
    let flows: Vec<&String> = periodic.iter().filter(|l| l.starts_with("  udp ")).collect();
    assert!(flows[0].starts_with("  udp 10.0.0.1:21 -> "), "the slowest flow first:\n{text}");
    let nodes: Vec<&String> = periodic.iter().filter(|l| l.starts_with("  node ")).collect();
    assert!(nodes[0].starts_with("  node 107: 3 hop(s)"), "the slowest node first:\n{text}");
    let links: Vec<&String> = periodic.iter().filter(|l| l.starts_with("  link ")).collect();
    assert!(links[0].starts_with("  link 121 > 9: "), "the slowest link first:\n{text}");
    assert!(text.contains("  ... and 42 more node(s)"), "{text}");
    assert!(text.contains("  ... and 41 more link(s)"), "{text}");
    assert!(text.contains("  ... and 41 more flow(s)"), "{text}");

    let (out, said) = collect.stop();
    let last = out.iter().rposition(|l| l.starts_with("== summary")).unwrap();
    let at_exit = &out[last..];
    let nodes = at_exit.iter().filter(|l| l.starts_with("  node ")).count();
    assert_eq!(nodes, 50, "{said}\n{}", at_exit.join("\n"));
}

/// Status and head of `GET path` at `server` with `authorization`.
fn get_with(server: &str, path: &str, authorization: Option<&str>) -> (u16, String) {
    let (status, whole) = ask(server, path, authorization);
    (status, whole.split_once("\r\n\r\n").unwrap().0.to_string())
}

/// `--http-token-file`: the view's pages and API ask for the token (a
/// bearer token, or Basic's password with any user: 401 with the
/// challenge a browser answers); the probes do not; an empty token file
/// stops collect at start, saying what to write.
#[test]
fn the_view_asks_for_its_token_and_the_probes_do_not() {
    let dir = workdir("service-token");
    let file = dir.join("token");
    std::fs::write(&file, "  0123456789abcdef0123 \n").unwrap();
    let mut collect = Collect::start(&[
        "--quiet",
        "--listen",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--http-token-file",
        file.to_str().unwrap(),
    ]);
    let view = collect.address("view on http://");
    for path in ["/", "/api/overview"] {
        let (status, head) = get_with(&view, path, None);
        assert_eq!(status, 401, "{path}: {head}");
        assert!(head.to_lowercase().contains("www-authenticate: basic realm="), "{head}");
        assert_eq!(get_with(&view, path, Some("Bearer 0123456789abcdef012")).0, 401, "{path}");
        assert_eq!(get_with(&view, path, Some("Bearer 0123456789abcdef0123")).0, 200, "{path}");
        // ops:0123456789abcdef0123
        let basic = "Basic b3BzOjAxMjM0NTY3ODlhYmNkZWYwMTIz";
        assert_eq!(get_with(&view, path, Some(basic)).0, 200, "{path}");
    }
    for probe in ["/healthz", "/readyz"] {
        assert_eq!(get_with(&view, probe, None).0, 200, "{probe}");
    }
    collect.stop();

    std::fs::write(&file, "\n").unwrap();
    let args = ["collect", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--http-token-file"];
    let refused = Command::new(BIN).args(args).arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && text.contains("its first line is empty"), "{text}");
}

/// A request naming another host gets 421 before any credentials are
/// asked for: a page of another site learns nothing of the view's
/// authentication (it got 401 and the Basic challenge).
#[test]
fn a_foreign_host_gets_421_before_any_credentials() {
    let dir = workdir("service-foreign-host");
    let token = dir.join("token");
    std::fs::write(&token, "0123456789abcdef0123\n").unwrap();
    let args = ["--quiet", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--http-token-file"];
    let mut collect = Collect::start(&[&args[..], &[token.to_str().unwrap()]].concat());
    let view = collect.address("view on http://");
    for authorization in ["", "Authorization: Bearer 0123456789abcdef0123\r\n"] {
        let mut stream = TcpStream::connect(&view).unwrap();
        write!(
            stream,
            "GET /api/overview HTTP/1.1\r\nHost: evil.example\r\n{authorization}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 421"), "{response}");
        assert!(!response.to_lowercase().contains("www-authenticate"), "{response}");
    }
    collect.stop();
}

/// `--http-idle-ms` is read like every duration flag: a value out of its
/// bounds is refused with them and what the flag is for; the TLS flags
/// come in pairs, and each file that does not serve is named with what to
/// do, all at once, before collect receives anything.
#[test]
fn the_view_flags_refuse_with_a_hint() {
    let dir = workdir("service-view-flags");
    let refused = |extra: &[&str]| {
        let args = [&["collect", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"][..], extra].concat();
        let output = Command::new(BIN).args(args).output().unwrap();
        assert!(!output.status.success(), "{extra:?} was taken");
        String::from_utf8_lossy(&output.stderr).to_string()
    };
    let said = refused(&["--http-idle-ms", "50"]);
    assert!(said.contains("50 is too short: give 100 to 3600000 ms (milliseconds a web view"), "{said}");

    let (ca, cert, key) = certificate(&dir, "view");
    let said = refused(&["--http-tls-cert", &cert]);
    assert!(said.contains("--http-tls-cert needs --http-tls-key: the certificate's private key"), "{said}");
    let said = refused(&["--http-tls-key", &key]);
    assert!(said.contains("--http-tls-key needs --http-tls-cert"), "{said}");
    let missing = dir.join("missing.pem");
    let missing = missing.to_str().unwrap();
    let said = refused(&["--http-tls-cert", missing, "--http-tls-key", missing]);
    assert!(said.contains(&format!("--http-tls-cert {missing}: No such file")), "{said}");
    assert!(said.contains(&format!("--http-tls-key {missing}: No such file")), "{said}");
    let said = refused(&["--http-tls-cert", &key, "--http-tls-key", &cert]);
    assert!(
        said.contains(&format!("--http-tls-cert {key}: no certificate")) && said.contains("swapped?"),
        "{said}"
    );
    let said = refused(&["--http-tls-cert", &ca, "--http-tls-key", &key]);
    assert!(said.contains("the key must be the one the certificate was made for"), "{said}");
}

/// The summary `--json` prints at exit (the last line).
fn summary_at_exit(out: &[String]) -> serde_json::Value {
    serde_json::from_str::<serde_json::Value>(out.last().unwrap()).unwrap()["summary"].clone()
}

/// A CA made by openssl (`NAME-ca.pem`) and a certificate it signs for
/// 127.0.0.1 and localhost (`NAME.pem`, its key `NAME.key`), in `dir`.
fn certificate(dir: &std::path::Path, name: &str) -> (String, String, String) {
    let file = |suffix: &str| dir.join(format!("{name}{suffix}")).to_str().unwrap().to_string();
    let (ca, ca_key, cert, key, csr, ext) =
        (file("-ca.pem"), file("-ca.key"), file(".pem"), file(".key"), file(".csr"), file(".ext"));
    std::fs::write(&ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    for args in [
        [
            &["req", "-x509", "-days", "2", "-subj", &format!("/CN={name} test CA")][..],
            &ec,
            &["-keyout", &ca_key, "-out", &ca],
        ]
        .concat(),
        [&["req", "-subj", &format!("/CN={name}")][..], &ec, &["-keyout", &key, "-out", &csr]].concat(),
        vec![
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &cert,
        ],
    ] {
        let made = Command::new("openssl").args(&args).output().expect("openssl (scripts/install-deps.sh)");
        assert!(made.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&made.stderr));
    }
    (ca, cert, key)
}

/// curl (OpenSSL's TLS, not ours) asking `url` trusting only `ca`, with
/// `args`: its exit code (60: the certificate is not the CA's) and the
/// HTTP status and body.
fn curl(url: &str, ca: &str, args: &[&str]) -> (i32, u16, String) {
    let output = Command::new("curl")
        .args(["-sS", "--noproxy", "*", "--cacert", ca, "-w", "\n%{http_code}", url])
        .args(args)
        .output()
        .expect("curl (scripts/install-deps.sh)");
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (output.status.code().unwrap_or(-1), status.parse().unwrap_or(0), body.to_string())
}

/// `--http-tls-cert` and `--http-tls-key`: curl trusting the test CA gets
/// the view over HTTPS, curl trusting another refuses the certificate, a
/// plain HTTP request on the port is told to use https:// and served
/// nothing; the failed handshakes are counted.
#[test]
fn the_view_over_tls_is_verified_by_curl() {
    let dir = workdir("service-tls");
    let (ca, cert, key) = certificate(&dir, "view");
    let (other_ca, _, _) = certificate(&dir, "other");
    let args = ["--json", "--quiet", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--http-tls-cert"];
    let mut collect = Collect::start(&[&args[..], &[&cert, "--http-tls-key", &key]].concat());
    let view = collect.address("view on https://");
    let url = format!("https://{view}/api/overview");
    let (code, status, body) = curl(&url, &ca, &[]);
    assert_eq!((code, status), (0, 200), "{body}");
    assert!(body.contains("\"reports\":0"), "{body}");
    let localhost = format!("https://localhost:{}/api/overview", view.rsplit_once(':').unwrap().1);
    assert_eq!(curl(&localhost, &ca, &[]).1, 200);
    assert_eq!(curl(&url, &other_ca, &[]).0, 60, "a certificate the other CA did not sign");

    let (status, answer) = get(&view, "/api/overview");
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("use https://") && !answer.contains("reports"), "{answer}");
    let (out, _) = collect.stop();
    let summary = summary_at_exit(&out);
    assert_eq!(summary["view"]["handshake_failed"], 2, "{}", summary["view"]);
    assert_eq!(summary["view"]["served"], 4, "{}", summary["view"]);
}

/// A client that connects to the TLS port and never sends its
/// ClientHello holds a connection no longer than `--http-idle-ms`, and
/// counts within `--http-connections`: with every slot held silent, one
/// more is refused; once the silent ones are closed (and counted timed
/// out), curl is served. (3 s: room for five connects on a busy machine.)
#[test]
fn a_stalled_tls_handshake_is_closed_by_the_idle_timeout() {
    let dir = workdir("service-tls-stall");
    let (ca, cert, key) = certificate(&dir, "view");
    let mut collect = Collect::start(&[
        "--json",
        "--quiet",
        "--listen",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--http-connections",
        "4",
        "--http-idle-ms",
        "3000",
        "--http-tls-cert",
        &cert,
        "--http-tls-key",
        &key,
    ]);
    let view = collect.address("view on https://");
    let mut silent: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(&view).unwrap()).collect();
    // Once the four are accepted (a state: the refused one is counted
    // only after them), a fifth is closed at once.
    let mut fifth = TcpStream::connect(&view).unwrap();
    wait_closed(&mut fifth);
    silent.iter_mut().for_each(wait_closed);
    let (code, status, body) = curl(&format!("https://{view}/api/overview"), &ca, &[]);
    assert_eq!((code, status), (0, 200), "{body}");
    let (out, _) = collect.stop();
    let summary = summary_at_exit(&out);
    let counts = &summary["view"];
    assert_eq!((&counts["timed_out"], &counts["refused"]), (&4.into(), &1.into()), "{counts}");
}

/// Reads `stream` until the view closes it: EOF or a reset; a view that
/// never closes fails the test at a bound far beyond the timeouts used.
fn wait_closed(stream: &mut TcpStream) {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let mut sink = [0u8; 512];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("the view kept a connection open: {e}"),
        }
    }
}

/// `--http-users-file` as `htpasswd -B` writes it: a user's right
/// password is admitted, a wrong one or an unknown user gets 401 with the
/// Basic challenge, the token admits beside it; SIGHUP reads the file
/// again; no password reaches the log; a line of htpasswd's default MD5
/// refuses the file at start, named by its line, the hash not shown.
#[test]
fn the_users_file_of_htpasswd_admits_its_users() {
    let dir = workdir("service-users");
    let users = dir.join("users");
    let users = users.to_str().unwrap();
    let htpasswd = |args: &[&str]| {
        let made = Command::new("htpasswd")
            .args(args)
            .output()
            .expect("htpasswd (apache2-utils; scripts/install-deps.sh)");
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    };
    htpasswd(&["-cbB", users, "alice", "wonder land"]);
    htpasswd(&["-bB", "-C", "6", users, "bob", "builder"]);
    let token = dir.join("token");
    std::fs::write(&token, "0123456789abcdef0123\n").unwrap();
    let mut collect = Collect::start(&[
        "--json",
        "--quiet",
        "--listen",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--http-users-file",
        users,
        "--http-token-file",
        token.to_str().unwrap(),
    ]);
    let view = collect.address("view on http://");
    let basic = |user: &str, password: &str| int_os::http::basic_auth(user, password);
    for _ in 0..2 {
        assert_eq!(get_with(&view, "/api/overview", Some(&basic("alice", "wonder land"))).0, 200);
        assert_eq!(get_with(&view, "/", Some(&basic("bob", "builder"))).0, 200);
    }
    assert_eq!(get_with(&view, "/", Some(&basic("anyone", "0123456789abcdef0123"))).0, 200);
    assert_eq!(get_with(&view, "/", Some("Bearer 0123456789abcdef0123")).0, 200);
    for (user, password) in [("alice", "wonder"), ("alice", "builder"), ("carol", "wonder land"), ("", "")] {
        let (status, head) = get_with(&view, "/api/overview", Some(&basic(user, password)));
        assert_eq!(status, 401, "{user}:{password}");
        assert!(
            head.to_lowercase().contains("www-authenticate: basic realm=\"int-tools collect\""),
            "{head}"
        );
    }
    // SIGHUP reads the file again: alice's new password, and bob gone.
    htpasswd(&["-cbB", users, "alice", "new land"]);
    collect.signal("-HUP");
    let line = collect.said("reloaded --http-users-file");
    assert!(line.ends_with(": 1 user(s)"), "{line}");
    assert_eq!(get_with(&view, "/", Some(&basic("alice", "new land"))).0, 200);
    assert_eq!(get_with(&view, "/", Some(&basic("alice", "wonder land"))).0, 401);
    assert_eq!(get_with(&view, "/", Some(&basic("bob", "builder"))).0, 401);
    let (out, said) = collect.stop();
    let summary = summary_at_exit(&out);
    assert_eq!(summary["view"]["unauthorized"], 6, "{}", summary["view"]);
    assert!(!said.contains("wonder") && !said.contains("builder") && !said.contains("$2y$"), "{said}");

    htpasswd(&["-bB", users, "bob", "builder"]);
    htpasswd(&["-bm", users, "dave", "md5 password"]);
    let output = Command::new(BIN)
        .args(["collect", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--http-users-file", users])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains(&format!("--http-users-file {users} line 3: the hash is not bcrypt's")), "{text}");
    assert!(!text.contains("$apr1$"), "{text}");
}

/// SIGHUP rotates the view's token and certificate: after it the new CA's
/// curl with the new token is served, the old token is refused and the
/// old CA no longer verifies the server; a certificate file that does not
/// read keeps the pair before, with a warning; collect books every report
/// sent around the signals and ends with its summary.
#[test]
fn sighup_rotates_the_token_and_the_certificate() {
    let dir = workdir("service-rotate");
    let (old_ca, old_cert, old_key) = certificate(&dir, "old");
    let (new_ca, new_cert, new_key) = certificate(&dir, "new");
    let (cert, key, token) = (dir.join("view.pem"), dir.join("view.key"), dir.join("token"));
    std::fs::copy(&old_cert, &cert).unwrap();
    std::fs::copy(&old_key, &key).unwrap();
    std::fs::write(&token, "old-token-0123456789\n").unwrap();
    let mut collect = Collect::start(&[
        "--json",
        "--quiet",
        "--view-sample-ms",
        "20",
        "--listen",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--http-token-file",
        token.to_str().unwrap(),
        "--http-tls-cert",
        cert.to_str().unwrap(),
        "--http-tls-key",
        key.to_str().unwrap(),
    ]);
    let listen = collect.address("listening on ");
    let view = collect.address("view on https://");
    let url = format!("https://{view}/api/overview");
    let bearer = |token: &str| ["-H".to_string(), format!("Authorization: Bearer {token}")];
    let (old, new) = (bearer("old-token-0123456789"), bearer("new-token-0123456789"));
    let old: Vec<&str> = old.iter().map(String::as_str).collect();
    let new: Vec<&str> = new.iter().map(String::as_str).collect();
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let booked = |ca: &str, auth: &[&str], reports: u64| loop {
        let (code, status, body) = curl(&url, ca, auth);
        assert_eq!((code, status), (0, 200), "{body}");
        if body.contains(&format!("\"reports\":{reports},")) {
            return;
        }
        std::thread::yield_now();
    };
    for sequence in 1..=5 {
        sender.send_to(&collector::drop_summary(sequence, 1), &listen).unwrap();
    }
    booked(&old_ca, &old, 5);

    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, &key).unwrap();
    std::fs::write(&token, "new-token-0123456789\n").unwrap();
    collect.signal("-HUP");
    collect.said("reloaded --http-token-file");
    collect.said("reloaded --http-tls-cert");
    for sequence in 6..=10 {
        sender.send_to(&collector::drop_summary(sequence, 1), &listen).unwrap();
    }
    booked(&new_ca, &new, 10);
    assert_eq!(curl(&url, &new_ca, &old).1, 401, "the old token");
    assert_eq!(curl(&url, &old_ca, &new).0, 60, "the old certificate is no longer served");

    std::fs::write(&cert, "not a certificate\n").unwrap();
    collect.signal("-HUP");
    let line = collect.said("keeping the certificate and key before");
    assert!(line.contains(cert.to_str().unwrap()) && line.contains("no certificate"), "{line}");
    for sequence in 11..=15 {
        sender.send_to(&collector::drop_summary(sequence, 1), &listen).unwrap();
    }
    booked(&new_ca, &new, 15);
    let (out, said) = collect.stop();
    let summary = summary_at_exit(&out);
    assert_eq!(summary["datagrams"], 15, "{said}");
    assert!(!said.contains("token-0123456789"), "{said}");
}

/// A stop signal sent the moment collect says "listening on" ends it with
/// its summary and status 0: the handler is in place before any socket is
/// opened, so the default action (death, no summary) never wins the race.
#[test]
fn a_stop_signal_right_after_listening_ends_collect_with_its_summary() {
    let dir = workdir("service-early-stop");
    for round in 0..20 {
        let state = dir.join(format!("state-{round}"));
        let mut collect = Collect::start(&[
            "--json",
            "--listen",
            "127.0.0.1:0",
            "--listen-ipfix",
            "127.0.0.1:0",
            "--state",
            state.to_str().unwrap(),
        ]);
        collect.said("listening on ");
        let (out, said) = collect.stop();
        let summary = summary_at_exit(&out);
        assert_eq!(summary["reports"], 0, "round {round}: {said}");
    }
}
