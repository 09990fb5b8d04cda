//! Files a program writes when it ends, tried when it starts.

use std::path::Path;

/// Opens `path` for writing (creating it, keeping what is there), so that a
/// path that cannot be written fails now rather than after a whole run.
pub fn writable(path: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path).map(drop)
}

/// Bytes an unprivileged process may still write on the file system that
/// holds `path` (statvfs(3): f_bavail blocks of f_frsize bytes).
pub fn free_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `name` is a NUL-terminated path that outlives the call;
    // `stats` is room for the one statvfs the call writes.
    let ret = unsafe { libc::statvfs(name.as_ptr(), stats.as_mut_ptr()) };
    if ret != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: zeroed above (a valid statvfs), and filled in by the call.
    let stats = unsafe { stats.assume_init() };
    // fsblkcnt_t and c_ulong are 32 bits on some targets.
    #[allow(clippy::useless_conversion)]
    Ok(u64::from(stats.f_bavail).saturating_mul(u64::from(stats.f_frsize)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn free_bytes_reads_this_file_system() {
        assert!(super::free_bytes(std::path::Path::new(".")).is_ok_and(|free| free > 0));
        assert!(super::free_bytes(std::path::Path::new("/nonexistent/dir")).is_err());
    }
}
