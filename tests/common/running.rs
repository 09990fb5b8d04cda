//! A running `int-tools collect` and the lines it writes, as they come:
//! what the collector's service tests wait on (a line said, an address
//! bound, a record printed), never a sleep.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

/// How long a test waits for collect's next line on stderr: only a
/// failure's bound.
const SILENCE: Duration = Duration::from_secs(60);

pub struct Collect {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// Everything read so far from stderr, for the failure's message.
    said: String,
}

fn lines_of(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (send, receive) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    receive
}

impl Collect {
    /// `int-tools collect ARGS`, its stdout and stderr read as they come.
    pub fn start(args: &[&str]) -> Collect {
        let mut child = Command::new(BIN)
            .arg("collect")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Collect { child, stdout, stderr, said: String::new() }
    }

    /// The first line on stderr that contains `text` (the lines before it
    /// kept for a failure's message); fails if collect ends first, or says
    /// nothing more for a minute.
    pub fn said(&mut self, text: &str) -> String {
        loop {
            let Ok(line) = self.stderr.recv_timeout(SILENCE) else {
                panic!("collect did not say {text:?}; it said:\n{}", self.said)
            };
            self.said.push_str(&line);
            self.said.push('\n');
            if line.contains(text) {
                return line;
            }
        }
    }

    /// Everything read so far from stderr.
    pub fn heard(&self) -> &str {
        &self.said
    }

    /// The address a line on stderr gives after `text`.
    pub fn address(&mut self, text: &str) -> String {
        let line = self.said(text);
        line.split(text).nth(1).unwrap().split([' ', '/']).next().unwrap().to_string()
    }

    /// The next line on stdout.
    pub fn line(&self) -> String {
        self.stdout.recv().unwrap()
    }

    /// The first line on stdout that has `text`.
    pub fn printed(&mut self, text: &str) -> String {
        loop {
            let Ok(line) = self.stdout.recv() else { panic!("collect ended before it printed {text:?}") };
            if line.contains(text) {
                return line;
            }
        }
    }

    /// Whether collect is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args([name, &pid]).status().unwrap().success());
    }

    /// SIGINT; collect must end 0. Its stdout's lines left, and all it said.
    pub fn stop(self) -> (Vec<String>, String) {
        self.signal("-INT");
        self.ended()
    }

    /// collect's end, which must be 0: its stdout's lines left, and all
    /// it said.
    pub fn ended(mut self) -> (Vec<String>, String) {
        let status = self.child.wait().unwrap();
        let out: Vec<String> = self.stdout.iter().collect();
        let err: Vec<String> = self.stderr.iter().collect();
        let said = format!("{}{}", self.said, err.join("\n"));
        assert!(status.success(), "{status}: {said}");
        (out, said)
    }
}
