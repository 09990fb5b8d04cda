//! The lcores an EAL argument list gives, so that `check` can tell a
//! pipeline on an lcore EAL will not start before DPDK does.

use std::collections::BTreeSet;

/// EAL's lcores and which of them is the main one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lcores {
    pub all: BTreeSet<u32>,
    pub main: u32,
    /// The option that gave them, for messages (`-l 0-1`).
    pub given_by: String,
}

/// The lcores of `-l LIST`, `--lcores MAP` or `-c MASK` (the last one
/// given wins, as in EAL), the main lcore the first of them unless
/// `--main-lcore` says otherwise. `None` when no such option is given
/// (EAL then takes every CPU) or it is in a form not read here.
pub fn lcores(args: &[String]) -> Option<Lcores> {
    let mut found = None;
    let mut main = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some((option, value)) = option_value(arg, &mut rest) else { continue };
        match option {
            "-l" | "--lcores" => found = Some((lcore_list(&value), format!("{option} {value}"))),
            "-c" => found = Some((core_mask(&value), format!("-c {value}"))),
            _ => main = value.parse().ok(),
        }
    }
    let (all, given_by) = found?;
    let all = all?;
    let main = main.or_else(|| all.first().copied())?;
    Some(Lcores { all, main, given_by })
}

/// An lcore option and its value, in any of the forms EAL takes: `-l 0-1`,
/// `-l0-1`, `--lcores 0-1`, `--lcores=0-1` (the same for `-c` and
/// `--main-lcore`).
fn option_value<'a>(arg: &'a str, rest: &mut std::slice::Iter<'_, String>) -> Option<(&'a str, String)> {
    for option in ["--lcores", "--main-lcore", "-l", "-c"] {
        let Some(tail) = arg.strip_prefix(option) else { continue };
        let attached = if option.starts_with("--") { tail.strip_prefix('=') } else { Some(tail) };
        return match attached {
            Some("") | None if tail.is_empty() => rest.next().map(|value| (option, value.clone())),
            Some(value) => Some((option, value.to_string())),
            None => None,
        };
    }
    None
}

/// `0-3,5` or `--lcores`' `0@0,1@1,2@0` (lcore before `@`).
fn lcore_list(list: &str) -> Option<BTreeSet<u32>> {
    let mut all = BTreeSet::new();
    for item in list.split(',') {
        let lcore = item.split('@').next()?.trim();
        if lcore.starts_with('(') {
            return None;
        }
        match lcore.split_once('-') {
            Some((lo, hi)) => all.extend(lo.parse::<u32>().ok()?..=hi.parse::<u32>().ok()?),
            None => {
                all.insert(lcore.parse().ok()?);
            }
        }
    }
    (!all.is_empty()).then_some(all)
}

/// The CPUs the lcore option of `args` puts lcores on: `-l` and `-c` name
/// CPUs; `--lcores` maps an lcore to the CPU after its `@` (itself when
/// none). `None` when there is no such option, or a CPU group `(..)`.
pub fn cpus(args: &[String]) -> Option<BTreeSet<u32>> {
    let mut found = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some((option, value)) = option_value(arg, &mut rest) else { continue };
        match option {
            "-l" => found = Some(lcore_list(&value)),
            "-c" => found = Some(core_mask(&value)),
            "--lcores" if value.contains('(') => found = Some(None),
            "--lcores" => {
                let cpus =
                    value.split(',').map(|item| item.rsplit('@').next().unwrap_or(item)).collect::<Vec<_>>();
                found = Some(lcore_list(&cpus.join(",")));
            }
            _ => {}
        }
    }
    found?
}

/// A hex core mask (`0x3` or `3`).
fn core_mask(mask: &str) -> Option<BTreeSet<u32>> {
    let bits = u64::from_str_radix(mask.trim_start_matches("0x"), 16).ok()?;
    let all: BTreeSet<u32> = (0..64).filter(|bit| bits >> bit & 1 == 1).collect();
    (!all.is_empty()).then_some(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn lcore_options() {
        let l = lcores(&args("--no-huge -l 0-2,5 --no-pci")).unwrap();
        assert_eq!(l.all.iter().copied().collect::<Vec<_>>(), vec![0, 1, 2, 5]);
        assert_eq!(l.main, 0);
        assert_eq!(lcores(&args("-l1-3 --main-lcore 2")).unwrap().main, 2);
        let mapped = lcores(&args("--lcores 0@0,1@1,2@0")).unwrap();
        assert_eq!(mapped.all.len(), 3);
        assert_eq!(mapped.given_by, "--lcores 0@0,1@1,2@0");
        assert_eq!(lcores(&args("--lcores=0-1 --main-lcore=1")).unwrap().main, 1);
        assert_eq!(lcores(&args("--log-level 7")), None, "not -l");
        assert_eq!(lcores(&args("-c 0x6")).unwrap().all.iter().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(lcores(&args("--no-huge")), None);
        assert_eq!(lcores(&args("--lcores (0-2)@0")), None);
        assert_eq!(lcores(&args("-l x")), None);
    }
}
