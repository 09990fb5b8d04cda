//! `int-tools gen`: seeded, reproducible test traffic. N flows of UDP and/or
//! TCP, a size distribution, TCP options, VLAN tags, a rate (capture-time
//! spacing), optional loss and reordering, and optionally already
//! instrumented (as our source would write it) for sink benchmarks.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use clap::Args;
use int_core::craft::{ipv6_options, Ipv6Spec, L4Spec, PacketSpec};
use int_core::wire::ipv6;

use crate::instrument::{IfaPath, Instrument, InstrumentError, Source};
use crate::pcap::{WriteError, Writer};

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Output pcap.
    #[arg(long, short)]
    pub out: PathBuf,
    /// Packets to write.
    #[arg(long, default_value_t = 1000)]
    pub packets: usize,
    /// Distinct flows (5-tuples), visited round-robin.
    #[arg(long, default_value_t = 16)]
    pub flows: u32,
    /// Transport of the flows: every third flow is TCP in a mix.
    #[arg(long, value_enum, default_value_t = Proto::Mix)]
    pub proto: Proto,
    /// Frame sizes in bytes (without FCS), a list picked from at random, or
    /// `imix` (64/576/1500 in 7:4:1).
    #[arg(long, default_value = "64,512,1500")]
    pub sizes: String,
    /// Give TCP segments options (MSS, SACK-permitted, timestamps).
    #[arg(long)]
    pub tcp_options: bool,
    /// Make this share of the flows IPv6 (0.0-1.0): 2001:db8::/64
    /// addresses with the IPv4 flow's address in the low 32 bits.
    #[arg(long, default_value_t = 0.0)]
    pub ipv6: f64,
    /// Give IPv6 packets a Hop-by-Hop and a Destination Options header (8
    /// bytes each, PadN).
    #[arg(long)]
    pub ipv6_options: bool,
    /// Carry each frame in a tunnel: `vxlan` (UDP 4789), `vxlan-gpe` (4790)
    /// or `geneve` (6081), between 192.0.2.1 and 192.0.2.2, one outer UDP
    /// source port per flow; --sizes are then the inner frames'. With
    /// --instrument int21-*, INT goes inside the tunnel header.
    #[arg(long, value_enum)]
    pub tunnel: Option<Tunnel>,
    /// Tag this share of packets with 802.1Q VLAN 100 (0.0-1.0).
    #[arg(long, default_value_t = 0.0)]
    pub vlan: f64,
    /// Packets per second of capture time.
    #[arg(long, default_value_t = 100_000.0)]
    pub rate: f64,
    /// Drop this share of packets (0.0-1.0) after numbering.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Swap this share of packets with their successor (0.0-1.0).
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Write packets as an INT source would.
    #[arg(long, value_enum)]
    pub instrument: Option<Instrument>,
    /// The UDP port of `--instrument int21-md-udp`.
    #[arg(long)]
    pub int21_port: Option<u16>,
    /// With --instrument ifa: the hops each packet carries, the
    /// initiator's and its transits' (1-31: 31 fill Max Length 255).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=31))]
    pub ifa_hops: Option<u8>,
    /// With --instrument ifa: the IP protocol announcing IFA.
    #[arg(long, default_value_t = int_core::ifa::DEFAULT_PROTOCOL)]
    pub ifa_protocol: u8,
    /// With --instrument: the source hop's timestamp is this long before
    /// the capture time, so that a sink clocked by capture times (clock:
    /// rx-timestamp) measures this one-way latency (default 0).
    #[arg(long)]
    pub latency_us: Option<u64>,
    /// With --latency-us: each packet's latency is that plus up to this
    /// much more, uniformly spread.
    #[arg(long, default_value_t = 0)]
    pub jitter_us: u64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Capture time of the first packet (ns since the epoch).
    #[arg(long, default_value_t = 1_700_000_000_000_000_000)]
    pub start_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Proto {
    Udp,
    Tcp,
    Mix,
}

/// xorshift64*: small, seeded, good enough for traffic shapes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Moves on `draws` draws.
    fn skip(&mut self, draws: u64) {
        for _ in 0..draws {
            self.next();
        }
    }
}

/// Why gen writes nothing, or stops: every problem of the arguments at
/// once, or the first of making and writing a packet.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("{}", lines(.0))]
    Arguments(Vec<Problem>),
    #[error(transparent)]
    Sizes(#[from] SizesError),
    #[error(transparent)]
    Instrument(#[from] InstrumentError),
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A flow beyond the tables made for --flows (a bug, said rather
    /// than panicking).
    #[error("flow index {0} beyond --flows")]
    FlowIndex(u32),
}

/// One problem with gen's arguments.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("{flag} {value}: a share, from 0.0 to 1.0 (e.g. 0.015 for 1.5%)")]
    Share { flag: &'static str, value: f64 },
    #[error("--flows 0: at least one flow")]
    NoFlows,
    #[error("--rate {0}: packets per second, above 0")]
    Rate(f64),
    #[error(transparent)]
    Sizes(#[from] SizesError),
    #[error("--latency-us: only with --instrument (it sets the source hop's timestamp)")]
    LatencyWithoutInstrument,
    #[error("--jitter-us: only with --latency-us (the latency it spreads)")]
    JitterWithoutLatency,
    #[error("--tcp-options: no TCP flows with --proto udp")]
    TcpOptionsWithoutTcp,
    #[error("--ipv6-options: no IPv6 flows without --ipv6")]
    Ipv6OptionsWithoutIpv6,
    #[error("--ifa-hops: only with --instrument ifa")]
    IfaHopsWithoutIfa,
    #[error(
        "--packets {packets} at --rate {rate} from --start-ns {start_ns}: the last packet's time, {last_s} s since the epoch, is past what a pcap holds (32-bit seconds: before 2106-02-07)"
    )]
    PastPcapTime { packets: usize, rate: f64, start_ns: u64, last_s: u128 },
    #[error(
        "--packets {packets}: the pcap takes at least {} ({kept} packets kept of 16 + {smallest} bytes or more), {} free on {}",
        bytes(*.least), bytes(*.free), folder.display()
    )]
    NoRoom { packets: usize, least: u128, kept: u128, smallest: usize, free: u128, folder: PathBuf },
}

/// A `--sizes` entry that is no frame size.
#[derive(Debug, thiserror::Error)]
#[error("--sizes: {entry:?} is not a frame size in 60..9000")]
pub struct SizesError {
    entry: String,
}

/// Problems one a line.
fn lines(problems: &[Problem]) -> String {
    problems.iter().map(Problem::to_string).collect::<Vec<_>>().join("\n")
}

fn parse_sizes(text: &str) -> Result<Vec<usize>, SizesError> {
    if text == "imix" {
        let mut sizes = vec![64; 7];
        sizes.extend([576; 4]);
        sizes.push(1500);
        return Ok(sizes);
    }
    text.split(',')
        .map(|s| match s.trim().parse::<usize>() {
            Ok(n) if (60..=9000).contains(&n) => Ok(n),
            _ => Err(SizesError { entry: s.to_string() }),
        })
        .collect()
}

/// Flow `index` as (source, destination, source port, destination port, TCP?).
fn flow_tuple(index: u32, proto: Proto) -> (Ipv4Addr, Ipv4Addr, u16, u16, bool) {
    let src = Ipv4Addr::from(0x0a00_0000 + 1 + index % 250 + ((index / 250) << 8));
    let dst = Ipv4Addr::new(10, 200, 0, 1 + (index % 7) as u8);
    let tcp = match proto {
        Proto::Tcp => true,
        Proto::Udp => false,
        Proto::Mix => index % 3 == 2,
    };
    (src, dst, 10_000 + (index % 50_000) as u16, if tcp { 80 } else { 5001 }, tcp)
}

pub fn run(args: &GenArgs) -> Result<(), GenError> {
    check(args)?;
    let sizes = parse_sizes(&args.sizes)?;
    let ifa = IfaPath {
        domain: int_core::ifa::Domain { protocol: args.ifa_protocol },
        hops: args.ifa_hops.unwrap_or(1),
    };
    let instrument =
        args.instrument.map(|instrument| Source::new(instrument, args.int21_port, ifa)).transpose()?;
    let mut writer = Writer::create(&args.out)?;
    // Three draws of one seeded sequence: the packets' (size, VLAN, jitter),
    // then one loss draw per packet, then the reordering's, as when gen
    // made every packet before impairing them; packets are now written as
    // they are made, each stream started where the one before ends.
    let draws_per_packet = 2 + u64::from(instrument.is_some() && args.jitter_us > 0);
    let mut rng = Rng(args.seed.max(1));
    let mut loss_rng = Rng(rng.0);
    loss_rng.skip(args.packets as u64 * draws_per_packet);
    let mut reorder_rng = Rng(loss_rng.0);
    reorder_rng.skip(args.packets as u64);
    let mut out =
        Impaired { writer: &mut writer, loss: args.loss, reorder: args.reorder, held: None, written: 0 };
    let progress = Progress::new(args.packets);
    let mut maker = Maker::new(args, &sizes, instrument.as_ref());
    for i in 0..args.packets {
        let packet = maker.packet(i, &mut rng)?;
        out.offer(packet, &mut loss_rng, &mut reorder_rng)?;
        progress.show(i + 1);
    }
    let written = out.finish()?;
    progress.done();
    eprintln!(
        "gen: wrote {written} packets ({} flows, sizes {:?}) to {}",
        args.flows,
        args.sizes,
        args.out.display()
    );
    Ok(())
}

/// Every problem with the arguments at once.
fn check(args: &GenArgs) -> Result<(), GenError> {
    let mut problems = Vec::new();
    for (flag, value) in
        [("--ipv6", args.ipv6), ("--vlan", args.vlan), ("--loss", args.loss), ("--reorder", args.reorder)]
    {
        if !(0.0..=1.0).contains(&value) {
            problems.push(Problem::Share { flag, value });
        }
    }
    if args.flows == 0 {
        problems.push(Problem::NoFlows);
    }
    if !(args.rate.is_finite() && args.rate > 0.0) {
        problems.push(Problem::Rate(args.rate));
    }
    if let Err(e) = parse_sizes(&args.sizes) {
        problems.push(e.into());
    }
    if args.latency_us.is_some() && args.instrument.is_none() {
        problems.push(Problem::LatencyWithoutInstrument);
    }
    if args.jitter_us > 0 && args.latency_us.is_none() {
        problems.push(Problem::JitterWithoutLatency);
    }
    if args.tcp_options && args.proto == Proto::Udp {
        problems.push(Problem::TcpOptionsWithoutTcp);
    }
    if args.ipv6_options && args.ipv6 == 0.0 {
        problems.push(Problem::Ipv6OptionsWithoutIpv6);
    }
    if args.ifa_hops.is_some() && args.instrument != Some(Instrument::Ifa) {
        problems.push(Problem::IfaHopsWithoutIfa);
    }
    if problems.is_empty() {
        // What the file will hold is known only from valid arguments.
        problems.extend(past_pcap_time(args));
        problems.extend(past_free_space(args));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(GenError::Arguments(problems))
    }
}

/// A classic pcap holds seconds in 32 bits: the last packet's capture
/// time must be before 2106-02-07 (pcap-file fails the write there, after
/// every packet before it was made).
fn past_pcap_time(args: &GenArgs) -> Option<Problem> {
    const PCAP_END_NS: u128 = (u32::MAX as u128 + 1) * 1_000_000_000;
    let gap_ns = (1e9 / args.rate) as u128;
    let last_ns = u128::from(args.start_ns) + gap_ns * (args.packets.saturating_sub(1) as u128);
    (last_ns >= PCAP_END_NS).then_some(Problem::PastPcapTime {
        packets: args.packets,
        rate: args.rate,
        start_ns: args.start_ns,
        last_s: last_ns / 1_000_000_000,
    })
}

/// The least the file takes (its header, and for each packet kept after
/// --loss a record header and the smallest frame) against the space its
/// file system has left (an existing file's own bytes count as free).
/// Not checked where --out is no regular file (/dev/null, a pipe).
fn past_free_space(args: &GenArgs) -> Option<Problem> {
    let existing = std::fs::metadata(&args.out).ok();
    if existing.as_ref().is_some_and(|meta| !meta.is_file()) {
        return None;
    }
    let folder = match args.out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    let free = int_os::files::free_bytes(folder).ok()?;
    let free = free.saturating_add(existing.map_or(0, |meta| meta.len()));
    let smallest = parse_sizes(&args.sizes).ok()?.into_iter().min()?;
    let kept = (args.packets as f64 * (1.0 - args.loss)) as u128;
    let least = 24 + kept * (16 + smallest as u128);
    (least > u128::from(free)).then(|| Problem::NoRoom {
        packets: args.packets,
        least,
        kept,
        smallest,
        free: u128::from(free),
        folder: folder.to_path_buf(),
    })
}

/// A byte count in GB (10^9 bytes), the unit df -H and disk sizes use.
fn bytes(n: u128) -> String {
    format!("{:.1} GB", n as f64 / 1e9)
}

/// Packets as they are made, after loss and reordering, to the file.
struct Impaired<'a> {
    writer: &'a mut Writer,
    loss: f64,
    reorder: f64,
    /// A packet waiting to trade frames with the next one.
    held: Option<(u64, Vec<u8>)>,
    written: u64,
}

impl Impaired<'_> {
    fn offer(&mut self, packet: (u64, Vec<u8>), loss: &mut Rng, reorder: &mut Rng) -> Result<(), WriteError> {
        if loss.chance(self.loss) {
            return Ok(());
        }
        match self.held.take() {
            // The frames trade places; capture times stay increasing.
            Some((time, frame)) => {
                self.write(time, &packet.1)?;
                self.write(packet.0, &frame)
            }
            None if reorder.chance(self.reorder) => {
                self.held = Some(packet);
                Ok(())
            }
            None => self.write(packet.0, &packet.1),
        }
    }

    fn write(&mut self, time: u64, frame: &[u8]) -> Result<(), WriteError> {
        self.written += 1;
        self.writer.write(time, frame)
    }

    /// The last packet, if it waited for a successor that never came.
    fn finish(mut self) -> Result<u64, WriteError> {
        if let Some((time, frame)) = self.held.take() {
            self.write(time, &frame)?;
        }
        Ok(self.written)
    }
}

/// Progress on stderr, where it is a terminal, for long runs.
struct Progress {
    total: usize,
    shown: bool,
}

impl Progress {
    fn new(total: usize) -> Self {
        use std::io::IsTerminal;
        Progress { total, shown: total >= 1_000_000 && std::io::stderr().is_terminal() }
    }

    fn show(&self, done: usize) {
        if self.shown && done.is_multiple_of(1_000_000) {
            eprint!("\rgen: {done} of {} packets ({}%)", self.total, done * 100 / self.total);
        }
    }

    fn done(&self) {
        if self.shown {
            eprintln!();
        }
    }
}

/// Makes packet `i`: flows round-robin, sizes at random, numbered and
/// instrumented as a source would.
struct Maker<'a> {
    args: &'a GenArgs,
    sizes: &'a [usize],
    instrument: Option<&'a Source>,
    gap_ns: u64,
    sequences: Vec<u32>,
    /// Per flow: the next TCP sequence number (bytes sent so far).
    tcp_seq: Vec<u32>,
}

impl<'a> Maker<'a> {
    fn new(args: &'a GenArgs, sizes: &'a [usize], instrument: Option<&'a Source>) -> Self {
        let flows = args.flows as usize;
        let gap_ns = (1e9 / args.rate) as u64;
        Maker { args, sizes, instrument, gap_ns, sequences: vec![0; flows], tcp_seq: vec![1; flows] }
    }

    fn packet(&mut self, i: usize, rng: &mut Rng) -> Result<(u64, Vec<u8>), GenError> {
        let args = self.args;
        let flow = (i as u32) % args.flows;
        let size = self.sizes.get(rng.below(self.sizes.len() as u64) as usize).copied().unwrap_or(64);
        let mut spec = packet_spec(flow, args, rng.chance(args.vlan));
        // Size the payload so that the frame is `size` bytes, INT included
        // when instrumenting (so that sizes stay within the MTU).
        let int_len = self.instrument.map_or(0, |c| c.added_len());
        let payload = size.saturating_sub(spec.frame_len() + int_len);
        spec.payload = (0..payload).map(|j| (i + j) as u8).collect();
        if let L4Spec::Tcp { seq, .. } = &mut spec.l4 {
            let next = self.tcp_seq.get_mut(flow as usize).ok_or(GenError::FlowIndex(flow))?;
            *seq = *next;
            *next = next.wrapping_add(payload as u32);
        }
        spec.ident = i as u16;
        let mut frame = spec.build();
        if let Some(tunnel) = args.tunnel {
            frame = tunnelled(tunnel, flow, &frame);
        }
        let time = args.start_ns + i as u64 * self.gap_ns;
        if let Some(source) = self.instrument {
            let slot = self.sequences.get_mut(flow as usize).ok_or(GenError::FlowIndex(flow))?;
            *slot += 1;
            let jitter_ns = if args.jitter_us > 0 { rng.below(args.jitter_us * 1_000) } else { 0 };
            let latency_ns = args.latency_us.unwrap_or(0) * 1_000 + jitter_ns;
            frame = source.instrument(&frame, *slot, time.saturating_sub(latency_ns))?;
        }
        Ok((time, frame))
    }
}

/// Flow `flow`'s headers, without payload.
fn packet_spec(flow: u32, args: &GenArgs, vlan: bool) -> PacketSpec {
    let (src, dst, src_port, dst_port, tcp) = flow_tuple(flow, args.proto);
    let mut spec = if tcp {
        let options = if args.tcp_options {
            vec![
                0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0, 0, 0, 1, 0, 0, 0, 0, 0x01, 0x01, 0x01,
                0x00,
            ]
        } else {
            Vec::new()
        };
        let mut spec = PacketSpec::tcp(src, dst, src_port, dst_port, 0);
        spec.l4 = L4Spec::Tcp { src_port, dst_port, seq: 0, options };
        spec
    } else {
        PacketSpec::udp(src, dst, src_port, dst_port, 0)
    };
    spec.vlan = vlan.then_some(100);
    if is_ipv6_flow(flow, args.ipv6) {
        let v6 = |v4: Ipv4Addr| Ipv6Addr::from((0x2001_0db8_u128 << 96) | u128::from(u32::from(v4)));
        let extensions = if args.ipv6_options {
            vec![(ipv6::HOP_BY_HOP, ipv6_options(0)), (ipv6::DESTINATION_OPTIONS, ipv6_options(0))]
        } else {
            Vec::new()
        };
        spec.ipv6 = Some(Ipv6Spec { src: v6(src), dst: v6(dst), flow_label: flow & 0xf_ffff, extensions });
    }
    spec
}

/// Whether flow `index` is one of the `share` of flows that are IPv6:
/// spread evenly over the indexes, so that any prefix of the flows holds
/// about its share.
fn is_ipv6_flow(index: u32, share: f64) -> bool {
    let before = (f64::from(index) * share).floor();
    let through = (f64::from(index + 1) * share).floor();
    through > before
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tunnel {
    Vxlan,
    VxlanGpe,
    Geneve,
}

/// `inner` as the payload of a tunnel packet of flow `flow` (its own outer
/// UDP source port), VNI 0xabc, the outer UDP checksum computed.
fn tunnelled(tunnel: Tunnel, flow: u32, inner: &[u8]) -> Vec<u8> {
    let (header, port): ([u8; 8], u16) = match tunnel {
        // I set; VXLAN-GPE: P too, Next Protocol Ethernet; Geneve: no
        // options, Transparent Ethernet Bridging.
        Tunnel::Vxlan => ([0x08, 0, 0, 0, 0, 0x0a, 0xbc, 0], 4789),
        Tunnel::VxlanGpe => ([0x0c, 0, 0, 0x03, 0, 0x0a, 0xbc, 0], 4790),
        Tunnel::Geneve => ([0x00, 0x00, 0x65, 0x58, 0, 0x0a, 0xbc, 0], 6081),
    };
    let src_port = 49152 + (flow % 16384) as u16;
    let mut outer =
        PacketSpec::udp(Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2), src_port, port, 0);
    outer.payload = [&header[..], inner].concat();
    outer.build()
}
