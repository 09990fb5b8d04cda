//! A collector daemon (nfcapd, nfacctd) run by a test in the foreground:
//! its output lines as they come, waited for until one says what the test
//! looks for; stopped by signal.

use std::io::{BufRead, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

pub struct Daemon {
    pub child: Child,
    lines: Receiver<String>,
}

impl Daemon {
    /// Starts `program` with `args`; returns once a line contains `ready`.
    pub fn start(program: &str, args: &[&str], ready: &str) -> Daemon {
        let mut child = Command::new(program)
            .args(args)
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
        let daemon = Daemon { child, lines };
        daemon.wait_for(|line| line.contains(ready));
        daemon
    }

    /// Waits until a line says what `wanted` looks for.
    pub fn wait_for(&self, mut wanted: impl FnMut(&str) -> bool) {
        let mut said = Vec::new();
        loop {
            let Ok(line) = self.lines.recv_timeout(Duration::from_secs(60)) else {
                panic!("the daemon did not say it in time; it said {said:?}");
            };
            if wanted(&line) {
                return;
            }
            said.push(line);
        }
    }

    /// Sends it `signal` (`"TERM"`, `"INT"`) and waits for its end.
    pub fn stop(mut self, signal: &str) {
        Command::new("kill").args([&format!("-{signal}"), &self.child.id().to_string()]).status().unwrap();
        self.child.wait().unwrap();
    }
}
