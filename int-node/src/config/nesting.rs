//! How deep a config's YAML nests, read before the YAML parser runs: a
//! bound that keeps the parser's time and stack small.

/// The deepest nesting of YAML collections parsed: a config nests 5 deep.
pub const MAX_NESTING: usize = 32;

/// How deep the text's flow collections (`[`, `{`) and block indentation
/// nest, outside quotes and comments: a bound that keeps the YAML parser's
/// time and stack small whatever the file holds.
pub(super) fn nesting(text: &str) -> usize {
    let (mut deepest, mut depth, mut quote) = (0usize, 0usize, None);
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches([' ', '-']).len();
        deepest = deepest.max(indent / 2);
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') => break,
                (None, '[' | '{') => depth += 1,
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                _ => {}
            }
            deepest = deepest.max(depth);
        }
    }
    deepest
}
