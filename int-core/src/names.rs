//! The words a config file or a command line uses for a setting's values,
//! parsed by one function for both, with the list of valid words taken
//! from the enum itself and a "did you mean" for near misses.

use std::fmt;
use std::str::FromStr;

use strum::VariantNames;

/// A word that names none of a setting's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    pub given: String,
    pub expected: &'static [&'static str],
    /// The valid word the given one is closest to, if any is close.
    pub suggestion: Option<&'static str>,
}

impl UnknownName {
    /// "did you mean x? one of: a, b, c".
    pub fn hint(&self) -> String {
        let list = format!("one of: {}", self.expected.join(", "));
        match self.suggestion {
            Some(word) => format!("did you mean {word}? {list}"),
            None => list,
        }
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown value {:?}; {}", self.given, self.hint())
    }
}

impl std::error::Error for UnknownName {}

/// Parses `text` as one of `T`'s names.
pub fn parse_name<T: FromStr + VariantNames>(text: &str) -> Result<T, UnknownName> {
    text.parse::<T>().map_err(|_| UnknownName {
        given: text.to_string(),
        expected: T::VARIANTS,
        suggestion: closest(text, T::VARIANTS),
    })
}

/// The candidate `word` most likely meant: equal but for case, or within a
/// few typing mistakes (edit distance at most a third of its length, and
/// at least 1).
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    let allowed = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|candidate| (edit_distance(&word, candidate), *candidate))
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance: insertions, deletions and substitutions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = Vec::with_capacity(b.len() + 1);
        row.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous.get(j).map_or(usize::MAX, |d| d + usize::from(ca != *cb));
            let delete = previous.get(j + 1).map_or(usize::MAX, |d| d + 1);
            let insert = row.last().map_or(usize::MAX, |d| d + 1);
            row.push(substitute.min(delete).min(insert));
        }
        previous = row;
    }
    previous.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marking::TcpPlacement;

    #[test]
    fn names_parse_and_near_misses_are_suggested() {
        assert_eq!(parse_name::<TcpPlacement>("after-options"), Ok(TcpPlacement::AfterOptions));
        let error = parse_name::<TcpPlacement>("After-Options").unwrap_err();
        assert_eq!(error.suggestion, Some("after-options"));
        assert_eq!(
            parse_name::<TcpPlacement>("before-option").unwrap_err().suggestion,
            Some("before-options")
        );
        let far = parse_name::<TcpPlacement>("middle").unwrap_err();
        assert_eq!(far.suggestion, None);
        assert_eq!(far.to_string(), "unknown value \"middle\"; one of: before-options, after-options");
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("sorce", "source"), 1);
        assert_eq!(edit_distance("sink", "sink"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("transit", "trnasit"), 2);
        assert_eq!(closest("Source", &["forward", "source"]), Some("source"));
        assert_eq!(closest("x", &["forward", "source"]), None);
    }
}
