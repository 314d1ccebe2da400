//! HPACK (RFC 7541) for the direct loop's HTTP/2 (client/direct_h2.rs): the decoder
//! of response header blocks — static and dynamic table, Huffman strings — and the
//! encoder of a request's block, built once per URL.
//!
//! Requests are encoded without the dynamic table (literals "without indexing",
//! names from the static table where it has them, strings raw): the same bytes
//! every time, no state to keep in step with the server's decoder. Responses are
//! decoded whole, every block in order, since each may change the table the next
//! ones refer to.

use std::collections::VecDeque;

/// Why a header block could not be decoded: a COMPRESSION_ERROR of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpackError(pub &'static str);

/// RFC 7541 Appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The size the table starts with and the most we allow it (SETTINGS_HEADER_TABLE_SIZE
/// is left at this default).
pub const TABLE_SIZE: usize = 4096;

/// A table entry: a field's name and value.
type Entry = (Box<[u8]>, Box<[u8]>);

/// A decoder of one connection's response header blocks.
pub struct Decoder {
    /// Newest first: dynamic index 62 is `entries[0]`.
    entries: VecDeque<Entry>,
    size: usize,
    max: usize,
    /// A Huffman string's bytes, reused.
    scratch: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder { entries: VecDeque::new(), size: 0, max: TABLE_SIZE, scratch: Vec::new() }
    }
}

/// A field's name or value as decoded: raw from the block, or Huffman-decoded.
enum Str {
    Raw(std::ops::Range<usize>),
    Decoded(std::ops::Range<usize>),
}

impl Decoder {
    /// Decodes one whole header block, handing each field to `field(name, value)` in order.
    pub fn decode(&mut self, block: &[u8], mut field: impl FnMut(&[u8], &[u8])) -> Result<(), HpackError> {
        let mut at = 0;
        let mut first = true;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                let index = integer(block, &mut at, 7)?;
                let (name, value) = self.get(index)?;
                field(name, value);
            } else if b & 0xe0 == 0x20 {
                // A table size update, only at the start of a block (§4.2).
                let size = integer(block, &mut at, 5)?;
                if !first || size > TABLE_SIZE {
                    return Err(HpackError("table size update"));
                }
                self.max = size;
                self.evict(0);
                continue;
            } else {
                // Literals: with incremental indexing (01), without (0000), never indexed (0001).
                let indexing = b & 0xc0 == 0x40;
                let index = integer(block, &mut at, if indexing { 6 } else { 4 })?;
                self.scratch.clear();
                let name = if index == 0 { Some(string(block, &mut at, &mut self.scratch)?) } else { None };
                let value = string(block, &mut at, &mut self.scratch)?;
                let bytes = |s: &Str, scratch: &[u8]| -> Box<[u8]> { resolve(s, block, scratch).into() };
                match name {
                    Some(name) => {
                        let (n, v) = (resolve(&name, block, &self.scratch), resolve(&value, block, &self.scratch));
                        field(n, v);
                        if indexing {
                            let entry = (bytes(&name, &self.scratch), bytes(&value, &self.scratch));
                            self.insert(entry);
                        }
                    }
                    None => {
                        let (name, _) = self.get(index)?;
                        let v = resolve(&value, block, &self.scratch);
                        field(name, v);
                        if indexing {
                            let entry = (Box::from(name), bytes(&value, &self.scratch));
                            self.insert(entry);
                        }
                    }
                }
            }
            first = false;
        }
        Ok(())
    }

    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match index {
            0 => Err(HpackError("index 0")),
            1..=61 => {
                let (n, v) = STATIC[index - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self.entries.get(index - 62).map(|(n, v)| (&n[..], &v[..])).ok_or(HpackError("index past the table")),
        }
    }

    fn insert(&mut self, entry: Entry) {
        let size = 32 + entry.0.len() + entry.1.len();
        self.evict(size);
        // An entry larger than the table empties it and is not kept (§4.4).
        if size <= self.max {
            self.size += size;
            self.entries.push_front(entry);
        }
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some((n, v)) = self.entries.pop_back() else { break };
            self.size -= 32 + n.len() + v.len();
        }
    }
}

fn resolve<'a>(s: &Str, block: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
    match s {
        Str::Raw(r) => &block[r.clone()],
        Str::Decoded(r) => &scratch[r.clone()],
    }
}

/// An integer with an N-bit prefix (§5.1).
fn integer(block: &[u8], at: &mut usize, prefix: u32) -> Result<usize, HpackError> {
    let max = (1usize << prefix) - 1;
    let first = *block.get(*at).ok_or(HpackError("truncated integer"))? as usize & max;
    *at += 1;
    if first < max {
        return Ok(first);
    }
    let mut value = max;
    let mut shift = 0;
    loop {
        let b = *block.get(*at).ok_or(HpackError("truncated integer"))?;
        *at += 1;
        // Past 2^28 nothing this client meets is legitimate.
        if shift > 21 {
            return Err(HpackError("integer too large"));
        }
        value += ((b & 0x7f) as usize) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// A string literal (§5.2): raw, or Huffman-decoded onto the end of `scratch`.
fn string(block: &[u8], at: &mut usize, scratch: &mut Vec<u8>) -> Result<Str, HpackError> {
    let huffman = *block.get(*at).ok_or(HpackError("truncated string"))? & 0x80 != 0;
    let len = integer(block, at, 7)?;
    let end = at.checked_add(len).filter(|&e| e <= block.len()).ok_or(HpackError("truncated string"))?;
    let bytes = *at..end;
    *at = end;
    if !huffman {
        return Ok(Str::Raw(bytes));
    }
    let start = scratch.len();
    huffman_decode(&block[bytes], scratch)?;
    Ok(Str::Decoded(start..scratch.len()))
}

/// The canonical code's decoding tables (RFC 7541's code is canonical: the codes of
/// one length are consecutive, in the order of their bytes): for each length, the
/// first code, how many codes, and where their bytes start in `SYMBOLS`.
struct Canonical {
    first: [u32; 31],
    count: [u32; 31],
    offset: [u16; 31],
    symbols: [u8; 256],
}

fn canonical() -> &'static Canonical {
    static TABLE: std::sync::OnceLock<Canonical> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut c = Canonical { first: [u32::MAX; 31], count: [0; 31], offset: [0; 31], symbols: [0; 256] };
        let mut order: Vec<u8> = (0..=255).collect();
        order.sort_by_key(|&b| (CODES[b as usize].1, CODES[b as usize].0));
        for (k, &b) in order.iter().enumerate() {
            let (code, len) = CODES[b as usize];
            let len = len as usize;
            if c.count[len] == 0 {
                c.first[len] = code;
                c.offset[len] = k as u16;
            }
            c.count[len] += 1;
            c.symbols[k] = b;
        }
        c
    })
}

/// Decodes a Huffman string (§5.2) onto the end of `out`.
pub fn huffman_decode(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    let table = canonical();
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for &b in bytes {
        acc = (acc << 8) | b as u64;
        bits += 8;
        // The shortest code is 5 bits: decode while one may be complete.
        'symbols: while bits >= 5 {
            for len in 5..=bits.min(30) {
                let code = ((acc >> (bits - len)) & ((1u64 << len) - 1)) as u32;
                let l = len as usize;
                if table.count[l] > 0 && code >= table.first[l] && code - table.first[l] < table.count[l] {
                    out.push(table.symbols[table.offset[l] as usize + (code - table.first[l]) as usize]);
                    bits -= len;
                    continue 'symbols;
                }
            }
            if bits >= 30 {
                return Err(HpackError("not a Huffman code"));
            }
            break;
        }
    }
    // What is left must be padding: fewer than 8 bits, all ones (EOS's prefix).
    if bits > 7 || acc & ((1u64 << bits) - 1) != (1u64 << bits) - 1 {
        return Err(HpackError("bad Huffman padding"));
    }
    Ok(())
}

/// A request's header blocks, built once per URL. A connection's first request
/// inserts the fields every request repeats into the server's table, and later ones
/// name them by index — what browsers, nghttp2 (h2load) and the h2 crate do, so the
/// server decodes what it would from them; `plain` (literals, no table) is for a
/// server whose table cannot hold them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestBlocks {
    pub plain: Vec<u8>,
    pub first: Vec<u8>,
    pub repeat: Vec<u8>,
    /// What the inserted fields take of the server's table (§4.1).
    pub table: usize,
}

/// Pseudo-headers first, then `headers` (lowercase names). A field the static table
/// holds whole is its index alone; the others are the ones inserted, except :path
/// unless `index_path` (a mix's paths differ: the inserted fields must be the same
/// for every URL of a connection, so that their indexes are).
pub fn encode_request(method: &str, scheme: &str, authority: &str, path: &str, headers: &[(String, String)],
                      index_path: bool) -> RequestBlocks {
    let pseudo = [(":method", method), (":scheme", scheme), (":authority", authority), (":path", path)];
    let fields: Vec<(&str, &str)> = pseudo.iter().copied().chain(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))).collect();
    let inserted = |name: &str, value: &str| {
        !STATIC.iter().any(|&(n, v)| n == name && v == value) && (name != ":path" || index_path)
    };
    let count = fields.iter().filter(|(n, v)| inserted(n, v)).count();
    let mut blocks = RequestBlocks { plain: Vec::new(), first: Vec::new(), repeat: Vec::new(), table: 0 };
    let mut nth = 0;
    for &(name, value) in &fields {
        if let Some(i) = STATIC.iter().position(|&(n, v)| n == name && v == value) {
            for block in [&mut blocks.plain, &mut blocks.first, &mut blocks.repeat] {
                put_integer(block, 0x80, 7, i + 1);
            }
            continue;
        }
        literal(&mut blocks.plain, name, value, false);
        if inserted(name, value) {
            literal(&mut blocks.first, name, value, true);
            // The newest entry is index 62: the first inserted of `count` is the oldest.
            put_integer(&mut blocks.repeat, 0x80, 7, 62 + count - 1 - nth);
            blocks.table += 32 + name.len() + value.len();
            nth += 1;
        } else {
            literal(&mut blocks.first, name, value, false);
            literal(&mut blocks.repeat, name, value, false);
        }
    }
    blocks
}

/// A literal field (§6.2.1, §6.2.2), its name the static table's where it has it;
/// `insert`: with incremental indexing, else without indexing.
fn literal(block: &mut Vec<u8>, name: &str, value: &str, insert: bool) {
    let (flags, prefix) = if insert { (0x40, 6) } else { (0x00, 4) };
    match STATIC.iter().position(|&(n, _)| n == name) {
        Some(i) => put_integer(block, flags, prefix, i + 1),
        None => {
            block.push(flags);
            put_integer(block, 0x00, 7, name.len());
            block.extend_from_slice(name.as_bytes());
        }
    }
    put_integer(block, 0x00, 7, value.len());
    block.extend_from_slice(value.as_bytes());
}

/// A dynamic table size update (§6.3): what a block starts with after the server
/// lowered SETTINGS_HEADER_TABLE_SIZE.
pub fn size_update(block: &mut Vec<u8>, size: usize) {
    put_integer(block, 0x20, 5, size);
}

fn put_integer(out: &mut Vec<u8>, flags: u8, prefix: u32, mut value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    value -= max;
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

// RFC 7541 Appendix B: the HPACK Huffman code of each byte (code, length in bits).
// EOS (256) is 0x3fffffff, 30 bits: only its prefix, as padding, appears on the wire.
pub const CODES: [(u32, u8); 256] = [
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28), (0xfffffe4, 28),
    (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28), (0xfffffe8, 28), (0xffffea, 24),
    (0x3ffffffc, 30), (0xfffffe9, 28), (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28),
    (0xfffffec, 28), (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28),
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28), (0xffffff4, 28),
    (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28), (0xffffff8, 28), (0xffffff9, 28),
    (0xffffffa, 28), (0xffffffb, 28), (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12),
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11), (0x3fa, 10), (0x3fb, 10), (0xf9, 8),
    (0x7fb, 11), (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6), (0x0, 5), (0x1, 5), (0x2, 5),
    (0x19, 6), (0x1a, 6), (0x1b, 6), (0x1c, 6), (0x1d, 6), (0x1e, 6), (0x1f, 6), (0x5c, 7),
    (0xfb, 8), (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10), (0x1ffa, 13), (0x21, 6),
    (0x5d, 7), (0x5e, 7), (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7), (0x63, 7), (0x64, 7),
    (0x65, 7), (0x66, 7), (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7), (0x6b, 7), (0x6c, 7),
    (0x6d, 7), (0x6e, 7), (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7), (0xfc, 8), (0x73, 7),
    (0xfd, 8), (0x1ffb, 13), (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6), (0x7ffd, 15),
    (0x3, 5), (0x23, 6), (0x4, 5), (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6), (0x27, 6), (0x6, 5),
    (0x74, 7), (0x75, 7), (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5), (0x2b, 6), (0x76, 7),
    (0x2c, 6), (0x8, 5), (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7), (0x79, 7), (0x7a, 7), (0x7b, 7),
    (0x7ffe, 15), (0x7fc, 11), (0x3ffd, 14), (0x1ffd, 13), (0xffffffc, 28), (0xfffe6, 20),
    (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20), (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22),
    (0x7fffd9, 23), (0x3fffd6, 22), (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23), (0x7fffdd, 23),
    (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23), (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22),
    (0x7fffe0, 23), (0xffffee, 24), (0x7fffe1, 23), (0x7fffe2, 23), (0x7fffe3, 23), (0x7fffe4, 23),
    (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23), (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23),
    (0xffffef, 24), (0x3fffda, 22), (0x1fffdd, 21), (0xfffe9, 20), (0x3fffdb, 22), (0x3fffdc, 22),
    (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21), (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22),
    (0xfffff0, 24), (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23), (0x7fffec, 23), (0x1fffe0, 21),
    (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21), (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23),
    (0x7fffef, 23), (0xfffea, 20), (0x3fffe2, 22), (0x3fffe3, 22), (0x3fffe4, 22), (0x7ffff0, 23),
    (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23), (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20),
    (0x7fff1, 19), (0x3fffe7, 22), (0x7ffff2, 23), (0x3fffe8, 22), (0x1ffffec, 25), (0x3ffffe2, 26),
    (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27), (0x7ffffdf, 27), (0x3ffffe5, 26),
    (0xfffff1, 24), (0x1ffffed, 25), (0x7fff2, 19), (0x1fffe3, 21), (0x3ffffe6, 26),
    (0x7ffffe0, 27), (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24),
    (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26), (0xffffffd, 28),
    (0x7ffffe3, 27), (0x7ffffe4, 27), (0x7ffffe5, 27), (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20),
    (0x1fffe6, 21), (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23), (0x3fffea, 22),
    (0x3fffeb, 22), (0x1ffffee, 25), (0x1ffffef, 25), (0xfffff4, 24), (0xfffff5, 24),
    (0x3ffffea, 26), (0x7ffff4, 23), (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26),
    (0x3ffffed, 26), (0x7ffffe7, 27), (0x7ffffe8, 27), (0x7ffffe9, 27), (0x7ffffea, 27),
    (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27), (0x7ffffee, 27),
    (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
    }

    fn fields(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        d.decode(block, |n, v| out.push((String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))).unwrap();
        out
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|&(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn rfc_7541_responses_with_huffman_and_eviction() {
        // C.6: a table of 256 bytes (the encoder's SETTINGS there).
        let mut d = Decoder { max: 256, ..Decoder::default() };
        let first = hex("4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                         2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3");
        assert_eq!(fields(&mut d, &first), pairs(&[(":status", "302"), ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"), ("location", "https://www.example.com")]));
        assert_eq!((d.entries.len(), d.size), (4, 222));
        // :status 302 is evicted to make room for 307; the rest are indexed.
        assert_eq!(fields(&mut d, &hex("4883 640e ffc1 c0bf")), pairs(&[(":status", "307"), ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"), ("location", "https://www.example.com")]));
        assert_eq!((d.entries.len(), d.size), (4, 222));
        assert_eq!(&d.entries[0].1[..], b"307");
    }

    #[test]
    fn rfc_7541_request_with_huffman() {
        let mut d = Decoder::default();
        assert_eq!(fields(&mut d, &hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff")),
            pairs(&[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")]));
        assert_eq!(d.size, 57);
    }

    #[test]
    fn every_byte_huffman_coded_decodes_back() {
        let bytes: Vec<u8> = (0..=255u8).chain(b"hello world".iter().copied()).collect();
        let (mut acc, mut bits, mut coded) = (0u64, 0u32, Vec::new());
        for &b in &bytes {
            let (code, len) = CODES[b as usize];
            acc = (acc << len) | code as u64;
            bits += len as u32;
            while bits >= 8 {
                coded.push((acc >> (bits - 8)) as u8);
                bits -= 8;
            }
        }
        if bits > 0 {
            coded.push(((acc << (8 - bits)) as u8) | ((1u8 << (8 - bits)) - 1));
        }
        let mut out = Vec::new();
        huffman_decode(&coded, &mut out).unwrap();
        assert_eq!(out, bytes);
        // Padding that is not EOS's prefix, and more than 7 bits of it, are refused.
        assert!(huffman_decode(&[0x00], &mut Vec::new()).is_err(), "'0' then zero padding");
        assert!(huffman_decode(&[0xff, 0xff], &mut Vec::new()).is_err());
    }

    #[test]
    fn a_request_encodes_to_what_a_decoder_reads_back() {
        let headers = vec![("user-agent".to_string(), "stackbench".to_string()), ("x-long".to_string(), "v".repeat(300))];
        let want = pairs(&[(":method", "GET"), (":scheme", "https"), (":authority", "127.0.0.1:8443"),
            (":path", "/a.html"), ("user-agent", "stackbench"), ("x-long", &"v".repeat(300))]);
        for index_path in [true, false] {
            let blocks = encode_request("GET", "https", "127.0.0.1:8443", "/a.html", &headers, index_path);
            let mut d = Decoder::default();
            assert_eq!(fields(&mut d, &blocks.plain), want);
            assert_eq!(d.size, 0, "plain: nothing inserted, the same block can be sent again");
            assert_eq!(&blocks.plain[..2], &[0x82, 0x87], "GET and https are the static table's");
            // First, then the repeats by index: the same fields every time, the table as the first left it.
            assert_eq!(fields(&mut d, &blocks.first), want);
            assert_eq!(d.size, blocks.table);
            for _ in 0..3 {
                assert_eq!(fields(&mut d, &blocks.repeat), want, "index_path {index_path}");
                assert_eq!(d.size, blocks.table);
            }
            let expected_repeat = if index_path { 6 } else { 2 + 1 + (2 + 7) + 2 };
            assert_eq!(blocks.repeat.len(), expected_repeat, "{:x?}", blocks.repeat);
            // Another URL of the same mix: its repeat names the same entries.
            if !index_path {
                let other = encode_request("GET", "https", "127.0.0.1:8443", "/b", &headers, false);
                assert_eq!(other.table, blocks.table);
                assert_eq!(fields(&mut d, &other.repeat)[3], (":path".to_string(), "/b".to_string()));
            }
        }
        let mut update = Vec::new();
        size_update(&mut update, 0);
        update.extend_from_slice(&encode_request("GET", "https", "h", "/", &[], true).plain);
        let mut d = Decoder::default();
        assert_eq!(fields(&mut d, &update).len(), 4);
        assert_eq!(d.max, 0);
    }

    #[test]
    fn bad_blocks_are_refused_not_panicked_on() {
        let mut d = Decoder::default();
        for bad in [&[0x80][..], &[0xbe], &[0x41, 0x85, b'a'], &[0x3f, 0xe2, 0x1f], &[0x82, 0x20], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]] {
            assert!(d.decode(bad, |_, _| {}).is_err(), "{bad:?}");
        }
    }
}
