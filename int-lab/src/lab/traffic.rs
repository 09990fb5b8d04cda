//! Traffic the lab's checks send from a host: this program's own paced UDP
//! sender (`int-lab send`), run in the host's namespace.

use super::namespaces::Lab;
use crate::error::Error;

/// `packets` of 100 bytes from `from` to `to`, 1000 a second, waited for.
pub fn send_paced(lab: &Lab, host: &str, from: &str, to: &str, packets: u64) -> Result<(), Error> {
    let exe =
        std::env::current_exe().map_err(Error::io("this program's path"))?.to_string_lossy().into_owned();
    let packets = packets.to_string();
    let args =
        [&exe, "send", "--from", from, "--to", to, "--packets", &packets, "--rate", "1000", "--size", "100"];
    lab.exec(host, &args).map(|_| ())
}
