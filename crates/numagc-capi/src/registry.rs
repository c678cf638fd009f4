//! What C holds in place of a Rust object (a global root, a channel): an id
//! in a process-wide table. Ids are never reused, so a freed, foreign or
//! forged id is an error code, never a dangling pointer, and every entry
//! records its runtime, so that freeing a runtime frees its entries.

use crate::runtime::lock;
use std::collections::BTreeMap;
use std::sync::Mutex;

struct Table<T> {
    next: u64,
    live: BTreeMap<u64, (u64, T)>,
}

pub(crate) struct Registry<T>(Mutex<Table<T>>);

impl<T: Clone> Registry<T> {
    pub const fn new() -> Self {
        Registry(Mutex::new(Table {
            next: 1,
            live: BTreeMap::new(),
        }))
    }

    /// Registers `t` of runtime `runtime`; returns its id (never 0).
    pub fn insert(&self, runtime: u64, t: T) -> u64 {
        let mut g = lock(&self.0);
        let id = g.next;
        g.next += 1;
        g.live.insert(id, (runtime, t));
        id
    }

    /// The runtime and object of `id`, if live. The table's lock is not
    /// held afterwards (using the object may wait or collect).
    pub fn get(&self, id: u64) -> Option<(u64, T)> {
        lock(&self.0).live.get(&id).cloned()
    }

    /// Unregisters `id`; the object is dropped by the caller, outside the lock.
    pub fn remove(&self, id: u64) -> Option<T> {
        lock(&self.0).live.remove(&id).map(|(_, t)| t)
    }

    /// Unregisters every entry of `runtime` (it is being freed).
    pub fn remove_runtime(&self, runtime: u64) {
        let dropped: Vec<(u64, T)> = {
            let mut g = lock(&self.0);
            let ids: Vec<u64> = g
                .live
                .iter()
                .filter(|(_, e)| e.0 == runtime)
                .map(|(&id, _)| id)
                .collect();
            ids.iter().filter_map(|id| g.live.remove(id)).collect()
        };
        drop(dropped);
    }
}
