//! UDP sockets beyond what std offers: batched sends (sendmmsg with UDP
//! GSO) for the exporter; for a collector, sockets that share a port
//! (SO_REUSEPORT), batched receives (recvmmsg), the receive buffer and the
//! kernel's drop count.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd};

/// Up to this many datagrams per sendmmsg(2).
pub const BATCH: usize = 64;

/// A UDP GSO send carries at most this many datagrams (the kernel's
/// UDP_MAX_SEGMENTS before 6.x) and this many bytes.
const GSO_MAX_SEGMENTS: usize = 64;
const GSO_MAX_BYTES: usize = 65_000;

/// Room for one cmsghdr carrying a u16, aligned as the kernel reads it.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct SegmentCmsg([u8; 32]);

/// Sends datagrams on a connected UDP socket, many per system call. Runs
/// of equal-length datagrams go out as one UDP GSO message each (the kernel
/// cuts the concatenated payloads at that length): one trip down the stack
/// for the run instead of one per datagram. Where the kernel refuses GSO,
/// every datagram is a message of its own.
pub struct BatchSender {
    socket: UdpSocket,
    gso: bool,
}

impl BatchSender {
    pub fn new(socket: UdpSocket) -> Self {
        BatchSender { socket, gso: true }
    }

    /// Whether runs still go out as GSO messages.
    pub fn uses_gso(&self) -> bool {
        self.gso
    }

    /// Sends every payload (at most [`BATCH`] are taken); returns how many
    /// the kernel accepted.
    pub fn send(&mut self, payloads: &[&[u8]]) -> usize {
        let payloads = payloads.get(..payloads.len().min(BATCH)).unwrap_or(&[]);
        let mut iovecs = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
        for (iovec, payload) in iovecs.iter_mut().zip(payloads.iter()) {
            iovec.iov_base = payload.as_ptr() as *mut libc::c_void;
            iovec.iov_len = payload.len();
        }
        let mut runs = [(0usize, 0usize); BATCH];
        let run_count = self.plan_runs(payloads, &mut runs);
        let runs = runs.get(..run_count).unwrap_or(&[]);
        let mut controls = [SegmentCmsg([0; 32]); BATCH];
        // SAFETY: mmsghdr is a plain C struct; all-zero is a valid value.
        let mut headers: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for ((header, control), &(first, n)) in headers.iter_mut().zip(controls.iter_mut()).zip(runs) {
            let Some(iov) = iovecs.get_mut(first) else { continue };
            header.msg_hdr.msg_iov = iov;
            header.msg_hdr.msg_iovlen = n;
            if n > 1 {
                let segment = payloads.get(first).map_or(0, |p| p.len()) as u16;
                set_segment_size(&mut header.msg_hdr, control, segment);
            }
        }
        self.send_messages(payloads, runs, &mut headers)
    }

    /// Cuts `payloads` into messages, `(first payload, payload count)`
    /// each: runs of equal length while GSO is on, else one per payload.
    /// Returns the number of messages.
    fn plan_runs(&self, payloads: &[&[u8]], runs: &mut [(usize, usize); BATCH]) -> usize {
        let mut run_count = 0;
        let mut i = 0;
        while i < payloads.len() {
            let len = payloads.get(i).map_or(0, |p| p.len());
            let mut n = 1;
            if self.gso && len > 0 {
                while n < GSO_MAX_SEGMENTS
                    && (n + 1) * len <= GSO_MAX_BYTES
                    && payloads.get(i + n).is_some_and(|p| p.len() == len)
                {
                    n += 1;
                }
            }
            if let Some(run) = runs.get_mut(run_count) {
                *run = (i, n);
            }
            run_count += 1;
            i += n;
        }
        run_count
    }

    /// Hands the messages to the kernel until each was accepted or failed;
    /// returns the payloads accepted.
    fn send_messages(
        &mut self,
        payloads: &[&[u8]],
        runs: &[(usize, usize)],
        headers: &mut [libc::mmsghdr; BATCH],
    ) -> usize {
        let mut accepted = 0;
        let mut next = 0;
        let mut refused_retries = 0;
        while next < runs.len() {
            let rest = headers.get_mut(next..runs.len()).unwrap_or(&mut []);
            // SAFETY: every header points at iovecs that point into payloads
            // borrowed for this call, and at its own control buffer; the
            // socket is connected, so no addresses are needed; `rest` holds
            // `rest.len()` headers.
            let ret =
                unsafe { libc::sendmmsg(self.socket.as_raw_fd(), rest.as_mut_ptr(), rest.len() as u32, 0) };
            if ret > 0 {
                for &(_, n) in runs.get(next..next + ret as usize).unwrap_or(&[]) {
                    accepted += n;
                }
                next += ret as usize;
                continue;
            }
            let error = std::io::Error::last_os_error().raw_os_error();
            let gso_message = runs.get(next).is_some_and(|&(_, n)| n > 1);
            if gso_message && matches!(error, Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT)) {
                // No UDP GSO here (or not for this route): from now on one
                // datagram per message; this batch goes out that way.
                self.gso = false;
                let rest = payloads.get(runs.get(next).map_or(0, |r| r.0)..).unwrap_or(&[]);
                return accepted + self.send(rest);
            }
            if error == Some(libc::ECONNREFUSED) && refused_retries < runs.len() {
                // The collector's port was closed when an earlier datagram
                // arrived: the error is reported once; this message was not
                // sent yet, so try it again.
                refused_retries += 1;
                continue;
            }
            // Anything else loses this message; go on with the next.
            next += 1;
        }
        accepted
    }
}

/// Makes `header` a UDP GSO message of `segment`-byte datagrams, its
/// control message written into `control`.
fn set_segment_size(header: &mut libc::msghdr, control: &mut SegmentCmsg, segment: u16) {
    let cmsg = control.0.as_mut_ptr().cast::<libc::cmsghdr>();
    // SAFETY: `control` is 32 bytes, 8-aligned: room for one cmsghdr (16
    // bytes) and its u16 at CMSG_DATA; CMSG_LEN and CMSG_SPACE only compute
    // sizes.
    unsafe {
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = libc::UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(2) as usize;
        libc::CMSG_DATA(cmsg).cast::<u16>().write_unaligned(segment);
        header.msg_controllen = libc::CMSG_SPACE(2) as usize;
    }
    header.msg_control = control.0.as_mut_ptr().cast();
}

/// Binds a UDP socket to `addr` with SO_REUSEPORT set first, so that
/// several sockets can share the port: the kernel spreads datagrams over
/// them by their addresses and ports, so each sender's datagrams all reach
/// the same socket.
pub fn bind_shared(addr: SocketAddr) -> io::Result<UdpSocket> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: socket(2) with constant arguments; the descriptor it returns
    // is owned by the UdpSocket made from it right away.
    let fd = unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh, open UDP socket that nothing else owns.
    let socket = unsafe { UdpSocket::from_raw_fd(fd) };
    set_int_option(&socket, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    let (storage, len) = socket_address(addr);
    // SAFETY: `storage` holds a sockaddr of `len` bytes for the socket's
    // family; it outlives the call.
    let ret =
        unsafe { libc::bind(socket.as_raw_fd(), (&storage as *const libc::sockaddr_storage).cast(), len) };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(socket)
}

/// `addr` as the kernel reads it.
fn socket_address(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is a plain C struct; all-zero is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// The sender's address the kernel wrote, if it is IPv4 or IPv6.
fn read_socket_address(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::new(ip.into(), u16::from_be(sin.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6 = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::new(ip.into(), u16::from_be(sin6.sin6_port)))
        }
        _ => None,
    }
}

/// Receives up to `batch` messages per system call ([`BATCH`] unless
/// asked) into buffers of its own. Where the kernel offers UDP GRO (and it
/// is not turned off), a message may hold a train of same-size datagrams
/// from one sender (coalesced by the kernel, or a sender's GSO send kept
/// whole on loopback): one copy and one socket buffer for the train
/// instead of one per datagram. [`Self::datagrams`] cuts the trains back
/// into datagrams.
pub struct BatchReceiver {
    socket: UdpSocket,
    gro: bool,
    /// Room per message: [`RECEIVE_BUFFER`], or with GRO a whole train.
    room: usize,
    buffers: Vec<u8>,
    messages: Vec<Message>,
    received: usize,
    /// The system call's arguments, kept from call to call (the kernel
    /// rewrites their lengths; their pointers are set again each call).
    headers: Vec<libc::mmsghdr>,
    iovecs: Vec<libc::iovec>,
    addresses: Vec<libc::sockaddr_storage>,
    controls: Vec<SegmentCmsg>,
}

// SAFETY: the raw pointers in `headers` and `iovecs` point only into the
// receiver's own heap buffers (which move with it) and are written again
// before each recvmmsg(2); nothing else holds them.
unsafe impl Send for BatchReceiver {}

/// Room per datagram: a jumbo frame's payload. A longer datagram arrives
/// cut, and says so.
pub const RECEIVE_BUFFER: usize = 9216;

/// Room for a GRO message: the longest UDP payload (a train is one
/// datagram to the socket).
const GRO_ROOM: usize = 65_536;

/// What the kernel said of one received message.
#[derive(Debug, Default, Clone, Copy)]
struct Message {
    length: usize,
    /// The train's datagram size (GRO), or 0: one datagram.
    segment: usize,
    /// The kernel cut the message at the buffer's end.
    truncated: bool,
    from: Option<SocketAddr>,
}

impl Message {
    /// The message's datagrams in `buffer` (its bytes): one, or the
    /// train's, each cut at [`RECEIVE_BUFFER`] with that said; a cut
    /// message's last one is said cut too.
    fn datagrams<'a>(&self, buffer: &'a [u8]) -> impl Iterator<Item = Datagram<'a>> {
        let data = buffer.get(..self.length).unwrap_or(buffer);
        let step = if self.segment > 0 { self.segment } else { data.len().max(1) };
        // An empty datagram is one all the same.
        let count = data.len().div_ceil(step).max(1);
        let (from, cut_at_end) = (self.from, self.truncated);
        (0..count).map(move |k| {
            let whole = data.get(k * step..((k + 1) * step).min(data.len())).unwrap_or_default();
            Datagram {
                payload: whole.get(..RECEIVE_BUFFER).unwrap_or(whole),
                from,
                truncated: whole.len() > RECEIVE_BUFFER || (cut_at_end && k + 1 == count),
            }
        })
    }
}

/// One received datagram.
pub struct Datagram<'a> {
    pub payload: &'a [u8],
    pub from: Option<SocketAddr>,
    /// The datagram was longer than [`RECEIVE_BUFFER`]: `payload` is its
    /// start.
    pub truncated: bool,
}

impl BatchReceiver {
    /// A receiver on `socket`, with UDP GRO where the kernel offers it,
    /// [`BATCH`] messages a call.
    pub fn new(socket: UdpSocket) -> Self {
        Self::with(socket, BATCH, true)
    }

    /// A receiver taking up to `batch` messages a call (at least 1), with
    /// UDP GRO if `gro` and the kernel offers it.
    pub fn with(socket: UdpSocket, batch: usize, gro: bool) -> Self {
        let batch = batch.max(1);
        let gro = gro && set_int_option(&socket, libc::SOL_UDP, libc::UDP_GRO, 1).is_ok();
        let room = if gro { GRO_ROOM } else { RECEIVE_BUFFER };
        let iovec = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        BatchReceiver {
            socket,
            gro,
            room,
            buffers: vec![0; room * batch],
            messages: vec![Message::default(); batch],
            received: 0,
            // SAFETY: all-zero is valid for these plain C structs.
            headers: vec![unsafe { std::mem::zeroed() }; batch],
            iovecs: vec![iovec; batch],
            // SAFETY: as above.
            addresses: vec![unsafe { std::mem::zeroed() }; batch],
            controls: vec![SegmentCmsg([0; 32]); batch],
        }
    }

    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// Whether the socket takes GRO trains.
    pub fn uses_gro(&self) -> bool {
        self.gro
    }

    /// Waits for datagrams (as long as the socket's read timeout) and
    /// takes what has arrived, up to its batch of messages; returns how
    /// many datagrams they hold.
    pub fn receive(&mut self) -> io::Result<usize> {
        let slots = self.headers.iter_mut().zip(self.iovecs.iter_mut());
        let slots = slots.zip(self.addresses.iter_mut()).zip(self.controls.iter_mut());
        for ((((header, iovec), address), control), buffer) in slots.zip(self.buffers.chunks_mut(self.room)) {
            iovec.iov_base = buffer.as_mut_ptr().cast();
            iovec.iov_len = buffer.len();
            header.msg_hdr.msg_iov = iovec;
            header.msg_hdr.msg_iovlen = 1;
            header.msg_hdr.msg_name = (address as *mut libc::sockaddr_storage).cast();
            header.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            header.msg_hdr.msg_control = control.0.as_mut_ptr().cast();
            header.msg_hdr.msg_controllen = control.0.len();
            header.msg_hdr.msg_flags = 0;
            header.msg_len = 0;
        }
        // SAFETY: each header points at its own iovec, buffer, address
        // storage and control buffer, all the receiver's and alive for the
        // call; `headers.len()` headers are passed. The first message is
        // waited for (the socket's timeout), the rest are taken only if
        // already there.
        let ret = unsafe {
            libc::recvmmsg(
                self.socket.as_raw_fd(),
                self.headers.as_mut_ptr(),
                self.headers.len() as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if ret < 0 {
            self.received = 0;
            return Err(io::Error::last_os_error());
        }
        self.received = ret as usize;
        for ((message, header), address) in
            self.messages.iter_mut().zip(&self.headers).zip(&self.addresses).take(self.received)
        {
            *message = Message {
                length: (header.msg_len as usize).min(self.room),
                segment: gro_segment(&header.msg_hdr),
                truncated: header.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
                from: read_socket_address(address),
            };
        }
        Ok(self.datagrams().count())
    }

    /// Whether the last [`BatchReceiver::receive`] took a whole batch of
    /// messages: short of one, the socket held no more.
    pub fn filled(&self) -> bool {
        self.received == self.headers.len()
    }

    /// The datagrams the last [`BatchReceiver::receive`] took.
    pub fn datagrams(&self) -> impl Iterator<Item = Datagram<'_>> {
        let messages = self.messages.get(..self.received).unwrap_or_default();
        messages
            .iter()
            .zip(self.buffers.chunks(self.room))
            .flat_map(|(message, buffer)| message.datagrams(buffer))
    }
}

/// The datagram size of a GRO train the kernel said in `header`'s control
/// messages, or 0 (one datagram).
fn gro_segment(header: &libc::msghdr) -> usize {
    // SAFETY: the kernel wrote `msg_controllen` bytes of control messages
    // into the buffer `header` points at; CMSG_FIRSTHDR and CMSG_NXTHDR
    // stay inside it, and a UDP_GRO message's data is an int.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == libc::UDP_GRO {
                let segment = libc::CMSG_DATA(cmsg).cast::<libc::c_int>().read_unaligned();
                return usize::try_from(segment).unwrap_or(0);
            }
            cmsg = libc::CMSG_NXTHDR(header, cmsg);
        }
    }
    0
}

/// Sets an int socket option.
fn set_int_option(
    socket: &UdpSocket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: the option takes an int; the pointer and length describe
    // `value`, which outlives the call; the descriptor is the socket's own.
    let ret = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Asks for a receive buffer of `bytes` (as root beyond `net.core.rmem_max`)
/// and returns what the kernel granted (it counts its own overhead too, so
/// this is about twice what was asked).
pub fn set_receive_buffer(socket: &UdpSocket, bytes: usize) -> io::Result<usize> {
    let bytes = bytes.min(i32::MAX as usize / 2) as libc::c_int;
    if set_int_option(socket, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes).is_err() {
        set_int_option(socket, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes)?;
    }
    let mut granted: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_RCVBUF reads an int into `granted`; `len` says its size;
    // both outlive the call.
    let ret = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut granted as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(granted.max(0) as usize)
}

/// Datagrams the kernel has dropped on this socket so far, mostly for want
/// of receive buffer room (SO_MEMINFO's drop count: current whenever it is
/// read, unlike SO_RXQ_OVFL's, which only rides on a later datagram).
pub fn socket_drops(socket: &UdpSocket) -> io::Result<u64> {
    let mut info = [0u32; 16];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: SO_MEMINFO writes up to `len` bytes of u32 counters into
    // `info`; both outlive the call; the descriptor is the socket's own.
    let ret = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    let drops = libc::SK_MEMINFO_DROPS as usize;
    if (len as usize) < (drops + 1) * 4 {
        return Err(io::Error::other("SO_MEMINFO without a drop count"));
    }
    Ok(u64::from(info.get(drops).copied().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected sender and its receiver on loopback.
    fn pair() -> (UdpSocket, UdpSocket) {
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        receiver.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(receiver.local_addr().unwrap()).unwrap();
        (socket, receiver)
    }

    /// Sends 70 datagrams, runs of equal sizes (GSO messages) with odd
    /// sizes between them, in two batches (one cut at BATCH); checks that
    /// each arrives whole and in order.
    fn send_and_receive_70(sender: &mut BatchSender, receiver: &UdpSocket) {
        let sizes: Vec<usize> = (0..70).map(|i| if i % 23 == 22 { 40 + i } else { 92 }).collect();
        let payloads: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, len)| vec![i as u8; *len]).collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        assert_eq!(sender.send(&refs), BATCH, "a batch takes at most BATCH");
        assert_eq!(sender.send(refs.get(BATCH..).unwrap()), 70 - BATCH);
        let mut buffer = [0u8; 2048];
        for (i, expected) in payloads.iter().enumerate() {
            let len = receiver.recv(&mut buffer).unwrap();
            assert_eq!(buffer.get(..len).unwrap(), expected.as_slice(), "datagram {i}");
        }
    }

    #[test]
    fn batch_sender_delivers_every_datagram_in_order() {
        let (socket, receiver) = pair();
        let mut sender = BatchSender::new(socket);
        send_and_receive_70(&mut sender, &receiver);
        assert!(sender.uses_gso(), "this kernel has UDP GSO");
    }

    /// A kernel that refuses GSO (here: a socket without UDP checksums, for
    /// which Linux answers a segmented send with EINVAL) gets one datagram
    /// per message from then on; the refused batch is sent that way and
    /// nothing is lost or reordered.
    #[test]
    fn without_gso_every_datagram_still_arrives_in_order() {
        let (socket, receiver) = pair();
        let off: libc::c_int = 1;
        // SAFETY: SO_NO_CHECK takes an int; the pointer and length describe
        // `off`, which outlives the call.
        let set = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_NO_CHECK,
                (&off as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(set, 0);
        let mut sender = BatchSender::new(socket);
        send_and_receive_70(&mut sender, &receiver);
        assert!(!sender.uses_gso(), "the refusal switched GSO off");
    }

    /// Two sockets share a port; each receives whole batches with the
    /// sender's address, and a datagram too long for the buffer says so.
    #[test]
    fn shared_sockets_receive_batches_with_senders() {
        let first = bind_shared("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = first.local_addr().unwrap();
        let second = bind_shared(address).unwrap();
        assert_eq!(second.local_addr().unwrap(), address);
        drop(second);
        first.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        let mut receiver = BatchReceiver::new(first);
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0..5u8 {
            sender.send_to(&[i; 10], address).unwrap();
        }
        sender.send_to(&vec![9u8; RECEIVE_BUFFER + 1], address).unwrap();
        let mut seen = Vec::new();
        while seen.len() < 6 {
            receiver.receive().unwrap();
            for datagram in receiver.datagrams() {
                assert_eq!(datagram.from, Some(sender.local_addr().unwrap()));
                seen.push((datagram.payload.to_vec(), datagram.truncated));
            }
        }
        for (i, (payload, truncated)) in seen.iter().take(5).enumerate() {
            assert_eq!((payload.as_slice(), *truncated), (&[i as u8; 10][..], false));
        }
        assert_eq!((seen[5].0.len(), seen[5].1), (RECEIVE_BUFFER, true));
    }

    /// A receiver on a port of its own and a sender connected to it.
    fn receiving_pair() -> (BatchReceiver, BatchSender) {
        let socket = bind_shared("127.0.0.1:0".parse().unwrap()).unwrap();
        socket.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        // Room for every datagram of the tests, one skb each (no GRO).
        set_receive_buffer(&socket, 4 << 20).unwrap();
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.connect(socket.local_addr().unwrap()).unwrap();
        (BatchReceiver::new(socket), BatchSender::new(sender))
    }

    /// Receives until `count` datagrams came; returns them (payload, cut)
    /// and the receives it took.
    fn receive_all(receiver: &mut BatchReceiver, count: usize) -> (Vec<(Vec<u8>, bool)>, usize) {
        let (mut seen, mut calls) = (Vec::new(), 0);
        while seen.len() < count {
            receiver.receive().unwrap();
            calls += 1;
            seen.extend(receiver.datagrams().map(|d| (d.payload.to_vec(), d.truncated)));
        }
        (seen, calls)
    }

    /// Four GSO sends of 64 datagrams on loopback arrive as GRO trains:
    /// fewer receives than one per BATCH datagrams, every datagram cut
    /// back out whole and in order.
    #[test]
    fn gro_trains_arrive_whole_in_fewer_receives() {
        let (mut receiver, mut sender) = receiving_pair();
        assert!(receiver.uses_gro(), "this kernel has UDP GRO");
        let payloads: Vec<Vec<u8>> = (0..4 * BATCH).map(|i| vec![i as u8; 92]).collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        for batch in refs.chunks(BATCH) {
            assert_eq!(sender.send(batch), BATCH);
        }
        let (seen, calls) = receive_all(&mut receiver, payloads.len());
        assert!(calls < 4, "{calls} receives for 4 trains");
        for (i, (payload, truncated)) in seen.iter().enumerate() {
            assert_eq!((payload, *truncated), (&payloads[i], false), "datagram {i}");
        }
    }

    /// A train of datagrams longer than RECEIVE_BUFFER: each is cut and
    /// says so, as one arriving alone would; the next is whole.
    #[test]
    fn a_train_of_long_datagrams_is_cut_datagram_by_datagram() {
        let (mut receiver, mut sender) = receiving_pair();
        let long = RECEIVE_BUFFER + 784;
        let mut payloads: Vec<Vec<u8>> = (0..6).map(|i| vec![i as u8; long]).collect();
        payloads.push(vec![7; 30]);
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        assert_eq!(sender.send(&refs), 7);
        let (seen, _) = receive_all(&mut receiver, 7);
        for (i, (payload, truncated)) in seen.iter().take(6).enumerate() {
            assert_eq!((payload.as_slice(), *truncated), (&[i as u8; RECEIVE_BUFFER][..], true), "{i}");
        }
        assert_eq!(seen[6], (vec![7; 30], false));
    }

    /// A message's datagrams: a train cut at its segment size (the last
    /// shorter), an empty datagram still one, a cut train's last said cut.
    #[test]
    fn a_message_cuts_into_its_datagrams() {
        let buffer: Vec<u8> = (0..=255).collect();
        let cut = |m: Message| -> Vec<(usize, bool)> {
            m.datagrams(&buffer).map(|d| (d.payload.len(), d.truncated)).collect()
        };
        let message = Message { length: 25, segment: 10, truncated: false, from: None };
        assert_eq!(cut(message), [(10, false), (10, false), (5, false)]);
        assert_eq!(cut(Message { truncated: true, ..message }), [(10, false), (10, false), (5, true)]);
        assert_eq!(cut(Message { segment: 0, ..message }), [(25, false)]);
        assert_eq!(cut(Message { length: 0, ..message }), [(0, false)]);
        let second = message.datagrams(&buffer).nth(1).unwrap();
        assert_eq!(second.payload.first(), Some(&10));
    }

    /// A closed port answers every datagram with ICMP, which fails the next
    /// send on the socket once: that message is sent again, not lost.
    #[test]
    fn a_refused_port_loses_no_message() {
        let closed = UdpSocket::bind("127.0.0.1:0").unwrap();
        let address = closed.local_addr().unwrap();
        drop(closed);
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(address).unwrap();
        let mut sender = BatchSender::new(socket);
        // Sizes that never repeat: one message per datagram.
        let payloads: Vec<Vec<u8>> = (0..20).map(|i| vec![0u8; 40 + i]).collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        for round in 0..3 {
            assert_eq!(sender.send(&refs), refs.len(), "round {round}");
        }
    }
}
