//! gen's `--instrument`: writes packets as a source of an INT 0.5 or INT
//! 2.1 domain, an IOAM domain's encapsulating node, or an IFA 2.0
//! initiator and its transits would, with int-core's own transforms.

use int_core::int05::source::{self, SourceConfig};
use int_core::int05::{Encapsulation, HopMetadata};
use int_core::int21::{self, source as source21};
use int_core::marking::{DscpMatch, TcpPlacement};
use int_core::FrameBuf;

/// The sources gen can stand in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Instrument {
    /// Host-INT's INT 0.5 over TCP/UDP, marked by DSCP 1/1.
    Hostint,
    /// Host-INT's INT 0.5 behind an extra UDP header to port 33122.
    HostintUdp,
    /// INT 2.1 INT-MD after the TCP/UDP header, marked by DSCP 0x17/0x3f.
    Int21Md,
    /// INT 2.1 INT-MD behind the UDP port --int21-port (NPT 1 for UDP, 2
    /// for TCP).
    Int21MdUdp,
    /// INT 2.1 INT-MX after the TCP/UDP header, marked by DSCP 0x17/0x3f.
    Int21Mx,
    /// IOAM's Pre-allocated Trace in a Hop-by-Hop option (namespace 123, 8
    /// slots of Hop_Lim and node id, POSIX timestamp, transit delay), the
    /// first slot filled, and the flow's packet number in an Edge-to-Edge
    /// option; IPv6 packets only, IPv4 ones left plain.
    Ioam,
    /// IFA 2.0 (protocol --ifa-protocol, 253 by default) as int-node's
    /// initiator writes it, inband (I set), Max Length 255 words, over TCP
    /// or UDP (in a tunnel: the outer UDP), then --ifa-hops - 1 transits
    /// each pushing its hop; the L4 length and checksum left as they were
    /// (the draft's rule, `L4Rule::Keep`).
    Ifa,
}

/// gen's IFA zone: its protocol number and the hops each packet carries
/// (the initiator's and its transits').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfaPath {
    pub domain: int_core::ifa::Domain,
    pub hops: u8,
}

impl Default for IfaPath {
    fn default() -> Self {
        IfaPath { domain: int_core::ifa::Domain::default(), hops: 1 }
    }
}

/// A source gen instruments with.
pub enum Source {
    V05(SourceConfig),
    V21(source21::SourceConfig),
    Ioam(int_core::ioam::source::Plan),
    Ifa(IfaPath),
}

/// gen's IOAM domain: what `int.version: ioam, namespace: 123, sequence:
/// true` and the default trace fields give a node.
pub fn ioam_domain() -> int_core::ioam::Domain {
    use int_core::ioam::trace::TraceType;
    int_core::ioam::Domain {
        namespace: 123,
        trace_type: TraceType::HOP_LIM_NODE_ID
            | TraceType::TIMESTAMP_SECONDS
            | TraceType::TIMESTAMP_FRACTION
            | TraceType::TRANSIT_DELAY,
        nodes: 8,
        timestamps: int_core::ioam::TimestampFormat::Posix,
        e2e: int_core::ioam::e2e::E2eType::SEQUENCE_32,
    }
}

/// Why a frame cannot be instrumented as asked.
#[derive(Debug, thiserror::Error)]
pub enum InstrumentError {
    #[error("--instrument int21-md-udp needs --int21-port")]
    NoInt21Port,
    #[error("a frame of {len} bytes does not fit its buffer")]
    Buffer { len: usize },
    /// The source leaves the frame as it is, for this reason.
    #[error("cannot instrument: {0:?}")]
    Skipped(int_core::outcome::Skip),
    #[error("cannot trace: {0:?}")]
    NotTraced(int_core::ioam::source::Encapped),
    #[error("cannot trace: {0}")]
    Unreadable(int_core::ParseError),
    /// An IFA transit left the packet as it was (Hop Limit, Max Length or
    /// MTU reached).
    #[error("IFA hop {hop} not pushed: {outcome:?}")]
    TransitStopped { hop: u8, outcome: int_core::ifa::transit::Outcome },
    #[error("IFA hop {hop} not pushed: {why:?}")]
    NotPushed { hop: u8, why: int_core::outcome::NotPushed },
}

impl Source {
    /// The source for `instrument`; `int21_port` marks the UDP port
    /// domain; `ifa` is IFA's zone.
    pub fn new(
        instrument: Instrument,
        int21_port: Option<u16>,
        ifa: IfaPath,
    ) -> Result<Source, InstrumentError> {
        let int21 = |marking, header_type| {
            Source::V21(source21::SourceConfig {
                domain: int21::Domain {
                    marking,
                    tcp_placement: TcpPlacement::BeforeOptions,
                    source_only: int21::SourceOnly::sequence(0x4944),
                },
                header_type,
                instructions: int21::Instructions::NODE_ID
                    | int21::Instructions::L1_PORT_IDS
                    | int21::Instructions::INGRESS_TIMESTAMP
                    | int21::Instructions::EGRESS_TIMESTAMP,
                ds_words: 0,
                max_hops: 8,
                own_hop: true,
                domain_id: 0x4944,
                ds_instructions: match header_type {
                    int21::HeaderType::Md => int21::source_only::SEQUENCE,
                    _ => 0,
                },
                ds_flags: 0,
                discard: false,
                max_ip_len: 9000,
            })
        };
        let dscp = int21::Marking::Dscp(DscpMatch { value: 0x17, mask: 0x3f });
        Ok(match instrument {
            Instrument::Hostint => Source::V05(SourceConfig::host_int(9000)),
            Instrument::HostintUdp => Source::V05(SourceConfig {
                encapsulation: Encapsulation::ExtensionUdp { port: int_core::int05::DEFAULT_EXTENSION_PORT },
                ..SourceConfig::host_int(9000)
            }),
            Instrument::Int21Md => int21(dscp, int21::HeaderType::Md),
            Instrument::Int21Mx => int21(dscp, int21::HeaderType::Mx),
            Instrument::Int21MdUdp => {
                let port = int21_port.ok_or(InstrumentError::NoInt21Port)?;
                int21(int21::Marking::UdpPort(port), int21::HeaderType::Md)
            }
            Instrument::Ioam => Source::Ioam(ioam_domain().plan(9000)),
            Instrument::Ifa => Source::Ifa(ifa),
        })
    }

    /// The most bytes instrumenting adds (an inserted UDP header included).
    pub fn added_len(&self) -> usize {
        match self {
            Source::V05(config) => config.added_len(),
            Source::V21(config) => 8 + int21::FIXED_LEN + usize::from(config.hop_ml()) * 4 + 4,
            Source::Ioam(plan) => plan.added_len(false) + plan.e2e_added_len(false),
            Source::Ifa(path) => {
                use int_core::ifa::{hop, source};
                source::INSERTED_LEN + usize::from(path.hops.saturating_sub(1)) * hop::HOP_LEN
            }
        }
    }

    /// `frame` instrumented with the source's hop stamped `time_ns`, and
    /// flow sequence number `sequence` (INT 0.5 shim Type 3; INT 2.1 MD,
    /// as source-only metadata under int-node's default Domain Specific
    /// ID; IOAM's Edge-to-Edge option; IFA has no field for it).
    pub fn instrument(&self, frame: &[u8], sequence: u32, time_ns: u64) -> Result<Vec<u8>, InstrumentError> {
        // IOAM's trace of 8 slots takes 144 bytes; IFA's 31 hops 1000.
        let headroom = self.added_len().max(256);
        let mut buffer = vec![0u8; headroom + frame.len()];
        if let Some(dst) = buffer.get_mut(headroom..) {
            dst.copy_from_slice(frame);
        }
        let mut view = FrameBuf::new(&mut buffer, headroom, frame.len())
            .ok_or(InstrumentError::Buffer { len: frame.len() })?;
        let failed = InstrumentError::Skipped;
        match self {
            Source::V05(config) => {
                let plan = source::plan(frame, config).map_err(failed)?;
                let hop = HopMetadata::host_int(0x0a00_0001, 1, time_ns as u32);
                source::insert(&mut view, &plan, config, sequence, &hop).map_err(failed)?;
            }
            Source::V21(config) => {
                let hop = int21::HopMetadata {
                    node_id: Some(0x0a00_0001),
                    l1_ingress_port: Some(1),
                    l1_egress_port: Some(1),
                    ingress_timestamp: Some(time_ns),
                    egress_timestamp: Some(time_ns),
                    ..int21::HopMetadata::default()
                };
                // A tunnel packet carries INT inside its tunnel header.
                if let Some(plan) = source21::plan_in_tunnel(frame).map_err(failed)? {
                    source21::insert_in_tunnel(&mut view, &plan, config, &hop, sequence).map_err(failed)?;
                } else {
                    let plan = source21::plan(frame, config).map_err(failed)?;
                    source21::insert(&mut view, &plan, config, &hop, sequence).map_err(failed)?;
                }
            }
            Source::Ioam(plan) => {
                let (seconds, fraction) = ioam_domain().timestamps.split(time_ns);
                let node = int_core::ioam::node::NodeData {
                    node_id: Some(1),
                    timestamp_seconds: Some(seconds),
                    timestamp_fraction: Some(fraction),
                    transit_delay: Some(0),
                    ..Default::default()
                };
                use int_core::ioam::source::Encapped;
                let number = |_: &[u8], _: &int_core::locate::IpLocation| Some(u64::from(sequence));
                match int_core::ioam::source::insert(&mut view, plan, &node, number) {
                    // IPv4 packets stay plain: IOAM rides IPv6 options.
                    Ok(Encapped::Added(_) | Encapped::NotIpv6) => {}
                    Ok(other) => return Err(InstrumentError::NotTraced(other)),
                    Err(error) => return Err(InstrumentError::Unreadable(error)),
                }
            }
            Source::Ifa(path) => ifa_path(&mut view, frame, path, time_ns)?,
        }
        Ok(view.frame().to_vec())
    }
}

/// `frame` in `view` through IFA's initiator and `path.hops - 1` transits,
/// hop `k` (0: the initiator) stamped by device `k + 1` at `time_ns`.
fn ifa_path(
    view: &mut FrameBuf<'_>,
    frame: &[u8],
    path: &IfaPath,
    time_ns: u64,
) -> Result<(), InstrumentError> {
    use int_core::ifa::{source, transit, HopRepr, L4Rule, PortSpeed};
    const MAX_IP_LEN: u16 = 9000;
    let hop = |k: u8| HopRepr {
        lns: int_core::ifa::hop::LNS_BROADCOM,
        device_id: u32::from(k) + 1,
        ip_ttl: 64u8.saturating_sub(k),
        egress_port_speed: PortSpeed::G100,
        rx_seconds: (time_ns / 1_000_000_000) as u32 & int_core::ifa::hop::MAX_RX_SECONDS,
        rx_nanoseconds: (time_ns % 1_000_000_000) as u32,
        egress_system_port: 2,
        ingress_system_port: 1,
        ..HopRepr::default()
    };
    let plan = source::plan(frame, &path.domain, MAX_IP_LEN).map_err(InstrumentError::Skipped)?;
    let settings = source::Settings::default();
    source::insert(view, &plan, &path.domain, &settings, &hop(0)).map_err(InstrumentError::Skipped)?;
    for k in 1..path.hops {
        match transit::push(view, &path.domain, MAX_IP_LEN, &hop(k), L4Rule::Keep) {
            Ok(transit::Outcome::Pushed(_)) => {}
            Ok(outcome) => return Err(InstrumentError::TransitStopped { hop: k, outcome }),
            Err(why) => return Err(InstrumentError::NotPushed { hop: k, why }),
        }
    }
    Ok(())
}
