//! Weighted reference counting of global addresses: the books of the
//! owner (the global indirection table, GIT) and of the holders (the
//! import table), as `gumsmp-shared-distributed-heaps.txt` §2.1 keeps
//! them for GUM's global addresses (GAs).
//!
//! An object that cannot be copied to another PE (mutable, or past the
//! packet limit) travels as a GA: (owner PE, id in the owner's GIT,
//! weight). The owner's GIT entry holds the object (a root of its local
//! collections) and the weight it has given out; every reference to the
//! object on another PE carries part of that weight.
//!
//! Invariant (checked by the tests, and by [`Ledger`] over a whole
//! simulated group): for every GA, the owner's outstanding weight equals
//! the weights the holders keep plus the weights in messages on their
//! way (references sent on, weight returned). So the owner frees its
//! entry exactly when every reference is gone, without ever counting
//! references.
//!
//! - **Sending a reference on** splits the sender's weight in halves: one
//!   travels, one stays; the owner is not told.
//! - **A holder's reference dying** (its local collection finds the
//!   FetchMe dead) returns its whole weight to the owner, which drops
//!   the entry when its outstanding weight reaches zero.
//! - **Weight underflow**, a weight of 1 that must be split, is handled
//!   by an *indirection* (the choice of the literature that needs no
//!   round trip: Bevan 1987, Watson & Watson 1987): the holder exports its
//!   own FetchMe under a GA of its own, with full weight, and sends
//!   that; its FetchMe keeps its weight of 1 to the owner, and lives
//!   as long as the indirection's entry does. (The other choice, asking
//!   the owner for more weight, blocks the sender for a round trip.)
//! - **Importing a GA already held** merges the weights into the one
//!   entry: an object imported twice is one object on the holder.
//! - Weights are `u32` on the wire, the owner's and a holder's sums
//!   `u64`: a holder that imports the same GA many times cannot overflow.
//!
//! Choice: a new GA gets `FULL_WEIGHT` = 2^16, enough for 16 hops of
//! halving before an indirection, small enough that sums never approach
//! `u64` limits. Exporting an object already exported gives a new share
//! of weight under the same id ([`Git::reexport`]), so the receiver's
//! import table merges it.
//!
//! This module is the bookkeeping, generic over what a table holds;
//! `super::global` ties it to the heap (GIT entries in global-root slots,
//! imports as weak references to FetchMes, the `return-weight` message),
//! as `docs/design/global-addresses.md` planned it.

use std::collections::HashMap;

/// The weight of a fresh global address.
pub const FULL_WEIGHT: u32 = 1 << 16;

/// A global object's name: its owner PE and its id in the owner's GIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GlobalId {
    pub pe: u32,
    pub id: u64,
}

/// A reference to a global object, with the weight it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalAddress {
    pub gid: GlobalId,
    pub weight: u32,
}

/// What a table refused: a message that does not fit the books.
#[derive(Debug, PartialEq, Eq)]
pub enum WeightError {
    /// No entry of this id (never exported, or every weight returned).
    Unknown(GlobalId),
    /// More weight returned than the owner gave out.
    TooMuch {
        gid: GlobalId,
        returned: u64,
        outstanding: u64,
    },
    /// A weight of zero (no reference carries none).
    Zero(GlobalId),
}

impl std::fmt::Display for WeightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WeightError::Unknown(g) => write!(f, "no global object {}/{}", g.pe, g.id),
            WeightError::TooMuch {
                gid,
                returned,
                outstanding,
            } => write!(
                f,
                "weight {returned} returned for global object {}/{}, which has {outstanding} outstanding",
                gid.pe, gid.id
            ),
            WeightError::Zero(g) => write!(f, "a weight of 0 for global object {}/{}", g.pe, g.id),
        }
    }
}

struct Entry<T> {
    value: T,
    outstanding: u64,
}

/// The owner's books: the global indirection table of one PE.
pub struct Git<T> {
    pe: u32,
    next: u64,
    entries: HashMap<u64, Entry<T>>,
}

impl<T> Git<T> {
    pub fn new(pe: u32) -> Git<T> {
        Git {
            pe,
            next: 0,
            entries: HashMap::new(),
        }
    }

    /// Exports `value` under a new id, with full weight.
    pub fn export(&mut self, value: T) -> GlobalAddress {
        let id = self.next;
        self.next += 1;
        self.entries.insert(
            id,
            Entry {
                value,
                outstanding: u64::from(FULL_WEIGHT),
            },
        );
        GlobalAddress {
            gid: GlobalId { pe: self.pe, id },
            weight: FULL_WEIGHT,
        }
    }

    /// A new share of full weight for the live entry `id`.
    ///
    /// Errors: [`WeightError::Unknown`] when the entry is gone (all its
    /// weight came back first): the caller exports the object anew.
    pub fn reexport(&mut self, id: u64) -> Result<GlobalAddress, WeightError> {
        let gid = GlobalId { pe: self.pe, id };
        let e = self.entries.get_mut(&id).ok_or(WeightError::Unknown(gid))?;
        e.outstanding += u64::from(FULL_WEIGHT);
        Ok(GlobalAddress {
            gid,
            weight: FULL_WEIGHT,
        })
    }

    /// A share of weight for an object: under its entry `id` when that
    /// is live (the object went out before), else under a new entry of
    /// `value()`. One call under the table's lock, so that the last of an
    /// entry's weight coming back between a look-up and a re-export
    /// cannot leave a GA naming a dropped entry
    /// (`loom_models::pe_weight`).
    pub fn share(&mut self, id: Option<u64>, value: impl FnOnce() -> T) -> GlobalAddress {
        match id.map(|id| self.reexport(id)) {
            Some(Ok(ga)) => ga,
            _ => self.export(value()),
        }
    }

    /// `weight` of entry `id` came back. Returns the entry's value when
    /// that was the last of its weight (the entry is gone: its root may
    /// die), else `None`.
    ///
    /// Errors: an unknown id, a zero weight, or more weight than is
    /// outstanding (the books are left as they were).
    pub fn returned(&mut self, id: u64, weight: u32) -> Result<Option<T>, WeightError> {
        let gid = GlobalId { pe: self.pe, id };
        if weight == 0 {
            return Err(WeightError::Zero(gid));
        }
        let e = self.entries.get_mut(&id).ok_or(WeightError::Unknown(gid))?;
        let w = u64::from(weight);
        if w > e.outstanding {
            return Err(WeightError::TooMuch {
                gid,
                returned: w,
                outstanding: e.outstanding,
            });
        }
        e.outstanding -= w;
        if e.outstanding == 0 {
            return Ok(self.entries.remove(&id).map(|e| e.value));
        }
        Ok(None)
    }

    pub fn get(&self, id: u64) -> Option<&T> {
        self.entries.get(&id).map(|e| &e.value)
    }

    /// The PE whose table this is.
    pub fn pe(&self) -> u32 {
        self.pe
    }

    /// Weight given out and not yet returned, for entry `id`.
    pub fn outstanding(&self, id: u64) -> Option<u64> {
        self.entries.get(&id).map(|e| e.outstanding)
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every live entry's value: the root set a collection scans and
    /// updates.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.entries.values_mut().map(|e| &mut e.value)
    }
}

struct Held<T> {
    local: T,
    weight: u64,
}

/// How a held reference is sent on ([`Imports::split`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Split {
    /// Send this GA; half the weight stayed.
    Half(GlobalAddress),
    /// The weight held is 1: export this PE's own FetchMe (an
    /// indirection, [`Git::export`]) and send that GA instead; the held
    /// reference stays, with its weight, as long as the indirection does.
    Underflow,
}

/// A holder's books: the GAs of other PEs' objects held here, each with
/// its one local object (FetchMe or copy) and the weight held.
pub struct Imports<T> {
    entries: HashMap<GlobalId, Held<T>>,
}

impl<T> Default for Imports<T> {
    fn default() -> Self {
        Imports {
            entries: HashMap::new(),
        }
    }
}

impl<T> Imports<T> {
    /// Takes `ga` in: its weight joins the entry of its object, made by
    /// `make` when it is the first reference here. Returns the entry's
    /// local object.
    ///
    /// Errors: [`WeightError::Zero`].
    pub fn import(
        &mut self,
        ga: GlobalAddress,
        make: impl FnOnce() -> T,
    ) -> Result<&T, WeightError> {
        if ga.weight == 0 {
            return Err(WeightError::Zero(ga.gid));
        }
        let e = self.entries.entry(ga.gid).or_insert_with(|| Held {
            local: make(),
            weight: 0,
        });
        e.weight += u64::from(ga.weight);
        Ok(&e.local)
    }

    /// Takes `ga` in with `local` as the entry's local object: the weight
    /// joins the entry (or starts it), and the local object it had, if
    /// any, is given back (it died: its successor replaces it).
    ///
    /// Errors: [`WeightError::Zero`].
    pub fn replace(&mut self, ga: GlobalAddress, local: T) -> Result<Option<T>, WeightError> {
        if ga.weight == 0 {
            return Err(WeightError::Zero(ga.gid));
        }
        match self.entries.get_mut(&ga.gid) {
            Some(e) => {
                e.weight += u64::from(ga.weight);
                Ok(Some(std::mem::replace(&mut e.local, local)))
            }
            None => {
                self.entries.insert(
                    ga.gid,
                    Held {
                        local,
                        weight: u64::from(ga.weight),
                    },
                );
                Ok(None)
            }
        }
    }

    /// Sends a reference to `gid` on: half its weight (at most
    /// `FULL_WEIGHT`, what fits the wire) goes, the rest stays; a weight
    /// of 1 cannot be split ([`Split::Underflow`]).
    ///
    /// Errors: [`WeightError::Unknown`] when `gid` is not held here.
    pub fn split(&mut self, gid: GlobalId) -> Result<Split, WeightError> {
        let e = self
            .entries
            .get_mut(&gid)
            .ok_or(WeightError::Unknown(gid))?;
        if e.weight < 2 {
            return Ok(Split::Underflow);
        }
        let send = (e.weight / 2).min(u64::from(FULL_WEIGHT));
        e.weight -= send;
        Ok(Split::Half(GlobalAddress {
            gid,
            weight: send as u32,
        }))
    }

    /// The local reference to `gid` died: its entry goes, and the weight
    /// to return to the owner comes back, in `u32` shares (the wire's
    /// width; one but for a holder that merged very many imports).
    pub fn dropped(&mut self, gid: GlobalId) -> Option<Vec<u32>> {
        let e = self.entries.remove(&gid)?;
        let mut w = e.weight;
        let mut shares = Vec::with_capacity(1);
        while w > 0 {
            let s = w.min(u64::from(u32::MAX));
            shares.push(s as u32);
            w -= s;
        }
        Some(shares)
    }

    pub fn get(&self, gid: GlobalId) -> Option<&T> {
        self.entries.get(&gid).map(|e| &e.local)
    }

    /// The weight held for `gid`.
    pub fn weight(&self, gid: GlobalId) -> Option<u64> {
        self.entries.get(&gid).map(|e| e.weight)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The GAs held.
    pub fn gids(&self) -> impl Iterator<Item = GlobalId> + '_ {
        self.entries.keys().copied()
    }

    /// Every held entry's local object (the FetchMes a collection
    /// scans weakly).
    pub fn locals_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.entries.values_mut().map(|e| &mut e.local)
    }
}

/// The weight books of a whole group, checked: for every GA, the
/// owner's outstanding weight is what the holders keep plus what is in
/// flight. The torture tester's hybrid mode and the tests keep one.
#[derive(Default)]
pub struct Ledger {
    /// Per GA: weight in messages not yet delivered.
    in_flight: HashMap<GlobalId, u64>,
}

impl Ledger {
    pub fn sent(&mut self, gid: GlobalId, weight: u32) {
        *self.in_flight.entry(gid).or_default() += u64::from(weight);
    }

    pub fn delivered(&mut self, gid: GlobalId, weight: u32) {
        let w = self.in_flight.entry(gid).or_default();
        *w -= u64::from(weight);
        if *w == 0 {
            self.in_flight.remove(&gid);
        }
    }

    /// Checks the invariant for every GA of `owners` (one GIT per PE, in
    /// PE order) against `holders` (one import table per PE); returns
    /// the first GA whose books do not add up.
    pub fn check<T, U>(&self, owners: &[&Git<T>], holders: &[&Imports<U>]) -> Result<(), String> {
        for git in owners {
            for (&id, e) in &git.entries {
                let gid = GlobalId { pe: git.pe, id };
                let held: u64 = holders.iter().filter_map(|h| h.weight(gid)).sum();
                let flying = self.in_flight.get(&gid).copied().unwrap_or(0);
                if e.outstanding != held + flying {
                    return Err(format!(
                        "global object {}/{id}: {} outstanding, {held} held + {flying} in flight",
                        gid.pe, e.outstanding
                    ));
                }
            }
        }
        // No holder keeps weight of an entry its owner has dropped.
        for h in holders {
            for gid in h.entries.keys() {
                let owner = owners
                    .iter()
                    .find(|g| g.pe == gid.pe)
                    .ok_or_else(|| format!("a reference to PE {}, not in the group", gid.pe))?;
                if owner.get(gid.id).is_none() {
                    return Err(format!(
                        "global object {}/{} held after its owner dropped it",
                        gid.pe, gid.id
                    ));
                }
            }
        }
        Ok(())
    }
}
