//! How a packet is marked as carrying telemetry, whatever the protocol: the
//! DSCP value and mask that announce INT (INT 0.5's INT_05_OVER_TCP_UDP and
//! INT 2.1's DSCP marking), and where INT goes in a TCP segment.

/// Host-INT's default DSCP value and mask for INT_05_OVER_TCP_UDP.
pub const DEFAULT_DSCP_VALUE: u8 = 0x01;
pub const DEFAULT_DSCP_MASK: u8 = 0x01;

/// A DSCP value and mask marking INT: 6-bit each, the mask non-zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DscpMatch {
    pub value: u8,
    pub mask: u8,
}

impl DscpMatch {
    /// Host-INT's: value 1, mask 1.
    pub const HOST_INT: DscpMatch = DscpMatch { value: DEFAULT_DSCP_VALUE, mask: DEFAULT_DSCP_MASK };

    pub fn new(value: u8, mask: u8) -> Result<DscpMatch, DscpError> {
        if value > 63 || mask > 63 {
            return Err(DscpError::TooWide { value, mask });
        }
        if mask == 0 {
            return Err(DscpError::ZeroMask);
        }
        Ok(DscpMatch { value, mask })
    }

    /// The ToS bits that mark INT (DSCP mask shifted past ECN).
    #[inline]
    pub fn tos_mask(self) -> u8 {
        (self.mask & 0x3f) << 2
    }

    /// `tos = (tos & ~mask) | (value & mask)`, Host-INT's marking.
    #[inline]
    pub fn mark_tos(self, tos: u8) -> u8 {
        let mask = self.tos_mask();
        (tos & !mask) | (((self.value & 0x3f) << 2) & mask)
    }

    /// Whether a ToS carries the INT mark.
    #[inline]
    pub fn tos_is_marked(self, tos: u8) -> bool {
        let mask = self.tos_mask();
        mask != 0 && (tos & mask) == (((self.value & 0x3f) << 2) & mask)
    }
}

/// Why a DSCP value and mask cannot mark INT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DscpError {
    /// Text that is not `VALUE/MASK` in decimal or 0x-hex.
    Syntax,
    TooWide {
        value: u8,
        mask: u8,
    },
    ZeroMask,
}

impl std::fmt::Display for DscpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DscpError::Syntax => write!(f, "not VALUE/MASK (e.g. 1/1 or 0x2e/0x3f)"),
            DscpError::TooWide { value, mask } => {
                write!(f, "value {value} / mask {mask}: DSCP is 6 bits (0..63)")
            }
            DscpError::ZeroMask => write!(f, "a DSCP mask of 0 marks nothing"),
        }
    }
}

impl std::error::Error for DscpError {}

impl std::str::FromStr for DscpMatch {
    type Err = DscpError;

    /// `VALUE/MASK`, each decimal or 0x-hex.
    fn from_str(text: &str) -> Result<DscpMatch, DscpError> {
        let number = |text: &str| match text.trim().strip_prefix("0x") {
            Some(hex) => u8::from_str_radix(hex, 16).ok(),
            None => text.trim().parse().ok(),
        };
        let (value, mask) = text.split_once('/').ok_or(DscpError::Syntax)?;
        DscpMatch::new(number(value).ok_or(DscpError::Syntax)?, number(mask).ok_or(DscpError::Syntax)?)
    }
}

/// Where INT goes in a TCP segment with options.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, strum::EnumString, strum::VariantNames, strum::Display,
)]
#[strum(serialize_all = "kebab-case")]
pub enum TcpPlacement {
    /// After the first 20 bytes, before any option; Data Offset unchanged
    /// (Host-INT).
    #[default]
    BeforeOptions,
    /// After the options (INT 0.5 section 3.2.1).
    AfterOptions,
}

impl TcpPlacement {
    #[inline]
    pub fn offset(self, tcp_header_len: usize) -> usize {
        match self {
            TcpPlacement::BeforeOptions => crate::wire::tcp::MIN_HEADER_LEN,
            TcpPlacement::AfterOptions => tcp_header_len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_int_mark_is_tos_bit_0x04() {
        let host_int = DscpMatch::HOST_INT;
        assert_eq!(host_int.tos_mask(), 0x04);
        assert_eq!(host_int.mark_tos(0xb8), 0xbc);
        assert!(host_int.tos_is_marked(0x07) && !host_int.tos_is_marked(0x03));
    }

    #[test]
    fn dscp_matches_parse_as_the_config_checks_them() {
        assert_eq!("1/1".parse(), Ok(DscpMatch::HOST_INT));
        assert_eq!("0x2e/0x3f".parse(), Ok(DscpMatch { value: 0x2e, mask: 0x3f }));
        assert_eq!("99/1".parse::<DscpMatch>(), Err(DscpError::TooWide { value: 99, mask: 1 }));
        assert_eq!("1/0".parse::<DscpMatch>(), Err(DscpError::ZeroMask));
        for bad in ["1", "1/", "a/1", "1/1/1", "256/1"] {
            assert_eq!(bad.parse::<DscpMatch>(), Err(DscpError::Syntax), "{bad}");
        }
    }
}
