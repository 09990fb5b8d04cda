//! `collect --config FILE`: the file's settings take effect, a flag given
//! beside it wins, a file with problems names them all and starts
//! nothing, `--check` reads the example the package ships. The real
//! binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../tests/common/files.rs"]
mod files;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use files::workdir;

const BIN: &str = env!("CARGO_BIN_EXE_int-tools");

fn write_config(test: &str, text: &str) -> PathBuf {
    let path = workdir(test).join("collect.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// collect started with `args`, and the lines it says on stderr up to the
/// first that contains every one of `texts` in turn; fails if it ends
/// first.
fn start_saying(args: &[&str], texts: &[&str]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .arg("collect")
        .args(args)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines().map_while(Result::ok);
    let mut said = String::new();
    for text in texts {
        loop {
            let Some(line) = lines.next() else { panic!("collect ended before it said {text:?}:\n{said}") };
            said.push_str(&line);
            said.push('\n');
            if line.contains(text) {
                break;
            }
        }
    }
    (child, said)
}

fn stop(mut child: Child) {
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    assert!(child.wait().unwrap().success());
}

/// The file's listen address, web view and metrics are collect's: it
/// says each as it binds them.
#[test]
fn the_files_settings_take_effect() {
    let config = write_config(
        "config-file-effect",
        "listen: {address: 127.0.0.1:0}\nstdout: {quiet: true}\n\
         view: {address: 127.0.0.1:0}\nmetrics: {address: 127.0.0.1:0}\n",
    );
    let args = ["--config", config.to_str().unwrap()];
    let (child, said) = start_saying(
        &args,
        &["listening on 127.0.0.1:", "metrics on http://127.0.0.1:", "view on http://127.0.0.1:"],
    );
    stop(child);
    assert!(said.contains("listening on 127.0.0.1:"), "{said}");
}

/// A flag given beside the file wins over its key: the file's `log: warn`
/// would hide the info lines, `--log info` shows them; its listen address
/// is the flag's.
#[test]
fn a_flag_overrides_the_files_key() {
    let config = write_config(
        "config-file-override",
        "log: warn\nlisten: {address: 127.0.0.1:1}\nstdout: {quiet: true}\nview: {address: 127.0.0.1:0}\n",
    );
    let args = ["--config", config.to_str().unwrap(), "--log", "info", "--listen", "127.0.0.1:0"];
    let (child, said) = start_saying(&args, &["listening on 127.0.0.1:", "view on http://"]);
    stop(child);
    assert!(!said.contains("127.0.0.1:1 "), "{said}");
}

/// A file with several problems names each with its path and starts
/// nothing; `--check` says the same and exits non-zero.
#[test]
fn a_file_with_problems_names_them_all_and_starts_nothing() {
    let config = write_config(
        "config-file-problems",
        "listen:\n  adress: 127.0.0.1:0\nview:\n  idle_ms: 5\nstdout: {json: maybe}\n",
    );
    for check in [false, true] {
        let mut command = Command::new(BIN);
        command.args(["collect", "--config", config.to_str().unwrap()]);
        if check {
            command.arg("--check");
        }
        let output = command.output().unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{said}");
        for line in [
            "invalid configuration",
            "  listen.adress: unknown key `adress`",
            "    hint: did you mean address?",
            "  view.idle_ms: 5 is too short",
            "  stdout.json: a string, where true or false is expected",
        ] {
            assert!(said.contains(line), "{line:?} not in:\n{said}");
        }
        assert!(!said.contains("listening on"), "{said}");
    }
}

/// The example the docs and the package point to checks, and names the
/// file it read.
#[test]
fn the_example_checks() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/collect/collect.yaml");
    let output = Command::new(BIN).args(["collect", "--check", "--config"]).arg(&example).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(String::from_utf8_lossy(&output.stdout).ends_with("collect.yaml: ok\n"));
}

/// A rule between flags holds across the file and the command line:
/// `--http-token-file` needs `--http`, which the file's view.address
/// gives; without it, clap says so and names the file's flags.
#[test]
fn a_flag_may_need_a_key_of_the_file() {
    let dir = workdir("config-file-rule");
    let token = dir.join("view.token");
    std::fs::write(&token, "secret\n").unwrap();
    let with_view = dir.join("with-view.yaml");
    std::fs::write(&with_view, "view: {address: 127.0.0.1:0}\n").unwrap();
    let without = dir.join("without.yaml");
    std::fs::write(&without, "stdout: {json: true}\n").unwrap();
    let check = |config: &Path| {
        let args = ["collect", "--check", "--http-token-file", token.to_str().unwrap(), "--config"];
        Command::new(BIN).args(args).arg(config).output().unwrap()
    };
    let output = check(&with_view);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let output = check(&without);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(
        said.contains("collect --config: the file gave --json") && said.contains("--http <HTTP>"),
        "{said}"
    );
}
