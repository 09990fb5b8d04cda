//! A collector daemon (nfcapd, nfacctd) run by a test in the foreground,
//! in a process group of its own: its output lines as they come, waited
//! for until one says what the test looks for; stopped by signal, and
//! killed with every process it forked if the test ends first.

use std::io::{BufRead, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// How long a wait may take: a guard against a hang only.
const PATIENCE: Duration = Duration::from_secs(60);

pub struct Daemon {
    child: Child,
    lines: Receiver<String>,
    stopped: bool,
}

impl Daemon {
    /// Starts `program` with `args`; returns once a line has contained each
    /// of `ready`, in any order.
    pub fn start(program: &str, args: &[&str], ready: &[&str]) -> Daemon {
        let mut child = Command::new(program)
            .args(args)
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        let (sender, lines) = mpsc::channel();
        for output in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let sender = sender.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(output).lines().map_while(Result::ok) {
                    let _ = sender.send(line);
                }
            });
        }
        // Its lines end when it does: a wait then fails at once.
        drop(sender);
        let daemon = Daemon { child, lines, stopped: false };
        let mut missing: Vec<&str> = ready.to_vec();
        daemon.wait_for(|line| {
            missing.retain(|word| !line.contains(word));
            missing.is_empty()
        });
        daemon
    }

    /// Waits until a line says what `wanted` looks for (lines that keep
    /// coming do not make the wait longer than [`PATIENCE`]).
    pub fn wait_for(&self, mut wanted: impl FnMut(&str) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        let mut said = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = self.lines.recv_timeout(left) else {
                panic!("the daemon did not say it in time; it said {said:?}");
            };
            if wanted(&line) {
                return;
            }
            said.push(line);
        }
    }

    /// Sends it `signal` (`"TERM"` for nfcapd; nfacctd ends on `"INT"`
    /// and takes no notice of TERM) and waits for its end.
    pub fn stop(mut self, signal: &str) {
        Command::new("kill").args([&format!("-{signal}"), &self.child.id().to_string()]).status().unwrap();
        self.child.wait().unwrap();
        self.stopped = true;
    }
}

impl Drop for Daemon {
    /// A test that failed first leaves no daemon behind (nfacctd's plugins
    /// are processes of their own: the whole group goes).
    fn drop(&mut self) {
        if !self.stopped {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.child.id())]).status();
            let _ = self.child.wait();
        }
    }
}
