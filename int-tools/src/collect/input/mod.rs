//! What collect takes in: UDP sockets read in batches (`receive`) and
//! the readers of each report version: Host-INT's and INT 0.5's
//! (`hostint`), Telemetry Report 0.5 (`tr05`) and 2.0 (`tr20`).

pub(super) mod hostint;
pub mod receive;
pub(super) mod tr05;
pub(super) mod tr20;
