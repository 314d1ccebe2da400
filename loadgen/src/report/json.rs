//! `--json`: the document alone on stdout, nothing else.

use std::io::{self, Write};

use super::Document;

pub fn print(doc: &Document) -> io::Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, doc).map_err(io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}
