//! PE groups (`numagc::pe`): work moves between runtimes and the answers
//! stay right; failures of exported tasks come back as errors.

mod common;

use numagc::pe::{Export, Exports, PeGroup};
use numagc::{Config, DescId, Descriptor, ErrorKind, Handle, PlanKind, Result, Runtime, Scope};
use std::sync::OnceLock;

/// The boxed-integer descriptor: registered first on every PE.
const CELL: DescId = DescId::nth_registered(0);

fn setup(rt: &Runtime) -> Result<()> {
    let d = rt.register(Descriptor::mixed("int-box", 1, &[0])?)?;
    assert_eq!(d, CELL);
    Ok(())
}

fn boxed<'s>(s: &mut Scope<'s>, x: i64) -> Result<Handle<'s>> {
    s.alloc_mixed(CELL, &[Handle::int(x)], &[])
}

fn unbox(s: &Scope<'_>, h: Handle<'_>) -> i64 {
    s.view(h).field(0).as_int().expect("a boxed integer")
}

static PFIB: OnceLock<Export> = OnceLock::new();

/// parfib with boxed results; the second call exported above 12.
fn pfib<'s>(s: &mut Scope<'s>, n: i64) -> Result<Handle<'s>> {
    if n < 2 {
        return boxed(s, n);
    }
    let (x, y) = if n <= 12 {
        let x = s.scope_value(|s| pfib(s, n - 1))?;
        let y = s.scope_value(|s| pfib(s, n - 2))?;
        (x, y)
    } else {
        let arg = boxed(s, n - 2)?;
        s.par2_export(*PFIB.get().unwrap(), &[arg], move |s, _| pfib(s, n - 1))?
    };
    let r = unbox(s, x) + unbox(s, y);
    boxed(s, r)
}

fn pfib_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let n = unbox(s, args[0]);
    pfib(s, n)
}

fn fib(n: i64) -> i64 {
    let (mut a, mut b) = (0i64, 1i64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn exports() -> Exports {
    let mut e = Exports::new();
    let f = e.register("pfib", pfib_task).unwrap();
    let _ = PFIB.set(f);
    e
}

/// A group's configuration on the tests' plan (`NUMAGC_TEST_PLAN`:
/// `scripts/test.sh` runs these tests on each plan).
fn config(vprocs: usize) -> Config {
    config_on(common::test_plan(), vprocs)
}

fn config_on(plan: PlanKind, vprocs: usize) -> Config {
    Config::builder()
        .plan(plan)
        .vprocs(vprocs)
        .local_heap_size(1 << 20)
        .build()
        .unwrap()
}

#[test]
fn parfib_is_right_on_one_and_several_pes() {
    let plans = [PlanKind::SplitHeap, PlanKind::SharedHeap];
    let shapes = [(1, 2), (2, 1), (3, 1), (2, 2)];
    for (plan, (pes, vprocs)) in plans.iter().flat_map(|&p| shapes.map(|s| (p, s))) {
        let g = PeGroup::new(pes, config_on(plan, vprocs), exports(), setup).unwrap();
        let n = 30;
        // Whether a task leaves PE 0 depends on the other PEs getting the
        // CPU while it runs (the test threads share two cores): up to 5
        // runs, every one checked, until one exported.
        for attempt in 1..=5 {
            // The other PEs' vprocs go idle, and ask for work, meanwhile.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let got = g
                .run(move |s| pfib(s, n).map(|h| unbox(s, h)))
                .unwrap()
                .unwrap();
            assert_eq!(got, fib(n), "{plan:?}: {pes} PEs x {vprocs} vprocs");
            assert_eq!(g.tasks_in_flight(), 0);
            let stats = g.stats();
            let exported: u64 = stats.iter().map(|s| s.tasks_exported).sum();
            let imported: u64 = stats.iter().map(|s| s.tasks_imported).sum();
            assert_eq!(exported, imported, "{stats:?}");
            assert!(g.take_errors().is_empty());
            if pes == 1 || exported > 0 {
                break;
            }
            assert!(attempt < 5, "no task left PE 0 in 5 runs: {stats:?}");
        }
    }
}

#[test]
fn runs_after_runs_reuse_the_group() {
    let g = PeGroup::new(2, config(1), exports(), setup).unwrap();
    for n in [15, 20, 22] {
        let got = g
            .run(move |s| pfib(s, n).map(|h| unbox(s, h)))
            .unwrap()
            .unwrap();
        assert_eq!(got, fib(n));
    }
}

static FAIL: OnceLock<Export> = OnceLock::new();

fn failing_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let n = unbox(s, args[0]);
    if n == 0 {
        return Err(numagc::Error::misuse("task 0 fails"));
    }
    // Long enough that the other PE takes the sibling.
    let (a, b) = s.par2_export(*FAIL.get().unwrap(), &[args[0]], move |s, _| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        boxed(s, n)
    })?;
    let _ = (a, b);
    boxed(s, n)
}

#[test]
fn an_exported_tasks_error_comes_back_to_its_forker() {
    let mut e = Exports::new();
    let f = e.register("fail", failing_task).unwrap();
    let _ = FAIL.set(f);
    let g = PeGroup::new(2, config(1), e, setup).unwrap();
    for _ in 0..3 {
        let r = g.run(move |s| -> Result<i64> {
            let zero = boxed(s, 0)?;
            let (_, _) = s.par2_export(f, &[zero], |s, _| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                boxed(s, 1)
            })?;
            Ok(0)
        });
        let err = r.unwrap().unwrap_err();
        // Run here or there, the task's own error comes back; from another
        // PE it names that PE.
        match err.kind() {
            ErrorKind::Misuse(m) => assert!(m.contains("task 0 fails")),
            ErrorKind::Pe { pe, message } => {
                assert_eq!(*pe, 1);
                assert!(message.contains("task 0 fails"), "{message}");
            }
            k => panic!("{k:?}"),
        }
    }
}

/// Adds `args[1]` to every field of the array `args[0]`, wherever it
/// lives, and returns `[the array, the sum of its old fields]`: a task
/// whose argument is a mutable object, read and written at its owner.
fn bump_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let (arr, k) = (args[0], s.as_int(args[1]).expect("an integer"));
    let mut sum = 0;
    for i in 0..s.remote_len(arr) {
        let x = s.remote_get(arr, i)?;
        let x = s.as_int(x).expect("an integer field");
        sum += x;
        s.remote_set(arr, i, Handle::int(x + k))?;
    }
    s.alloc_vector(&[arr, Handle::int(sum)])
}

/// Runs `bump_task` on an array of PE 0, forked with `par2_export`, the
/// forker's half slow enough that PE 1 asks for the task. Returns whether
/// it went to PE 1.
fn bump_once(g: &PeGroup, bump: Export) -> bool {
    let before = g.stats()[0].tasks_exported;
    g.run(move |s| -> Result<()> {
        let arr = s.alloc_array(5, Handle::int(3))?;
        let ten = Handle::int(10);
        let (_, r) = s.par2_export(bump, &[arr, ten], |s, _| {
            std::thread::sleep(std::time::Duration::from_millis(30));
            boxed(s, 0)
        })?;
        // The array came back as itself, not as a FetchMe or a copy.
        let back = s.field(r, 0)?;
        assert!(!s.is_remote(back));
        assert!(s.view(back).same(s.view(arr)));
        assert_eq!(s.view(r).field(1).as_int(), Some(15));
        for i in 0..5 {
            assert_eq!(s.view(arr).field(i).as_int(), Some(13), "field {i}");
        }
        Ok(())
    })
    .unwrap()
    .unwrap();
    assert!(g.take_errors().is_empty());
    assert_eq!(g.tasks_in_flight(), 0);
    g.stats()[0].tasks_exported > before
}

#[test]
fn a_mutable_argument_travels_as_a_global_address_and_is_written_at_home() {
    let mut e = Exports::new();
    let bump = e.register("bump", bump_task).unwrap();
    let g = PeGroup::new(2, config(1), e, setup).unwrap();
    let mut went = 0;
    for _ in 0..6 {
        went += usize::from(bump_once(&g, bump));
        if went >= 2 {
            break;
        }
    }
    assert!(went > 0, "the task never left PE 0: {:?}", g.stats());
    let st = g.stats();
    // Each exported run read and wrote 5 fields at PE 0.
    assert!(st[1].accesses >= 10, "{st:?}");
    assert_eq!(st[1].accesses, st[0].accesses_served, "{st:?}");
    // Every reference PE 1 held is dropped and its weight back home.
    assert_eq!(g.settle(), (0, 0), "{:?}", g.stats());
    let st = g.finish();
    assert!(
        st.iter().all(|s| s.git_entries == 0 && s.imports == 0),
        "{st:?}"
    );
    assert!(st[1].weight_returns > 0, "{st:?}");
}

/// A mutable array holding its argument's field 0: a result that travels
/// back as a global address.
fn array_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    std::thread::sleep(std::time::Duration::from_millis(30));
    let x = unbox(s, args[0]);
    s.alloc_array(1, Handle::int(x))
}

#[test]
fn a_mutable_result_comes_back_as_a_fetchme_read_and_written_at_its_owner() {
    let mut e = Exports::new();
    let array = e.register("array", array_task).unwrap();
    let g = PeGroup::new(2, config(1), e, setup).unwrap();
    let mut remote = false;
    for _ in 0..6 {
        remote |= g
            .run(move |s| -> Result<bool> {
                let seven = boxed(s, 7)?;
                let (a, b) = s.par2_export(array, &[seven], |s, _| {
                    std::thread::sleep(std::time::Duration::from_millis(60));
                    boxed(s, 1)
                })?;
                assert_eq!(s.remote_len(b), 1);
                let x = s.remote_get(b, 0)?;
                assert_eq!(s.as_int(x), Some(7));
                s.remote_set(b, 0, Handle::int(unbox(s, a) + 7))?;
                let x = s.remote_get(b, 0)?;
                assert_eq!(s.as_int(x), Some(8));
                // Out of bounds, refused here before anything is sent.
                assert!(s.remote_get(b, 1).is_err());
                Ok(s.is_remote(b))
            })
            .unwrap()
            .unwrap();
        assert_eq!(g.tasks_in_flight(), 0);
        assert!(g.take_errors().is_empty());
        if remote {
            break;
        }
    }
    assert!(remote, "the task never left PE 0: {:?}", g.stats());
    assert_eq!(g.settle(), (0, 0), "{:?}", g.stats());
}

#[test]
fn pe_counts_are_checked() {
    for pes in [0, 100_000] {
        let e = PeGroup::new(pes, config(1), Exports::new(), setup)
            .err()
            .unwrap();
        assert!(e.to_string().contains("pes"), "{e}");
    }
}

static FINE: OnceLock<Export> = OnceLock::new();

/// parfib forked down to n = 4: thousands of exportable forks, nested
/// waits on every vproc.
fn fine<'s>(s: &mut Scope<'s>, n: i64) -> Result<Handle<'s>> {
    if n < 4 {
        return boxed(s, fib(n));
    }
    let arg = boxed(s, n - 2)?;
    let (x, y) = s.par2_export(*FINE.get().unwrap(), &[arg], move |s, _| fine(s, n - 1))?;
    let r = unbox(s, x) + unbox(s, y);
    boxed(s, r)
}

fn fine_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let n = unbox(s, args[0]);
    fine(s, n)
}

#[test]
fn fine_grained_forks_on_several_vprocs_per_pe_finish() {
    let mut e = Exports::new();
    let _ = FINE.set(e.register("fine", fine_task).unwrap());
    // A run that does not finish within the limit fails the test instead
    // of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for plan in [PlanKind::SplitHeap, PlanKind::SharedHeap] {
            for (pes, vprocs) in [(2, 2), (3, 2), (4, 1)] {
                let g = PeGroup::new(pes, config_on(plan, vprocs), e.clone(), setup).unwrap();
                for _ in 0..3 {
                    let got = g
                        .run(|s| fine(s, 26).map(|h| unbox(s, h)))
                        .unwrap()
                        .unwrap();
                    assert_eq!(got, fib(26));
                    assert_eq!(g.tasks_in_flight(), 0);
                }
                assert!(g.take_errors().is_empty());
            }
        }
        tx.send(()).unwrap();
    });
    rx.recv_timeout(std::time::Duration::from_secs(120))
        .expect("every run finishes within 120 s");
}

static SLOW: OnceLock<Export> = OnceLock::new();

/// Sleeps long enough for the test to stop the PE that runs it.
fn slow_task<'s>(s: &mut Scope<'s>, _: &[Handle<'s>]) -> Result<Handle<'s>> {
    std::thread::sleep(std::time::Duration::from_millis(300));
    boxed(s, 1)
}

#[test]
fn a_pe_that_stops_fails_what_was_exported_to_it_and_the_others_carry_on() {
    let mut e = Exports::new();
    let slow = e.register("slow", slow_task).unwrap();
    let _ = SLOW.set(slow);
    let g = std::sync::Arc::new(PeGroup::new(2, config(1), e, setup).unwrap());
    let stopper = {
        let g = g.clone();
        std::thread::spawn(move || {
            // PE 1 takes the slow half while PE 0 runs the other.
            std::thread::sleep(std::time::Duration::from_millis(100));
            g.stop_pe(1);
        })
    };
    let t0 = std::time::Instant::now();
    let r = g
        .run(move |s| -> Result<i64> {
            let (a, b) = s.par2_export(slow, &[], |s, _| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                boxed(s, 1)
            })?;
            Ok(unbox(s, a) + unbox(s, b))
        })
        .unwrap();
    stopper.join().unwrap();
    match r {
        // PE 1 had the task: its loss is an error naming PE 1.
        Err(e) => match e.kind() {
            ErrorKind::Pe { pe: 1, message } => assert!(message.contains("stopped"), "{message}"),
            k => panic!("{k:?}"),
        },
        // PE 0 ran both halves (PE 1 asked too late): the answer is right.
        Ok(n) => assert_eq!(n, 2),
    }
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(g.tasks_in_flight(), 0);
    // PE 0 carries on alone: PE 1 asks for no more work, so both halves
    // run here.
    let got = g
        .run(move |s| -> Result<i64> {
            let (a, b) = s.par2_export(slow, &[], |s, _| boxed(s, 1))?;
            Ok(unbox(s, a) + unbox(s, b))
        })
        .unwrap()
        .unwrap();
    assert_eq!(got, 2);
}

static PANICKY: OnceLock<Export> = OnceLock::new();

/// Panics where it runs: on PE 1 when exported, as a PE whose vproc
/// crashes in the middle of a task.
fn panicking_task<'s>(_: &mut Scope<'s>, _: &[Handle<'s>]) -> Result<Handle<'s>> {
    panic!("a vproc of this PE crashed");
}

#[test]
fn a_task_that_panics_on_another_pe_is_an_error_there_and_every_pe_carries_on() {
    // pfib's function first, at the number PFIB holds.
    let mut e = exports();
    let p = e.register("panicky", panicking_task).unwrap();
    let _ = PANICKY.set(p);
    let g = PeGroup::new(2, config(1), e, setup).unwrap();
    let mut remote = 0;
    for _ in 0..20 {
        let r = g
            .run(move |s| -> Result<i64> {
                // The local half is slow: PE 1 asks for work meanwhile and
                // takes the exported half, which panics there.
                let (_, _) = s.par2_export(p, &[], |s, _| {
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    boxed(s, 1)
                })?;
                Ok(0)
            })
            // Run here (PE 1 did not ask in time: a loaded machine), the
            // panic unwinds out of the run, as any task's panic does.
            .and_then(|r| r);
        match r {
            Err(e) => match e.kind() {
                ErrorKind::Pe { pe: 1, message } => {
                    assert!(message.contains("crashed"), "{message}");
                    remote += 1;
                }
                // Run here, the panic is this PE's task panic.
                ErrorKind::TaskPanicked { .. } => {}
                k => panic!("{k:?}"),
            },
            Ok(_) => panic!("the panicking half returned"),
        }
        assert_eq!(g.tasks_in_flight(), 0);
    }
    assert!(remote > 0, "PE 1 never took the task");
    // Both PEs still work: a run of parfib after the panics is right.
    let got = g
        .run(|s| pfib(s, 18).map(|h| unbox(s, h)))
        .unwrap()
        .unwrap();
    assert_eq!(got, fib(18));
}

#[test]
fn call_on_places_tasks_and_global_objects_move_between_three_pes() {
    let mut e = Exports::new();
    let array = e.register("array", array_task).unwrap();
    let bump = e.register("bump", bump_task).unwrap();
    let g = PeGroup::new(3, config(1), e, setup).unwrap();
    g.run(move |s| -> Result<()> {
        // An array made on PE 1 comes back as a FetchMe.
        let seven = boxed(s, 7)?;
        let on1 = s.call_on(1, array, &[seven])?;
        assert!(s.is_remote(on1));
        let x = s.remote_get(on1, 0)?;
        assert_eq!(s.as_int(x), Some(7));
        // PE 2 bumps PE 1's array: the FetchMe travels on, and PE 2's
        // accesses go to PE 1 directly.
        let r = s.call_on(2, bump, &[on1, Handle::int(100)])?;
        let back = s.field(r, 0)?;
        assert!(s.is_remote(back));
        assert_eq!(s.as_int(s.field(r, 1)?), Some(7));
        let x = s.remote_get(on1, 0)?;
        assert_eq!(s.as_int(x), Some(107));
        // PE 2 bumps PE 0's own array: it comes back as itself.
        let mine = s.alloc_array(3, Handle::int(1))?;
        let r = s.call_on(2, bump, &[mine, Handle::int(2)])?;
        assert!(s.view(s.field(r, 0)?).same(s.view(mine)));
        assert_eq!(s.as_int(s.field(r, 1)?), Some(3));
        assert_eq!(s.view(mine).field(2).as_int(), Some(3));
        // On this PE it is a call; outside the group, an error.
        let r = s.call_on(0, bump, &[mine, Handle::int(1)])?;
        assert_eq!(s.as_int(s.field(r, 1)?), Some(9));
        assert!(s.call_on(3, bump, &[mine, Handle::int(1)]).is_err());
        Ok(())
    })
    .unwrap()
    .unwrap();
    assert!(g.take_errors().is_empty());
    let st = g.stats();
    assert!(st[2].accesses >= 8 && st[1].accesses_served >= 2, "{st:?}");
    assert_eq!(g.settle(), (0, 0), "{:?}", g.stats());
}
