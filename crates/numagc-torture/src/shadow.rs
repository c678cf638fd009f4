//! The shadow model: a plain-Rust mirror of every object a program built,
//! by oid, with the program's registers and global roots.
//!
//! The interpreter (`crate::interp`) applies every operation to the shadow
//! first, then to the heap: the shadow hands out the oids (so the heap side
//! of an operation, perhaps run on another vproc, knows which ids to write),
//! and afterwards the checker (`crate::check`) compares what the heap holds
//! with it. The shadow never collects: it only grows during a program, which
//! is bounded.
//!
//! The builders here mirror `interp`'s heap builders operation for
//! operation and allocate oids in the same order; where a structure has
//! random parts, both sides follow the same plan (`crate::layout`).

use crate::layout::{
    dag_plan, elem_plan, fresh_count, id_word, payload, wide_is_value, Kind, Pick, MID_SIZE,
    WIDE_SIZE,
};
use crate::program::{Build, Src};

/// A value of the shadow: an immediate integer or an object, by oid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SVal {
    Int(i64),
    Obj(u32),
}

/// A field of a shadow object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Val(SVal),
    Raw(u64),
}

/// An object of the shadow: its fields exactly as the heap object's (the id
/// included, in word or element 0), or a sequence's elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SObj {
    pub kind: Kind,
    pub fields: Vec<Field>,
}

impl SObj {
    /// The value fields, with their positions.
    pub fn values(&self) -> Vec<(usize, SVal)> {
        self.fields
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f {
                Field::Val(v) => Some((i, *v)),
                Field::Raw(_) => None,
            })
            .collect()
    }

    /// The raw fields, with their positions.
    pub fn raws(&self) -> Vec<(usize, u64)> {
        self.fields
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f {
                Field::Raw(w) => Some((i, *w)),
                Field::Val(_) => None,
            })
            .collect()
    }
}

/// Every object built, indexed by oid.
#[derive(Clone, Debug, Default)]
pub struct Shadow {
    pub objs: Vec<SObj>,
}

/// The value of a source with `k` added to integers, given the values
/// `env` that `Src::Reg` names (`Reg(r)` is `env[r % env.len()]`).
pub fn src_val(s: Src, env: &[SVal], k: u64) -> SVal {
    match s {
        Src::Int(i) => SVal::Int(i.wrapping_add(k as i64)),
        Src::Reg(_) if env.is_empty() => SVal::Int(0),
        Src::Reg(r) => env[r as usize % env.len()],
    }
}

impl Shadow {
    /// The oid the next object gets.
    pub fn next_oid(&self) -> u32 {
        u32::try_from(self.objs.len()).expect("fewer than 2^32 objects per program")
    }

    /// Adds an object whose fields are `fields(oid)`.
    pub fn alloc(&mut self, kind: Kind, fields: impl FnOnce(u64) -> Vec<Field>) -> SVal {
        let oid = self.next_oid();
        let f = fields(id_word(oid));
        self.objs.push(SObj { kind, fields: f });
        SVal::Obj(oid)
    }

    pub fn obj(&self, v: SVal) -> Option<&SObj> {
        match v {
            SVal::Obj(o) => self.objs.get(o as usize),
            SVal::Int(_) => None,
        }
    }

    pub fn obj_mut(&mut self, v: SVal) -> Option<&mut SObj> {
        match v {
            SVal::Obj(o) => self.objs.get_mut(o as usize),
            SVal::Int(_) => None,
        }
    }

    /// The kind of a value's object.
    pub fn kind(&self, v: SVal) -> Option<Kind> {
        self.obj(v).map(|o| o.kind)
    }

    /// A pair `[id, a, b]`.
    pub fn pair(&mut self, a: SVal, b: SVal) -> SVal {
        self.alloc(Kind::Pair, |id| {
            vec![Field::Raw(id), Field::Val(a), Field::Val(b)]
        })
    }

    /// A sequence of `elems`.
    pub fn seq(&mut self, elems: Vec<SVal>) -> SVal {
        self.alloc(Kind::Seq, |_| elems.into_iter().map(Field::Val).collect())
    }

    fn raw(&mut self, len: usize) -> SVal {
        self.alloc(Kind::Raw, |id| {
            (0..len)
                .map(|i| Field::Raw(if i == 0 { id } else { payload(id, i) }))
                .collect()
        })
    }

    /// A vector of `len` elements after `elem_plan(seed, len, true)`.
    fn vector(&mut self, len: usize, seed: u64, s: [SVal; 2]) -> SVal {
        let fresh: Vec<SVal> = (0..fresh_count(len))
            .map(|f| self.pair(SVal::Int(f as i64), SVal::Int(0)))
            .collect();
        let plan = elem_plan(seed, len, true);
        self.alloc(Kind::Vector, |id| {
            let mut v = vec![Field::Val(SVal::Int(id as i64))];
            v.extend(plan.iter().map(|p| Field::Val(pick(*p, &s, &[], &fresh))));
            v
        })
    }

    /// A mixed object of `size` fields in the `wide` layout: the id, the
    /// values of `elem_plan(seed, size, false)`, raw payloads.
    fn wide(&mut self, kind: Kind, size: usize, seed: u64, s: [SVal; 2]) -> SVal {
        let plan = elem_plan(seed, size, false);
        self.alloc(kind, |id| {
            (0..size)
                .map(|i| match i {
                    0 => Field::Raw(id),
                    i if wide_is_value(i) => Field::Val(pick(plan[i - 1], &s, &[], &[])),
                    i => Field::Raw(payload(id, i)),
                })
                .collect()
        })
    }

    fn tree(&mut self, depth: u8, leaf: SVal) -> SVal {
        if depth == 0 {
            return self.pair(leaf, SVal::Int(0));
        }
        let l = self.tree(depth - 1, leaf);
        let r = self.tree(depth - 1, leaf);
        self.pair(l, r)
    }

    /// Builds `b` from the values `env`; `large_words` is the runtime's
    /// large-object size in words. Mirrors `interp`'s heap builder.
    pub fn build(&mut self, b: &Build, env: &[SVal], large_words: usize) -> SVal {
        let sv = |s: Src| src_val(s, env, 0);
        match *b {
            Build::List { len, elem } => {
                let mut cur = SVal::Int(0);
                for k in 0..len as u64 {
                    cur = self.pair(src_val(elem, env, k), cur);
                }
                cur
            }
            Build::Tree { depth, leaf } => self.tree(depth, sv(leaf)),
            Build::Dag { nodes, seed, srcs } => {
                let s = [sv(srcs[0]), sv(srcs[1])];
                let mut built = Vec::new();
                for [a, b] in dag_plan(seed, nodes as usize) {
                    let (a, b) = (pick(a, &s, &built, &[]), pick(b, &s, &built, &[]));
                    built.push(self.pair(a, b));
                }
                self.alloc(Kind::Vector, |id| {
                    std::iter::once(Field::Val(SVal::Int(id as i64)))
                        .chain(built.iter().map(|&n| Field::Val(n)))
                        .collect()
                })
            }
            Build::Vector { len, seed, srcs } => {
                self.vector(len as usize, seed, [sv(srcs[0]), sv(srcs[1])])
            }
            Build::Raw { len } => self.raw(len as usize),
            Build::Rec { a, b } => {
                let (a, b) = (sv(a), sv(b));
                self.alloc(Kind::Rec, |id| {
                    vec![
                        Field::Raw(id),
                        Field::Val(a),
                        Field::Raw(payload(id, 2)),
                        Field::Val(b),
                        Field::Raw(payload(id, 4)),
                    ]
                })
            }
            Build::Wide { seed, srcs } => {
                self.wide(Kind::Wide, WIDE_SIZE, seed, [sv(srcs[0]), sv(srcs[1])])
            }
            Build::Mid { seed, srcs } => {
                self.wide(Kind::Mid, MID_SIZE, seed, [sv(srcs[0]), sv(srcs[1])])
            }
            Build::Large {
                raw,
                extra,
                seed,
                srcs,
            } => {
                let len = large_words + extra as usize;
                if raw {
                    self.raw(len)
                } else {
                    self.vector(len, seed, [sv(srcs[0]), sv(srcs[1])])
                }
            }
            Build::Array { len, init } => {
                let init = sv(init);
                self.alloc(Kind::Array, |id| {
                    std::iter::once(Field::Val(SVal::Int(id as i64)))
                        .chain((0..len).map(|_| Field::Val(init)))
                        .collect()
                })
            }
            Build::Cell { init } => {
                let init = sv(init);
                self.alloc(Kind::Cell, |id| {
                    vec![Field::Raw(id), Field::Val(init), Field::Raw(0)]
                })
            }
        }
    }

    /// The value fields of `v`'s object, in order (a sequence's elements).
    pub fn value_fields(&self, v: SVal) -> Vec<SVal> {
        self.obj(v)
            .map(|o| o.values().into_iter().map(|(_, x)| x).collect())
            .unwrap_or_default()
    }
}

/// The value a plan's pick stands for.
pub fn pick(p: Pick, srcs: &[SVal; 2], nodes: &[SVal], fresh: &[SVal]) -> SVal {
    match p {
        Pick::Int(i) => SVal::Int(i),
        Pick::Src(j) => srcs[j],
        Pick::Node(k) => nodes[k],
        Pick::Fresh(k) => fresh[k],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_shares_its_leaf_and_numbers_post_order() {
        let mut sh = Shadow::default();
        let leaf = sh.build(&Build::Raw { len: 2 }, &[], 32);
        let t = sh.build(
            &Build::Tree {
                depth: 2,
                leaf: Src::Reg(0),
            },
            &[leaf],
            32,
        );
        assert_eq!(t, SVal::Obj(7), "raw + 4 leaves + 2 nodes + root");
        assert!(sh.value_fields(SVal::Obj(1)).contains(&leaf));
        assert!(sh.value_fields(SVal::Obj(2)).contains(&leaf));
    }

    #[test]
    fn large_objects_have_the_large_size_plus_extra() {
        let mut sh = Shadow::default();
        let v = sh.build(
            &Build::Large {
                raw: true,
                extra: 3,
                seed: 1,
                srcs: [Src::Int(1), Src::Int(2)],
            },
            &[],
            32,
        );
        assert_eq!(sh.obj(v).unwrap().fields.len(), 35);
    }
}
