//! The workspace's crates have no import cycle between their modules, and
//! the layers keep their direction; and the check finds what it should.

use std::path::Path;

use module_graph::{check, edges, read, ties, Crate, Forbidden};

/// The layers of int-node: the safe DPDK layer wraps DPDK and nothing
/// else, so what it knows of the pipelines comes in as plain data.
const RULES: &[Forbidden] = &[
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
    Forbidden { from: "crate::wire", to: "crate::int05", why: "plain headers know nothing of INT" },
    Forbidden { from: "crate::wire", to: "crate::int21", why: "plain headers know nothing of INT" },
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

const ROOTS: &[&str] = &[
    "int-core/src/lib.rs",
    "int-os/src/lib.rs",
    "int-node/src/main.rs",
    "int-tools/src/lib.rs",
    "int-lab/src/main.rs",
    "dpdk-sys/src/lib.rs",
];

#[test]
fn no_crate_has_an_import_cycle_or_a_layer_crossing() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut report = String::new();
    for root in ROOTS {
        let krate = read(&workspace.join(root)).unwrap_or_else(|e| panic!("{root}: {e}"));
        assert!(krate.modules.len() > 1 || root.starts_with("dpdk-sys"), "{root}: no modules read");
        let findings = check(&krate, RULES);
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
        ("crate", "mod a;\npub use a::Thing;\nuse self::a::other;\n"),
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
