//! The int-tools binary: decode, collect, gen (see the library's notes).

fn main() -> std::process::ExitCode {
    int_tools::main()
}
