//! The two ways a run can fail before producing a result, and their exit codes.
//! Failed *requests* are not errors here: they are data, counted in the result.

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// Bad input: arguments, URL, refused target. Exit status 2.
    Usage(String),
    /// The engine could not run (thread or runtime creation failed). Exit status 1.
    Fatal(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Fatal(_) => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Fatal(m) => f.write_str(m),
        }
    }
}
