//! The CPUs this host has online (`/sys/devices/system/cpu/online`, the
//! list EAL detects its lcores' CPUs from).

use std::collections::BTreeSet;

/// The online CPUs; `None` when the kernel does not say.
pub fn online() -> Option<BTreeSet<u32>> {
    parse_list(std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?.trim())
}

/// A kernel CPU list: `0-3,5,7-8`.
pub fn parse_list(list: &str) -> Option<BTreeSet<u32>> {
    let mut cpus = BTreeSet::new();
    for item in list.split(',').filter(|item| !item.is_empty()) {
        match item.split_once('-') {
            Some((lo, hi)) => cpus.extend(lo.parse::<u32>().ok()?..=hi.parse::<u32>().ok()?),
            None => {
                cpus.insert(item.parse().ok()?);
            }
        }
    }
    Some(cpus)
}

/// A CPU set as a kernel list: `0-3,5`.
pub fn list(cpus: &BTreeSet<u32>) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &cpu in cpus {
        match runs.last_mut() {
            Some((_, hi)) if *hi + 1 == cpu => *hi = cpu,
            _ => runs.push((cpu, cpu)),
        }
    }
    let each: Vec<String> =
        runs.iter().map(|(lo, hi)| if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") }).collect();
    each.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_and_write() {
        let cpus = parse_list("0-3,5,7-8").unwrap();
        assert_eq!(cpus.len(), 7);
        assert_eq!(list(&cpus), "0-3,5,7-8");
        assert_eq!(parse_list("x"), None);
        assert!(online().is_some_and(|cpus| cpus.contains(&0)));
    }
}
