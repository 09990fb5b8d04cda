//! The config's validation, problem by problem.

use std::net::Ipv4Addr;

use super::device::{self, pci_address};
use super::raw::NodeId;
use super::settings::{parse_mac, parse_ports, parse_prefix};
use super::validate::parse_node_id;
use super::*;

const MINIMAL: &str = "
eal: [--no-huge, -m, '512', --no-pci, --no-shconf, -l, 0-1]
ports:
  - name: in
    device: net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap
pipelines:
  - role: forward
    lcore: 1
    rx: {port: in}
    tx: {port: in}
";

fn problems(text: &str) -> Vec<Problem> {
    match parse(text) {
        Err(ConfigError::Invalid(problems)) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

#[test]
fn minimal_forward() {
    let config = parse(MINIMAL).unwrap();
    assert_eq!(config.ports[0].device.name, "net_pcap0");
    assert_eq!(config.ports[0].device.kind, DeviceKind::Vdev);
    let eal = config.eal_args(&config.eal);
    assert_eq!(eal[eal.len() - 2..], ["--vdev", "net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap"]);
    assert!(matches!(config.pipelines[0].stage, StageConfig::Forward));
    assert_eq!(config.pipelines[0].name, "forward0");
}

#[test]
fn unknown_key_names_its_path() {
    let text = MINIMAL.replace("    lcore: 1", "    lcore: 1\n    colour: red");
    let problems = problems(&text);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "pipelines[0]");
    assert!(problems[0].message.contains("unknown field `colour`"), "{}", problems[0].message);
}

#[test]
fn every_problem_is_reported() {
    let text = "
node_id: not-an-id
ports:
  - name: in
    device: eth0
    mtu: 20
pipelines:
  - role: sorce
    lcore: 0
    rx: {port: nowhere}
    tx: {port: in, queue: 3}
    int: {encapsulation: int05-extension-udp, dscp: {value: 1, mask: 1}}
  - role: sink
    lcore: 1
    rx: {port: in}
    tx: {port: in}
    sink: {latency: {buckets_ns: [5, 4], hysteresis_percent: 60}, malformed: explode, hops: {latency_ns: [9, 9], queue: [1, 2, 3, 4, 5, 6, 7, 8, 9]}}
";
    let paths: Vec<String> = problems(text).into_iter().map(|p| p.path).collect();
    for expected in [
        "node_id",
        "ports[0].device",
        "ports[0].mtu",
        "pipelines[0].role",
        "pipelines[0].lcore",
        "pipelines[0].rx.port",
        "pipelines[0].tx.queue",
        "pipelines[0].int.dscp",
        "pipelines[1].sink.latency.buckets_ns",
        "pipelines[1].sink.latency.hysteresis_percent",
        "pipelines[1].sink.malformed",
        "pipelines[1].sink.hops.latency_ns",
        "pipelines[1].sink.hops.queue",
        "export",
    ] {
        assert!(paths.iter().any(|p| p == expected), "no problem at {expected}; got {paths:?}");
    }
}

const TWO_PORTS: &str = "
ports:
  - {name: a, device: 'DEVICE_A'}
  - {name: b, device: 'DEVICE_B'}
pipelines:
  - {role: forward, lcore: 1, rx: {port: a}, tx: {port: b}}
";

fn two_ports(a: &str, b: &str) -> Result<Config, ConfigError> {
    parse(&TWO_PORTS.replace("DEVICE_A", a).replace("DEVICE_B", b))
}

#[test]
fn ports_cannot_alias_a_device_or_an_output() {
    let problems_of = |a: &str, b: &str| match two_ports(a, b) {
        Err(ConfigError::Invalid(problems)) => problems,
        other => panic!("{a} / {b}: expected problems, got {other:?}"),
    };
    for (a, b, says) in [
        (
            "net_pcap0,rx_pcap=a.pcap,tx_pcap=x.pcap",
            "net_pcap0,rx_pcap=b.pcap,tx_pcap=y.pcap",
            "also ports[0]",
        ),
        ("net_null0", "net_null0", "also ports[0]"),
        ("0000:03:00.0", "03:00.0,rxq_cqe_comp_en=0", "also ports[0]"),
        (
            "net_pcap0,rx_pcap=a.pcap,tx_pcap=x.pcap",
            "net_pcap1,rx_pcap=b.pcap,tx_pcap=x.pcap",
            "also written",
        ),
    ] {
        let problems = problems_of(a, b);
        assert_eq!(problems.len(), 1, "{a} / {b}: {problems:?}");
        assert_eq!(problems[0].path, "ports[1].device");
        assert!(problems[0].message.contains(says), "{}", problems[0].message);
    }
    let same_file = problems_of("net_pcap0,rx_pcap=a.pcap,tx_pcap=a.pcap", "net_null0");
    assert_eq!(same_file[0].path, "ports[0].device");
    assert!(same_file[0].message.contains("both read"), "{}", same_file[0].message);
}

#[test]
fn pci_addresses_with_driver_arguments() {
    let config = two_ports("0000:03:00.0,rxq_cqe_comp_en=0", "03:00.1").unwrap();
    assert_eq!(config.ports[0].device.kind, DeviceKind::Pci);
    assert_eq!(config.ports[0].device.args, [("rxq_cqe_comp_en".to_string(), "0".to_string())]);
    let eal = config.eal_args(&[]);
    assert_eq!(eal, ["-a", "0000:03:00.0,rxq_cqe_comp_en=0", "-a", "0000:03:00.1"]);
    assert_eq!(pci_address("0000:3B:00.0"), Some("0000:3b:00.0".into()));
    assert_eq!(pci_address("3b:00.0"), Some("0000:3b:00.0".into()));
    for bad in ["eth0", "3b:00", "3b:00.12", "zz:00.0", "0000:3b:00:0"] {
        assert_eq!(pci_address(bad), None, "{bad}");
    }
}

#[test]
fn watchlist_rules() {
    let rule = Rule {
        src: parse_prefix("10.0.0.0/8").unwrap(),
        dst: Prefix::ANY,
        protocol: Some(17),
        src_ports: (0, u16::MAX),
        dst_ports: parse_ports("5000-5010").unwrap(),
    };
    let flow = |src: [u8; 4], protocol: u8, dst_port: u16| {
        int_core::flow::FlowKey::v4(Ipv4Addr::from(src), Ipv4Addr::new(1, 2, 3, 4), protocol, 1, dst_port)
    };
    assert!(rule.matches(&flow([10, 1, 2, 3], 17, 5005)));
    assert!(!rule.matches(&flow([11, 1, 2, 3], 17, 5005)));
    assert!(!rule.matches(&flow([10, 1, 2, 3], 6, 5005)));
    assert!(!rule.matches(&flow([10, 1, 2, 3], 17, 5011)));
    assert_eq!(parse_prefix("10.0.0.1/33"), None);
    assert_eq!(parse_prefix("2001:db8::/129"), None);
    let v6 = |src: &str| int_core::flow::FlowKey {
        src: src.parse().unwrap(),
        dst: "2001:db8::2".parse().unwrap(),
        protocol: 17,
        src_port: 1,
        dst_port: 5005,
    };
    assert!(!rule.matches(&v6("2001:db8::1")), "an IPv4 prefix matches no IPv6 flow");
    let rule6 = Rule { src: parse_prefix("2001:db8:1::/48").unwrap(), ..rule };
    assert!(rule6.matches(&v6("2001:db8:1:ffff::7")));
    assert!(!rule6.matches(&v6("2001:db8:2::7")));
    assert!(!rule6.matches(&flow([10, 1, 2, 3], 17, 5005)), "an IPv6 prefix matches no IPv4 flow");
    let any = Rule { src: Prefix::ANY, ..rule };
    assert!(any.matches(&v6("2001:db8::1")) && any.matches(&flow([11, 1, 2, 3], 17, 5005)));
    assert_eq!(parse_prefix("2001:db8::1"), Some(Prefix::V6 { addr: 0x2001_0db8_u128 << 96 | 1, len: 128 }));
    assert_eq!(parse_ports("9-3"), None);
    assert_eq!(parse_mac("02:00:00:00:00:0a"), Some([2, 0, 0, 0, 0, 10]));
}

#[test]
fn node_id_forms() {
    assert_eq!(parse_node_id(&NodeId::Number(7)), Some(7));
    assert_eq!(parse_node_id(&NodeId::Text("10.0.0.1".into())), Some(0x0a00_0001));
    assert_eq!(parse_node_id(&NodeId::Text("0xcafe".into())), Some(0xcafe));
    assert_eq!(parse_node_id(&NodeId::Number(1 << 40)), None);
}

/// A mistake gives one problem, at its own path, with the valid names and
/// the nearest of them: no cascade from a role the node cannot read.
#[test]
fn one_problem_per_mistake_with_a_suggestion() {
    let text = MINIMAL
        .replace("role: forward", "role: Source")
        .replace("    lcore: 1", "    lcore: 1\n    source: {marked: strip}");
    let found = problems(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path, "pipelines[0].role");
    assert_eq!(found[0].message, "unknown value \"Source\"");
    assert!(
        found[0].hint.starts_with("did you mean source? one of: source, transit, sink, forward, impair"),
        "{}",
        found[0].hint
    );
    for (from, to, path, suggestion) in [
        ("role: forward", "role: forwrd", "pipelines[0].role", "forward"),
        ("tx: {port: in}", "tx: {port: inn}", "pipelines[0].tx.port", "in"),
        ("    lcore: 1", "    lcore: 1\n    clock: rx_timestamp", "pipelines[0].clock", "rx-timestamp"),
        (
            "    lcore: 1",
            "    lcore: 1\n    int: {tcp_placement: after-option}",
            "pipelines[0].int.tcp_placement",
            "after-options",
        ),
    ] {
        let problems = problems(&MINIMAL.replace(from, to));
        assert_eq!(problems.len(), 1, "{to}: {problems:?}");
        assert_eq!(problems[0].path, path);
        assert!(
            problems[0].hint.contains(&format!("did you mean {suggestion}?")),
            "{to}: {}",
            problems[0].hint
        );
    }
}

/// Sections that belong to another role are refused, each once.
#[test]
fn a_section_of_another_role_is_one_problem() {
    let text = MINIMAL.replace("    lcore: 1", "    lcore: 1\n    sink: {malformed: drop}");
    let problems = problems(&text);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].path, "pipelines[0].sink");
    assert_eq!(problems[0].message, "sink settings on a forward pipeline");
}

/// `check` reads the EAL lcore list: a pipeline on an lcore EAL will not
/// start, or on the main lcore, is refused before DPDK starts.
#[test]
fn pipeline_lcores_against_the_eal_list() {
    let on = |eal: &str, lcore: u32| {
        MINIMAL.replace("-l, 0-1", eal).replace("lcore: 1", &format!("lcore: {lcore}"))
    };
    let problems_on = |eal: &str, lcore: u32| problems(&on(eal, lcore));
    let missing = problems_on("-l, 0-1", 3);
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0].path, "pipelines[0].lcore");
    assert_eq!(missing[0].message, "lcore 3 is not in the EAL lcore list (-l 0-1)");
    let main = problems_on("--lcores, '2@0,3@1'", 2);
    assert_eq!(main[0].message, "lcore 2 is EAL's main lcore (stats and export)");
    assert!(parse(&on("--lcores, '0@0,1@1,2@0'", 2)).is_ok());
    assert!(parse(&on("-l, 0-3, --main-lcore, '3'", 0)).is_ok());
}

#[test]
fn dscp_is_checked_as_decode_checks_it() {
    let text = MINIMAL.replace("    lcore: 1", "    lcore: 1\n    int: {dscp: {value: 99, mask: 1}}");
    let problems = problems(&text);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "pipelines[0].int.dscp");
    assert_eq!(problems[0].message, "99/1".parse::<int_core::marking::DscpMatch>().unwrap_err().to_string());
}

#[test]
fn devices_keep_their_driver_arguments_apart() {
    let device = device::parse_device("net_pcap0,rx_pcap=a.pcap,tx_pcap=b.pcap").unwrap();
    assert_eq!(device.name, "net_pcap0");
    assert_eq!(device.arg("rx_pcap").collect::<Vec<_>>(), ["a.pcap"]);
    assert_eq!(device.eal_args(), ["--vdev", "net_pcap0,rx_pcap=a.pcap,tx_pcap=b.pcap"]);
    assert_eq!(device::parse_device("net_pcap0,rx_pcap"), None, "an argument without a value");
    assert_eq!(device::parse_device("eth0"), None);
}

/// An INT 2.1 domain: its marking and its source settings, and the INT 0.5
/// keys refused where they contradict the version.
#[test]
fn int21_domains() {
    let text = MINIMAL.replace("role: forward", "role: source").replace(
        "    lcore: 1",
        "    lcore: 1\n    int: {version: 2.1, udp_port: 7777}\n    source: {mode: mx, instructions: [node_id, ingress_timestamp]}",
    );
    let config = parse(&text).unwrap();
    assert_eq!(
        config.pipelines[0].domain,
        IntDomain::V21(int_core::int21::Domain {
            marking: int_core::int21::Marking::UdpPort(7777),
            tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
            source_only: int_core::int21::SourceOnly::sequence(0x4944),
        })
    );
    let StageConfig::Source21(source) = &config.pipelines[0].stage else { panic!("not an INT 2.1 source") };
    assert_eq!(source.mode, Mode::Mx);
    assert_eq!(source.instructions.words(), 3);
    let found = problems(
        &text
            .replace("mode: mx", "flavour: hostint")
            .replace("udp_port: 7777", "encapsulation: int05-extension-udp"),
    );
    let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["pipelines[0].int.encapsulation", "pipelines[0].source.flavour"], "{found:?}");
    let typo = problems(&text.replace("ingress_timestamp]", "ingres_timestamp]"));
    assert_eq!(typo.len(), 1);
    assert!(typo[0].hint.starts_with("did you mean ingress_timestamp?"), "{}", typo[0].hint);
    let version = problems(&text.replace("version: 2.1", "version: 2.0"));
    assert_eq!(version[0].path, "pipelines[0].int.version");
    assert!(version[0].hint.contains("one of: 0.5, 2.1"), "{}", version[0].hint);
    // Packet numbers need a Domain Specific ID; a 0.5 domain has neither key.
    let default_id = problems(&text.replace("udp_port: 7777", "udp_port: 7777, domain_specific_id: 0"));
    assert_eq!(default_id.len(), 1);
    assert_eq!(default_id[0].path, "pipelines[0].int.domain_specific_id");
    let unnumbered =
        parse(&text.replace("udp_port: 7777", "udp_port: 7777, domain_specific_id: 0, sequence: false"))
            .unwrap();
    let IntDomain::V21(domain) = unnumbered.pipelines[0].domain else { panic!("not 2.1") };
    assert_eq!(domain.source_only.words(0, 0xffff), 0);
    let in_05 = problems(
        &text
            .replace("version: 2.1, udp_port: 7777", "version: 0.5, sequence: true")
            .replace("mode: mx, instructions: [node_id, ingress_timestamp]", "flavour: hostint"),
    );
    let paths: Vec<&str> = in_05.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["pipelines[0].int.sequence"], "{in_05:?}");
    // INT 2.1 source keys in a 0.5 domain: one problem each.
    let keys_21 = problems(
        &text
            .replace("version: 2.1, udp_port: 7777", "version: 0.5")
            .replace("mode: mx,", "mode: mx, discard: true, clone: {every: 8},"),
    );
    let paths: Vec<&str> = keys_21.iter().map(|p| p.path.as_str()).collect();
    for key in ["mode", "discard", "clone"] {
        assert!(paths.contains(&format!("pipelines[0].source.{key}").as_str()), "{key}: {keys_21:?}");
    }
    // Clones of none in 0 packets.
    let none = problems(&text.replace("mode: mx,", "mode: mx, clone: {every: 0},"));
    let paths: Vec<&str> = none.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["pipelines[0].source.clone.every"], "{none:?}");
}

/// An INT 2.1 node's settings that contradict each other or the version:
/// the checksum complement beside packet numbers, and a TR 0.5 report
/// profile on a node whose only sink speaks TR 2.0. Each holds once the
/// contradiction goes.
#[test]
fn int21_contradictions_are_refused() {
    let source = MINIMAL.replace("role: forward", "role: source").replace(
        "    lcore: 1",
        "    lcore: 1\n    int: {version: 2.1}\n    source: {instructions: [node_id, checksum_complement]}",
    );
    let found = problems(&source);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path, "pipelines[0].source.instructions");
    assert!(found[0].hint.contains("int.sequence: false"), "{}", found[0].hint);
    parse(&source.replace("version: 2.1}", "version: 2.1, sequence: false}")).unwrap();
    let sink = MINIMAL
        .replace("role: forward", "role: sink")
        .replace("    lcore: 1", "    lcore: 1\n    int: {version: 2.1}")
        + "export: {collector: '127.0.0.1:32766', profile: tr05}\n";
    let found = problems(&sink);
    let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["export.profile"], "{found:?}");
    parse(&sink.replace(", profile: tr05", "")).unwrap();
    parse(&sink.replace("int: {version: 2.1}", "int: {version: 0.5}")).unwrap();
}

#[test]
fn generator_and_reference_settings_are_checked() {
    let generate = MINIMAL.replace(
        "  - role: forward\n",
        "  - role: generate\n    generate: {flows: 0, frame_size: 20, instrument: hostnt}\n",
    );
    let problems = problems(&generate);
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "pipelines[0].generate.flows",
            "pipelines[0].generate.frame_size",
            "pipelines[0].generate.instrument"
        ]
    );
    assert!(problems[2].hint.contains("hostint"), "{}", problems[2].hint);
    let reference = MINIMAL
        .replace("  - role: forward\n", "  - role: reference-sink\n    sink: {flows: {capacity: 64}}\n");
    assert!(matches!(
        parse(&reference).unwrap().pipelines[0].stage,
        StageConfig::Reference(ReferenceConfig::Sink(_))
    ));
    let misplaced = MINIMAL.replace("  - role: forward\n", "  - role: reference-source\n    sink: {}\n");
    assert_eq!(problems_of(&misplaced), ["pipelines[0].sink"]);
    let in_int21 =
        MINIMAL.replace("  - role: forward\n", "  - role: reference-transit\n    int: {version: 2.1}\n");
    assert_eq!(problems_of(&in_int21), ["pipelines[0].role"]);
    let source21 =
        MINIMAL.replace("  - role: forward\n", "  - role: reference-source\n    int: {version: 2.1}\n");
    assert!(matches!(
        parse(&source21).unwrap().pipelines[0].stage,
        StageConfig::Reference(ReferenceConfig::Source21(_))
    ));
}

fn problems_of(text: &str) -> Vec<String> {
    problems(text).into_iter().map(|p| p.path).collect()
}

#[test]
fn metrics_address_is_checked() {
    let good = format!("{MINIMAL}stats: {{metrics: '127.0.0.1:9464'}}\n");
    assert_eq!(parse(&good).unwrap().metrics, Some("127.0.0.1:9464".parse().unwrap()));
    let bad = format!("{MINIMAL}stats: {{metrics: 'localhost'}}\n");
    let problems = problems(&bad);
    assert_eq!(problems_of(&bad), ["stats.metrics"]);
    assert!(problems[0].hint.contains("127.0.0.1:9464"));
}

#[test]
fn captures_name_a_port_once_with_sane_sizes() {
    let good = format!("{MINIMAL}capture: [{{port: in, direction: rx, file: /tmp/in.pcapng}}]\n");
    let captures = parse(&good).unwrap().captures;
    assert_eq!(captures.len(), 1);
    assert_eq!(
        (captures[0].port, captures[0].direction, captures[0].snaplen),
        (0, CaptureDirection::Rx, 65_535)
    );
    let bad = format!(
        "{MINIMAL}capture:
  - {{port: nope, file: a.pcapng}}
  - {{port: in, direction: sideways, file: /no/such/folder/a.pcapng, snaplen: 10, buffer_kb: 1}}
  - {{port: in, file: b.pcapng}}
"
    );
    assert_eq!(
        problems_of(&bad),
        [
            "capture[0].port",
            "capture[1].direction",
            "capture[1].snaplen",
            "capture[1].buffer_kb",
            "capture[1].file",
            "capture[2].port"
        ]
    );
}

/// `export.collector` takes IPv4 and IPv6 addresses, with a port or
/// without, and host names, resolved when the file is read; a name that
/// does not resolve is a problem at its path, as is an IPv6 collector for
/// reports sent on a DPDK port.
#[test]
fn collector_addresses_and_names() {
    let collector = |text: &str| {
        let config = format!("{MINIMAL}export: {{collector: '{text}'}}\n");
        parse(&config).map(|c| c.export.unwrap().collector)
    };
    assert_eq!(collector("10.0.0.9").unwrap(), "10.0.0.9:32766".parse().unwrap());
    assert_eq!(collector("10.0.0.9:4000").unwrap(), "10.0.0.9:4000".parse().unwrap());
    assert_eq!(collector("fd00::9").unwrap(), "[fd00::9]:32766".parse().unwrap());
    assert_eq!(collector("[fd00::9]:4000").unwrap(), "[fd00::9]:4000".parse().unwrap());
    let named = collector("localhost:4000").unwrap();
    assert!(named.ip().is_loopback() && named.port() == 4000, "{named}");
    assert!(collector("localhost").unwrap().ip().is_loopback());
    let bad = format!("{MINIMAL}export: {{collector: 'no-such-host.invalid'}}\n");
    assert_eq!(problems_of(&bad), ["export.collector"]);
    assert!(problems(&bad)[0].hint.contains("HOST:PORT"));
}

/// One run names every problem: unknown keys and values of the wrong type
/// in every section and list item (serde alone stops at the first), and
/// then what the rest of the file gets wrong; a port that does not exist
/// does not hide that a sink needs an export section.
#[test]
fn every_problem_in_one_run_shape_included() {
    let text = "
eal: [--no-huge]
ports:
  - {name: in, device: 'net_null0', mtuu: 1500}
pipelines:
  - name: p
    role: sinkk
    lcore: one
    rx: {port: in}
    tx: {port: nowhere}
    sink: {latency: {buckets_ns: [1, 2]}, pathchanges: false}
stats: {interval_ms: soon}
colour: blue
";
    assert_eq!(
        problems_of(text),
        [
            "ports[0]",
            "pipelines[0].lcore",
            "pipelines[0].sink",
            "stats.interval_ms",
            "colour",
            "pipelines[0].role",
            "pipelines[0].tx.port"
        ]
    );
    let sink = "
eal: [--no-huge, -m, '512', --no-pci, -l, 0-1]
ports:
  - {name: in, device: 'net_null0'}
pipelines:
  - {name: p, role: sink, lcore: 1, rx: {port: in}, tx: {port: nowhere}}
";
    assert_eq!(problems_of(sink), ["pipelines[0].tx.port", "export"]);
}

/// A postcard node: INT 2.1 only, with an export; `every` only with
/// `report: every`; every mistake at once, each at its path.
#[test]
fn postcard_settings_and_their_mistakes() {
    let node = |postcard: &str, export: &str| {
        MINIMAL.replace("role: forward", "role: postcard").replace(
            "    lcore: 1",
            &format!("    lcore: 1\n    int: {{version: 2.1}}\n    postcard: {postcard}"),
        ) + export
    };
    let export = "export: {collector: '127.0.0.1:32766'}\n";
    let config = parse(&node("{report: every, every: 8, watchlist: [{protocol: udp}]}", export)).unwrap();
    let StageConfig::Postcard(settings) = &config.pipelines[0].stage else { panic!("not a postcard stage") };
    assert_eq!((settings.report, settings.every, settings.watchlist.len()), (PostcardReport::Every, 8, 1));
    assert_eq!(config.pipelines[0].stage.role(), RoleName::Postcard);
    let bad = node("{report: change, every: 0, hops: {latency_ns: [5, 3]}}", "");
    assert_eq!(
        problems_of(&bad),
        [
            "pipelines[0].postcard.every",
            "pipelines[0].postcard.every",
            "pipelines[0].postcard.hops.latency_ns",
            "export"
        ]
    );
    let old = node("{}", export).replace("int: {version: 2.1}", "int: {version: '0.5'}");
    assert_eq!(problems_of(&old), ["pipelines[0].postcard"]);
}

/// An IOAM domain: its settings read, and every mistake named at once.
#[test]
fn ioam_domain() {
    let sink = MINIMAL.replace(
        "  - role: forward\n",
        "  - role: source\n    int: {version: ioam, namespace: 123, nodes: 4, trace_type: [hop_limit_node_id, interfaces]}\n",
    );
    let config = parse(&sink).unwrap();
    let IntDomain::Ioam(domain) = config.pipelines[0].domain else { panic!("not IOAM") };
    assert_eq!((domain.namespace, domain.nodes, domain.trace_type.bits()), (123, 4, 0xc0_0000));
    assert!(matches!(config.pipelines[0].stage, StageConfig::IoamSource(_)));
    assert!(domain.e2e.is_empty(), "numbered only where configured");
    let numbered = parse(&sink.replace("nodes: 4,", "nodes: 4, sequence: true,")).unwrap();
    let IntDomain::Ioam(domain) = numbered.pipelines[0].domain else { panic!("not IOAM") };
    assert_eq!(domain.e2e, int_core::ioam::e2e::E2eType::SEQUENCE_32);
    // The edge strips what arrives traced unless told.
    let StageConfig::IoamSource(edge) = &config.pipelines[0].stage else { panic!("not encap") };
    assert_eq!(edge.marked, MarkedPolicy::Strip);
    let trusting = parse(&sink.replace(
        "trace_type: [hop_limit_node_id, interfaces]}\n",
        "trace_type: [hop_limit_node_id, interfaces]}\n    source: {marked: trust}\n",
    ))
    .unwrap();
    let StageConfig::IoamSource(edge) = &trusting.pipelines[0].stage else { panic!("not encap") };
    assert_eq!(edge.marked, MarkedPolicy::Trust);
    let wrong = MINIMAL.replace(
        "  - role: forward\n",
        "  - role: source\n    int: {version: ioam, nodes: 100, dscp: {value: 1, mask: 1}, trace_type: [hop_limit_node_id, colour]}\n    source: {mode: md}\n",
    );
    let said = |text: &str| -> Vec<String> {
        problems(text).iter().map(|p| format!("{}: {}", p.path, p.message)).collect()
    };
    let found = said(&wrong);
    for expected in [
        "pipelines[0].int.dscp: dscp is a key of INT domains",
        "pipelines[0].int.trace_type[1]: unknown IOAM trace field \"colour\"",
        "pipelines[0].int.nodes: 100 slots of 1 words",
        "pipelines[0].source.mode: mode is a key of INT sources",
    ] {
        assert!(found.iter().any(|p| p.starts_with(expected)), "{expected}: {found:?}");
    }
    let in_int21 =
        MINIMAL.replace("  - role: forward\n", "  - role: transit\n    int: {version: 2.1, namespace: 5}\n");
    assert!(said(&in_int21)
        .iter()
        .any(|p| p.starts_with("pipelines[0].int.namespace: namespace is a key of IOAM domains")));
}

/// An IFA zone: its defaults (protocol 253, the node id as Device ID,
/// Broadcom's Hop Limit and Max Length, the draft's L4 rule, inband), its
/// settings read, and every mistake named at once with its path.
#[test]
fn ifa_zone() {
    let source = MINIMAL.replace("  - role: forward\n", "  - role: source\n    int: {version: ifa}\n");
    let config = parse(&source).unwrap();
    let IntDomain::Ifa(zone) = config.pipelines[0].domain else { panic!("not IFA") };
    assert_eq!(zone.domain.protocol, 253);
    assert_eq!((zone.device_id(7), zone.hop_limit, zone.max_length), (7, 255, 255));
    assert_eq!((zone.l4, zone.probe_one_in), (int_core::ifa::L4Rule::Keep, None));
    let StageConfig::IfaSource(edge) = &config.pipelines[0].stage else { panic!("not an initiator") };
    assert_eq!(edge.marked, MarkedPolicy::Strip);
    let set = source.replace(
        "int: {version: ifa}\n",
        "int: {version: ifa, protocol: 131, device_id: 0xabcde, hop_limit: 3, max_length: 24, l4: cover, mode: probe, probe: {one_in: 10}}\n    source: {marked: drop, watchlist: [{dst: 10.0.0.0/8}]}\n",
    );
    let config = parse(&set).unwrap();
    let IntDomain::Ifa(zone) = config.pipelines[0].domain else { panic!("not IFA") };
    assert_eq!(
        (zone.domain.protocol, zone.device_id(7), zone.hop_limit, zone.max_length),
        (131, 0xabcde, 3, 24)
    );
    assert_eq!((zone.l4, zone.probe_one_in), (int_core::ifa::L4Rule::Cover, Some(10)));
    let StageConfig::IfaSource(edge) = &config.pipelines[0].stage else { panic!("not an initiator") };
    assert_eq!((edge.marked, edge.watchlist.len()), (MarkedPolicy::Drop, 1));
    let wrong = format!(
        "node_id: 10.0.0.1\n{}",
        source.replace(
            "int: {version: ifa}\n",
            "int: {version: ifa, protocol: 17, max_length: 4, l4: both, mode: probe, namespace: 1}\n    source: {mode: md}\n",
        )
    );
    let found: Vec<String> = problems(&wrong).iter().map(|p| format!("{}: {}", p.path, p.message)).collect();
    for expected in [
        "pipelines[0].int.device_id: node_id 0xa000001 does not fit in IFA's 20-bit Device ID",
        "pipelines[0].int.protocol: 17 is UDP",
        "pipelines[0].int.max_length: 4 words",
        "pipelines[0].int.l4: ",
        "pipelines[0].int.probe: mode: probe without probe.one_in",
        "pipelines[0].int.namespace: namespace is a key of IOAM domains",
        "pipelines[0].source.mode: mode is a key of INT sources",
    ] {
        assert!(found.iter().any(|p| p.starts_with(expected)), "{expected}: {found:?}");
    }
    let too_wide =
        source.replace("int: {version: ifa}", "int: {version: ifa, device_id: 0x100000, probe: {one_in: 0}}");
    let found: Vec<String> =
        problems(&too_wide).iter().map(|p| format!("{}: {}", p.path, p.message)).collect();
    assert!(
        found.iter().any(|p| p.starts_with("pipelines[0].int.device_id: 1048576 does not fit")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.starts_with("pipelines[0].int.probe: probe settings in inband mode")),
        "{found:?}"
    );
    let in_int21 =
        MINIMAL.replace("  - role: forward\n", "  - role: transit\n    int: {version: 2.1, hop_limit: 5}\n");
    let found: Vec<String> =
        problems(&in_int21).iter().map(|p| format!("{}: {}", p.path, p.message)).collect();
    assert!(
        found.iter().any(|p| p.starts_with("pipelines[0].int.hop_limit: hop_limit is a key of IFA zones")),
        "{found:?}"
    );
}

/// A sink of `int` (its lines after it: `more`) with a collector.
fn sink_of(int: &str, more: &str) -> String {
    MINIMAL
        .replace("role: forward", "role: sink")
        .replace("    lcore: 1", &format!("    lcore: 1\n    int: {int}{more}"))
        + "export: {collector: '127.0.0.1:32766'}\n"
}

/// An IFA zone's `report`: TR 2.0 by default; `ipfix` with Broadcom's
/// example's settings (Template ID 257, elements 100-102 with enterprise
/// 0, 256 bytes of packet, the template every 30 s), each settable; every
/// wrong key named at once with its path; `ipfix` without `report: ipfix`
/// and both keys outside an IFA zone refused.
#[test]
fn ifa_report_ipfix() {
    use int_core::report::ifa_ipfix::Elements;
    let sink = |int: &str| sink_of(int, "");
    let report = |text: &str| {
        let IntDomain::Ifa(zone) = parse(text).unwrap().pipelines[0].domain else { panic!("not IFA") };
        zone.report
    };
    assert_eq!(report(&sink("{version: ifa, device_id: 3}")), IfaReport::Tr20);
    let defaults = IfaIpfix {
        template_id: 257,
        elements: Elements { headers: 100, stack: 101, packet: 102, enterprise: Some(0) },
        packet_max: 256,
        template_every_ns: 30_000_000_000,
    };
    assert_eq!(report(&sink("{version: ifa, device_id: 3, report: ipfix}")), IfaReport::Ipfix(defaults));
    let set = sink(
        "{version: ifa, device_id: 3, report: ipfix, ipfix: {template_id: 300, elements: [7, 8, 9], enterprise: iana, packet_max: 128, template_seconds: 5}}",
    );
    let elements = Elements { headers: 7, stack: 8, packet: 9, enterprise: None };
    let expected = IfaIpfix { template_id: 300, elements, packet_max: 128, template_every_ns: 5_000_000_000 };
    assert_eq!(report(&set), IfaReport::Ipfix(expected));
    let numbered = sink("{version: ifa, device_id: 3, report: ipfix, ipfix: {enterprise: 4413}}");
    let IfaReport::Ipfix(ipfix) = report(&numbered) else { panic!("not IPFIX") };
    assert_eq!(ipfix.elements.enterprise, Some(4413));
    let wrong = sink(
        "{version: ifa, device_id: 3, report: ipfix, ipfix: {template_id: 2, elements: [100, 100, 102], enterprise: acme, packet_max: 0, template_seconds: 3600}}",
    );
    let found = problems_of(&wrong);
    for path in ["template_id", "elements", "enterprise", "packet_max", "template_seconds"] {
        assert!(found.contains(&format!("pipelines[0].int.ipfix.{path}")), "{path}: {found:?}");
    }
    assert_eq!(found.len(), 5, "{found:?}");
    for elements in ["[100, 101]", "[100, 101, 32768]", "[1, 2, 3, 4]"] {
        let text =
            sink(&format!("{{version: ifa, device_id: 3, report: ipfix, ipfix: {{elements: {elements}}}}}"));
        assert_eq!(problems_of(&text), ["pipelines[0].int.ipfix.elements"], "{elements}");
    }
    let hint = problems(&wrong).into_iter().find(|p| p.path.ends_with("elements")).unwrap().hint;
    assert!(hint.contains("below 32768"), "{hint}");
    let not_ipfix = sink("{version: ifa, device_id: 3, ipfix: {template_id: 300}}");
    assert_eq!(problems_of(&not_ipfix), ["pipelines[0].int.ipfix"]);
    let unknown = sink("{version: ifa, device_id: 3, report: netflow}");
    assert_eq!(problems_of(&unknown), ["pipelines[0].int.report"]);
    let in_int21 = sink("{version: 2.1, report: ipfix, ipfix: {packet_max: 64}}");
    let found: Vec<String> =
        problems(&in_int21).iter().map(|p| format!("{}: {}", p.path, p.message)).collect();
    for key in ["report", "ipfix"] {
        let expected = format!("pipelines[0].int.{key}: {key} is a key of IFA zones");
        assert!(found.iter().any(|p| p.starts_with(&expected)), "{expected}: {found:?}");
    }
}

/// `sink.hops.sample`: one packet in N of each flow feeds the hop rules;
/// 0 is refused at its path with a hint; a postcard node refuses it; with
/// no rule reading hops (`path_changes: false`, no class, no alert) the
/// sink digests no stack at all.
#[test]
fn hop_sample_and_rules_off() {
    let sink = |sink: &str| sink_of("{version: 2.1}", &format!("\n    sink: {sink}"));
    let sample_of = |text: &str| match &parse(text).unwrap().pipelines[0].stage {
        StageConfig::Sink(settings) => settings.reports.hops.sample,
        _ => panic!("not a sink"),
    };
    use int_core::hop_rule::Sample;
    assert_eq!(sample_of(&sink("{}")), Sample::every(1));
    assert_eq!(sample_of(&sink("{hops: {sample: 16}}")), Sample::every(16));
    assert_eq!(sample_of(&sink("{path_changes: false}")), Sample::NONE);
    assert_eq!(sample_of(&sink("{path_changes: false, hops: {queue_alert: 9}}")), Sample::every(1));
    assert_eq!(
        sample_of(&sink("{path_changes: false, hops: {latency_ns: [10], sample: 4}}")),
        Sample::every(4)
    );
    let zero = problems(&sink("{hops: {sample: 0}}"));
    assert_eq!(zero.iter().map(|p| p.path.as_str()).collect::<Vec<_>>(), ["pipelines[0].sink.hops.sample"]);
    assert!(zero[0].hint.contains("1 feeds every packet"), "{}", zero[0].hint);
    let postcard = sink("{}")
        .replace("role: sink", "role: postcard")
        .replace("sink: {}", "postcard: {report: change, hops: {sample: 4}}");
    let paths: Vec<String> = problems(&postcard).into_iter().map(|p| p.path).collect();
    assert_eq!(paths, ["pipelines[0].postcard.hops.sample"]);
}

/// `sink.latency.hysteresis_packets`: the run of packets in another
/// bucket that moves a flow within the hysteresis; 16 by default, 0 never,
/// beside `hysteresis_percent` and with buckets of one's own.
#[test]
fn latency_hysteresis_packets() {
    use int_core::latency::{ChangeRule, DEFAULT_LASTING_PACKETS};
    let sink = |latency: &str| {
        MINIMAL
            .replace("role: forward", "role: sink")
            .replace("    lcore: 1", &format!("    lcore: 1\n    sink: {{latency: {latency}}}"))
            + "export: {collector: '127.0.0.1:32766'}\n"
    };
    let lasting_of = |latency: &str| match &parse(&sink(latency)).unwrap().pipelines[0].stage {
        StageConfig::Sink(settings) => match settings.reports.latency.rule {
            ChangeRule::Buckets { lasting, hysteresis, .. } => (lasting, hysteresis),
            other => panic!("{other:?}"),
        },
        _ => panic!("not a sink"),
    };
    assert_eq!(lasting_of("{}"), (DEFAULT_LASTING_PACKETS, 6));
    assert_eq!(lasting_of("{hysteresis_packets: 0}"), (0, 6));
    assert_eq!(lasting_of("{hysteresis_packets: 4, hysteresis_percent: 10, buckets_ns: [10, 20]}"), (4, 10));
    assert!(parse(&sink("{hysteresis_packets: 256}")).is_err());
}
