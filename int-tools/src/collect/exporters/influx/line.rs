//! What a name may become in InfluxDB 1.x line protocol ("Line protocol
//! reference", special characters), as influxd 1.6 reads it:
//!
//! - a tag value: commas, spaces and equals signs escaped with a
//!   backslash; any other backslash is kept as it is (influxd unescapes
//!   only those three);
//! - a string field's value, inside its double quotes: backslashes and
//!   double quotes escaped;
//! - a line ends at a newline, and no escape carries one: newline,
//!   carriage return, tab and form feed become the two characters `\n`,
//!   `\r`, `\t`, `\f` (as Telegraf writes them), in tags and string fields;
//! - a backslash at a tag value's end would escape the separator after it
//!   (`a\,b=1` is one value), and nothing escapes a backslash there: a tag
//!   value's trailing backslashes are left out, and a value left empty
//!   (which line protocol refuses) is the caller's to replace.

use std::fmt::Write as _;

/// `text` as a tag value (or a tag or field key); it may come back empty.
pub fn tag(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.trim_end_matches('\\').chars() {
        match c {
            ',' | ' ' | '=' => {
                out.push('\\');
                out.push(c);
            }
            _ => push_visible(&mut out, c),
        }
    }
    out
}

/// `text` as a string field's value, without its quotes.
pub fn string_field(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            // The two characters \n, their backslash escaped.
            '\n' | '\r' | '\t' | '\u{c}' => {
                out.push('\\');
                push_visible(&mut out, c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A character, the line-breaking ones as two visible characters.
fn push_visible(out: &mut String, c: char) {
    let _ = match c {
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        '\u{c}' => out.write_str("\\f"),
        _ => out.write_char(c),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The escapes of each special character, as influxd 1.6 reads them
    /// back (checked against it: the tests of collect's writes).
    #[test]
    fn names_escaped_for_tags_and_string_fields() {
        assert_eq!(tag("core b,x=1"), "core\\ b\\,x\\=1");
        assert_eq!(tag("a\\b"), "a\\b");
        assert_eq!(tag("a\\ b"), "a\\\\ b");
        assert_eq!(tag("line\nfake f=1"), "line\\nfake\\ f\\=1");
        assert_eq!(tag("edge\\\\"), "edge");
        assert_eq!(tag("\\"), "");
        assert_eq!(tag("\"quoted\"\t"), "\"quoted\"\\t");
        assert_eq!(string_field("a\"b\\c"), "a\\\"b\\\\c");
        assert_eq!(string_field("x\ny\\"), "x\\\\ny\\\\");
        assert_eq!(string_field("a, b=c"), "a, b=c");
    }
}
