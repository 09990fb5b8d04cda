//! The receivers' flags: where reports come in (the UDP sockets) and how
//! each report version is read ([`How`]).

use clap::Args;
use int_core::report::SinkIdWord;

use super::udp::{self, ReceiveError, Receiver};
use super::How;
use crate::collect::values::ChoiceError;

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Receiving reports")]
pub struct ReceiverArgs {
    /// Address and UDP port to receive reports on.
    #[arg(long, default_value = "0.0.0.0:32766")]
    pub listen: String,
    /// Whether latency reports carry the sink id word: present, absent or
    /// detect.
    #[arg(long, default_value = "detect")]
    pub sink_id: String,
    /// Receive buffer to ask the kernel for, per socket, in bytes (as
    /// root, beyond net.core.rmem_max): room for a burst of reports while
    /// a line prints.
    #[arg(long, default_value_t = 8 << 20)]
    pub rcvbuf: usize,
    /// Sockets sharing the port (SO_REUSEPORT), each with a receiving
    /// thread: the kernel spreads senders over them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub sockets: u16,
    /// Messages each socket takes per system call (recvmmsg): with UDP
    /// GRO a message is a train of up to 64 datagrams of one sender, and
    /// each holds 64 KiB of buffer.
    #[arg(long, default_value_t = udp::BATCH as u16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub receive_batch: u16,
    /// Whether the sockets take UDP GRO trains where the kernel offers
    /// them (on), or every datagram alone (off): the same books either way.
    #[arg(long, default_value = "on", action = clap::ArgAction::Set, value_parser = parse_on_off)]
    pub gro: bool,
    /// Receive on a port another process already receives on (each gets
    /// some of the senders); without it, such a port is refused.
    #[arg(long)]
    pub share_port: bool,
    /// DSCP value and mask of the INT 2.1 domain whose packets Telemetry
    /// Report 2.0 reports carry.
    #[arg(long, default_value = "0x17/0x3f")]
    pub int21_dscp: int_core::marking::DscpMatch,
    /// UDP port of the INT 2.1 domain, if it is marked by port.
    #[arg(long)]
    pub int21_port: Option<u16>,
    /// The INT 2.1 domain's Domain Specific ID: its packet numbers and
    /// loss reports (0: none).
    #[arg(long, default_value = "0x4944", value_parser = crate::decode::parse_u16)]
    pub int21_domain_id: u16,
    /// How the IOAM domain's nodes write a timestamp's fraction: posix
    /// (microseconds, as Linux writes it) or ptp (nanoseconds), as the
    /// nodes' int.timestamps.
    #[arg(long, default_value = "posix", value_parser = parse_ioam_timestamps)]
    pub ioam_timestamps: int_core::ioam::TimestampFormat,
    /// The IP protocol number that announces IFA in the packets IFA
    /// terminators' TR 2.0 reports carry, as the zone's `ifa.protocol`.
    #[arg(long, default_value_t = int_core::ifa::DEFAULT_PROTOCOL)]
    pub ifa_protocol: u8,
    /// Address and UDP port to receive IFA terminators' IPFIX on (a
    /// switch's own terminator, or int-node's): docs/ifa.md.
    #[arg(long)]
    pub listen_ipfix: Option<String>,
    /// The IFA IPFIX template's element ids: the IFA headers', the
    /// metadata stack's and the packet's, as the terminators are set up.
    #[arg(long, default_value = "100,101,102", value_parser = parse_element_ids)]
    pub ifa_ipfix_elements: ElementIds,
    /// Their enterprise number (the E bit set), or `iana` (E clear).
    #[arg(long, default_value = "0", value_parser = parse_enterprise)]
    pub ifa_ipfix_enterprise: Enterprise,
}

/// `--ifa-ipfix-elements`: three element ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementIds(pub [u16; 3]);

/// `--ifa-ipfix-enterprise`: a number, or none (IANA elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enterprise(pub Option<u32>);

/// A value of `--ifa-ipfix-elements` or `--ifa-ipfix-enterprise` that is
/// none.
#[derive(Debug, thiserror::Error)]
pub enum IpfixValueError {
    #[error("{0:?}: three element ids below 32768, the headers', the stack's and the packet's")]
    Elements(String),
    #[error("{0:?}: an enterprise number or iana")]
    Enterprise(String),
}

fn parse_element_ids(text: &str) -> Result<ElementIds, IpfixValueError> {
    let ids: Result<Vec<u16>, _> = text.split(',').map(|id| id.trim().parse::<u16>()).collect();
    match ids.as_deref() {
        Ok(&[h, s, p]) if h < 0x8000 && s < 0x8000 && p < 0x8000 => Ok(ElementIds([h, s, p])),
        _ => Err(IpfixValueError::Elements(text.to_string())),
    }
}

fn parse_enterprise(text: &str) -> Result<Enterprise, IpfixValueError> {
    if text == "iana" {
        return Ok(Enterprise(None));
    }
    text.parse::<u32>()
        .map(|n| Enterprise(Some(n)))
        .map_err(|_| IpfixValueError::Enterprise(text.to_string()))
}

/// `--sink-id` none of its choices.
#[derive(Debug, thiserror::Error)]
#[error("--sink-id {0:?}: present, absent or detect")]
pub struct SinkIdError(pub String);

impl ReceiverArgs {
    /// How every reader reads its reports.
    pub fn how(&self) -> Result<How, SinkIdError> {
        let int21_domain = int_core::int21::Domain {
            marking: match self.int21_port {
                Some(port) => int_core::int21::Marking::UdpPort(port),
                None => int_core::int21::Marking::Dscp(self.int21_dscp),
            },
            tcp_placement: int_core::marking::TcpPlacement::BeforeOptions,
            source_only: int_core::int21::SourceOnly::sequence(self.int21_domain_id),
        };
        let sink_id = match self.sink_id.as_str() {
            "present" => SinkIdWord::Present,
            "absent" => SinkIdWord::Absent,
            "detect" => SinkIdWord::Detect,
            other => return Err(SinkIdError(other.to_string())),
        };
        let ifa_domain = int_core::ifa::Domain { protocol: self.ifa_protocol };
        Ok(How { sink_id, int21_domain, ioam_timestamps: self.ioam_timestamps, ifa_domain })
    }

    /// The IFA IPFIX elements `--ifa-ipfix-elements` and
    /// `--ifa-ipfix-enterprise` name.
    pub fn ifa_elements(&self) -> int_core::report::ifa_ipfix::Elements {
        let ElementIds([headers, stack, packet]) = self.ifa_ipfix_elements;
        int_core::report::ifa_ipfix::Elements {
            headers,
            stack,
            packet,
            enterprise: self.ifa_ipfix_enterprise.0,
        }
    }

    /// The sockets, bound.
    pub fn open(&self) -> Result<Vec<Receiver>, ReceiveError> {
        let batch = udp::Batch { messages: usize::from(self.receive_batch), gro: self.gro };
        udp::open(&self.listen, self.sockets, self.rcvbuf, self.share_port, batch)
    }
}

fn parse_ioam_timestamps(text: &str) -> Result<int_core::ioam::TimestampFormat, ChoiceError> {
    match text {
        "posix" => Ok(int_core::ioam::TimestampFormat::Posix),
        "ptp" => Ok(int_core::ioam::TimestampFormat::Ptp),
        other => Err(ChoiceError {
            text: other.to_string(),
            choices: "posix or ptp, as the IOAM nodes' int.timestamps",
        }),
    }
}

/// on or off (true or false too: a config file's YAML booleans).
fn parse_on_off(text: &str) -> Result<bool, ChoiceError> {
    match text {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        other => Err(ChoiceError { text: other.to_string(), choices: "on or off" }),
    }
}
