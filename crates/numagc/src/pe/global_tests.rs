//! Global addresses on a group in process: weight underflow and its
//! indirection, own GAs coming home, packings that fail, and GAs a packet
//! must not carry.

use super::group::PeContext;
use super::pack::{pack_in, tag, unpack_in, Packing, KIND_GLOBAL};
use super::weight::FULL_WEIGHT;
use super::{Exports, PeGroup, PACKET_LIMIT_WORDS};
use crate::error::{ErrorKind, Result};
use crate::object::header::{Header, ID_ARRAY};
use crate::runtime::{small_test_config, test_plan};
use crate::{Handle, Scope};
use std::sync::Arc;

const TASK: Packing = Packing::Task {
    limit: PACKET_LIMIT_WORDS,
};

/// An array of one field holding the argument: a task whose value is a
/// mutable object of the PE that runs it.
fn boxed_in_array<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    s.alloc_array(1, args[0])
}

fn group(pes: usize) -> PeGroup {
    // The verifier after every collection, on the tests' plan.
    let config = small_test_config(test_plan(), 1, true, 1 << 20)
        .build()
        .unwrap();
    let mut e = Exports::new();
    e.register("boxed_in_array", boxed_in_array).unwrap();
    PeGroup::new(pes, config, e, |_| Ok(())).unwrap()
}

/// The task `group` registered.
fn array_export() -> super::Export {
    let mut e = Exports::new();
    e.register("boxed_in_array", boxed_in_array).unwrap()
}

fn ctx(s: &mut Scope<'_>) -> Arc<PeContext> {
    s.vproc_mut().shared.pe.get().expect("a PE").clone()
}

/// Runs `f` on PE `pe`'s vproc 0 with its context.
fn on<R: Send + 'static>(
    g: &PeGroup,
    pe: usize,
    f: impl for<'s> FnOnce(&mut Scope<'s>, &PeContext) -> R + Send + 'static,
) -> R {
    g.runtime(pe)
        .run_on(0, move |s| {
            let c = ctx(s);
            f(s, &c)
        })
        .unwrap()
}

#[test]
fn weight_underflow_makes_an_indirection_that_accesses_follow() {
    let g = group(2);
    // PE 0 exports an array; PE 1 keeps its FetchMe in a global root.
    let packet = on(&g, 0, |s, c| {
        let arr = s.alloc_array(1, Handle::int(5))?;
        let root = s.global_root(arr)?;
        Ok::<_, crate::Error>((pack_in(s, &[arr], TASK, c)?, root))
    })
    .unwrap();
    let (packet, arr_root) = packet;
    let (halves, indirection, fm_root) = on(&g, 1, move |s, c| -> Result<_> {
        let fm = unpack_in(s, &packet, 0, Some(c))?[0];
        assert!(s.is_remote(fm));
        assert_eq!(s.remote_len(fm), 1);
        // 16 halvings take the weight from 2^16 to 1; the 17th send
        // cannot split it and exports the FetchMe as an indirection.
        let mut halves = Vec::new();
        for _ in 0..16 {
            halves.push(pack_in(s, &[fm], TASK, c)?);
        }
        assert_eq!(c.books_len(), (0, 1));
        let indirection = pack_in(s, &[fm], TASK, c)?;
        assert_eq!(c.books_len(), (1, 1), "the indirection's GIT entry");
        Ok((halves, indirection, s.global_root(fm)?))
    })
    .unwrap();
    assert_eq!(FULL_WEIGHT, 1 << 16);
    // The halves come home: each is the array itself, its weight back.
    on(&g, 0, move |s, c| -> Result<()> {
        let arr = s.get_global(&arr_root)?;
        for p in &halves {
            let back = unpack_in(s, p, 1, Some(c))?[0];
            assert!(s.view(back).same(s.view(arr)));
        }
        assert_eq!(c.books_len(), (1, 0), "PE 1 still holds a weight of 1");
        // Through the indirection: PE 0 reads and writes its own array by
        // way of PE 1.
        let fm = unpack_in(s, &indirection, 1, Some(c))?[0];
        assert!(s.is_remote(fm));
        let x = s.remote_get(fm, 0)?;
        assert_eq!(s.as_int(x), Some(5));
        s.remote_set(fm, 0, Handle::int(9))?;
        assert_eq!(s.view(arr).field(0).as_int(), Some(9));
        drop(arr_root);
        Ok(())
    })
    .unwrap();
    drop(fm_root);
    assert_eq!(g.settle(), (0, 0));
    assert!(g.take_errors().is_empty());
}

#[test]
fn a_failed_packing_gives_its_weight_back() {
    let g = group(2);
    on(&g, 0, |s, c| -> Result<()> {
        let arr = s.alloc_array(1, Handle::int(5))?;
        let x = s.alloc_vector(&[Handle::int(1)])?;
        let weak = s.weak_ref(x)?;
        // The array is exported before the ephemeron is met and refused.
        let bad = s.alloc_vector(&[arr, weak])?;
        let e = pack_in(s, &[bad], TASK, c).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::NotExportable(_)), "{e}");
        assert_eq!(c.books_len(), (0, 0), "the array's entry is gone again");
        let v = s.alloc_vector(&[arr, x])?;
        // Packed for real, it has one entry; twice, still one.
        let p = pack_in(s, &[v, arr], TASK, c)?;
        assert_eq!(c.books_len(), (1, 0));
        let q = pack_in(s, &[arr], TASK, c)?;
        assert_eq!(c.books_len(), (1, 0));
        // Both come home to the same array (their weight with them).
        let back = unpack_in(s, &p, 1, Some(c))?;
        assert!(s.view(back[1]).same(s.view(arr)));
        assert!(s.view(back[0]).field(0).same(s.view(arr)));
        unpack_in(s, &q, 1, Some(c))?;
        assert_eq!(c.books_len(), (0, 0));
        Ok(())
    })
    .unwrap();
}

/// A packet of one global address.
fn ga_packet(pe: u64, id: u64, weight: u64, header: u64) -> Vec<u64> {
    vec![1, 1, 0, tag(KIND_GLOBAL, 0, 4), pe, id, weight, header, 0]
}

#[test]
fn global_addresses_that_break_the_books_are_refused_naming_the_sender() {
    let g = group(2);
    let array = Header::new(ID_ARRAY, 1).bits();
    let refused = |pe: usize, p: Vec<u64>| -> String {
        on(&g, pe, move |s, c| match unpack_in(s, &p, 1, Some(c)) {
            Err(e) => match e.into_kind() {
                ErrorKind::Pe { pe, message } => {
                    assert_eq!(pe, 1);
                    message
                }
                k => panic!("not a PE error: {k:?}"),
            },
            Ok(_) => panic!("accepted"),
        })
    };
    assert!(refused(1, ga_packet(5, 0, 1, array)).contains("outside the group of 2"));
    assert!(refused(1, ga_packet(0, 0, 0, array)).contains("weight 0"));
    assert!(refused(1, ga_packet(0, 0, 1 << 32, array)).contains("weight 4294967296"));
    assert!(refused(1, ga_packet(0, 0, 1, 0)).contains("not an object header"));
    // PE 0's own ids: one it never gave out, and more weight than it did.
    assert!(refused(0, ga_packet(0, 99, 1, array)).contains("no global object 0/99"));
    let (p, root) = on(&g, 0, |s, c| {
        let arr = s.alloc_array(1, Handle::int(5)).unwrap();
        (
            pack_in(s, &[arr], TASK, c).unwrap(),
            s.global_root(arr).unwrap(),
        )
    });
    let id = p[5];
    let m = refused(0, ga_packet(0, id, u64::from(FULL_WEIGHT) + 1, array));
    assert!(m.contains("which has 65536 outstanding"), "{m}");
    // The books are as they were: the right weight is taken.
    on(&g, 0, move |s, c| {
        unpack_in(s, &p, 1, Some(c)).unwrap();
        assert_eq!(c.books_len(), (0, 0));
        drop(root);
    });
}

/// A chain of `n` vectors `[k, next]`, k = n - 1 down to 0, and the sum.
fn chain<'s>(s: &mut Scope<'s>, n: i64) -> Result<Handle<'s>> {
    let mut h = Handle::int(-1);
    for k in 0..n {
        h = s.alloc_vector(&[Handle::int(k), h])?;
    }
    Ok(h)
}

#[test]
fn graphs_past_the_limit_travel_as_fetchmes_that_resolve() {
    let g = group(2);
    let small = Packing::Task { limit: 64 };
    let (p, q) = on(&g, 0, move |s, c| -> Result<_> {
        let list = chain(s, 300)?;
        let big = s.alloc_raw(&(0..10_000u64).collect::<Vec<_>>())?;
        // The list's head is copied, its tail past the soft limit is a GA;
        // the raw object alone is past the limit: it is one GA.
        let p = pack_in(s, &[list], small, c)?;
        assert!(p.len() <= 64);
        let q = pack_in(s, &[big], small, c)?;
        assert_eq!(c.books_len(), (2, 0));
        Ok((p, q))
    })
    .unwrap();
    on(&g, 1, move |s, c| -> Result<()> {
        let mut cur = unpack_in(s, &p, 0, Some(c))?[0];
        assert!(!s.is_remote(cur), "the head was copied");
        let (mut sum, mut fetches) = (0, 0);
        loop {
            if s.is_remote(cur) {
                cur = s.resolve(cur)?;
                fetches += 1;
            }
            let v = s.view(cur);
            let Some(k) = v.field(0).as_int() else {
                unreachable!()
            };
            sum += k;
            if v.field(1).as_int() == Some(-1) {
                break;
            }
            cur = s.field(cur, 1)?;
        }
        assert_eq!(sum, (0..300).sum::<i64>());
        // The answer copies up to the PE's packet limit: the rest at once.
        assert_eq!(fetches, 1);
        let big = unpack_in(s, &q, 0, Some(c))?[0];
        assert!(s.is_remote(big));
        assert_eq!(s.remote_len(big), 10_000);
        let copy = s.resolve(big)?;
        assert!(!s.is_remote(copy));
        let words = s.view(copy).raw_words().expect("raw").to_vec();
        assert_eq!(words, (0..10_000u64).collect::<Vec<_>>());
        // A mutable or local value resolves to itself.
        let arr = s.alloc_array(1, Handle::int(0))?;
        let same = s.resolve(arr)?;
        assert!(s.view(same).same(s.view(arr)));
        Ok(())
    })
    .unwrap();
    assert_eq!(g.settle(), (0, 0));
    assert!(g.take_errors().is_empty());
}

#[test]
fn a_dropped_group_frees_its_runtimes_after_global_objects_moved() {
    let g = group(2);
    let weak: Vec<_> = (0..2)
        .map(|p| Arc::downgrade(g.runtime(p).shared()))
        .collect();
    let root = on(&g, 0, |s, _| {
        let arr = s.alloc_array(1, Handle::int(5)).unwrap();
        let fm = s.call_on(1, array_export(), &[arr]).unwrap();
        assert!(s.is_remote(fm));
        s.global_root(fm).unwrap()
    });
    drop(root);
    assert_eq!(g.settle(), (0, 0));
    drop(g);
    for (p, w) in weak.iter().enumerate() {
        assert!(w.upgrade().is_none(), "PE {p}'s runtime outlives its group");
    }
}

#[test]
fn a_busy_owner_serves_reads_at_its_safepoints() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let g = Arc::new(group(2));
    // PE 0 holds a FetchMe of an array on PE 1.
    let fm = on(&g, 0, |s, _| {
        let fm = s.call_on(1, array_export(), &[Handle::int(5)]).unwrap();
        assert!(s.is_remote(fm));
        s.global_root(fm).unwrap()
    });
    // PE 1's only vproc computes (allocating: it reaches safepoints) until
    // PE 0 has read, or 20 s.
    let read = Arc::new(AtomicBool::new(false));
    let busy = {
        let (g, read) = (g.clone(), read.clone());
        std::thread::spawn(move || {
            on(&g, 1, move |s, _| {
                let t0 = std::time::Instant::now();
                while !read.load(Ordering::SeqCst) && t0.elapsed().as_secs() < 20 {
                    s.scope(|s| s.alloc_vector(&[Handle::int(1); 4]).map(drop))
                        .unwrap();
                }
                read.load(Ordering::SeqCst)
            })
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(50));
    let r = read.clone();
    on(&g, 0, move |s, _| {
        let fm = s.get_global(&fm).unwrap();
        let x = s.remote_get(fm, 0).unwrap();
        assert_eq!(s.as_int(x), Some(5));
        r.store(true, Ordering::SeqCst);
    });
    assert!(
        busy.join().unwrap(),
        "the read waited for PE 1's computation to end"
    );
    assert_eq!(g.settle(), (0, 0));
}

/// Waits (at most 10 s) until `done`.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while !done() {
        if t0.elapsed() > std::time::Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    true
}

#[test]
fn a_refused_message_gives_back_the_weight_its_packet_carried() {
    use super::message::{AccessOp, Message};
    let g = group(3);
    // PE 0 packs two of its arrays, PE 1 one of its own.
    let pack_array = |pe: usize| {
        on(&g, pe, |s, c| {
            let arr = s.alloc_array(1, Handle::int(5)).unwrap();
            (
                pack_in(s, &[arr], TASK, c).unwrap(),
                s.global_root(arr).unwrap(),
            )
        })
    };
    let (task_args, root_a) = pack_array(0);
    let (stored, root_b) = pack_array(0);
    let (own, root_c) = pack_array(1);
    let books = |pe: usize| on(&g, pe, |_, c| c.books_len());
    assert_eq!((books(0), books(1)), ((2, 0), (1, 0)));
    on(&g, 2, move |_, c| {
        // A task of a function PE 1 does not have, carrying PE 0's array
        // and PE 1's own; a write to an object PE 1 never exported.
        let args: Vec<u64> = task_args.clone();
        c.send(
            1,
            &Message::Schedule {
                task: 7,
                export: 99,
                name_hash: 0,
                args,
            },
        )
        .unwrap();
        c.send(
            1,
            &Message::Schedule {
                task: 8,
                export: 99,
                name_hash: 0,
                args: own,
            },
        )
        .unwrap();
        c.send(
            1,
            &Message::Access {
                req: 1,
                reply_to: 2,
                gid: 12_345,
                field: 0,
                op: AccessOp::Set,
                packet: stored,
            },
        )
        .unwrap();
    });
    // Every weight came home: the owners dropped their entries.
    assert!(
        eventually(|| books(0) == (0, 0) && books(1) == (0, 0)),
        "books left: PE 0 {:?}, PE 1 {:?}",
        books(0),
        books(1)
    );
    drop((root_a, root_b, root_c));
    assert_eq!(g.settle(), (0, 0));
    // The answers PE 2 gets for what it never asked are refused too
    // (recorded when its service takes them, which may come later).
    let mut errors = Vec::new();
    let refused = eventually(|| {
        errors.extend(g.take_errors().into_iter().map(|e| e.to_string()));
        errors.iter().any(|e| e.contains("unknown task 7"))
    });
    assert!(refused, "{errors:?}");
}

/// An unpacking stopped by the heap limit gives back the weight of the
/// global addresses it did not reach: PE 0's entries all come home.
#[test]
fn an_unpacking_stopped_by_the_heap_limit_gives_back_the_weight_it_did_not_reach() {
    use super::pack::KIND_RAW;
    let config = small_test_config(test_plan(), 1, true, 1 << 20)
        .max_heap(8 << 20)
        .build()
        .unwrap();
    let g = PeGroup::new(2, config, Exports::new(), |_| Ok(())).unwrap();
    // Two arrays of PE 0, each packed alone: a packet of one global
    // address, whose object (tag and four words) is `p[3..8]`.
    let (gas, roots) = on(&g, 0, |s, c| {
        let mut out = (Vec::new(), Vec::new());
        for _ in 0..2 {
            let arr = s.alloc_array(1, Handle::int(5)).unwrap();
            let p = pack_in(s, &[arr], TASK, c).unwrap();
            assert_eq!((p.len(), p[3]), (9, tag(KIND_GLOBAL, 0, 4)));
            out.0.push(p[3..8].to_vec());
            out.1.push(s.global_root(arr).unwrap());
        }
        out
    });
    let books = |pe: usize| on(&g, pe, |_, c| c.books_len());
    assert_eq!(books(0), (2, 0));
    // [the first GA, a raw object of 16 MiB, past PE 1's heap limit, the
    // second GA], built in that order: the second is never reached.
    let big = 2 << 20;
    let mut p = vec![3, 3, 0];
    p.extend(&gas[0]);
    p.push(tag(KIND_RAW, 0, big as u64));
    p.extend(std::iter::repeat_n(7, big));
    p.extend(&gas[1]);
    p.extend([0, 2, 4]);
    let e = on(&g, 1, move |s, c| unpack_in(s, &p, 0, Some(c)).map(|_| ()));
    let e = e.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::HeapLimit { .. }), "{e}");
    // The first GA's FetchMe is garbage (the import scan returns its
    // weight); the second's weight went back when the unpacking stopped.
    drop(roots);
    assert_eq!(g.settle(), (0, 0));
    assert!(
        eventually(|| books(0) == (0, 0) && books(1) == (0, 0)),
        "books left: PE 0 {:?}, PE 1 {:?}",
        books(0),
        books(1)
    );
    assert!(g.take_errors().is_empty());
}
