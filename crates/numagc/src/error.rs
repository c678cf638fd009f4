//! Errors returned by the runtime.
//!
//! Every failure a caller can provoke (bad configuration, bad descriptor, heap
//! limit, misuse of the API) and every fault of the system it runs on (memory
//! the system refuses, a vproc that stops answering) is a value of [`Error`];
//! none of them aborts the process. Each message names what was wrong and,
//! where it applies, the range that would have been accepted.
//!
//! An [`Error`] is one pointer to its [`ErrorKind`], so that
//! `Result<Handle>`, `Result<u64>` and `Result<()>` fit in two registers
//! and every fallible call returns without going through memory; match on
//! [`Error::kind`] (or take the data with [`Error::into_kind`]).

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

/// What went wrong: the variants of an [`Error`], reached with
/// [`Error::kind`] or [`Error::into_kind`].
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
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
    /// thread); refused memory is [`ErrorKind::MapFailed`].
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
    /// A value that cannot travel to another PE (`crate::pe`): a mutable
    /// object, a graph past the packet limit, a value of a kind the packet
    /// format does not carry.
    #[error("value cannot be sent to another PE: {0}")]
    NotExportable(String),
    /// Another PE (`crate::pe`) failed or sent what cannot be accepted: a
    /// task that failed there, a message refused here, a PE that stopped
    /// answering. `pe` names it.
    #[error("PE {pe}: {message}")]
    Pe { pe: usize, message: String },
}

fn os_reason(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

/// The error type of the runtime: one pointer to an [`ErrorKind`], so that
/// `Result<Handle>` and `Result<u64>` are two words and return in
/// registers (and `Result<()>` one). The variants are matched through
/// [`Error::kind`]:
///
/// ```
/// use numagc::{Error, ErrorKind};
///
/// let e = Error::misuse("field 3 of a record of 2 fields");
/// assert!(matches!(e.kind(), ErrorKind::Misuse(m) if m.contains("field 3")));
/// assert_eq!(e.to_string(), "invalid use of the API: field 3 of a record of 2 fields");
/// ```
pub struct Error(Box<ErrorKind>);

impl Error {
    /// What went wrong.
    #[inline]
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// What went wrong, by value (to move the data out of the error).
    #[inline]
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    /// An [`ErrorKind::Misuse`] error with `message`.
    #[cold]
    #[inline(never)]
    pub fn misuse(message: impl Into<String>) -> Error {
        Error(Box::new(ErrorKind::Misuse(message.into())))
    }
}

// Errors are built off the fast paths: cold, and never inlined into them.
impl From<ErrorKind> for Error {
    #[cold]
    #[inline(never)]
    fn from(kind: ErrorKind) -> Error {
        Error(Box::new(kind))
    }
}

impl From<ConfigError> for Error {
    #[cold]
    #[inline(never)]
    fn from(e: ConfigError) -> Error {
        ErrorKind::Config(Box::new(e)).into()
    }
}

impl From<DescriptorError> for Error {
    #[cold]
    #[inline(never)]
    fn from(e: DescriptorError) -> Error {
        ErrorKind::Descriptor(Box::new(e)).into()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;
    use std::mem::size_of;

    #[test]
    fn an_error_is_one_pointer_and_results_fit_in_registers() {
        assert_eq!(size_of::<Error>(), size_of::<usize>());
        assert_eq!(size_of::<Error>(), 8);
        assert_eq!(size_of::<Option<Error>>(), 8);
        assert_eq!(size_of::<Result<u64>>(), 16);
        assert_eq!(size_of::<Result<usize>>(), 16);
        assert_eq!(size_of::<Result<crate::Handle>>(), 16);
        assert!(size_of::<Result<()>>() <= 16);
    }

    #[test]
    fn messages_are_those_of_the_kind() {
        let e: Error = ErrorKind::HeapLimit {
            requested: 48,
            in_use: 1000,
            limit: 1024,
        }
        .into();
        assert_eq!(
            e.to_string(),
            "heap limit reached: 48 bytes requested with 1000 of 1024 bytes in use after a global collection"
        );
        assert!(matches!(
            e.kind(),
            ErrorKind::HeapLimit { requested: 48, .. }
        ));
        assert_eq!(format!("{e:?}"), format!("{:?}", e.kind()));

        let e = Error::misuse(format!("field {} of a vector is a value", 2));
        assert_eq!(
            e.to_string(),
            "invalid use of the API: field 2 of a vector is a value"
        );
        assert!(
            matches!(e.into_kind(), ErrorKind::Misuse(m) if m == "field 2 of a vector is a value")
        );

        let e: Error = ErrorKind::UnknownDescriptor(7).into();
        assert_eq!(e.to_string(), "unknown object descriptor id 7");

        let e: Error = ConfigError {
            setting: "local-heap",
            value: "3".into(),
            allowed: "64 KiB ..= 1 GiB".into(),
        }
        .into();
        assert_eq!(
            e.to_string(),
            "invalid value \"3\" for setting `local-heap`: allowed 64 KiB ..= 1 GiB"
        );
        assert!(matches!(e.kind(), ErrorKind::Config(c) if c.setting == "local-heap"));

        let e: Error = DescriptorError::TableFull { capacity: 32768 }.into();
        assert_eq!(
            e.to_string(),
            "descriptor table is full: the 15-bit ID space holds 32768 descriptors"
        );
        assert!(
            matches!(e.kind(), ErrorKind::Descriptor(d) if **d == DescriptorError::TableFull { capacity: 32768 })
        );
    }

    #[test]
    fn the_os_error_is_the_source() {
        let e: Error = ErrorKind::Os {
            what: "starting a thread",
            source: std::io::Error::from_raw_os_error(libc::EAGAIN),
        }
        .into();
        let source = e.source().expect("an Os error has its io::Error as source");
        assert_eq!(
            source.to_string(),
            std::io::Error::from_raw_os_error(libc::EAGAIN).to_string()
        );
        assert!(e
            .to_string()
            .starts_with("operating system: starting a thread: "));
        assert!(Error::misuse("x").source().is_none());
    }
}
