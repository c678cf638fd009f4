//! Tests of the weight books (`weight.rs`): the operations one by one,
//! and a model of a group of PEs passing references around with messages
//! delivered in any order, checked by the [`Ledger`] after every step and
//! emptied at the end (every GIT entry gone, every weight returned).

use super::weight::*;
use proptest::prelude::*;
use std::collections::HashMap;

#[test]
fn an_entry_goes_when_the_last_of_its_weight_returns() {
    let mut git: Git<&str> = Git::new(3);
    let ga = git.export("obj");
    assert_eq!(ga.gid, GlobalId { pe: 3, id: 0 });
    assert_eq!(ga.weight, FULL_WEIGHT);
    let mut held: Imports<u32> = Imports::default();
    held.import(ga, || 7).unwrap();
    let Split::Half(sent) = held.split(ga.gid).unwrap() else {
        panic!("a full weight splits")
    };
    assert_eq!(sent.weight, FULL_WEIGHT / 2);
    assert_eq!(git.returned(0, sent.weight).unwrap(), None);
    let shares = held.dropped(ga.gid).unwrap();
    assert_eq!(shares, vec![FULL_WEIGHT / 2]);
    assert_eq!(git.returned(0, shares[0]).unwrap(), Some("obj"));
    assert!(git.is_empty());
    assert_eq!(git.returned(0, 1), Err(WeightError::Unknown(ga.gid)));
}

#[test]
fn bad_returns_are_refused_and_change_nothing() {
    let mut git: Git<u8> = Git::new(0);
    let ga = git.export(1);
    assert_eq!(git.returned(0, 0), Err(WeightError::Zero(ga.gid)));
    assert!(matches!(
        git.returned(0, FULL_WEIGHT + 1),
        Err(WeightError::TooMuch { .. })
    ));
    assert_eq!(
        git.returned(9, 1),
        Err(WeightError::Unknown(GlobalId { pe: 0, id: 9 }))
    );
    assert_eq!(git.outstanding(0), Some(u64::from(FULL_WEIGHT)));
    let mut held: Imports<u8> = Imports::default();
    assert_eq!(
        held.import(
            GlobalAddress {
                gid: ga.gid,
                weight: 0
            },
            || 0
        )
        .err(),
        Some(WeightError::Zero(ga.gid))
    );
    assert!(held.is_empty());
}

#[test]
fn a_weight_of_one_underflows_and_a_second_import_merges() {
    let gid = GlobalId { pe: 1, id: 5 };
    let mut held: Imports<u32> = Imports::default();
    held.import(GlobalAddress { gid, weight: 1 }, || 10)
        .unwrap();
    assert_eq!(held.split(gid).unwrap(), Split::Underflow);
    assert_eq!(held.weight(gid), Some(1));
    // The same object again: one entry, weights added, the first local
    // object kept.
    let local = *held
        .import(GlobalAddress { gid, weight: 4 }, || 99)
        .unwrap();
    assert_eq!(local, 10);
    assert_eq!((held.len(), held.weight(gid)), (1, Some(5)));
    assert!(matches!(
        held.split(gid).unwrap(),
        Split::Half(GlobalAddress { weight: 2, .. })
    ));
}

#[test]
fn reexport_adds_weight_to_a_live_entry_only() {
    let mut git: Git<u8> = Git::new(0);
    let ga = git.export(1);
    let again = git.reexport(0).unwrap();
    assert_eq!(again.gid, ga.gid);
    assert_eq!(git.outstanding(0), Some(2 * u64::from(FULL_WEIGHT)));
    assert_eq!(git.returned(0, FULL_WEIGHT).unwrap(), None);
    assert_eq!(git.returned(0, FULL_WEIGHT).unwrap(), Some(1));
    assert_eq!(git.reexport(0), Err(WeightError::Unknown(ga.gid)));
}

/// A message of the model.
#[derive(Clone, Debug)]
enum Msg {
    /// A reference, to PE `to`.
    Ref { to: usize, ga: GlobalAddress },
    /// Weight returned to its owner.
    Back { gid: GlobalId, weight: u32 },
}

/// One PE of the model: its GIT (an entry's value: the held GA it is an
/// indirection for, if any), its imports, and how many of its own
/// indirections keep each held GA alive.
struct Pe {
    git: Git<Option<GlobalId>>,
    held: Imports<()>,
    kept: HashMap<GlobalId, usize>,
}

struct Group {
    pes: Vec<Pe>,
    flying: Vec<Msg>,
    ledger: Ledger,
    underflows: usize,
}

impl Group {
    fn new(n: usize) -> Group {
        Group {
            pes: (0..n)
                .map(|p| Pe {
                    git: Git::new(p as u32),
                    held: Imports::default(),
                    kept: HashMap::new(),
                })
                .collect(),
            flying: Vec::new(),
            ledger: Ledger::default(),
            underflows: 0,
        }
    }

    fn send(&mut self, msg: Msg) {
        match &msg {
            Msg::Ref { ga, .. } => self.ledger.sent(ga.gid, ga.weight),
            Msg::Back { gid, weight } => self.ledger.sent(*gid, *weight),
        }
        self.flying.push(msg);
    }

    fn export(&mut self, from: usize, to: usize) {
        let ga = self.pes[from].git.export(None);
        self.send(Msg::Ref { to, ga });
    }

    fn deliver(&mut self, i: usize) {
        let msg = self.flying.swap_remove(i);
        match msg {
            Msg::Ref { to, ga } => {
                self.ledger.delivered(ga.gid, ga.weight);
                if ga.gid.pe as usize == to {
                    // A reference home: its weight goes straight back.
                    let freed = self.pes[to].git.returned(ga.gid.id, ga.weight).unwrap();
                    self.freed(to, freed);
                } else {
                    self.pes[to].held.import(ga, || ()).unwrap();
                }
            }
            Msg::Back { gid, weight } => {
                self.ledger.delivered(gid, weight);
                let owner = gid.pe as usize;
                let freed = self.pes[owner].git.returned(gid.id, weight).unwrap();
                self.freed(owner, freed);
            }
        }
    }

    /// PE `pe`'s GIT entry went; an indirection's held GA may now die.
    fn freed(&mut self, pe: usize, freed: Option<Option<GlobalId>>) {
        if let Some(Some(gid)) = freed {
            let k = self.pes[pe]
                .kept
                .get_mut(&gid)
                .expect("an indirection is counted");
            *k -= 1;
            if *k == 0 {
                self.pes[pe].kept.remove(&gid);
            }
        }
    }

    fn forward(&mut self, pe: usize, k: usize, to: usize) {
        let Some(gid) = nth_held(&self.pes[pe], k) else {
            return;
        };
        match self.pes[pe].held.split(gid).unwrap() {
            Split::Half(ga) => self.send(Msg::Ref { to, ga }),
            Split::Underflow => {
                self.underflows += 1;
                let ga = self.pes[pe].git.export(Some(gid));
                *self.pes[pe].kept.entry(gid).or_default() += 1;
                self.send(Msg::Ref { to, ga });
            }
        }
    }

    /// The local reference to PE `pe`'s `k`-th held GA dies, unless an
    /// indirection keeps it.
    fn drop_ref(&mut self, pe: usize, k: usize) {
        let Some(gid) = nth_held(&self.pes[pe], k) else {
            return;
        };
        if self.pes[pe].kept.contains_key(&gid) {
            return;
        }
        for weight in self.pes[pe].held.dropped(gid).unwrap() {
            self.send(Msg::Back { gid, weight });
        }
    }

    fn check(&self) -> Result<(), String> {
        let owners: Vec<&Git<Option<GlobalId>>> = self.pes.iter().map(|p| &p.git).collect();
        let holders: Vec<&Imports<()>> = self.pes.iter().map(|p| &p.held).collect();
        self.ledger.check(&owners, &holders)
    }
}

/// The GAs `pe` holds, in a fixed order.
fn held_gids(pe: &Pe) -> Vec<GlobalId> {
    let mut v: Vec<GlobalId> = pe.held.gids().collect();
    v.sort_by_key(|g| (g.pe, g.id));
    v
}

fn nth_held(pe: &Pe, k: usize) -> Option<GlobalId> {
    let v = held_gids(pe);
    (!v.is_empty()).then(|| v[k % v.len()])
}

#[derive(Clone, Debug)]
enum Op {
    Export(usize, usize),
    Deliver(usize),
    /// PE, which held GA, to whom, how many times (17 halvings of a
    /// full weight reach an underflow).
    Forward(usize, usize, usize, usize),
    Drop(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, 0..3usize).prop_map(|(a, b)| Op::Export(a, b)),
        (0..64usize).prop_map(Op::Deliver),
        (0..3usize, 0..16usize, 0..3usize, 1..20usize)
            .prop_map(|(a, k, b, n)| Op::Forward(a, k, b, n)),
        (0..3usize, 0..16usize).prop_map(|(a, k)| Op::Drop(a, k)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// References exported, forwarded (many times: weights underflow
    /// into indirections), dropped, with messages delivered in any order:
    /// the books add up after every step, and once everything is dropped
    /// and delivered no GIT entry, import or weight is left.
    #[test]
    fn the_books_add_up_and_empty_at_the_end(ops in prop::collection::vec(op(), 1..300)) {
        let mut g = Group::new(3);
        for op in ops {
            match op {
                Op::Export(a, b) => g.export(a, b),
                Op::Deliver(i) if !g.flying.is_empty() => {
                    let n = g.flying.len();
                    g.deliver(i % n)
                }
                Op::Deliver(_) => {}
                Op::Forward(a, k, b, n) => {
                    for _ in 0..n {
                        g.forward(a, k, b)
                    }
                }
                Op::Drop(a, k) => g.drop_ref(a, k),
            }
            prop_assert_eq!(g.check(), Ok(()));
        }
        drain(&mut g);
        for (p, pe) in g.pes.iter().enumerate() {
            prop_assert!(pe.git.is_empty(), "PE {} keeps {} GIT entries", p, pe.git.len());
            prop_assert!(pe.held.is_empty(), "PE {} keeps {} imports", p, pe.held.len());
        }
        prop_assert!(g.flying.is_empty());
    }
}

/// The end of a run of the model: deliver everything, drop every
/// reference an indirection does not keep, until nothing is left.
fn drain(g: &mut Group) {
    for _ in 0..100_000 {
        if !g.flying.is_empty() {
            let i = g.flying.len() - 1;
            g.deliver(i);
        } else if let Some((pe, gid)) = (0..g.pes.len()).find_map(|p| {
            held_gids(&g.pes[p])
                .into_iter()
                .find(|gid| !g.pes[p].kept.contains_key(gid))
                .map(|gid| (p, gid))
        }) {
            for weight in g.pes[pe].held.dropped(gid).unwrap() {
                g.send(Msg::Back { gid, weight });
            }
        } else {
            return;
        }
        assert_eq!(g.check(), Ok(()));
    }
    panic!("the model did not drain");
}

#[test]
fn a_reference_forwarded_past_its_weight_goes_through_indirections_and_all_returns() {
    let mut g = Group::new(3);
    g.export(0, 1);
    g.deliver(0);
    // PE 1 sends its reference to PE 2 twenty times: the 17th halving
    // finds a weight of 1, and PE 1 sends an indirection of its own.
    for _ in 0..20 {
        g.forward(1, 0, 2);
        assert_eq!(g.check(), Ok(()));
    }
    assert!(g.underflows > 0);
    // PE 2 forwards what it holds (PE 0's GA and PE 1's indirections) on.
    while !g.flying.is_empty() {
        g.deliver(0);
    }
    for k in 0..4 {
        for _ in 0..20 {
            g.forward(2, k, 0);
        }
    }
    assert_eq!(g.check(), Ok(()));
    drain(&mut g);
    for pe in &g.pes {
        assert!(pe.git.is_empty() && pe.held.is_empty() && pe.kept.is_empty());
    }
}
