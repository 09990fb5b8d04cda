//! Where INT sits in a packet and how it is announced: the settings a
//! source, a transit hop and a sink of one INT domain must share.

/// Host-INT's UDP port for INT_05_EXTENSION_UDP.
pub const DEFAULT_EXTENSION_PORT: u16 = 33122;
/// Host-INT's default DSCP value and mask for INT_05_OVER_TCP_UDP.
pub const DEFAULT_DSCP_VALUE: u8 = 0x01;
pub const DEFAULT_DSCP_MASK: u8 = 0x01;
/// Bytes of the extra UDP header in INT_05_EXTENSION_UDP.
pub const EXTENSION_UDP_LEN: usize = 8;

/// What every source, transit hop and sink of one INT domain must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Domain {
    pub encapsulation: Encapsulation,
    pub tcp_placement: TcpPlacement,
}

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

    pub fn encapsulation(self) -> Encapsulation {
        Encapsulation::OverTcpUdp { dscp_value: self.value, dscp_mask: self.mask }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encapsulation {
    /// INT_05_OVER_TCP_UDP: INT right after the L4 header, announced by DSCP
    /// bits: a packet carries INT when `(dscp & mask) == (value & mask)`.
    OverTcpUdp { dscp_value: u8, dscp_mask: u8 },
    /// INT_05_EXTENSION_UDP: a UDP header to `port` after IPv4, then INT,
    /// then the original L4 header and payload untouched.
    ExtensionUdp { port: u16 },
}

impl Default for Encapsulation {
    fn default() -> Self {
        Encapsulation::OverTcpUdp { dscp_value: DEFAULT_DSCP_VALUE, dscp_mask: DEFAULT_DSCP_MASK }
    }
}

impl Encapsulation {
    /// The DSCP mark of INT_05_OVER_TCP_UDP; none in INT_05_EXTENSION_UDP.
    #[inline]
    fn dscp(&self) -> Option<DscpMatch> {
        match *self {
            Encapsulation::OverTcpUdp { dscp_value, dscp_mask } => {
                Some(DscpMatch { value: dscp_value, mask: dscp_mask })
            }
            Encapsulation::ExtensionUdp { .. } => None,
        }
    }

    /// The ToS bits that mark INT ([`DscpMatch::tos_mask`]; none in the UDP
    /// encapsulation).
    #[inline]
    pub fn tos_mask(&self) -> u8 {
        self.dscp().map_or(0, DscpMatch::tos_mask)
    }

    /// [`DscpMatch::mark_tos`]; the UDP encapsulation leaves the ToS alone.
    #[inline]
    pub fn mark_tos(&self, tos: u8) -> u8 {
        self.dscp().map_or(tos, |dscp| dscp.mark_tos(tos))
    }

    /// Whether a ToS carries the INT mark (DSCP encapsulation only).
    #[inline]
    pub fn tos_is_marked(&self, tos: u8) -> bool {
        self.dscp().is_some_and(|dscp| dscp.tos_is_marked(tos))
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
    fn host_int_default_mark_is_tos_bit_0x04() {
        let encap = Encapsulation::default();
        assert_eq!(encap.tos_mask(), 0x04);
        assert_eq!(encap.mark_tos(0x00), 0x04);
        assert_eq!(encap.mark_tos(0xb8), 0xbc); // EF keeps its other bits
        assert!(encap.tos_is_marked(0x07));
        assert!(!encap.tos_is_marked(0x03));
    }

    #[test]
    fn a_dscp_match_marks_as_its_encapsulation_does() {
        let host_int = DscpMatch::HOST_INT;
        assert_eq!(host_int.tos_mask(), 0x04);
        assert_eq!(host_int.mark_tos(0xb8), 0xbc);
        assert!(host_int.tos_is_marked(0x07) && !host_int.tos_is_marked(0x03));
        let wide = DscpMatch { value: 0x17, mask: 0x3f };
        for tos in 0..=u8::MAX {
            assert_eq!(wide.mark_tos(tos), wide.encapsulation().mark_tos(tos));
            assert_eq!(wide.tos_is_marked(tos), wide.encapsulation().tos_is_marked(tos));
        }
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

    #[test]
    fn value_outside_mask_is_ignored() {
        let encap = Encapsulation::OverTcpUdp { dscp_value: 0x17, dscp_mask: 0x3f };
        assert_eq!(encap.mark_tos(0x01), 0x5d);
        assert!(encap.tos_is_marked(0x5e));
        assert!(!Encapsulation::ExtensionUdp { port: 1 }.tos_is_marked(0xff));
    }
}
