//! How a flag's value (or the config file's key for it) is read, shared
//! by every group of flags: the duration flags' bounds ([`duration`]) and
//! a choice refused with its choices ([`ChoiceError`]).

pub mod duration;

/// A flag's value that is none of its choices.
#[derive(Debug, thiserror::Error)]
#[error("{text:?}: {choices}")]
pub struct ChoiceError {
    pub text: String,
    /// The choices, each with what it means.
    pub choices: &'static str,
}
