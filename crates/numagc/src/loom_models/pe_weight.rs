//! Model of the owner's books of weighted reference counting
//! (`pe/weight.rs`, `gumsmp-shared-distributed-heaps.txt` §2.1): a vproc
//! sends an object out again (`Git::share`, at packing) while the PE's
//! service takes back the last weight of the object's entry
//! (`Git::returned`, on a `return-weight` message). Both work on the one
//! GIT behind a `crate::sync::Mutex`.
//!
//! Whatever the interleaving, the GA the vproc sends names a live entry
//! whose outstanding weight is exactly the weight sent, and an entry is
//! dropped only with all its weight back.
//!
//! Mutation check (done while writing this model, then reverted): the
//! vproc looking the entry up under one lock and re-exporting under
//! another (`outstanding(id)` then `reexport(id)`, an `unwrap` of the
//! second) fails [`a_reexport_racing_the_last_return_names_a_live_entry`]:
//! the entry is gone between the two.

use crate::pe::weight::{Git, FULL_WEIGHT};
use crate::sync::lock;
use loom::sync::{Arc, Mutex};
use loom::thread;

#[test]
fn a_reexport_racing_the_last_return_names_a_live_entry() {
    loom::model(|| {
        let git = Arc::new(Mutex::new(Git::<&'static str>::new(0)));
        // The object went out once; its whole weight is on its way back.
        let first = lock(&git).export("obj");
        let service = {
            let git = git.clone();
            thread::spawn(move || lock(&git).returned(first.gid.id, first.weight).unwrap())
        };
        let vproc = {
            let git = git.clone();
            thread::spawn(move || lock(&git).share(Some(first.gid.id), || "obj"))
        };
        let freed = service.join().unwrap();
        let sent = vproc.join().unwrap();
        let g = lock(&git);
        assert_eq!(g.len(), 1, "one live entry: the one the GA names");
        assert_eq!(g.outstanding(sent.gid.id), Some(u64::from(sent.weight)));
        assert_eq!(sent.weight, FULL_WEIGHT);
        // The first entry was dropped exactly when the re-export came
        // after the last return (then the GA names a new entry).
        assert_eq!(freed.is_some(), sent.gid.id != first.gid.id);
    });
}
