//! Relative paths in a config resolve against the config file's directory,
//! as Prometheus and Compose resolve theirs: an example runs from any
//! working directory. Absolute paths stay as written.

use std::path::Path;

use super::model::Config;

/// Driver arguments that name a file (net_pcap's pcaps, net_memif's
/// control socket).
const FILE_ARGS: [&str; 3] = ["rx_pcap", "tx_pcap", "socket"];

/// Rewrites every relative file path of `config` as seen from `dir`.
pub fn resolve(config: &mut Config, dir: &Path) {
    let resolved = |file: &str| -> String {
        if file.is_empty() || Path::new(file).is_absolute() {
            file.to_string()
        } else {
            dir.join(file).display().to_string()
        }
    };
    for port in &mut config.ports {
        for (key, value) in &mut port.device.args {
            if FILE_ARGS.contains(&key.as_str()) {
                *value = resolved(value);
            }
        }
    }
    for capture in &mut config.captures {
        if capture.file.is_relative() {
            capture.file = dir.join(&capture.file);
        }
    }
    #[cfg(feature = "lab")]
    for pipeline in &mut config.pipelines {
        if let super::model::StageConfig::Impair(impair) = &mut pipeline.stage {
            impair.control_file = impair.control_file.as_deref().map(resolved);
        }
    }
}

/// The directory a config file's relative paths start from: its own
/// (the working directory for a bare file name).
pub fn base_dir(config_file: &Path) -> &Path {
    match config_file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}
