//! Frames: a scope's slots reserved at once, filled by the results of
//! calls.
//!
//! A [`Scope::scope_fresh`] call pushes a slot for every handle it makes,
//! and each push loads and stores the root stack's top, which lives in
//! memory (the vproc's mutator record): in a recursive program those
//! loads and stores form one chain through the whole run, every link a
//! store forwarded to a load. Compiled code does not push per value: it
//! reserves a frame of N slots on entry and stores its values into them
//! (`crate::compiled`, OCaml's `CAMLlocalN`). [`Scope::frame_fresh`] does
//! the same in safe code: it reserves N slots holding `NIL` with one
//! store of the top, hands them to its closure as [`FrameSlot`] tokens,
//! and pops them with one store of the top when the closure returns.
//!
//! A call's result comes back unrooted, as a [`Fresh`] object borrowing
//! the caller's scope (`frame_fresh` returns the [`Fresh`] its closure
//! made, re-borrowed from the scope around it: nothing that may collect
//! has run since its allocation), and [`FrameSlot::keep`] stores it into
//! a slot of the caller's frame, which becomes a [`Typed`] handle.
//!
//! The invariant (`typed`'s module doc: a typed handle's slot holds the
//! object it was made with for as long as its scope lives): a
//! `FrameSlot` is not `Copy` and `keep` consumes it, so each slot of a
//! frame is written once, by `keep`, before any handle names it; no other
//! safe API writes a frame's slots ([`Slot`](super::Slot)s are others);
//! and a slot's lifetime `'i` is the frame's, which pops it only when its
//! closure has returned. Until `keep`, the slot holds `NIL`, an immediate
//! that the collectors skip.

use super::scope::Scope;
use super::typed::{Fresh, Layout, Record, Typed};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// A reserved slot of a frame ([`Scope::frame_fresh`]), holding `NIL`
/// until [`FrameSlot::keep`] stores an object into it.
pub struct FrameSlot<'i> {
    slot: NonNull<u64>,
    _scope: PhantomData<&'i ()>,
    _not_send: PhantomData<*const ()>,
}

impl<'i> FrameSlot<'i> {
    /// Roots `fresh` in this slot: the slot becomes a typed handle of the
    /// frame's scope. Nothing that may collect has run since `fresh` was
    /// allocated (it borrowed its scope mutably until this call).
    #[inline(always)]
    pub fn keep<T: Layout>(self, fresh: Fresh<'_, T>) -> Typed<'i, T> {
        // SAFETY: `fresh` is an object of layout `T` allocated on this
        // thread's vproc (`Fresh` is not `Send`) with nothing that may
        // collect since (it borrowed its scope mutably until this call).
        unsafe { self.hold(fresh.word) }
    }

    /// Roots the object `r` reads in this slot (as
    /// [`Scope::root_record`] roots it in a new slot): a field read
    /// through a typed handle, held across what may collect.
    #[inline(always)]
    pub fn keep_record<T: Layout>(self, r: Record<'_, T>) -> Typed<'i, T> {
        // SAFETY: `r` borrows its scope shared, so nothing has collected
        // since it was read, and it reads an object of layout `T` (its
        // invariant).
        unsafe { self.hold(r.word()) }
    }

    /// Writes `word` into this slot and makes it a typed handle.
    ///
    /// # Safety
    /// `word` is an object of layout `T` of this vproc, with nothing that
    /// may collect since it was read or allocated.
    #[inline(always)]
    unsafe fn hold<T: Layout>(self, word: u64) -> Typed<'i, T> {
        // SAFETY: the slot is one of a frame's, pushed for `'i` and inside
        // the root stack's mapping; this token is the only writer of it,
        // once (it is consumed). With the caller's contract the slot
        // holds, from here and for `'i`, an object of layout `T`:
        // `Typed`'s invariant.
        unsafe {
            self.slot.as_ptr().write(word);
            Typed::at(self.slot)
        }
    }
}

impl<'s> Scope<'s> {
    /// Runs `f` in a nested scope with a frame of `N` reserved slots
    /// ([`FrameSlot`]s, module doc), which `f` fills with the objects it
    /// holds across what may collect. The frame's slots and every handle
    /// `f` made are popped when `f` returns, fails or unwinds.
    ///
    /// A recursive call of a functional program, as compiled code makes
    /// it: one store of the root stack's top on entry and one on exit,
    /// whatever the number of values the call holds.
    ///
    /// ```
    /// use numagc::{Config, DescId, Fresh, Handle, Layout, Result, Runtime, Scope};
    /// struct Boxed;
    /// impl Layout for Boxed {
    ///     const NAME: &'static str = "box";
    ///     const DESC: DescId = DescId::nth_registered(0);
    ///     const SIZE: usize = 1;
    ///     const VALUES: u32 = 0b1;
    /// }
    /// /// `fib n`, boxed, both calls' boxes held in the frame's slots.
    /// fn fib<'a>(s: &'a mut Scope<'_>, n: i64) -> Result<Fresh<'a, Boxed>> {
    ///     if n < 2 {
    ///         return s.alloc_fresh::<Boxed>(&[Handle::int(n)], &[]);
    ///     }
    ///     s.frame_fresh(|s, [a, b]| {
    ///         let x = a.keep(fib(s, n - 1)?);
    ///         let y = b.keep(fib(s, n - 2)?); // may collect: `x` is rooted
    ///         let sum = s.int(x, 0).unwrap() + s.int(y, 0).unwrap();
    ///         s.alloc_fresh::<Boxed>(&[Handle::int(sum)], &[])
    ///     })
    /// }
    /// let rt = Runtime::new(Config::builder().vprocs(1).build()?)?;
    /// rt.register(Boxed::descriptor()?)?;
    /// let f = rt.run_on(0, |s| -> Result<i64> {
    ///     let b = s.scope_fresh(|s| fib(s, 20))?;
    ///     Ok(s.int(b, 0).unwrap())
    /// })??;
    /// assert_eq!(f, 6765);
    /// # Ok::<(), numagc::Error>(())
    /// ```
    #[inline]
    pub fn frame<const N: usize, R>(
        &mut self,
        f: impl for<'i> FnOnce(&mut Scope<'i>, [FrameSlot<'i>; N]) -> R,
    ) -> R {
        let (inner, entry) = self.enter();
        let slots = inner.push_frame::<N>();
        let r = f(inner, slots);
        entry.pop(self);
        r
    }

    /// Pushes a frame of `N` slots holding `NIL`, and the tokens of its
    /// slots.
    #[inline(always)]
    fn push_frame<'i, const N: usize>(&self) -> [FrameSlot<'i>; N] {
        let first = self.roots().push_nil::<N>();
        std::array::from_fn(|i| FrameSlot {
            // SAFETY: `i < N`: a slot of the frame just pushed.
            slot: unsafe { first.add(i) },
            _scope: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// Runs `f` in a nested scope with a frame of `N` reserved slots, as
    /// [`Scope::frame`] does, and returns the object `f` allocated last,
    /// [`Fresh`], unrooted, to the caller, who keeps it in a slot of its
    /// own frame ([`FrameSlot::keep`]) or in a scope's slot
    /// ([`Scope::scope_fresh`]).
    #[inline]
    pub fn frame_fresh<const N: usize, T: Layout, E>(
        &mut self,
        f: impl for<'a, 'i> FnOnce(
            &'a mut Scope<'i>,
            [FrameSlot<'i>; N],
        ) -> std::result::Result<Fresh<'a, T>, E>,
    ) -> std::result::Result<Fresh<'_, T>, E> {
        // The nested scope begins at the frame: its entry pops the frame
        // and everything `f` pushed above it, on return and on unwinding.
        let (inner, entry) = self.enter();
        let slots = inner.push_frame::<N>();
        let word = f(inner, slots).map(|fresh| fresh.word);
        entry.pop(self);
        word.map(Fresh::new)
    }
}

/// A frame's slot is written once: keeping a second object in it does not
/// compile (the token was consumed by the first `keep`).
///
/// ```compile_fail,E0382
/// use numagc::{DescId, Fresh, Handle, Layout, Result, Scope};
/// struct Boxed;
/// impl Layout for Boxed {
///     const NAME: &'static str = "box";
///     const DESC: DescId = DescId::nth_registered(0);
///     const SIZE: usize = 1;
///     const VALUES: u32 = 0b1;
/// }
/// fn twice<'a>(s: &'a mut Scope<'_>) -> Result<Fresh<'a, Boxed>> {
///     s.frame_fresh(|s, [a]| {
///         let x = a.keep(s.alloc_fresh::<Boxed>(&[Handle::int(1)], &[])?);
///         let y = a.keep(s.alloc_fresh::<Boxed>(&[Handle::int(2)], &[])?);
///         drop((x, y));
///         s.alloc_fresh::<Boxed>(&[Handle::int(3)], &[])
///     })
/// }
/// ```
///
/// Nor does a handle of a frame's slot outlive the frame:
///
/// ```compile_fail,E0521
/// use numagc::{DescId, Fresh, Handle, Layout, Result, Scope, Typed};
/// struct Boxed;
/// impl Layout for Boxed {
///     const NAME: &'static str = "box";
///     const DESC: DescId = DescId::nth_registered(0);
///     const SIZE: usize = 1;
///     const VALUES: u32 = 0b1;
/// }
/// fn escape<'s>(s: &mut Scope<'s>) -> Result<Typed<'s, Boxed>> {
///     let mut kept = None;
///     let _ = s.frame_fresh(|s, [a]| {
///         kept = Some(a.keep(s.alloc_fresh::<Boxed>(&[Handle::int(1)], &[])?));
///         s.alloc_fresh::<Boxed>(&[Handle::int(3)], &[])
///     })?;
///     Ok(kept.unwrap())
/// }
/// ```
#[cfg(doctest)]
struct FramesCannotBeMisused;

#[cfg(test)]
mod tests {
    use super::super::test_layouts::{on_every_plan, runtime, Pair as Node};
    use crate::{Error, Fresh, Handle, PlanKind, Result, Scope};

    /// A tree of depth `d` whose leaves count up from `*next`, built
    /// with garbage between the two calls of every node, so that
    /// collections run while the left subtree is held in a frame's slot.
    fn tree<'a>(s: &'a mut Scope<'_>, d: u32, next: &mut i64) -> Result<Fresh<'a, Node>> {
        if d == 0 {
            *next += 1;
            return s.alloc_fresh::<Node>(&[Handle::int(*next - 1), Handle::NIL], &[]);
        }
        s.frame_fresh(|s, [l, r]| {
            let l = l.keep(tree(s, d - 1, next)?);
            for i in 0..40 {
                s.alloc_typed::<Node>(&[Handle::int(i), Handle::NIL], &[])?;
            }
            let r = r.keep(tree(s, d - 1, next)?);
            s.alloc_fresh::<Node>(&[l.untyped(), r.untyped()], &[])
        })
    }

    /// The leaves of `h`'s tree of depth `d`, in order.
    fn leaves(s: &mut Scope<'_>, h: Handle<'_>, d: u32, out: &mut Vec<i64>) {
        let n = s.typed::<Node>(h).expect("a node");
        if d == 0 {
            out.push(s.int(n, 0).expect("a leaf's number"));
            return;
        }
        s.scope(|s| {
            let (l, r) = (s.handle(s.get(n, 0)), s.handle(s.get(n, 1)));
            leaves(s, l, d - 1, out);
            leaves(s, r, d - 1, out);
        });
    }

    #[test]
    fn frames_hold_call_results_across_collections_on_every_plan() {
        on_every_plan(|s, plan| {
            let before = s.roots_in_use();
            let mut next = 0;
            let t = s.scope_fresh(|s| tree(s, 10, &mut next))?;
            assert_eq!(s.roots_in_use(), before + 1, "every frame popped");
            s.collect_major()?;
            let mut got = Vec::new();
            leaves(s, t.untyped(), 10, &mut got);
            assert_eq!(got, (0..1024).collect::<Vec<i64>>(), "{plan:?}");
            Ok(())
        });
    }

    #[test]
    fn a_frame_that_fails_or_unwinds_pops_its_slots() {
        let rt = runtime(PlanKind::SplitHeap);
        rt.run_on(0, |s| -> Result<()> {
            let before = s.roots_in_use();
            let e = s
                .frame_fresh(|s, [a, _b]| {
                    a.keep(s.alloc_fresh::<Node>(&[Handle::int(1), Handle::NIL], &[])?);
                    s.alloc_typed::<Node>(&[Handle::int(2), Handle::NIL], &[])?;
                    Err::<Fresh<'_, Node>, _>(Error::misuse("given up"))
                })
                .map(|_| ())
                .unwrap_err();
            assert!(e.to_string().contains("given up"));
            assert_eq!(s.roots_in_use(), before, "an error pops the frame");
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = s.frame_fresh(|s, [a, _b, _c]| -> Result<Fresh<'_, Node>> {
                    a.keep(s.alloc_fresh::<Node>(&[Handle::int(1), Handle::NIL], &[])?);
                    s.alloc_typed::<Node>(&[Handle::int(2), Handle::NIL], &[])?;
                    panic!("in a frame")
                });
            }));
            assert!(unwound.is_err());
            assert_eq!(s.roots_in_use(), before, "unwinding pops the frame");
            Ok(())
        })
        .unwrap()
        .unwrap();
    }
}
