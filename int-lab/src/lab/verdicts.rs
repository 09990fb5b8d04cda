//! What a lab's checks came to: each judged and printed as it goes.

/// The checks' results, each printed as it is judged.
#[derive(Default)]
pub struct Checks {
    results: Vec<(String, bool, String)>,
}

impl Checks {
    /// The names of the checks that failed.
    pub fn failed(&self) -> Vec<String> {
        self.results.iter().filter(|(_, ok, _)| !ok).map(|(name, _, _)| name.clone()).collect()
    }

    pub fn count(&self) -> usize {
        self.results.len()
    }

    pub fn check(&mut self, name: &str, ok: bool, detail: String) {
        println!("lab: {} {name}: {detail}", if ok { "PASS" } else { "FAIL" });
        self.results.push((name.to_string(), ok, detail));
    }
}
