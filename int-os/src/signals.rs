//! Signals and the processes this program starts.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);
static RELOAD_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_reload_signal(_: libc::c_int) {
    RELOAD_REQUESTED.store(true, Ordering::SeqCst);
}

/// From now on SIGHUP does not end the process: it asks for a reload,
/// which [`take_reload_request`] answers once.
pub fn catch_reload_signal() {
    let handler = on_reload_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing a handler is sound; this one only stores to an
    // atomic, which is async-signal-safe.
    unsafe { libc::signal(libc::SIGHUP, handler) };
}

/// Whether SIGHUP came since the last call (or [`catch_reload_signal`]).
pub fn take_reload_request() -> bool {
    RELOAD_REQUESTED.swap(false, Ordering::SeqCst)
}

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// From now on SIGINT and SIGTERM do not end the process: they set the flag
/// [`stop_requested`] reads, so that the program can stop in order.
pub fn catch_stop_signals() {
    let handler = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing a handler is sound; this one only stores to an
    // atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether SIGINT or SIGTERM came since [`catch_stop_signals`].
pub fn stop_requested() -> bool {
    STOP_REQUESTED.load(Ordering::SeqCst)
}

/// Restores SIGPIPE's default action (end quietly when the reader of our
/// stdout goes away), as Unix filters do.
pub fn default_sigpipe() {
    // SAFETY: sets a default disposition; called before threads exist.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

extern "C" fn on_broken_pipe(_: libc::c_int) {
    // SAFETY: errno is this thread's; poll, signal and raise are
    // async-signal-safe; the pollfd lives on this handler's stack.
    unsafe {
        let errno = *libc::__errno_location();
        let mut stdout = libc::pollfd { fd: libc::STDOUT_FILENO, events: 0, revents: 0 };
        if libc::poll(&mut stdout, 1, 0) == 1 && stdout.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            // SIGPIPE stays blocked until this handler returns; then the
            // default action ends the process, as it ends a Unix filter.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
        *libc::__errno_location() = errno;
    }
}

/// From now on SIGPIPE ends the process (quietly, by the signal, as Unix
/// filters end) only when the reader of our stdout went away. A write to
/// a socket whose peer closed (a web client, a server) fails with EPIPE
/// for its writer to handle: `writev(2)` on a socket, as tokio and hyper
/// use it, raises SIGPIPE where `send(MSG_NOSIGNAL)` would not.
pub fn sigpipe_ends_only_for_stdout() {
    let handler = on_broken_pipe as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing a handler is sound; this one is async-signal-safe
    // (see on_broken_pipe). Called before threads exist.
    unsafe { libc::signal(libc::SIGPIPE, handler) };
}

/// Sends SIGTERM to a process this program started.
pub fn terminate(pid: u32) {
    // SAFETY: kill(2) has no memory effects; the pid is our unreaped child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
