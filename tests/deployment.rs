//! What an operator deploying int-node copies: the systemd units (the
//! node's and the collector's) pass `systemd-analyze verify`, and every command line the README and docs/
//! show names a subcommand and flags the binaries have.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The unit as shipped, with the installed binary's path pointing at this
/// build (verify insists that every command exists): no warning at all.
#[test]
fn the_systemd_unit_verifies() {
    let unit = std::fs::read_to_string(root().join("config/systemd/int-node@.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/int-node run --config /etc/int-node/%i.yaml"));
    verify_unit("int-node@.service", "int-node@edge.service", &unit.replace("/usr/local/bin/int-node", BIN));
}

/// The collector's unit, likewise: its settings from the file the package
/// installs, checked before a start and a reload (whose SIGHUP follows),
/// the flags of an EnvironmentFile beside it; its docs the project's own
/// (the node's unit pointed at systemd's man page).
#[test]
fn the_collector_unit_verifies() {
    let unit = std::fs::read_to_string(root().join("config/systemd/int-tools-collect.service")).unwrap();
    for line in [
        "EnvironmentFile=-/etc/default/int-tools-collect",
        "ExecStartPre=/usr/bin/int-tools collect --check --config /etc/int-tools/collect.yaml $COLLECT_ARGS",
        "ExecStart=/usr/bin/int-tools collect --config /etc/int-tools/collect.yaml $COLLECT_ARGS",
        "ExecReload=/usr/bin/int-tools collect --check --config /etc/int-tools/collect.yaml $COLLECT_ARGS",
        "ExecReload=/bin/kill -HUP $MAINPID",
    ] {
        assert!(unit.lines().any(|l| l == line), "not in the unit: {line}");
    }
    for unit in [&unit, &std::fs::read_to_string(root().join("config/systemd/int-node@.service")).unwrap()] {
        let docs = unit.lines().filter(|l| l.starts_with("Documentation=")).collect::<Vec<_>>().join(" ");
        assert!(docs.contains("file:/usr/share/doc/") && !docs.contains("man:systemd"), "{docs}");
    }
    let tools = tools_bin();
    verify_unit(
        "int-tools-collect.service",
        "int-tools-collect.service",
        &unit.replace("/usr/bin/int-tools", &tools.to_string_lossy()),
    );
}

/// The flags /etc/default/int-tools-collect gave the service before it had
/// a config file: what an operator's edited copy, kept at an upgrade,
/// carries at least.
const FLAGS_BEFORE_THE_FILE: &str = "--listen 0.0.0.0:32766 --quiet --interval 60";

/// The file the package installs as /etc/int-tools/collect.yaml carries
/// what the service's flags set before it (the port, no line per report, a
/// summary a minute), and the packaged defaults file gives no flag beside it.
#[test]
fn the_collector_file_keeps_the_service_settings() {
    let text = std::fs::read_to_string(root().join("config/collect/collect.yaml")).unwrap();
    let file: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(file["listen"]["address"].as_str(), Some("0.0.0.0:32766"), "--listen 0.0.0.0:32766");
    assert_eq!(file["stdout"]["quiet"].as_bool(), Some(true), "--quiet");
    assert_eq!(file["stdout"]["summary_interval_s"].as_u64(), Some(60), "--interval 60");
    assert_eq!(packaged_collect_args(), "");
}

/// COLLECT_ARGS as the packaged /etc/default/int-tools-collect sets it.
fn packaged_collect_args() -> String {
    let defaults = std::fs::read_to_string(root().join("config/systemd/int-tools-collect.default")).unwrap();
    let values: Vec<&str> = defaults.lines().filter_map(|l| l.strip_prefix("COLLECT_ARGS=")).collect();
    assert_eq!(values.len(), 1, "{defaults}");
    values[0].trim_matches('"').to_string()
}

/// The unit's checks (before a start, before a reload's SIGHUP), run as
/// systemd runs them on the files the package installs: they pass with the
/// packaged defaults' flags (none) and with an operator's older flags kept
/// beside the file; and what starts is what was checked.
#[test]
fn the_collector_unit_checks_its_file() {
    let unit = std::fs::read_to_string(root().join("config/systemd/int-tools-collect.service")).unwrap();
    let command = |key: &str| unit.lines().filter_map(|l| l.strip_prefix(key)).collect::<Vec<_>>();
    let checks: Vec<&str> = [command("ExecStartPre="), command("ExecReload=")].concat();
    let checks: Vec<&str> = checks.into_iter().filter(|c| c.contains(" --check ")).collect();
    assert_eq!(checks.len(), 2, "{unit}");
    assert_eq!(command("ExecStart="), [checks[0].replace(" --check", "")]);
    let example = root().join("config/collect/collect.yaml");
    let elsewhere = workdir("collector-unit-checks");
    for flags in [packaged_collect_args().as_str(), FLAGS_BEFORE_THE_FILE] {
        for check in &checks {
            // systemd splits an unquoted $VAR into words.
            let line = check.replace("$COLLECT_ARGS", flags);
            let mut words = line.split_whitespace();
            assert_eq!(words.next(), Some("/usr/bin/int-tools"));
            let args: Vec<String> = words
                .map(|w| {
                    if w == "/etc/int-tools/collect.yaml" {
                        example.to_string_lossy().into()
                    } else {
                        w.into()
                    }
                })
                .collect();
            let output = Command::new(tools_bin()).args(&args).current_dir(&elsewhere).output().unwrap();
            let said = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{line}: {said}");
            assert!(String::from_utf8_lossy(&output.stdout).ends_with("collect.yaml: ok\n"), "{line}");
        }
    }
}

/// `systemd-analyze verify` on `text` written as `file`, the unit `verified`
/// named (an instance of a template): silent, or the test fails with what it said.
fn verify_unit(file: &str, verified: &str, text: &str) {
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        eprintln!("skipped: no systemd-analyze (Debian's systemd package)");
        return;
    }
    let dir = workdir(&format!("systemd-unit-{file}"));
    std::fs::write(dir.join(file), text).unwrap();
    let output = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(dir.join(verified))
        .output()
        .unwrap();
    let said =
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && said.trim().is_empty(), "{said}");
}

/// A command line in a fenced block: the program, its subcommand, the
/// long flags before a `--` (EAL arguments after it are DPDK's); an
/// indented line of `[...]` goes on with the line before.
fn command_lines(text: &str) -> Vec<(String, String, Vec<String>)> {
    let mut found: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().skip_while(|w| *w == "$" || *w == "#").collect();
        if !fenced || words.is_empty() {
            continue;
        }
        if line.starts_with(' ') && words[0].starts_with('[') {
            if let Some(last) = found.last_mut() {
                last.2.extend(flags(&words));
            }
            continue;
        }
        let program = words[0].rsplit('/').next().unwrap_or(words[0]);
        if !["int-node", "int-tools", "int-lab"].contains(&program) {
            continue;
        }
        let Some(sub) = words.get(1).filter(|w| !w.starts_with('-')) else { continue };
        found.push((program.to_string(), sub.to_string(), flags(&words)));
    }
    found
}

/// The long flags among `words`, before a `--`.
fn flags(words: &[&str]) -> Vec<String> {
    words
        .iter()
        .take_while(|w| **w != "--")
        .filter_map(|w| w.trim_start_matches(['[', '(']).strip_prefix("--"))
        .map(|f| f.split(['=', ']', '|', ')']).next().unwrap_or(f).to_string())
        .filter(|f| !f.is_empty())
        .collect()
}

/// The long flags a `--help` defines (its option lines, not its prose).
fn defined_flags(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = if line.starts_with('-') && !line.starts_with("--") { line.get(4..)? } else { line };
            let flag = line.strip_prefix("--")?.split([' ', ',']).next()?;
            (flag != "help").then(|| flag.to_string())
        })
        .collect()
}

fn binary(program: &str) -> PathBuf {
    let path = match program {
        "int-node" => PathBuf::from(BIN),
        _ => Path::new(BIN).with_file_name(program),
    };
    assert!(path.is_file(), "{} missing: run the tests with --workspace", path.display());
    path
}

/// Every `int-node`, `int-tools` and `int-lab` line of the README, docs/
/// and config/README.md: its subcommand answers --help, and each flag is
/// one the help lists.
#[test]
fn every_command_line_in_the_docs_exists() {
    let mut files = vec![root().join("README.md"), root().join("config/README.md")];
    files.extend(std::fs::read_dir(root().join("docs")).unwrap().map(|e| e.unwrap().path()));
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "md")) {
        for (program, sub, flags) in command_lines(&std::fs::read_to_string(file).unwrap()) {
            let help = Command::new(binary(&program)).args([sub.as_str(), "--help"]).output().unwrap();
            let text = String::from_utf8_lossy(&help.stdout);
            if !help.status.success() {
                wrong.push(format!("{}: {program} {sub}: no such subcommand", file.display()));
                continue;
            }
            let defined = defined_flags(&text);
            for flag in flags.iter().filter(|f| !defined.contains(f)) {
                wrong.push(format!("{}: {program} {sub} --{flag}: no such flag", file.display()));
            }
            checked += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked >= 20, "{checked} command lines");
}

/// The README is a front page: depth lives in docs/, and every document
/// it links to exists.
#[test]
fn the_readme_is_a_front_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.lines().count() <= 400, "{} lines", readme.lines().count());
    for link in readme.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
        if !link.starts_with("http") {
            assert!(root().join(link.split('#').next().unwrap()).exists(), "README links to {link}");
        }
    }
}

/// docs/commands.md's synopsis has every flag of every subcommand.
#[test]
fn the_synopsis_has_every_flag() {
    let synopsis = std::fs::read_to_string(root().join("docs/commands.md")).unwrap();
    let lines = command_lines(&synopsis);
    let mut missing = Vec::new();
    for (program, sub) in [
        ("int-node", "run"),
        ("int-node", "check"),
        ("int-tools", "decode"),
        ("int-tools", "collect"),
        ("int-tools", "gen"),
        ("int-lab", "send"),
        ("int-lab", "replay-reports"),
        ("int-lab", "lab"),
    ] {
        let help = Command::new(binary(program)).args([sub, "--help"]).output().unwrap();
        let shown: Vec<&String> =
            lines.iter().filter(|(p, s, _)| p == program && s == sub).flat_map(|(_, _, f)| f).collect();
        for flag in defined_flags(&String::from_utf8_lossy(&help.stdout)) {
            if !shown.iter().any(|f| **f == flag) {
                missing.push(format!("{program} {sub} --{flag}"));
            }
        }
    }
    assert!(missing.is_empty(), "not in docs/commands.md's synopsis: {missing:?}");
}
