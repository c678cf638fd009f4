//! Fuzzing descriptors: [`run`] builds up to 12 descriptors from the input
//! (any name, any size — small, at the edges of the bitmap words, or
//! huge — any pointer offsets, in range or not, repeated or not, mutable or
//! not), registers the accepted ones on a small runtime, and runs jobs that
//! allocate objects of them, read every field back, store into them, and
//! collect in between.
//!
//! Checked, besides "no panic, no abort, no hang":
//! * `Descriptor::mixed` accepts exactly the valid layouts (size at least
//!   1 and at most `MAX_MIXED_SIZE`, offsets in range and distinct) and
//!   refuses the others with the matching `DescriptorError`;
//! * an accepted descriptor's pointer and raw offsets partition
//!   `0..size`, ascending, and agree with `is_pointer_field`;
//! * allocation with the wrong number of value or raw fields is refused
//!   (`Misuse`), with the right numbers it succeeds or hits the heap limit;
//! * every field reads back what was stored, after minor, major and global
//!   collections; out-of-range and wrong-kind reads, and stores into
//!   immutable objects or the wrong kind of field, are errors.

use crate::Input;
use numagc::object::descriptor::MAX_MIXED_SIZE;
use numagc::{Config, DescId, Descriptor, DescriptorError, Error, ErrorKind, Handle, ObjectKind, Runtime, Scope};

const MAX_DESCRIPTORS: usize = 12;
const MAX_JOB_OPS: usize = 40;
/// Objects allocated by one job are at most this large (in fields), so
/// that an input runs in milliseconds; larger descriptors are only built
/// and registered.
const MAX_ALLOC_FIELDS: usize = 4096;

/// The size of a descriptor: mostly small, sometimes at an edge, sometimes
/// anything.
fn size(inp: &mut Input) -> usize {
    match inp.u8() % 8 {
        0..=3 => inp.below(40),
        4 => inp.pick(&[0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 4095, 4096]),
        5 => inp.pick(&[MAX_MIXED_SIZE - 1, MAX_MIXED_SIZE, MAX_MIXED_SIZE + 1, (1 << 32) + 1, (1 << 48) - 1, 1 << 48, usize::MAX]),
        6 => inp.below(MAX_ALLOC_FIELDS + 1),
        _ => inp.u64() as usize,
    }
}

/// Builds a descriptor and checks the verdict against the rules.
fn build(inp: &mut Input) -> Option<Descriptor> {
    let name = inp.text(12);
    let size = size(inp);
    let most = if inp.bool() { 8 } else { 70 };
    let n = inp.below(most);
    let offsets: Vec<usize> = (0..n)
        .map(|_| match inp.u8() % 8 {
            0 => inp.u64() as usize,
            1 => size.wrapping_add(inp.below(3)).wrapping_sub(1),
            _ => inp.below(size.clamp(1, 1 << 16)),
        })
        .collect();
    let mutable = inp.bool();
    let verdict = Descriptor::mixed(name.clone(), size, &offsets);
    // What the rules say, in the order `mixed` checks them.
    let first_bad = offsets.iter().enumerate().find_map(|(k, &o)| {
        if o >= size {
            Some(DescriptorError::OffsetOutOfRange { name: name.clone(), offset: o, size })
        } else if offsets[..k].contains(&o) {
            Some(DescriptorError::DuplicateOffset { name: name.clone(), offset: o })
        } else {
            None
        }
    });
    let expected = if size == 0 {
        Err(DescriptorError::ZeroSize { name: name.clone() })
    } else if size > MAX_MIXED_SIZE {
        Err(DescriptorError::TooLarge { name: name.clone(), size })
    } else if let Some(e) = first_bad {
        Err(e)
    } else {
        Ok(())
    };
    match (verdict, expected) {
        (Ok(d), Ok(())) => {
            let mut ptrs: Vec<usize> = offsets.clone();
            ptrs.sort_unstable();
            let got: Vec<usize> = d.pointer_offsets().iter().map(|&o| o as usize).collect();
            assert_eq!(got, ptrs, "pointer offsets of {name:?}");
            assert_eq!(d.pointer_offsets().len() + d.raw_offsets().len(), size);
            assert!(d.raw_offsets().windows(2).all(|w| w[0] < w[1]), "raw offsets not ascending");
            assert!(d.raw_offsets().iter().all(|&o| !d.is_pointer_field(o as usize) && (o as usize) < size));
            assert!(d.pointer_offsets().iter().all(|&o| d.is_pointer_field(o as usize)));
            assert!(!d.is_pointer_field(size));
            assert_eq!((d.name(), d.size()), (name.as_str(), size));
            Some(if mutable { d.mutable() } else { d })
        }
        (Err(e), Err(x)) => {
            assert_eq!(e, x, "descriptor {name:?} of size {size} with offsets {offsets:?}");
            assert!(!e.to_string().is_empty());
            None
        }
        (v, x) => panic!("descriptor {name:?} of size {size} with offsets {offsets:?}: got {v:?}, the rules say {x:?}"),
    }
}

/// What a value field should hold.
#[derive(Clone, Copy, Debug)]
enum Expect {
    Int(i64),
    /// The object allocated `k`-th in this job (its descriptor index).
    Obj(usize, usize),
}

struct Model {
    /// Descriptor index, the value fields' and the raw fields' contents.
    desc: usize,
    values: Vec<Expect>,
    raws: Vec<u64>,
}

fn check_object(s: &Scope<'_>, h: Handle<'_>, m: &Model, descs: &[(DescId, Descriptor)], objs: &[Model]) {
    let (id, d) = &descs[m.desc];
    let v = s.view(h);
    match v.kind() {
        Some(ObjectKind::Mixed(got)) => assert_eq!(got, *id),
        k => panic!("object of `{}` reads as {k:?}", d.name()),
    }
    assert_eq!(v.len(), d.size());
    for (k, &off) in d.pointer_offsets().iter().enumerate() {
        let f = v.try_field(off as usize).expect("a value field reads");
        match m.values[k] {
            Expect::Int(i) => assert_eq!(f.as_int(), Some(i), "field {off} of `{}`", d.name()),
            Expect::Obj(j, dj) => {
                assert_eq!(objs[j].desc, dj);
                match f.kind() {
                    Some(ObjectKind::Mixed(got)) => assert_eq!(got, descs[dj].0, "field {off} of `{}`", d.name()),
                    k => panic!("field {off} of `{}` should be an object, is {k:?}", d.name()),
                }
            }
        }
        assert!(v.try_raw(off as usize).is_err(), "raw read of value field {off}");
    }
    for (k, &off) in d.raw_offsets().iter().enumerate() {
        assert_eq!(v.try_raw(off as usize).expect("a raw field reads"), m.raws[k], "raw field {off} of `{}`", d.name());
        assert_eq!(v.raw(off as usize), m.raws[k]);
        assert!(v.try_field(off as usize).is_err(), "value read of raw field {off}");
    }
    assert!(v.try_field(d.size()).is_err() && v.try_raw(d.size()).is_err(), "read past the end");
}

/// A heap-limit error is an allowed outcome of any allocation; anything
/// else that fails must be an expected misuse.
fn allowed(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::HeapLimit { .. })
}

/// One job: allocations, reads, stores and collections on vproc 0.
fn job(s: &mut Scope<'_>, ops: &[u8], descs: &[(DescId, Descriptor)]) {
    let mut inp = Input::new(ops);
    let mut handles: Vec<Handle<'_>> = Vec::new();
    let mut objs: Vec<Model> = Vec::new();
    let usable: Vec<usize> = (0..descs.len()).filter(|&k| descs[k].1.size() <= MAX_ALLOC_FIELDS).collect();
    for _ in 0..MAX_JOB_OPS {
        if inp.is_empty() {
            break;
        }
        match inp.u8() % 8 {
            0..=2 if !usable.is_empty() => {
                let di = inp.pick(&usable);
                let (id, d) = &descs[di];
                let (np, nr) = (d.pointer_offsets().len(), d.raw_offsets().len());
                let skew = inp.u8() % 8;
                let (nv, nraw) = match skew {
                    0 => (np + 1, nr),
                    1 => (np.saturating_sub(1), nr + (np == 0) as usize),
                    2 => (np, nr + 1),
                    _ => (np, nr),
                };
                let values: Vec<Expect> = (0..nv)
                    .map(|_| {
                        if !objs.is_empty() && inp.bool() {
                            let j = inp.below(objs.len());
                            Expect::Obj(j, objs[j].desc)
                        } else {
                            Expect::Int(inp.u32() as i32 as i64)
                        }
                    })
                    .collect();
                let raws: Vec<u64> = (0..nraw).map(|_| inp.u64()).collect();
                let hs: Vec<Handle<'_>> = values
                    .iter()
                    .map(|e| match *e {
                        Expect::Int(i) => Handle::int(i),
                        Expect::Obj(j, _) => handles[j],
                    })
                    .collect();
                match s.alloc_mixed(*id, &hs, &raws) {
                    Ok(h) => {
                        assert!((nv, nraw) == (np, nr), "`{}` allocated with {nv} values and {nraw} raws", d.name());
                        handles.push(h);
                        objs.push(Model { desc: di, values, raws });
                    }
                    Err(e) if (nv, nraw) != (np, nr) => assert!(matches!(e.kind(), ErrorKind::Misuse(_)), "wrong counts gave {e}"),
                    Err(e) => assert!(allowed(&e), "allocating `{}`: {e}", d.name()),
                }
            }
            3 if !objs.is_empty() => {
                let j = inp.below(objs.len());
                check_object(s, handles[j], &objs[j], descs, &objs);
            }
            4 if !objs.is_empty() => {
                // Stores: into value or raw fields, in range or not.
                let j = inp.below(objs.len());
                let d = &descs[objs[j].desc].1;
                let i = if inp.one_in(4) { d.size() + inp.below(3) } else { inp.below(d.size()) };
                let value = inp.bool();
                let r = if value {
                    let x = inp.u32() as i32 as i64;
                    s.set(handles[j], i, Handle::int(x)).map(|()| x as u64)
                } else {
                    let w = inp.u64();
                    s.set_raw(handles[j], i, w).map(|()| w)
                };
                let ok = d.is_mutable() && i < d.size() && d.is_pointer_field(i) == value;
                match r {
                    Ok(x) => {
                        assert!(ok, "store into field {i} of `{}` (mutable {}) accepted", d.name(), d.is_mutable());
                        let m = &mut objs[j];
                        if value {
                            let k = d.pointer_offsets().iter().position(|&o| o as usize == i).unwrap();
                            m.values[k] = Expect::Int(x as i64);
                        } else {
                            let k = d.raw_offsets().iter().position(|&o| o as usize == i).unwrap();
                            m.raws[k] = x;
                        }
                    }
                    Err(e) => {
                        assert!(!ok, "store into field {i} of mutable `{}` refused: {e}", d.name());
                        assert!(matches!(e.kind(), ErrorKind::Misuse(_)), "{e}");
                    }
                }
            }
            5 => match inp.u8() % 3 {
                0 => s.collect_minor(),
                1 => drop(s.collect_major()),
                _ => drop(s.collect_global()),
            },
            6 => {
                // Garbage, to make collections happen by themselves.
                let n = inp.below(2000);
                if let Err(e) = s.alloc_vector_filled(n, Handle::int(7)) {
                    assert!(allowed(&e), "{e}");
                }
            }
            _ => {
                for (j, h) in handles.iter().enumerate() {
                    check_object(s, *h, &objs[j], descs, &objs);
                }
            }
        }
    }
    for (j, h) in handles.iter().enumerate() {
        check_object(s, *h, &objs[j], descs, &objs);
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut inp = Input::new(data);
    let verify = inp.bool();
    let config = Config::builder()
        .vprocs(1)
        .pin(false)
        .local_heap_size(64 << 10)
        .chunk_size(64 << 10)
        .global_gc_threshold(128 << 10)
        .max_heap(8 << 20)
        .verify(verify)
        .build()
        .expect("the fuzzer's configuration is valid");
    let rt = Runtime::new(config).expect("a runtime starts");
    let mut descs: Vec<(DescId, Descriptor)> = Vec::new();
    for _ in 0..MAX_DESCRIPTORS {
        if inp.is_empty() {
            break;
        }
        if !inp.one_in(3) {
            if let Some(d) = build(&mut inp) {
                let id = rt.register(d.clone()).expect("the table has room");
                assert!(descs.iter().all(|(other, _)| *other != id), "an id handed out twice");
                descs.push((id, d));
            }
        } else {
            let ops = inp.bytes(256).to_vec();
            let ds = descs.clone();
            match rt.run_on(0, move |s| job(s, &ops, &ds)) {
                Ok(()) => {}
                Err(e) => panic!("a descriptor job failed: {e}"),
            }
        }
    }
}
