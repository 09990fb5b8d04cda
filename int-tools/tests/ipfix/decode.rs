//! A reader of the IPFIX messages collect exports, for the tests: every
//! message's header and sets checked (RFC 7011), templates learned, data
//! records decoded by them; a data set before its template is an error.

use std::collections::HashMap;

/// A template's field: element id, length, enterprise number.
pub type Field = (u16, u16, Option<u32>);

/// A data record: its template and each field's bytes.
#[derive(Debug, Clone)]
pub struct Record {
    pub template: u16,
    pub fields: Vec<(Field, Vec<u8>)>,
}

impl Record {
    /// An unsigned field's value (IANA's with `pen` none).
    pub fn uint(&self, id: u16, pen: Option<u32>) -> Option<u64> {
        let (_, bytes) = self.fields.iter().find(|((i, _, p), _)| *i == id && *p == pen)?;
        Some(bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    pub fn int(&self, id: u16, pen: Option<u32>) -> Option<i64> {
        self.uint(id, pen).map(|v| v as i64)
    }

    pub fn bytes(&self, id: u16, pen: Option<u32>) -> Option<&[u8]> {
        self.fields.iter().find(|((i, _, p), _)| *i == id && *p == pen).map(|(_, b)| b.as_slice())
    }
}

/// What a stream of messages held.
#[derive(Debug, Default)]
pub struct Decoded {
    pub templates: HashMap<u16, Vec<Field>>,
    /// Options templates' scope field counts (RFC 7011 section 3.4.2.2).
    pub scopes: HashMap<u16, u16>,
    /// An Options Template Set held more than one template (nfdump 1.7
    /// reads the first of a set only).
    pub shared_options_set: bool,
    pub records: Vec<Record>,
    /// Each message's sequence number and data records.
    pub sequences: Vec<(u32, u32)>,
    pub domains: Vec<u32>,
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]])).ok_or(format!("short at {at}"))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]])).ok_or(format!("short at {at}"))
}

impl Decoded {
    pub fn message(&mut self, m: &[u8]) -> Result<(), String> {
        if u16_at(m, 0)? != 10 || usize::from(u16_at(m, 2)?) != m.len() {
            return Err(format!("header: version {} length {} of {}", u16_at(m, 0)?, u16_at(m, 2)?, m.len()));
        }
        let sequence = u32_at(m, 8)?;
        self.domains.push(u32_at(m, 12)?);
        let mut at = 16;
        let mut data = 0;
        while at < m.len() {
            let (id, len) = (u16_at(m, at)?, usize::from(u16_at(m, at + 2)?));
            let set = m.get(at + 4..at + len).ok_or(format!("set at {at} of {len} overruns"))?;
            match id {
                2 => self.template_set(set, false)?,
                3 => self.template_set(set, true)?,
                256.. => data += self.data_set(id, set)?,
                other => return Err(format!("set id {other}")),
            }
            at += len;
        }
        self.sequences.push((sequence, data));
        Ok(())
    }

    /// A Template Set, or an Options Template Set (`options`: a scope
    /// field count after the field count).
    fn template_set(&mut self, set: &[u8], options: bool) -> Result<(), String> {
        let mut at = 0;
        let mut in_set = 0;
        while at + 4 <= set.len() {
            let (id, count) = (u16_at(set, at)?, u16_at(set, at + 2)?);
            at += 4;
            if options {
                let scope = u16_at(set, at)?;
                at += 2;
                if scope == 0 || scope > count {
                    return Err(format!("options template {id}: scope of {scope} fields in {count}"));
                }
                self.scopes.insert(id, scope);
                in_set += 1;
                self.shared_options_set |= in_set > 1;
            }
            let mut fields = Vec::new();
            for _ in 0..count {
                let (element, length) = (u16_at(set, at)?, u16_at(set, at + 2)?);
                at += 4;
                let pen = if element & 0x8000 != 0 {
                    at += 4;
                    Some(u32_at(set, at - 4)?)
                } else {
                    None
                };
                fields.push((element & 0x7fff, length, pen));
            }
            self.templates.insert(id, fields);
        }
        Ok(())
    }

    fn data_set(&mut self, id: u16, set: &[u8]) -> Result<u32, String> {
        let template = self.templates.get(&id).ok_or(format!("data set {id} before its template"))?.clone();
        let (mut at, mut count) = (0, 0);
        while at < set.len() {
            let mut fields = Vec::new();
            for field in &template {
                let mut len = usize::from(field.1);
                if field.1 == 65535 {
                    len = usize::from(*set.get(at).ok_or("short length")?);
                    at += 1;
                    if len == 255 {
                        len = usize::from(u16_at(set, at)?);
                        at += 2;
                    }
                }
                fields.push((*field, set.get(at..at + len).ok_or(format!("record of {id} short"))?.to_vec()));
                at += len;
            }
            self.records.push(Record { template: id, fields });
            count += 1;
        }
        Ok(count)
    }
}

/// A basicList of 32-bit values (RFC 6313): its semantic, element and values.
pub fn basic_list_u32(list: &[u8]) -> (u8, Field, Vec<u32>) {
    let enterprise = list[1] & 0x80 != 0;
    let element = u16::from_be_bytes([list[1] & 0x7f, list[2]]);
    let length = u16::from_be_bytes([list[3], list[4]]);
    let (pen, values) = if enterprise {
        (Some(u32::from_be_bytes(list[5..9].try_into().unwrap())), &list[9..])
    } else {
        (None, &list[5..])
    };
    let values = values.chunks(4).map(|c| u32::from_be_bytes(c.try_into().unwrap())).collect();
    (list[0], (element, length, pen), values)
}
