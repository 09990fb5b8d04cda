//! Finds DPDK with pkg-config, compiles the C shim with DPDK's own cflags and
//! generates the bindings with bindgen from the same flags.

use std::env;
use std::path::PathBuf;
use std::process::{exit, Command};

const MIN_VERSION: (u32, u32) = (22, 11);
const INSTALL_HINT: &str = "install DPDK's development files and the tools to bind them: \
     `apt-get install libdpdk-dev pkg-config clang libclang-dev` (Debian 12), \
     or run `scripts/install-deps.sh` from the int-node checkout";

fn fail(message: &str) -> ! {
    eprintln!("error: {message}\nhint: {INSTALL_HINT}");
    println!("cargo:warning={message}; {INSTALL_HINT}");
    exit(1);
}

fn pkg_config(arg: &str) -> String {
    let output = match Command::new("pkg-config").args([arg, "libdpdk"]).output() {
        Ok(output) => output,
        Err(_) => fail("pkg-config is not installed, so DPDK (libdpdk) cannot be found"),
    };
    if !output.status.success() {
        fail("pkg-config cannot find libdpdk: DPDK's development package is not installed");
    }
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn main() {
    println!("cargo:rerun-if-changed=shim/shim.c");
    println!("cargo:rerun-if-changed=shim/shim.h");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");

    let version = pkg_config("--modversion");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if found < MIN_VERSION {
        fail(&format!("libdpdk {version} is too old: int-node needs DPDK 22.11 or newer"));
    }
    // Verbatim: the pkg-config crate drops `-include rte_config.h` and
    // `-march=corei7`, which change what the headers generate.
    let cflags: Vec<String> = pkg_config("--cflags").split_whitespace().map(str::to_string).collect();

    let mut shim = cc::Build::new();
    shim.file("shim/shim.c").include("shim").opt_level(3).warnings(false);
    for flag in &cflags {
        shim.flag(flag);
    }
    shim.compile("int_node_dpdk_shim");

    let bindings = bindgen::Builder::default()
        .header("shim/shim.h")
        .clang_args(&cflags)
        .allowlist_function("rte_.*|shim_.*")
        .allowlist_type("rte_.*")
        .allowlist_var("RTE_.*|rte_.*")
        // Thread-locals: bound as plain statics they link and then crash.
        .blocklist_item("per_lcore_.*")
        // Packed headers pulled in by rte_flow.h that Rust cannot lay out.
        .opaque_type("rte_gtp_.*|rte_l2tpv2_.*|rte_ecpri_.*|rte_arp_.*|rte_flow_item_gtp.*|rte_flow_item_l2tpv2.*|rte_flow_item_ecpri.*")
        .clang_macro_fallback()
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate();
    let bindings = match bindings {
        Ok(bindings) => bindings,
        Err(error) => fail(&format!("bindgen could not read DPDK's headers ({error})")),
    };
    let out = PathBuf::from(env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    if let Err(error) = bindings.write_to_file(out.join("bindings.rs")) {
        fail(&format!("cannot write the DPDK bindings: {error}"));
    }

    if let Err(error) = pkg_config::Config::new().atleast_version("22.11").probe("libdpdk") {
        fail(&format!("pkg-config found libdpdk but cannot link it: {error}"));
    }
}
