//! Torture programs: what a program is, and the one generator that draws
//! them, for the CLI (from a seed) and for proptest (from recorded choices).
//!
//! A program is a list of [`Op`]s over [`REGS`] registers (root-stack slots
//! of the interpreter's job) and a list of global roots. Operations build
//! structures of every shape issue 5 names — lists, trees, DAGs with
//! sharing, wide vectors, raw data, objects above the large-object size,
//! interleaved and wide mixed objects, mutable arrays and cells — move them
//! between registers, store into mutable objects (the write barrier when the
//! stored value is local), add, read, replace and drop global roots, share
//! data across vprocs through `par2` (work stealing), `tabulate`, `par_map`,
//! `seq_reduce` and channels between threads, and force collections.
//! [`Op::Compiled`] runs a section of [`COp`]s on the compiled-code interface
//! (`numagc::compiled`): frames, inline allocation, the inline store barrier,
//! polls, direct reads, minor collections and `par2` forks.
//!
//! Generation: each operation is drawn by [`generate_op`] from its own
//! [`CHOICES_PER_OP`] choices (`crate::rng`). The CLI takes the choices from
//! a splitmix64 stream ([`generate`]); proptest generates the choice vectors
//! ([`strategy`]), so a shrunk case is a program with fewer operations whose
//! remaining choices moved towards 0, which always selects the first and
//! smallest option (the first op kind is a short list). The same program can
//! thus come from either side.

use crate::rng::{Choices, Replay, Rng};
use proptest::prelude::*;

/// Registers of a program.
pub const REGS: usize = 8;
/// Choices each operation draws from (a compiled section, [`Op::Compiled`],
/// draws up to [`MAX_COPS`] operations from them; the other operations use
/// at most the first 20).
pub const CHOICES_PER_OP: usize = 128;
/// Operations of a compiled section at most.
pub const MAX_COPS: u64 = 20;
/// Frames a compiled section keeps pushed at most (the registers' frame
/// included), and the largest frame it pushes.
pub const MAX_FRAMES: usize = 8;
pub const MAX_FRAME_LEN: u64 = 12;
/// Choices are below this bound (16 bits: enough for every decision, and a
/// choice shrinks to 0 in at most 16 steps).
pub const CHOICE_BOUND: u64 = 1 << 16;

/// A source value of a build: an immediate integer or a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    Int(i64),
    Reg(u8),
}

/// A structure to build. Sources name registers in the main job; in a
/// `par2` branch or a thread they name the values it received
/// (`Reg(k)` is value `k % n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Build {
    /// A cons list of `len` pairs `[id, elem + k, next]`.
    List { len: u32, elem: Src },
    /// A complete binary tree of pairs, every leaf pointing to `leaf` (a DAG
    /// when `leaf` is an object).
    Tree { depth: u8, leaf: Src },
    /// `nodes` pairs whose fields point to earlier nodes, sources or
    /// integers (`layout::dag_plan`), gathered in a vector.
    Dag {
        nodes: u32,
        seed: u64,
        srcs: [Src; 2],
    },
    /// A vector of `len` elements: id, integers, sources and shared fresh pairs.
    Vector { len: u32, seed: u64, srcs: [Src; 2] },
    /// A raw object of `len` words.
    Raw { len: u32 },
    /// A mixed object with interleaved raw and value fields.
    Rec { a: Src, b: Src },
    /// A mixed object of `layout::WIDE_SIZE` fields.
    Wide { seed: u64, srcs: [Src; 2] },
    /// A mixed object of `layout::MID_SIZE` fields (the largest the
    /// compiled interface allocates inline), laid out like `Wide`.
    Mid { seed: u64, srcs: [Src; 2] },
    /// A raw object or a vector of the large-object size plus `extra` words
    /// (allocated directly in the large-object space).
    Large {
        raw: bool,
        extra: u32,
        seed: u64,
        srcs: [Src; 2],
    },
    /// A mutable array (global heap) of `len` copies of `init` after its id.
    Array { len: u32, init: Src },
    /// A mutable cell (global heap) holding `init`.
    Cell { init: Src },
}

/// A collection forced by the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collect {
    Minor,
    Major,
    /// A full global collection (`Scope::collect_global`).
    Global,
    /// A global collection of the kind a trigger starts: young when the
    /// runtime has young global collections (`Scope::collect_global_young`).
    Young,
    /// A full collection that compacts the heap (`Scope::compact`).
    Compact,
}

/// One operation of a compiled section ([`Op::Compiled`]), run on
/// `numagc::compiled::Mutator` (the crate's `compiled` module). Slot
/// operands name the section's frame slots, counted from the bottom (the
/// registers' frame: slot `i` < [`REGS`] holds register `i`) across every
/// frame pushed, modulo their number; a build's `Src::Reg(k)` names slot
/// `k` the same way (in a `par2` side, one of its two values). Operations
/// that do not apply do nothing, as in [`Op`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum COp {
    /// `poll` (a safepoint), `times` times.
    Poll {
        times: u8,
    },
    /// Pushes a frame of `len` slots (NIL).
    Push {
        len: u8,
    },
    /// Pops the top `1 + frames % (pushed)` frames (never the registers'),
    /// with one `pop_frame` of the lowest of them.
    Pop {
        frames: u8,
    },
    Move {
        dst: u8,
        src: u8,
    },
    Clear {
        dst: u8,
    },
    /// Builds through the inline path (`alloc` + `init`; objects above
    /// `MAX_SMALL_FIELDS` fields and mutable ones through `alloc_shared`,
    /// filled with `init_shared` or `store`), forcing minor collections
    /// after allocations when due; the result goes to slot `dst`. With
    /// `regs`, lists, trees, DAGs and vectors of at most
    /// `MAX_SMALL_FIELDS` elements are built by register code
    /// (`Mutator::with_regs`: `alloc_at`, `alloc_many_at`, `push_at`,
    /// `poll_at`), where only the slow paths collect.
    Build {
        dst: u8,
        build: Build,
        regs: bool,
    },
    /// Checks the header of the object in `src` and reads one of its value
    /// fields (`field`, or `field_shared` for a mutable object) into `dst`:
    /// the shadow predicts what is read.
    Read {
        dst: u8,
        src: u8,
        field: u32,
    },
    /// Reads a raw field of the object in `src`.
    ReadRaw {
        src: u8,
        field: u32,
    },
    /// Stores `value` (or a fresh inline-allocated pair holding it) into
    /// the array or cell in `obj` through the inline barrier (`store`);
    /// with `regs`, by register code (`Mutator::with_regs`: `alloc_at`,
    /// `store_at`, `poll_at`), where only the slow paths collect.
    Store {
        obj: u8,
        index: u32,
        value: Src,
        fresh: bool,
        regs: bool,
    },
    /// `store_raw` into the raw field of the cell in `obj`.
    StoreRaw {
        obj: u8,
        value: u64,
    },
    /// `par2` with the values of slots `env`: each side builds through its
    /// own mutator (`b` first digests what it received); results to `dst`.
    Par {
        dst: [u8; 2],
        env: [u8; 2],
        a: Build,
        b: Build,
    },
    /// Allocates `objects` inline objects that die soon.
    Garbage {
        objects: u32,
    },
    /// `collect_minor`, with every slot compared with the shadow before
    /// and after.
    Collect,
    /// Compares every slot with the shadow.
    Check,
}

/// One operation of a program. Register and index operands are taken
/// modulo what exists; an operation that does not apply (a store into an
/// immutable object, a global root when there is none) does nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Build {
        dst: u8,
        build: Build,
    },
    Move {
        dst: u8,
        src: u8,
    },
    /// A value field of the object in `src` (an element of a sequence).
    Load {
        dst: u8,
        src: u8,
        field: u32,
    },
    Clear {
        dst: u8,
    },
    /// Stores `value` (or a fresh local pair holding it) into the array or
    /// cell in `obj`: the write barrier promotes a local value.
    Store {
        obj: u8,
        index: u32,
        value: Src,
        fresh: bool,
    },
    StoreRaw {
        obj: u8,
        value: u64,
    },
    Promote {
        reg: u8,
    },
    GlobalAdd {
        src: u8,
    },
    GlobalDrop {
        index: u32,
    },
    GlobalGet {
        dst: u8,
        index: u32,
    },
    GlobalSet {
        index: u32,
        src: u8,
    },
    /// `par2`: branch `a` builds here, branch `b` (stolen by an idle vproc
    /// when there is one) first checks what it received — the registers
    /// `env` and, if any, a global root — then builds from it.
    Par {
        dst: [u8; 2],
        env: [u8; 2],
        global: Option<u32>,
        a: Build,
        b: Build,
    },
    /// `tabulate` of `n` pairs `[id, env, i]` built on whichever vproc.
    Tabulate {
        dst: u8,
        env: u8,
        n: u32,
        grain: u32,
    },
    /// `par_map` over the sequence in `src`: pairs `[id, elem, 7]`.
    ParMap {
        dst: u8,
        src: u8,
        grain: u32,
    },
    /// `seq_reduce` over the sequence in `src`, summing element ids.
    Reduce {
        src: u8,
        grain: u32,
    },
    /// Sends `src` to a thread on the last vproc, which checks it, builds
    /// from it and sends the result back; with `mutate`, it also stores the
    /// result into `src` when that is an array or a cell.
    Channel {
        dst: u8,
        src: u8,
        build: Build,
        mutate: bool,
    },
    /// Allocates `objects` objects that die at once.
    Garbage {
        objects: u32,
    },
    Collect(Collect),
    /// Compares everything reachable with the shadow.
    Check,
    /// A blocking section (`Scope::blocking`) of `spins` iterations of
    /// foreign work, with a sleep of 200 µs when `sleep`: collections the
    /// other vprocs start meanwhile run with this vproc's proxy.
    Blocking {
        spins: u32,
        sleep: bool,
    },
    /// A section of compiled code: one `Scope::compiled` mutator, the
    /// registers copied into its first frame and back at the end.
    Compiled(Vec<COp>),
}

/// Size bounds of generated structures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub list: u32,
    pub depth: u8,
    pub dag: u32,
    pub vector: u32,
    pub raw: u32,
    pub large_extra: u32,
    pub array: u32,
    pub tabulate: u32,
    pub garbage: u32,
}

impl Sizes {
    /// For harsh rounds (a collection every few allocations) and proptest.
    pub const SMALL: Sizes = Sizes {
        list: 24,
        depth: 4,
        dag: 12,
        vector: 40,
        raw: 40,
        large_extra: 16,
        array: 8,
        tabulate: 300,
        garbage: 50,
    };
    pub const MEDIUM: Sizes = Sizes {
        list: 400,
        depth: 8,
        dag: 60,
        vector: 600,
        raw: 600,
        large_extra: 400,
        array: 40,
        tabulate: 1200,
        garbage: 2000,
    };
    pub const LARGE: Sizes = Sizes {
        list: 5000,
        depth: 12,
        dag: 200,
        vector: 3000,
        raw: 4000,
        large_extra: 3000,
        array: 300,
        tabulate: 6000,
        garbage: 40_000,
    };

    /// The sizes that keep a round short when a collection is forced
    /// every `gc_every` allocations (0: never forced).
    pub fn for_gc_every(gc_every: u32) -> Sizes {
        match gc_every {
            1..=9 => Sizes::SMALL,
            10..=99 => Sizes::MEDIUM,
            _ => Sizes::LARGE,
        }
    }
}

fn reg(c: &mut impl Choices) -> u8 {
    c.choose(REGS as u64) as u8
}

fn src(c: &mut impl Choices) -> Src {
    if c.chance(25) {
        // 0, -1, 1, -2, 2, ...: a zero choice is 0.
        let v = c.choose(201) as i64;
        Src::Int(if v % 2 == 0 { v / 2 } else { -(v / 2) - 1 })
    } else {
        Src::Reg(reg(c))
    }
}

fn srcs(c: &mut impl Choices) -> [Src; 2] {
    [src(c), src(c)]
}

fn upto(c: &mut impl Choices, max: u32) -> u32 {
    // Mostly small, sometimes up to the bound.
    if c.chance(70) {
        c.range(0, (max / 8).max(1) as u64) as u32
    } else {
        c.range(0, max as u64) as u32
    }
}

/// Draws a structure to build.
pub fn generate_build(c: &mut impl Choices, s: &Sizes) -> Build {
    match c.weighted(&[6, 4, 3, 4, 3, 2, 2, 2, 3, 2, 2]) {
        0 => Build::List {
            len: upto(c, s.list),
            elem: src(c),
        },
        1 => Build::Tree {
            depth: c.range(0, s.depth as u64) as u8,
            leaf: src(c),
        },
        2 => Build::Dag {
            nodes: 1 + upto(c, s.dag),
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
        3 => Build::Vector {
            len: 1 + upto(c, s.vector),
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
        4 => Build::Raw {
            len: 1 + upto(c, s.raw),
        },
        5 => Build::Rec {
            a: src(c),
            b: src(c),
        },
        6 => Build::Wide {
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
        7 => Build::Large {
            raw: c.chance(50),
            extra: upto(c, s.large_extra),
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
        8 => Build::Array {
            len: 1 + upto(c, s.array),
            init: src(c),
        },
        9 => Build::Cell { init: src(c) },
        _ => Build::Mid {
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
    }
}

/// A slot operand of a compiled section (taken modulo the slots there are).
fn slot(c: &mut impl Choices) -> u8 {
    c.choose(256) as u8
}

/// A source of a compiled build: an integer, or any slot.
fn csrc(c: &mut impl Choices) -> Src {
    match src(c) {
        Src::Int(i) => Src::Int(i),
        Src::Reg(_) => Src::Reg(slot(c)),
    }
}

/// Draws a structure to build on the compiled interface: what it can
/// allocate (no raw object or mixed descriptor above `MAX_SMALL_FIELDS`
/// fields; vectors of any length, the long ones through `alloc_shared`).
pub fn generate_cbuild(c: &mut impl Choices, s: &Sizes) -> Build {
    let max_small = numagc::compiled::MAX_SMALL_FIELDS as u64;
    let srcs = |c: &mut _| [csrc(c), csrc(c)];
    match c.weighted(&[6, 4, 3, 6, 3, 2, 3, 2, 3, 2]) {
        0 => Build::List {
            len: upto(c, s.list),
            elem: csrc(c),
        },
        1 => Build::Tree {
            depth: c.range(0, s.depth as u64) as u8,
            leaf: csrc(c),
        },
        2 => Build::Dag {
            nodes: 1 + upto(c, s.dag),
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
        // Mostly inline (1 to MAX_SMALL_FIELDS, the bound included),
        // sometimes longer (alloc_shared + init_shared).
        3 => Build::Vector {
            len: match c.weighted(&[6, 2, 3]) {
                0 => 1 + c.choose(max_small) as u32,
                1 => max_small as u32,
                _ => 1 + upto(c, s.vector),
            },
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
        4 => Build::Raw {
            len: if c.chance(20) {
                max_small as u32
            } else {
                1 + c.choose(max_small) as u32
            },
        },
        5 => Build::Rec {
            a: csrc(c),
            b: csrc(c),
        },
        6 => Build::Mid {
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
        7 => Build::Large {
            raw: false,
            extra: upto(c, s.large_extra),
            seed: c.choose(CHOICE_BOUND),
            srcs: srcs(c),
        },
        8 => Build::Array {
            len: 1 + upto(c, s.array),
            init: csrc(c),
        },
        _ => Build::Cell { init: csrc(c) },
    }
}

/// Draws one operation of a compiled section.
pub fn generate_cop(c: &mut impl Choices, s: &Sizes) -> COp {
    match c.weighted(&[3, 4, 3, 2, 1, 12, 6, 3, 5, 2, 2, 2, 2, 1]) {
        0 => COp::Poll {
            times: 1 + c.choose(3) as u8,
        },
        1 => COp::Push {
            len: c.choose(MAX_FRAME_LEN + 1) as u8,
        },
        2 => COp::Pop {
            frames: c.choose(MAX_FRAMES as u64) as u8,
        },
        3 => COp::Move {
            dst: slot(c),
            src: slot(c),
        },
        4 => COp::Clear { dst: slot(c) },
        5 => COp::Build {
            dst: slot(c),
            build: generate_cbuild(c, s),
            regs: c.choose(2) == 1,
        },
        6 => COp::Read {
            dst: slot(c),
            src: slot(c),
            field: c.choose(1 << 16) as u32,
        },
        7 => COp::ReadRaw {
            src: slot(c),
            field: c.choose(1 << 16) as u32,
        },
        8 => COp::Store {
            obj: slot(c),
            index: c.choose(1 << 16) as u32,
            value: csrc(c),
            fresh: c.chance(50),
            regs: c.chance(50),
        },
        9 => COp::StoreRaw {
            obj: slot(c),
            value: c.choose(CHOICE_BOUND),
        },
        10 => COp::Par {
            dst: [slot(c), slot(c)],
            env: [slot(c), slot(c)],
            a: generate_cbuild(c, s),
            b: generate_cbuild(c, s),
        },
        11 => COp::Garbage {
            objects: upto(c, s.garbage),
        },
        12 => COp::Collect,
        _ => COp::Check,
    }
}

/// Draws one operation.
pub fn generate_op(c: &mut impl Choices, s: &Sizes) -> Op {
    let weights = [
        30, 4, 5, 2, 8, 2, 3, 3, 2, 2, 2, 8, 4, 3, 2, 6, 3, 4, 1, 2, 12,
    ];
    match c.weighted(&weights) {
        0 => Op::Build {
            dst: reg(c),
            build: generate_build(c, s),
        },
        1 => Op::Move {
            dst: reg(c),
            src: reg(c),
        },
        2 => Op::Load {
            dst: reg(c),
            src: reg(c),
            field: c.choose(1 << 16) as u32,
        },
        3 => Op::Clear { dst: reg(c) },
        4 => Op::Store {
            obj: reg(c),
            index: c.choose(1 << 16) as u32,
            value: src(c),
            fresh: c.chance(50),
        },
        5 => Op::StoreRaw {
            obj: reg(c),
            value: c.choose(CHOICE_BOUND),
        },
        6 => Op::Promote { reg: reg(c) },
        7 => Op::GlobalAdd { src: reg(c) },
        8 => Op::GlobalDrop {
            index: c.choose(64) as u32,
        },
        9 => Op::GlobalGet {
            dst: reg(c),
            index: c.choose(64) as u32,
        },
        10 => Op::GlobalSet {
            index: c.choose(64) as u32,
            src: reg(c),
        },
        11 => Op::Par {
            dst: [reg(c), reg(c)],
            env: [reg(c), reg(c)],
            global: c.chance(40).then(|| c.choose(64) as u32),
            a: generate_build(c, s),
            b: generate_build(c, s),
        },
        12 => Op::Tabulate {
            dst: reg(c),
            env: reg(c),
            n: upto(c, s.tabulate),
            grain: 1 + c.choose(300) as u32,
        },
        13 => Op::ParMap {
            dst: reg(c),
            src: reg(c),
            grain: 1 + c.choose(300) as u32,
        },
        14 => Op::Reduce {
            src: reg(c),
            grain: 1 + c.choose(300) as u32,
        },
        15 => Op::Channel {
            dst: reg(c),
            src: reg(c),
            build: generate_build(c, s),
            mutate: c.chance(50),
        },
        16 => Op::Garbage {
            objects: upto(c, s.garbage),
        },
        17 => Op::Collect(
            [
                Collect::Minor,
                Collect::Major,
                Collect::Young,
                Collect::Global,
                Collect::Compact,
            ][c.weighted(&[3, 2, 1, 1, 1])],
        ),
        18 => Op::Check,
        19 => Op::Blocking {
            spins: c.choose(20_000) as u32,
            sleep: c.chance(20),
        },
        _ => {
            let n = c.range(1, MAX_COPS);
            Op::Compiled((0..n).map(|_| generate_cop(c, s)).collect())
        }
    }
}

/// The choices of `ops` operations drawn from `rng`.
pub fn choices(rng: &mut Rng, ops: usize) -> Vec<Vec<u64>> {
    (0..ops)
        .map(|_| {
            (0..CHOICES_PER_OP)
                .map(|_| rng.next_u64() % CHOICE_BOUND)
                .collect()
        })
        .collect()
}

/// The program that recorded choices describe.
pub fn from_choices(choices: &[Vec<u64>], s: &Sizes) -> Vec<Op> {
    choices
        .iter()
        .map(|c| generate_op(&mut Replay::new(c), s))
        .collect()
}

/// A program of `ops` operations drawn from `rng` (the CLI's generator).
pub fn generate(rng: &mut Rng, ops: usize, s: &Sizes) -> Vec<Op> {
    from_choices(&choices(rng, ops), s)
}

/// The program that recorded choices describe, every other operation (by
/// its first choice, odd) a compiled section.
pub fn from_choices_compiled(choices: &[Vec<u64>], s: &Sizes) -> Vec<Op> {
    choices
        .iter()
        .map(|c| {
            let mut r = Replay::new(c);
            if r.chance(50) {
                generate_op(&mut r, s)
            } else {
                let n = r.range(1, MAX_COPS);
                Op::Compiled((0..n).map(|_| generate_cop(&mut r, s)).collect())
            }
        })
        .collect()
}

/// [`strategy`] with half the operations compiled sections.
pub fn strategy_compiled(max_ops: usize, s: Sizes) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop::collection::vec(0..CHOICE_BOUND, CHOICES_PER_OP),
        1..=max_ops.max(1),
    )
    .prop_map(move |choices| from_choices_compiled(&choices, &s))
}

/// The proptest settings of the torture's property tests: 256 programs,
/// each in a forked process (a verifier abort fails the case, not the
/// test binary), two minutes each, a bounded shrink.
pub fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        fork: true,
        timeout: 120_000,
        max_shrink_iters: 400,
        ..ProptestConfig::default()
    }
}

/// Programs of 1 to `max_ops` operations, for proptest; shrinking drops
/// operations and simplifies the remaining ones.
pub fn strategy(max_ops: usize, s: Sizes) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop::collection::vec(0..CHOICE_BOUND, CHOICES_PER_OP),
        1..=max_ops.max(1),
    )
    .prop_map(move |choices| from_choices(&choices, &s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_choices_give_the_simplest_program() {
        let p = from_choices(&[vec![0; CHOICES_PER_OP]], &Sizes::LARGE);
        assert_eq!(
            p,
            vec![Op::Build {
                dst: 0,
                build: Build::List {
                    len: 0,
                    elem: Src::Int(0)
                }
            }]
        );
    }

    #[test]
    fn the_seeded_generator_draws_every_operation() {
        let p = generate(&mut Rng::new(5), 3000, &Sizes::MEDIUM);
        let name = |o: &Op| {
            format!("{o:?}")
                .split([' ', '('])
                .next()
                .unwrap()
                .to_string()
        };
        let kinds: std::collections::BTreeSet<String> = p.iter().map(name).collect();
        assert_eq!(kinds.len(), 21, "{kinds:?}");
        assert_eq!(
            p,
            generate(&mut Rng::new(5), 3000, &Sizes::MEDIUM),
            "deterministic"
        );
    }

    #[test]
    fn compiled_sections_draw_every_compiled_operation() {
        let p = generate(&mut Rng::new(7), 3000, &Sizes::MEDIUM);
        let cops: Vec<&COp> = p
            .iter()
            .filter_map(|o| match o {
                Op::Compiled(c) => Some(c),
                _ => None,
            })
            .flatten()
            .collect();
        let name = |o: &&COp| {
            format!("{o:?}")
                .split([' ', '('])
                .next()
                .unwrap()
                .to_string()
        };
        let kinds: std::collections::BTreeSet<String> = cops.iter().map(name).collect();
        assert_eq!(kinds.len(), 14, "{kinds:?}");
        // The sections' choices last: few sections end in a run of the
        // zero choice's operation (a single poll) because they ran out.
        let builds: std::collections::BTreeSet<String> = cops
            .iter()
            .filter_map(|o| match o {
                COp::Build { build, .. } => Some(format!("{build:?}")),
                _ => None,
            })
            .map(|b| b.split([' ', '{']).next().unwrap().to_string())
            .collect();
        assert_eq!(builds.len(), 10, "{builds:?}");
        assert!(!builds.contains("Wide"), "{builds:?}");
    }

    #[test]
    fn a_compiled_section_has_choices_for_all_its_operations() {
        // A section whose choices ran out would end in zero choices: a
        // `Poll { times: 1 }` drawn from nothing. Count sections whose
        // last three operations are that.
        let p = generate(&mut Rng::new(9), 4000, &Sizes::LARGE);
        let sections: Vec<&Vec<COp>> = p
            .iter()
            .filter_map(|o| match o {
                Op::Compiled(c) => Some(c),
                _ => None,
            })
            .collect();
        let zero = COp::Poll { times: 1 };
        let starved = sections
            .iter()
            .filter(|c| c.len() >= 3 && c[c.len() - 3..].iter().all(|o| *o == zero))
            .count();
        assert!(sections.len() > 100, "{}", sections.len());
        assert!(
            starved * 20 < sections.len(),
            "{starved} of {}",
            sections.len()
        );
    }
}
