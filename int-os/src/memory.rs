//! Memory hints: cache prefetch and transparent huge pages.

/// A hint to load `value`'s cache line.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint on a valid reference; it never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch((value as *const T).cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Asks the kernel to back `[start, start + len)` with transparent huge
/// pages (where enabled as `madvise`): big flow tables then cost far fewer
/// TLB misses. Call before the memory is first touched.
pub fn advise_huge_pages(start: *const u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let first = (start as usize).div_ceil(HUGE) * HUGE;
    let end = (start as usize + len) / HUGE * HUGE;
    if end > first {
        // SAFETY: madvise only changes how the kernel backs these pages,
        // which lie inside an allocation the caller owns.
        unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
    }
}

/// What the host can give this process now, in bytes: the kernel's
/// MemAvailable, lowered to what the process's cgroup (v2 `memory.max`, or
/// v1 `memory.limit_in_bytes`) leaves; `None` where neither can be read.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let host = meminfo.as_deref().and_then(|text| meminfo_field(text, "MemAvailable:"));
    [host, cgroup_room()].into_iter().flatten().min()
}

/// Free huge pages, in bytes (of the default size), from /proc/meminfo;
/// `None` on a host with none set up (a config may be meant for another).
pub fn free_huge_page_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let count = |name: &str| text.lines().find_map(|l| l.strip_prefix(name))?.trim().parse::<u64>().ok();
    if count("HugePages_Total:")? == 0 {
        return None;
    }
    Some(count("HugePages_Free:")? * meminfo_field(&text, "Hugepagesize:")?)
}

/// A `Name:  N kB` line of /proc/meminfo, in bytes.
fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    let value = text.lines().find_map(|l| l.strip_prefix(name))?;
    let kib = value.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
    Some(kib * 1024)
}

/// The process's cgroup limit less its use, where it has one.
fn cgroup_room() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |path: String| std::fs::read_to_string(path).ok()?.trim().parse::<u64>().ok();
    for line in membership.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.is_empty() {
            let dir = format!("/sys/fs/cgroup{path}");
            if let (Some(max), Some(current)) =
                (read(format!("{dir}/memory.max")), read(format!("{dir}/memory.current")))
            {
                return Some(max.saturating_sub(current));
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = format!("/sys/fs/cgroup/memory{path}");
            let max = read(format!("{dir}/memory.limit_in_bytes"))?;
            let used = read(format!("{dir}/memory.usage_in_bytes")).unwrap_or(0);
            // v1 reports "no limit" as a huge number.
            return (max < 1 << 60).then(|| max.saturating_sub(used));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_meminfo_fields() {
        let text = "MemTotal:       24596252 kB\nMemAvailable:   20000000 kB\nHugePages_Free:        0\n";
        assert_eq!(meminfo_field(text, "MemAvailable:"), Some(20_000_000 * 1024));
        assert_eq!(meminfo_field(text, "Nope:"), None);
        assert!(available_bytes().is_some_and(|b| b > 0), "this host's memory reads");
    }
}
