//! The messages PEs exchange, and their wire format.
//!
//! GUM (`gumsmp-shared-distributed-heaps.txt` §2.1) moves work by a work
//! request answered with a packed graph; numagc's protocol has the same
//! shape (`super::group` runs it):
//!
//! - [`Message::Fish`]: an idle PE asks another for work;
//! - [`Message::Schedule`]: the answer, a task — an exported function's id
//!   and its packed arguments (`super::pack`);
//! - [`Message::NoWork`]: the answer when the PE has none to give;
//! - [`Message::Result`]: the task's packed result (or its error), sent
//!   back to the PE that exported it as soon as it is known. GUM leaves a
//!   result where it was computed until the exporter fetches it; every
//!   numagc task is joined by its forker, so sending it at once saves the
//!   fetch's round trip;
//! - [`Message::Declined`]: the task ran, but its result cannot travel (a
//!   mutable object, past the packet limit): its forker runs it again;
//! - [`Message::Stop`]: the job is over (sent by the PE that ran it);
//! - [`Message::Ended`]: a PE of another process has stopped serving, and
//!   these were its figures (its answer to `stop`, so that PE 0 reports
//!   every PE's traffic);
//! - [`Message::Access`]: a read or a write of a field of a global object
//!   (`super::global`), sent to its owner — or on from an indirection to
//!   the next owner, with the same `reply_to` and `req`;
//! - [`Message::Value`]: the answer to an access, sent to `reply_to`: the
//!   field's value packed, or nothing for a write, or the error;
//! - [`Message::ReturnWeight`]: a holder's reference to a global object
//!   died; its weight goes back to the owner (§2.1's weighted reference
//!   counting, `super::weight`).
//!
//! Every message is bytes, in process as over MPI, so the in-process
//! transport exercises the format the distributed one depends on. Layout,
//! little-endian: magic `NGPE` (4 bytes), version (2), kind (1), reserved
//! (1), sender (4), payload length in bytes (4), payload. [`decode`]
//! checks every one of them against the bytes it got and the PE the
//! transport says sent them, and refuses a message with an
//! [`ErrorKind::Pe`] naming the sender; nothing of a refused message is
//! used.

use crate::error::{Error, ErrorKind, Result};

/// `NGPE`, the first four bytes of every message.
pub(crate) const MAGIC: [u8; 4] = *b"NGPE";
/// The format's version: a PE refuses messages of another.
pub(crate) const VERSION: u16 = 2;
/// Bytes before the payload.
const HEADER: usize = 16;

const FISH: u8 = 1;
const SCHEDULE: u8 = 2;
const NO_WORK: u8 = 3;
const RESULT: u8 = 4;
const STOP: u8 = 5;
const DECLINED: u8 = 6;
const ENDED: u8 = 7;
const ACCESS: u8 = 8;
const VALUE: u8 = 9;
const RETURN_WEIGHT: u8 = 10;

/// Words of [`Message::Ended`]'s figures (`PeStats::to_words`).
pub(crate) const STATS_WORDS: usize = 18;

/// What a [`Message::Access`] does to its field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AccessOp {
    /// Reads a value field: the answer is the value, packed.
    Get,
    /// Reads a raw field: the answer is the word.
    GetRaw,
    /// Stores the packed value into a value field.
    Set,
    /// Stores the word into a raw field.
    SetRaw,
    /// Reads the whole (immutable) object: the answer is its graph,
    /// packed (the field is not used).
    Fetch,
}

impl AccessOp {
    const ALL: [AccessOp; 5] = [
        AccessOp::Get,
        AccessOp::GetRaw,
        AccessOp::Set,
        AccessOp::SetRaw,
        AccessOp::Fetch,
    ];

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> Option<AccessOp> {
        AccessOp::ALL.get(usize::from(c)).copied()
    }
}

/// One message between PEs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Message {
    /// A work request; the answer goes to the sender.
    Fish,
    /// A task for the receiver: `export`'s function (whose name hashes to
    /// `name_hash`, checked against the receiver's table) applied to the
    /// packed `args`. `task` is the exporter's id for it, sent back with
    /// the result.
    Schedule {
        task: u64,
        export: u32,
        name_hash: u64,
        args: Vec<u64>,
    },
    /// No task to give.
    NoWork,
    /// The result of the exporter's task `task`: its packed value, or the
    /// error it failed with on the sender.
    Result {
        task: u64,
        outcome: std::result::Result<Vec<u64>, String>,
    },
    /// The exporter's task `task` ran, but its result cannot be packed
    /// (`reason`): the exporter runs it itself.
    Declined { task: u64, reason: String },
    /// The job is over: stop serving.
    Stop,
    /// The sender stopped serving; its figures (`STATS_WORDS` words).
    Ended { stats: Vec<u64> },
    /// `op` on field `field` of the receiver's global object `gid`; the
    /// answer ([`Message::Value`] with `req`) goes to PE `reply_to`.
    /// `packet` is the value a `Set` stores (a packet, `super::pack`) or
    /// the word a `SetRaw` stores; empty for reads.
    Access {
        req: u64,
        reply_to: u32,
        gid: u64,
        field: u64,
        op: AccessOp,
        packet: Vec<u64>,
    },
    /// The answer to access `req` of the receiver: a packet (`Get`), one
    /// word (`GetRaw`), nothing (the writes), or the error.
    Value {
        req: u64,
        outcome: std::result::Result<Vec<u64>, String>,
    },
    /// `weight` of the receiver's global object `gid` comes back: a
    /// reference to it died on the sender.
    ReturnWeight { gid: u64, weight: u32 },
}

/// Writes `m`, sent by PE `sender`, as bytes.
pub(crate) fn encode(sender: usize, m: &Message) -> Vec<u8> {
    // One buffer: the header, its kind and length filled in at the end.
    let mut payload = Vec::with_capacity(HEADER + 64 + 8 * words_in(m));
    payload.resize(HEADER, 0);
    let kind = match m {
        Message::Fish => FISH,
        Message::Schedule {
            task,
            export,
            name_hash,
            args,
        } => {
            put_u64(&mut payload, *task);
            payload.extend_from_slice(&export.to_le_bytes());
            put_u64(&mut payload, *name_hash);
            put_words(&mut payload, args);
            SCHEDULE
        }
        Message::NoWork => NO_WORK,
        Message::Result { task, outcome } => {
            put_u64(&mut payload, *task);
            put_outcome(&mut payload, outcome);
            RESULT
        }
        Message::Declined { task, reason } => {
            put_u64(&mut payload, *task);
            payload.extend_from_slice(reason.as_bytes());
            DECLINED
        }
        Message::Stop => STOP,
        Message::Ended { stats } => {
            put_words(&mut payload, stats);
            ENDED
        }
        Message::Access {
            req,
            reply_to,
            gid,
            field,
            op,
            packet,
        } => {
            put_u64(&mut payload, *req);
            payload.extend_from_slice(&reply_to.to_le_bytes());
            put_u64(&mut payload, *gid);
            put_u64(&mut payload, *field);
            payload.push(op.code());
            put_words(&mut payload, packet);
            ACCESS
        }
        Message::Value { req, outcome } => {
            put_u64(&mut payload, *req);
            put_outcome(&mut payload, outcome);
            VALUE
        }
        Message::ReturnWeight { gid, weight } => {
            put_u64(&mut payload, *gid);
            payload.extend_from_slice(&weight.to_le_bytes());
            RETURN_WEIGHT
        }
    };
    let len = (payload.len() - HEADER) as u32;
    let header = &mut payload[..HEADER];
    header[0..4].copy_from_slice(&MAGIC);
    header[4..6].copy_from_slice(&VERSION.to_le_bytes());
    header[6] = kind;
    header[7] = 0;
    header[8..12].copy_from_slice(&(sender as u32).to_le_bytes());
    header[12..16].copy_from_slice(&len.to_le_bytes());
    payload
}

/// The words a message carries (its packet or figures), for sizing.
fn words_in(m: &Message) -> usize {
    match m {
        Message::Schedule { args, .. } => args.len(),
        Message::Result { outcome: Ok(w), .. } | Message::Value { outcome: Ok(w), .. } => w.len(),
        Message::Access { packet, .. } => packet.len(),
        Message::Ended { stats } => stats.len(),
        _ => 0,
    }
}

/// An outcome: tag 0 and the words, or tag 1 and the error's text.
fn put_outcome(out: &mut Vec<u8>, outcome: &std::result::Result<Vec<u64>, String>) {
    match outcome {
        Ok(words) => {
            out.push(0);
            put_words(out, words);
        }
        Err(message) => {
            out.push(1);
            out.extend_from_slice(message.as_bytes());
        }
    }
}

fn put_u64(out: &mut Vec<u8>, w: u64) {
    out.extend_from_slice(&w.to_le_bytes());
}

/// The words, little-endian. On a little-endian machine that is their
/// bytes as they lie, one `memcpy` (this is a packet's copy into a
/// message: a fetch's answer of a megabyte goes through here).
fn put_words(out: &mut Vec<u8>, words: &[u64]) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(words));
    } else {
        out.reserve(words.len() * 8);
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
}

/// Whether `bytes` are a `value` message of this version (its header
/// alone looked at; [`decode`] checks the rest).
pub(crate) fn is_value(bytes: &[u8]) -> bool {
    is_kind(bytes, VALUE)
}

/// Whether `bytes` are an `access` message of this version (as
/// [`is_value`]).
pub(crate) fn is_access(bytes: &[u8]) -> bool {
    is_kind(bytes, ACCESS)
}

fn is_kind(bytes: &[u8], kind: u8) -> bool {
    bytes.len() >= HEADER
        && bytes[0..4] == MAGIC
        && bytes[4..6] == VERSION.to_le_bytes()
        && bytes[6] == kind
}

/// Reads a message that the transport says PE `from` sent to a group of
/// `pes` PEs. Errors: [`ErrorKind::Pe`] naming `from` and what was wrong.
pub(crate) fn decode(from: usize, pes: usize, bytes: &[u8]) -> Result<Message> {
    let refuse = |what: String| -> Error {
        ErrorKind::Pe {
            pe: from,
            message: format!("refused message ({} bytes): {what}", bytes.len()),
        }
        .into()
    };
    if bytes.len() < HEADER {
        return Err(refuse(format!("shorter than the {HEADER}-byte header")));
    }
    if bytes[0..4] != MAGIC {
        return Err(refuse("not a numagc PE message (bad magic)".into()));
    }
    let version = u16::from_le_bytes([bytes[4], bytes[5]]);
    if version != VERSION {
        return Err(refuse(format!(
            "format version {version}, this PE speaks version {VERSION}"
        )));
    }
    let kind = bytes[6];
    let sender = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
    if sender != from || sender >= pes {
        return Err(refuse(format!(
            "claims to come from PE {sender} (group of {pes} PEs)"
        )));
    }
    let len = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
    let payload = &bytes[HEADER..];
    if payload.len() != len {
        return Err(refuse(format!(
            "payload of {} bytes where the header says {len}",
            payload.len()
        )));
    }
    let mut r = Reader { bytes: payload };
    let m = match kind {
        FISH => Message::Fish,
        NO_WORK => Message::NoWork,
        STOP => Message::Stop,
        SCHEDULE => {
            let task = r
                .u64()
                .ok_or_else(|| refuse("schedule: no task id".into()))?;
            let export = r
                .u32()
                .ok_or_else(|| refuse("schedule: no export id".into()))?;
            let name_hash = r
                .u64()
                .ok_or_else(|| refuse("schedule: no name hash".into()))?;
            let args = r
                .words()
                .ok_or_else(|| refuse("schedule: arguments not whole words".into()))?;
            Message::Schedule {
                task,
                export,
                name_hash,
                args,
            }
        }
        RESULT => {
            let task = r.u64().ok_or_else(|| refuse("result: no task id".into()))?;
            let outcome = r.outcome("result").map_err(refuse)?;
            Message::Result { task, outcome }
        }
        ACCESS => {
            let req = r
                .u64()
                .ok_or_else(|| refuse("access: no request id".into()))?;
            let reply_to = r
                .u32()
                .filter(|&p| (p as usize) < pes)
                .ok_or_else(|| refuse(format!("access: no PE of the group ({pes}) to answer")))?;
            let gid = r
                .u64()
                .ok_or_else(|| refuse("access: no global id".into()))?;
            let field = r.u64().ok_or_else(|| refuse("access: no field".into()))?;
            let op = r
                .u8()
                .and_then(AccessOp::from_code)
                .ok_or_else(|| refuse("access: no operation of 0..5".into()))?;
            let packet = r
                .words()
                .ok_or_else(|| refuse("access: value not whole words".into()))?;
            Message::Access {
                req,
                reply_to,
                gid,
                field,
                op,
                packet,
            }
        }
        VALUE => {
            let req = r
                .u64()
                .ok_or_else(|| refuse("value: no request id".into()))?;
            let outcome = r.outcome("value").map_err(refuse)?;
            Message::Value { req, outcome }
        }
        RETURN_WEIGHT => {
            let gid = r
                .u64()
                .ok_or_else(|| refuse("return-weight: no global id".into()))?;
            let weight = r
                .u32()
                .ok_or_else(|| refuse("return-weight: no weight".into()))?;
            if !r.rest().is_empty() {
                return Err(refuse("return-weight: trailing bytes".into()));
            }
            Message::ReturnWeight { gid, weight }
        }
        DECLINED => {
            let task = r
                .u64()
                .ok_or_else(|| refuse("declined: no task id".into()))?;
            let reason = String::from_utf8_lossy(r.rest()).into_owned();
            Message::Declined { task, reason }
        }
        ENDED => {
            let stats = r
                .words()
                .filter(|w| w.len() == STATS_WORDS)
                .ok_or_else(|| refuse(format!("ended: not {STATS_WORDS} words of figures")))?;
            Message::Ended { stats }
        }
        k => return Err(refuse(format!("unknown message kind {k}"))),
    };
    Ok(m)
}

/// Reads a payload front to back; `None` when it runs out.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (a, b) = self.bytes.split_at(n);
        self.bytes = b;
        Some(a)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// The rest of the payload as words (whole words only).
    fn words(&mut self) -> Option<Vec<u64>> {
        let rest = self.rest();
        if !rest.len().is_multiple_of(8) {
            return None;
        }
        // On a little-endian machine, bytes that lie 8-aligned (as a
        // received buffer usually does) are the words: one `memcpy`, no
        // zeroing first.
        if cfg!(target_endian = "little") {
            if let Ok(aligned) = bytemuck::try_cast_slice::<u8, u64>(rest) {
                return Some(aligned.to_vec());
            }
        }
        Some(
            rest.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        )
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }

    /// The rest as an outcome (`put_outcome`); the error names `what`.
    fn outcome(
        &mut self,
        what: &str,
    ) -> std::result::Result<std::result::Result<Vec<u64>, String>, String> {
        match self.u8() {
            Some(0) => self
                .words()
                .map(Ok)
                .ok_or_else(|| format!("{what}: value not whole words")),
            Some(1) => Ok(Err(String::from_utf8_lossy(self.rest()).into_owned())),
            Some(t) => Err(format!("{what}: outcome tag {t}")),
            None => Err(format!("{what}: no outcome")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Message> {
        vec![
            Message::Fish,
            Message::NoWork,
            Message::Stop,
            Message::Ended {
                stats: (0..STATS_WORDS as u64).collect(),
            },
            Message::Schedule {
                task: 7,
                export: 3,
                name_hash: 0xdead_beef_0123,
                args: vec![1, 2, u64::MAX],
            },
            Message::Schedule {
                task: 0,
                export: 0,
                name_hash: 0,
                args: vec![],
            },
            Message::Result {
                task: 9,
                outcome: Ok(vec![5, 6]),
            },
            Message::Result {
                task: 9,
                outcome: Err("heap limit reached".into()),
            },
            Message::Declined {
                task: 3,
                reason: "graph larger than the packet limit".into(),
            },
            Message::Access {
                req: 4,
                reply_to: 1,
                gid: 17,
                field: 3,
                op: AccessOp::Set,
                packet: vec![1, 0, 0, 7],
            },
            Message::Access {
                req: 5,
                reply_to: 0,
                gid: 0,
                field: 0,
                op: AccessOp::GetRaw,
                packet: vec![],
            },
            Message::Value {
                req: 4,
                outcome: Ok(vec![]),
            },
            Message::Value {
                req: 4,
                outcome: Err("index 9 out of bounds".into()),
            },
            Message::ReturnWeight {
                gid: 3,
                weight: 1 << 15,
            },
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in all() {
            let b = encode(2, &m);
            assert_eq!(decode(2, 3, &b).unwrap(), m);
        }
    }

    #[test]
    fn words_read_alike_from_aligned_and_unaligned_bytes() {
        let words: Vec<u64> = (0..33u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let mut bytes = Vec::new();
        put_words(&mut bytes, &words);
        assert_eq!(bytes.len(), 33 * 8);
        assert_eq!(&bytes[8..16], &words[1].to_le_bytes());
        // The same bytes at every offset of an 8-aligned buffer: one of
        // them is aligned (the copy path), the others not.
        let backing: Vec<u64> = vec![0; 35];
        let mut buf: Vec<u8> = bytemuck::cast_slice(&backing).to_vec();
        for at in 0..8 {
            buf[at..at + bytes.len()].copy_from_slice(&bytes);
            let mut r = Reader {
                bytes: &buf[at..at + bytes.len()],
            };
            assert_eq!(r.words().as_deref(), Some(&words[..]), "offset {at}");
        }
        let mut r = Reader {
            bytes: &bytes[..17],
        };
        assert_eq!(r.words(), None);
    }

    fn refused(from: usize, pes: usize, b: &[u8]) -> String {
        match decode(from, pes, b).unwrap_err().into_kind() {
            ErrorKind::Pe { pe, message } => {
                assert_eq!(pe, from);
                message
            }
            k => panic!("not a PE error: {k:?}"),
        }
    }

    #[test]
    fn every_truncation_is_refused_naming_the_sender() {
        for m in all() {
            let b = encode(1, &m);
            for len in 0..b.len() {
                refused(1, 2, &b[..len]);
            }
        }
    }

    #[test]
    fn bad_headers_are_refused() {
        let good = encode(1, &Message::Fish);
        let mut b = good.clone();
        b[0] = b'X';
        assert!(refused(1, 2, &b).contains("magic"));
        let mut b = good.clone();
        b[4] = 9;
        assert!(refused(1, 2, &b).contains("version 9"));
        let mut b = good.clone();
        b[6] = 200;
        assert!(refused(1, 2, &b).contains("unknown message kind 200"));
        // A sender the transport did not see, or outside the group.
        assert!(refused(0, 2, &good).contains("claims to come from PE 1"));
        assert!(refused(1, 1, &good).contains("group of 1"));
        // A payload longer than the header says.
        let mut b = good.clone();
        b.push(0);
        assert!(refused(1, 2, &b).contains("payload of 1 bytes"));
    }

    #[test]
    fn bad_payloads_are_refused() {
        let mut b = encode(
            0,
            &Message::Result {
                task: 1,
                outcome: Ok(vec![1]),
            },
        );
        // Outcome tag 2 does not exist.
        b[HEADER + 8] = 2;
        assert!(refused(0, 1, &b).contains("outcome tag 2"));
        // Arguments that are not whole words.
        let mut b = encode(
            0,
            &Message::Schedule {
                task: 1,
                export: 0,
                name_hash: 0,
                args: vec![1],
            },
        );
        b.pop();
        let len = (b.len() - HEADER) as u32;
        b[12..16].copy_from_slice(&len.to_le_bytes());
        assert!(refused(0, 1, &b).contains("not whole words"));
        // Figures of the wrong length.
        let b = encode(0, &Message::Ended { stats: vec![0; 3] });
        assert!(refused(0, 1, &b).contains("not 18 words of figures"));
        // An access answered to a PE outside the group, or of no operation.
        let access = Message::Access {
            req: 1,
            reply_to: 5,
            gid: 0,
            field: 0,
            op: AccessOp::Get,
            packet: vec![],
        };
        assert!(refused(0, 2, &encode(0, &access)).contains("no PE of the group (2)"));
        let mut b = encode(
            0,
            &Message::Access {
                req: 1,
                reply_to: 1,
                gid: 0,
                field: 0,
                op: AccessOp::Get,
                packet: vec![],
            },
        );
        b[HEADER + 28] = 5;
        assert!(refused(0, 2, &b).contains("no operation"));
    }
}
