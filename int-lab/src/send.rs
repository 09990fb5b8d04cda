//! `int-lab send`: real kernel UDP traffic at a steady rate from a fixed
//! source port (one flow), for labs: `ip netns exec client int-lab send
//! --to 10.10.0.2:5002 --packets 20000 --rate 4000`.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use clap::Args;

use crate::error::{Error, Setup};

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Destination ADDR:PORT.
    #[arg(long)]
    pub to: String,
    /// Local ADDR:PORT (a fixed source port keeps one flow).
    #[arg(long, default_value = "0.0.0.0:0")]
    pub from: String,
    #[arg(long, default_value_t = 1000)]
    pub packets: u64,
    /// Packets per second.
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// UDP payload bytes.
    #[arg(long, default_value_t = 100)]
    pub size: usize,
}

pub fn run(args: &SendArgs) -> Result<(), Error> {
    if args.rate <= 0.0 || args.size < 8 {
        return Err(Setup::Argument("--rate must be positive and --size at least 8 bytes").into());
    }
    let socket = UdpSocket::bind(&args.from).map_err(Error::io(format!("--from {}", args.from)))?;
    socket.connect(&args.to).map_err(Error::io(format!("--to {}", args.to)))?;
    let gap = Duration::from_secs_f64(1.0 / args.rate);
    let mut payload = vec![0u8; args.size];
    let started = Instant::now();
    let mut errors = 0u64;
    for i in 0..args.packets {
        // The payload carries its index, so captures can be checked.
        if let Some(head) = payload.get_mut(..8) {
            head.copy_from_slice(&i.to_be_bytes());
        }
        // An ICMP port unreachable from a host with no listener fails the
        // next send on a connected socket (ECONNREFUSED) without sending
        // it: send that packet again, so that exactly `packets` leave.
        let sent = socket.send(&payload).or_else(|error| match error.kind() {
            std::io::ErrorKind::ConnectionRefused => socket.send(&payload),
            _ => Err(error),
        });
        if sent.is_err() {
            errors += 1;
        }
        let due = started + gap.mul_f64((i + 1) as f64);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
    }
    eprintln!(
        "send: {} packets to {} in {:.2} s ({} send errors)",
        args.packets,
        args.to,
        started.elapsed().as_secs_f64(),
        errors
    );
    Ok(())
}
