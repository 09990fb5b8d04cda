//! The workspace's crates have no import cycle between their modules, and
//! the layers keep their direction; and the check finds what it should.

use std::path::Path;

use module_graph::Rule::{self, Apart, Below, Forbidden};
use module_graph::{check, edges, read, ties, Crate};

/// The layers of int-node: the safe DPDK layer wraps DPDK and nothing
/// else, so what it knows of the pipelines comes in as plain data.
const RULES: &[Rule] = &[
    Forbidden {
        from: "crate::dpdk",
        to: "crate::pipeline",
        why: "the DPDK layer takes plain data, not pipeline types",
    },
    Forbidden {
        from: "crate::dpdk",
        to: "crate::node",
        why: "the DPDK layer does not know the node it runs",
    },
    Forbidden {
        from: "crate::dpdk",
        to: "crate::config",
        why: "the DPDK layer takes settings, not the config file",
    },
    Forbidden {
        from: "crate::pipeline",
        to: "crate::node",
        why: "the node builds pipelines; pipelines do not reach up",
    },
    Forbidden {
        from: "crate::collect::books",
        to: "crate::collect::receivers",
        why: "receivers write into the books; the books do not know them",
    },
    Forbidden {
        from: "crate::collect::books",
        to: "crate::collect::exporters",
        why: "the books hand on through books::export; they know no exporter",
    },
    Forbidden {
        from: "crate::collect::books",
        to: "crate::collect::views",
        why: "views read the books; the books do not know them",
    },
    Forbidden {
        from: "crate::collect::receivers",
        to: "crate::collect::exporters",
        why: "a receiver writes into the books, never to an exporter",
    },
    Forbidden {
        from: "crate::collect::exporters",
        to: "crate::collect::receivers",
        why: "an exporter takes what the books hand on, never a receiver's types",
    },
];

/// The protocol folders: each imports what lies below it, never another.
const PROTOCOLS: &[&str] = &["int05", "int21", "ioam", "ifa"];
const APART: &str = "a protocol imports what lies below it, never another protocol";
const BELOW: &str = "what the protocols share lies below them and imports none of them";

/// int-core: the protocols apart, in the crate and in the reference
/// model; the plain headers and the shared steps below them.
const CORE: &[Rule] = &[
    Apart { parent: "crate", rooms: PROTOCOLS, why: APART },
    Apart { parent: "crate::reference", rooms: PROTOCOLS, why: APART },
    Below {
        parent: "crate",
        shared: &[
            "wire", "locate", "marking", "hop", "hop_rule", "outcome", "fast", "carrier", "flow", "loss",
            "latency", "checksum",
        ],
        rooms: PROTOCOLS,
        why: BELOW,
    },
];

/// int-node: the protocols' stages apart; the sink core, the flows, the
/// reporters and the reload below them.
const NODE: &[Rule] = &[
    Apart { parent: "crate::pipeline", rooms: PROTOCOLS, why: APART },
    Below {
        parent: "crate::pipeline",
        shared: &[
            "sink_core",
            "sink_flow",
            "source_flow",
            "rate_limit",
            "frames",
            "hop_figures",
            "reload",
            "report",
        ],
        rooms: PROTOCOLS,
        why: BELOW,
    },
];

/// int-tools: each protocol's decoder apart.
const TOOLS: &[Rule] = &[Apart { parent: "crate::decode", rooms: PROTOCOLS, why: APART }];

/// Each crate's root, with the rules of its own beside [`RULES`].
const ROOTS: &[(&str, &[Rule])] = &[
    ("int-core/src/lib.rs", CORE),
    ("int-os/src/lib.rs", &[]),
    ("int-node/src/main.rs", NODE),
    ("int-tools/src/lib.rs", TOOLS),
    ("int-lab/src/main.rs", &[]),
    ("dpdk-sys/src/lib.rs", &[]),
];

#[test]
fn no_crate_has_an_import_cycle_or_a_layer_crossing() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut report = String::new();
    for (root, own) in ROOTS {
        let krate = read(&workspace.join(root)).unwrap_or_else(|e| panic!("{root}: {e}"));
        assert!(krate.modules.len() > 1 || root.starts_with("dpdk-sys"), "{root}: no modules read");
        println!("{root}: {} modules, {} imports", krate.modules.len(), edges(&krate).len());
        let rules: Vec<Rule> = RULES.iter().chain(own.iter()).copied().collect();
        let findings = check(&krate, &rules);
        if !findings.is_clean() {
            report.push_str(&format!("{root}:\n{findings}"));
        }
    }
    assert!(report.is_empty(), "\n{report}");
}

fn sources(list: &[(&'static str, &'static str)]) -> Crate {
    Crate::from_sources(list)
}

#[test]
fn two_siblings_that_import_each_other_are_a_cycle() {
    let krate = sources(&[
        ("crate", "mod a;\nmod b;\n"),
        ("crate::a", "use crate::b::Thing;\n"),
        ("crate::b", "pub fn f() { super::a::g() }\n"),
    ]);
    let findings = check(&krate, &[]);
    assert_eq!(findings.cycles.len(), 1, "{findings}");
    let cycle: Vec<_> = findings.cycles[0].iter().map(|e| (e.from.as_str(), e.to.as_str())).collect();
    assert_eq!(cycle, [("crate::a", "crate::b"), ("crate::b", "crate::a")]);
}

#[test]
fn a_parent_reexporting_its_children_is_no_cycle() {
    let krate = sources(&[
        ("crate", "mod a;\npub use a::Thing;\npub(crate) use self::a::other;\n"),
        ("crate::a", "use crate::Config;\nuse super::helper;\n"),
    ]);
    let found = edges(&krate);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(check(&krate, &[]).is_clean());
}

#[test]
fn use_groups_comments_and_test_modules_are_read_as_written() {
    let krate = sources(&[
        ("crate", ""),
        ("crate::a", "use crate::{b::{self, X}, c::Y as Z};\n// crate::d::f is only named here\n#[cfg(test)]\nmod tests {\n    use crate::e::*;\n}\n"),
        ("crate::b", ""),
        ("crate::c", ""),
        ("crate::d", ""),
        ("crate::e", ""),
    ]);
    let to: Vec<_> = edges(&krate).into_iter().map(|e| e.to).collect();
    assert_eq!(to, ["crate::b", "crate::c"]);
}

#[test]
fn a_forbidden_direction_is_named() {
    let krate = sources(&[
        ("crate", ""),
        ("crate::dpdk", "use crate::pipeline::export::Stats;\n"),
        ("crate::pipeline", ""),
        ("crate::pipeline::export", ""),
    ]);
    let findings = check(&krate, RULES);
    assert_eq!(findings.crossings.len(), 1, "{findings}");
    assert!(findings.to_string().contains("crate::dpdk imports crate::pipeline::export"), "{findings}");
}

/// collect's rooms (receivers, books, exporters, views, and the leaves
/// they share) import one way: no two rooms import each other.
#[test]
fn collects_rooms_import_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../int-tools/src/lib.rs");
    let krate = read(&root).unwrap();
    let found = ties(&krate, "crate::collect");
    assert!(found.rooms >= 10, "{found:?}");
    assert!(found.both_ways.is_empty(), "rooms importing each other: {:?}", found.both_ways);
    println!(
        "collect: {} rooms, {} of {} pairs tied, {} both ways, {} imports into an ancestor",
        found.rooms,
        found.pairs.len(),
        found.rooms * (found.rooms - 1) / 2,
        found.both_ways.len(),
        found.up.len()
    );
}

#[test]
fn books_importing_an_exporter_or_a_receiver_importing_an_exporter_are_named() {
    let krate = sources(&[
        ("crate", ""),
        ("crate::collect", ""),
        ("crate::collect::books", "use crate::collect::exporters::stdout::Print;\n"),
        ("crate::collect::receivers", ""),
        ("crate::collect::receivers::udp", "use crate::collect::exporters::nats::Feed;\n"),
        ("crate::collect::exporters", ""),
        ("crate::collect::exporters::stdout", ""),
        ("crate::collect::exporters::nats", ""),
    ]);
    let findings = check(&krate, RULES);
    let text = findings.to_string();
    assert_eq!(findings.crossings.len(), 2, "{text}");
    assert!(text.contains("crate::collect::books imports crate::collect::exporters::stdout"), "{text}");
    assert!(
        text.contains("crate::collect::receivers::udp imports crate::collect::exporters::nats"),
        "{text}"
    );
}

#[test]
fn two_rooms_importing_each_other_are_tied_both_ways() {
    let krate = sources(&[
        ("crate", ""),
        ("crate::collect", ""),
        ("crate::collect::books", "use crate::collect::views::Shown;\n"),
        ("crate::collect::views", ""),
        ("crate::collect::views::web", "use crate::collect::books::Books;\nuse super::Shown;\n"),
    ]);
    let found = ties(&krate, "crate::collect");
    let pair = ("books".to_string(), "views".to_string());
    assert_eq!(found.both_ways.into_iter().collect::<Vec<_>>(), [pair]);
    assert_eq!(found.up.len(), 1, "{:?}", found.up);
}

/// A module of any visibility is read: `pub(super) mod` was once skipped,
/// and with it every import its file made.
#[test]
fn modules_of_every_visibility_are_read() {
    let dir = std::env::temp_dir().join(format!("module-graph-visibility-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = [
        ("lib.rs", "mod a;\npub mod b;\npub(crate) mod c;\npub(super) mod d;\npub(in crate) mod e;\n"),
        ("a.rs", ""),
        ("b.rs", ""),
        ("c.rs", ""),
        ("d.rs", "use crate::e::X;\n"),
        ("e.rs", "use crate::d::Y;\n"),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let krate = read(&dir.join("lib.rs")).unwrap();
    let names: Vec<_> = krate.modules.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names.len(), 6, "{names:?}");
    assert_eq!(check(&krate, &[]).cycles.len(), 1, "d and e import each other");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `crate::int21::find` reaching into INT 0.5's sink for the L4 ports (as
/// 482b17c did) is a crossing: the protocols are apart.
#[test]
fn a_protocol_importing_another_is_named() {
    let krate = sources(&[
        ("crate", "pub mod int05;\npub mod int21;\n"),
        ("crate::int05", "pub mod sink;\n"),
        ("crate::int05::sink", "pub fn inner_ports() {}\n"),
        ("crate::int21", "mod find;\n"),
        ("crate::int21::find", "use crate::int05::sink::inner_ports;\n"),
    ]);
    let findings = check(&krate, CORE);
    let text = findings.to_string();
    assert_eq!(findings.crossings.len(), 1, "{text}");
    assert!(
        text.contains("crate::int21::find imports crate::int05::sink (line 1): a protocol imports"),
        "{text}"
    );
    let four = Apart { parent: "crate::pipeline", rooms: PROTOCOLS, why: APART }.forbidden();
    assert_eq!(four.len(), 12, "{four:?}");
}

/// A module the protocols share importing one of them is named.
#[test]
fn a_shared_module_importing_a_protocol_is_named() {
    let krate = sources(&[
        ("crate", ""),
        ("crate::wire", ""),
        ("crate::wire::ipv6", "pub fn f() -> crate::ioam::Trace { todo!() }\n"),
        ("crate::ioam", ""),
        ("crate::pipeline", ""),
        ("crate::pipeline::sink_core", "use super::int21::report::SinkReporter21;\n"),
        ("crate::pipeline::int21", "pub mod report;\n"),
        ("crate::pipeline::int21::report", ""),
    ]);
    let text = check(&krate, &[CORE, NODE].concat()).to_string();
    assert!(
        text.contains("crate::wire::ipv6 imports crate::ioam (line 1): what the protocols share"),
        "{text}"
    );
    assert!(
        text.contains("crate::pipeline::sink_core imports crate::pipeline::int21::report (line 1)"),
        "{text}"
    );
}

/// A parent's use of its child's item is an import, written with the
/// child's name (`a::T`) or from the crate down.
#[test]
fn a_parent_using_its_childs_item_is_an_edge() {
    let krate = sources(&[
        ("crate", "mod a;\nmod b;\nfn f() -> a::T {\n    crate::b::g()\n}\n"),
        ("crate::a", ""),
        ("crate::b", ""),
    ]);
    let found: Vec<_> = edges(&krate).into_iter().map(|e| (e.to, e.line)).collect();
    assert_eq!(found, [("crate::a".to_string(), 3), ("crate::b".to_string(), 4)]);
}

/// A re-export of what lies under a module, on one line or many, is
/// ownership, no edge; a plain `use` of the same child is one.
#[test]
fn a_reexport_of_a_child_is_no_edge() {
    let krate = sources(&[
        (
            "crate",
            "mod a;\nmod b;\npub use a::Thing;\npub(crate) use self::{\n    a::Other,\n    b::More,\n};\n",
        ),
        ("crate::a", ""),
        ("crate::b", ""),
    ]);
    assert_eq!(edges(&krate), []);
    let krate = sources(&[("crate", "mod a;\nuse a::Thing;\n"), ("crate::a", "")]);
    let to: Vec<_> = edges(&krate).into_iter().map(|e| e.to).collect();
    assert_eq!(to, ["crate::a"]);
}

/// A parent's enum of its children's stages, a child importing the
/// parent's item: a cycle, which the check once took for ownership.
#[test]
fn a_parent_enum_of_its_childs_stage_imported_by_the_child_is_a_cycle() {
    let krate = sources(&[
        ("crate", "mod int05;\n"),
        ("crate::int05", "mod sink;\n\npub enum Int05 {\n    Sink(Box<sink::Sink05Stage>),\n}\n"),
        ("crate::int05::sink", "use super::Int05;\n"),
    ]);
    let findings = check(&krate, &[]);
    assert_eq!(findings.cycles.len(), 1, "{findings}");
    let cycle: Vec<_> = findings.cycles[0].iter().map(|e| (e.from.as_str(), e.to.as_str(), e.line)).collect();
    assert_eq!(cycle, [("crate::int05", "crate::int05::sink", 4), ("crate::int05::sink", "crate::int05", 1)]);
}

/// The circle int-node's pipeline had (sink core -> reload's settings ->
/// the stage enum -> the sink -> sink core) is found whole if restored.
#[test]
fn the_pipelines_circle_restored_is_a_cycle() {
    let krate = sources(&[
        ("crate", "mod pipeline;\n"),
        ("crate::pipeline", "pub mod int05;\npub mod reload;\npub mod sink_core;\n"),
        (
            "crate::pipeline::int05",
            "pub mod sink;\n\npub enum Int05 {\n    Sink(Box<sink::Sink05Stage>),\n}\n",
        ),
        ("crate::pipeline::int05::sink", "use crate::pipeline::sink_core::SinkCore;\n"),
        ("crate::pipeline::reload", "use super::int05::Int05;\n"),
        ("crate::pipeline::sink_core", "use crate::pipeline::reload::SinkReports;\n"),
    ]);
    let findings = check(&krate, NODE);
    assert_eq!(findings.cycles.len(), 1, "{findings}");
    assert_eq!(findings.cycles[0].len(), 4, "{findings}");
    assert!(
        findings.to_string().contains("crate::pipeline::int05 -> crate::pipeline::int05::sink (line 4)"),
        "{findings}"
    );
    assert!(findings.crossings.iter().any(|(e, _)| e.from == "crate::pipeline::reload"), "{findings}");
}
