//! What `check` (and `run`, in its log) warns of: a config that runs, but
//! not as the operator likely means it.

use super::model::{Config, IntDomain, Mode, PipelineConfig, StageConfig};

/// Bytes before an INT 2.1 stack at most: shim, INT-MD header, the
/// source-only word int-node's sources carry.
const INT21_FIXED: usize = 4 + 12 + 4;
/// An INT-MX block's bytes: shim and MX header (INT 2.1 section 5.9).
const INT21_MX: usize = 4 + 12;
/// An INT 0.5 block's bytes besides the stack at most: shim, metadata
/// header, sequence, tail.
const INT05_FIXED: usize = int_core::int05::IntBlock::STACK_OFFSET + 4 + 4;

/// Every warning, one line each.
pub fn warnings(config: &Config) -> Vec<String> {
    config.pipelines.iter().enumerate().filter_map(|(i, p)| mtu_warning(config, i, p)).collect()
}

/// A source whose full-size frames cannot take INT on its TX port: they
/// pass uninstrumented, counted `too_big`.
fn mtu_warning(config: &Config, i: usize, pipeline: &PipelineConfig) -> Option<String> {
    let block = match (&pipeline.stage, pipeline.domain) {
        (StageConfig::Source05(s), IntDomain::V05(_)) => {
            INT05_FIXED + s.instructions.hop_len() * usize::from(s.max_hop_count)
        }
        // INT-MX pushes nothing: the shim and the MX header are all.
        (StageConfig::Source21(s), _) if s.mode == Mode::Mx => INT21_MX,
        (StageConfig::Source21(s), _) => INT21_FIXED + s.instructions.words() * 4 * usize::from(s.max_hops),
        // The IFA and metadata headers, and the stack as far as Max Length
        // and Hop Limit let it grow (the initiator's hop and one a transit).
        (StageConfig::IfaSource(_), IntDomain::Ifa(zone)) => {
            let hop_words = int_core::ifa::hop::HOP_LEN / 4;
            let words = usize::from(zone.max_length).min(hop_words * (usize::from(zone.hop_limit) + 1));
            int_core::ifa::header::HEADER_LEN
                + int_core::ifa::md_header::HEADER_LEN
                + words / hop_words * hop_words * 4
        }
        _ => return None,
    };
    let (rx, tx) = (config.ports.get(pipeline.rx.port)?, config.ports.get(pipeline.tx.port)?);
    let needed = usize::from(rx.mtu) + block;
    if needed <= usize::from(tx.mtu) {
        return None;
    }
    let protocol = if matches!(pipeline.domain, IntDomain::Ifa(_)) { "IFA" } else { "INT" };
    let what = format!(
        "pipelines[{i}] ({}): {protocol} adds up to {block} bytes (every hop's metadata)",
        pipeline.name
    );
    Some(if pipeline.rx.port == pipeline.tx.port {
        let largest = usize::from(tx.mtu).saturating_sub(block);
        format!(
            "{what}, and port {} both receives frames of its MTU {} and sends them with INT: frames over {largest} bytes pass without INT (counted too_big); give the INT side a port of MTU {needed} or more, or clamp the hosts' TCP MSS by {block} bytes",
            tx.name, tx.mtu
        )
    } else {
        format!(
            "{what}: a full-size frame from port {} (MTU {}) then exceeds port {}'s MTU {} and passes without INT (counted too_big); raise the MTU of the INT links to {needed} (ports[{}].mtu and every hop's), or clamp the hosts' TCP MSS by {block} bytes",
            rx.name, rx.mtu, tx.name, tx.mtu, pipeline.tx.port
        )
    })
}
