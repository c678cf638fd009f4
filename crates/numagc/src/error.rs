//! Errors returned by the runtime.
//!
//! Every failure a caller can provoke (bad configuration, bad descriptor, heap
//! limit, misuse of the API) and every fault of the system it runs on (memory
//! the system refuses, a vproc that stops answering) is a value of [`Error`];
//! none of them aborts the process. Each message names what was wrong and,
//! where it applies, the range that would have been accepted.

use std::fmt;

/// A configuration setting was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The setting's name, as on the command line (`local-heap`).
    pub setting: &'static str,
    /// The value as it was given.
    pub value: String,
    /// What would have been accepted.
    pub allowed: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid value {:?} for setting `{}`: allowed {}",
            self.value, self.setting, self.allowed
        )
    }
}

impl std::error::Error for ConfigError {}

/// An object descriptor was refused by [`crate::Runtime::register`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescriptorError {
    #[error("descriptor `{name}` has size 0 words; a mixed object needs at least one field")]
    ZeroSize { name: String },
    #[error("descriptor `{name}`: pointer offset {offset} is outside the object of {size} words")]
    OffsetOutOfRange {
        name: String,
        offset: usize,
        size: usize,
    },
    #[error("descriptor `{name}`: pointer offset {offset} is listed twice")]
    DuplicateOffset { name: String, offset: usize },
    #[error("descriptor `{name}`: size {size} words exceeds the largest mixed object, {max} words", max = crate::object::descriptor::MAX_MIXED_SIZE)]
    TooLarge { name: String, size: usize },
    #[error("descriptor table is full: the 15-bit ID space holds {capacity} descriptors")]
    TableFull { capacity: usize },
}

/// The error type of the runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(Box<ConfigError>),
    #[error(transparent)]
    Descriptor(Box<DescriptorError>),
    /// The heap limit was reached: the allocation that asked is refused, the
    /// heap is left as it was and other vprocs carry on.
    #[error("heap limit reached: {requested} bytes requested with {in_use} of {limit} bytes in use after a global collection")]
    HeapLimit {
        requested: usize,
        in_use: usize,
        limit: usize,
    },
    /// An object ID that no descriptor has been registered for.
    #[error("unknown object descriptor id {0}")]
    UnknownDescriptor(u16),
    /// A call whose arguments do not fit the object or the API.
    #[error("invalid use of the API: {0}")]
    Misuse(String),
    /// The operating system refused a request other than memory (starting a
    /// thread); refused memory is [`Error::MapFailed`].
    #[error("operating system: {what}: {source}")]
    Os {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A job, a task or a thread panicked on vproc `vproc`; the vproc and
    /// the runtime carry on.
    #[error("a task panicked on vproc {vproc}: {message}")]
    TaskPanicked { vproc: usize, message: String },
    /// The system refused memory: `bytes` could not be mapped for `what`
    /// (`errno` is the system's reason, `ENOMEM` when the heap's address-space
    /// reservation is exhausted). Nothing was allocated or moved; the heap
    /// is intact and a later request may succeed.
    #[error("out of memory: could not map {bytes} bytes for {what}: {}", os_reason(*.errno))]
    MapFailed {
        bytes: usize,
        what: &'static str,
        errno: i32,
    },
    /// A global collection was abandoned before anything was moved because
    /// vproc `vproc` did not reach a safepoint within `waited_ms`
    /// milliseconds (setting `safepoint-timeout`). The vprocs that had
    /// stopped went back to their work with their heaps as they were; the
    /// request that needed the collection gets this error and may retry.
    #[error("global collection abandoned: vproc {vproc} did not reach a safepoint within {waited_ms} ms (setting `safepoint-timeout`); nothing was moved")]
    SafepointTimeout { vproc: usize, waited_ms: u64 },
    /// A fork (`par2`, and the parallel operations built on it) found the
    /// vproc's stack nearly exhausted: `left` bytes of `size` remained,
    /// fewer than the reserve kept for the code between forks. Nothing was
    /// forked; the vproc carries on. Nesting that deep needs a larger
    /// `vproc-stack`.
    #[error("vproc {vproc}'s stack is nearly exhausted ({left} of {size} bytes left) at a fork nested too deep; nothing was forked (raise the setting `vproc-stack`)")]
    StackExhausted {
        vproc: usize,
        left: usize,
        size: usize,
    },
}

fn os_reason(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

// Boxed so that `Result<Handle, Error>`, returned by every allocation, stays
// small.
impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        Error::Config(Box::new(e))
    }
}

impl From<DescriptorError> for Error {
    fn from(e: DescriptorError) -> Error {
        Error::Descriptor(Box::new(e))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
