//! One test case: the bytes a server sends on one connection, and a `split` seed
//! that decides where the reads end (and the reader's options), so a case replays
//! exactly. Saved as two files: the bytes as they are, and `NAME.split` with the
//! seed in decimal.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::rng::Rng;

/// The engine reads at most its 64 KB scratch buffer at once
/// (loadgen/src/client/context.rs: SCRATCH_BYTES).
pub const MAX_READ: usize = 64 * 1024;

#[derive(Clone, Debug)]
pub struct Case {
    pub bytes: Vec<u8>,
    pub split: u64,
}

impl Case {
    /// Where each read ends, as the engine's reader would see them: mostly small
    /// reads (a byte to a few hundred: servers and kernels cut anywhere), now and
    /// then a large one, never more than `MAX_READ`. The last read ends at the end.
    pub fn reads(&self) -> Vec<(usize, usize)> {
        let mut rng = Rng::new(self.split);
        let mut out = Vec::new();
        let mut at = 0;
        while at < self.bytes.len() {
            let left = self.bytes.len() - at;
            let n = if rng.one_in(8) { left.min(MAX_READ) } else { rng.size(left.min(MAX_READ)) };
            out.push((at, at + n));
            at += n;
        }
        out
    }

    /// Bit `i` of the split seed, for a reader option (head request, header
    /// capture, FastCGI keep-conn): varied by the same mutations as the reads.
    pub fn flag(&self, bit: u32) -> bool {
        (self.split >> (48 + bit)) & 1 == 1
    }

    /// Saves the case as `dir/NAME` and `dir/NAME.split`; returns the first path.
    pub fn save(&self, dir: &Path, name: &str) -> io::Result<PathBuf> {
        fs::create_dir_all(dir)?;
        let path = dir.join(name);
        fs::write(&path, &self.bytes)?;
        fs::write(split_path(&path), format!("{}\n", self.split))?;
        Ok(path)
    }

    /// Loads a case; without a `.split` file the seed is `default_split`.
    pub fn load(path: &Path, default_split: u64) -> io::Result<Case> {
        let bytes = fs::read(path)?;
        let split = match fs::read_to_string(split_path(path)) {
            Ok(text) => text.trim().parse().map_err(|_| io::Error::other(format!("bad split seed in {}", split_path(path).display())))?,
            Err(_) => default_split,
        };
        Ok(Case { bytes, split })
    }
}

fn split_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".split");
    PathBuf::from(name)
}

/// The seed files of a corpus directory (sorted, `.split` files left out).
pub fn corpus_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "split"))
        .collect();
    files.sort();
    Ok(files)
}

/// FNV-1a: a stable name for a finding's bytes.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}
