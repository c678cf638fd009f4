//! Combined allocation: an object and the object that holds it, with one
//! bump of the allocation pointer.
//!
//! A functional program often allocates a value and at once the one that
//! holds it: `(c, q - 1) :: rest` is a pair and the cons cell whose head
//! it is. A compiler allocates both with one test of the heap's limit
//! (OCaml's combined allocations, `Comballoc`; GHC's one heap check per
//! function; the compiled benchmarks' `try_alloc_many_at`). Through the
//! safe API they were two allocations, each with its test and its store
//! of the allocation pointer, and the inner object rooted in a slot
//! between them, since the second may collect.
//! [`Scope::alloc_fresh_holding`] makes them one: nothing can collect
//! between the two objects' initialisation, so the inner one needs no
//! slot.
//!
//! The invariants are the typed allocation's (`typed`): both layouts are
//! checked against the runtime's registration, the field counts against
//! the layouts, and the result is a [`Fresh`] object of the outer layout.

use super::scope::{Handle, Scope};
use super::typed::{packed, Fresh, Layout};
use crate::error::{Error, Result};
use crate::object::descriptor::FastLayout;

impl<'s> Scope<'s> {
    /// Allocates an object of layout `A` (`inner_values`, `inner_raw`, as
    /// [`Scope::alloc_fresh`] takes them) and an object of layout `B` that
    /// holds it in its value field number `at` (counted among `B`'s value
    /// fields; `values[at]` is not read, `Handle::NIL` reads best there),
    /// `values` and `raw` filling `B`'s other fields. One bump of the
    /// allocation pointer for both on the fast path; the new `B` comes
    /// back unrooted (module doc).
    ///
    /// ```
    /// use numagc::{Config, DescId, Handle, Layout, Runtime};
    /// struct Pair;
    /// impl Layout for Pair {
    ///     const NAME: &'static str = "pair";
    ///     const DESC: DescId = DescId::nth_registered(0);
    ///     const SIZE: usize = 2;
    ///     const VALUES: u32 = 0b11;
    /// }
    /// struct Cons;
    /// impl Layout for Cons {
    ///     const NAME: &'static str = "cons";
    ///     const DESC: DescId = DescId::nth_registered(1);
    ///     const SIZE: usize = 2;
    ///     const VALUES: u32 = 0b11;
    /// }
    /// let rt = Runtime::new(Config::builder().vprocs(1).build()?)?;
    /// rt.register(Pair::descriptor()?)?;
    /// rt.register(Cons::descriptor()?)?;
    /// let q = rt.run_on(0, |s| -> numagc::Result<i64> {
    ///     // `(5, 3) :: []`
    ///     let list = s.scope_fresh(|s| {
    ///         s.alloc_fresh_holding::<Pair, Cons>(
    ///             &[Handle::int(5), Handle::int(3)], &[],
    ///             &[Handle::NIL, Handle::NIL], &[], 0,
    ///         )
    ///     })?;
    ///     let pair = s.get(list, 0).record::<Pair>().expect("a pair");
    ///     Ok(pair.int(1).expect("an integer"))
    /// })??;
    /// assert_eq!(q, 3);
    /// # Ok::<(), numagc::Error>(())
    /// ```
    #[inline(always)]
    pub fn alloc_fresh_holding<A: Layout, B: Layout>(
        &mut self,
        inner_values: &[Handle<'_>],
        inner_raw: &[u64],
        values: &[Handle<'_>],
        raw: &[u64],
        at: usize,
    ) -> Result<Fresh<'_, B>> {
        let (fa, fb) = (packed::<A>(), packed::<B>());
        if self.registered_as::<A>()
            && self.registered_as::<B>()
            && fa.fits(inner_values.len(), inner_raw.len())
            && fb.fits(values.len(), raw.len())
            && at < values.len()
        {
            let a_bytes = (fa.size() + 1) * 8;
            // Both below the large-object floor (`FastLayout::MAX_SIZE`).
            if let Some(p) = self.bump(a_bytes + (fb.size() + 1) * 8) {
                // SAFETY: `p` is a fresh reservation of both objects, the
                // inner one first; the counts and `at` were checked above,
                // and the inner object is written before the outer one
                // holds it, with nothing between that may collect.
                unsafe {
                    self.init_small(p, A::DESC.id(), fa, inner_values, inner_raw, None);
                    let q = p + a_bytes;
                    self.init_small(q, B::DESC.id(), fb, values, raw, Some((at, p as u64)));
                    return Ok(Fresh::new(q as u64));
                }
            }
        }
        let w = self.alloc_holding_general::<A, B>(inner_values, inner_raw, values, raw, at)?;
        Ok(Fresh::new(w))
    }

    /// [`Scope::alloc_fresh_holding`] past its fast path: the inner object
    /// allocated and rooted in a nested scope, then the outer one (as two
    /// typed allocations), and the errors.
    #[inline(never)]
    fn alloc_holding_general<A: Layout, B: Layout>(
        &mut self,
        inner_values: &[Handle<'_>],
        inner_raw: &[u64],
        values: &[Handle<'_>],
        raw: &[u64],
        at: usize,
    ) -> Result<u64> {
        if at >= values.len() || values.len() > FastLayout::MAX_SIZE {
            return Err(Error::misuse(format!(
                "alloc_fresh_holding: value field {at} of `{}` named for the inner `{}`, \
                 but {} values were given",
                B::NAME,
                A::NAME,
                values.len()
            )));
        }
        self.scope(|s| {
            let inner = s.alloc_typed::<A>(inner_values, inner_raw)?;
            let mut held = [Handle::NIL; FastLayout::MAX_SIZE];
            held[..values.len()].copy_from_slice(values);
            held[at] = inner.untyped();
            // The outer object's word leaves the nested scope unrooted:
            // popping the scope's slots does not collect.
            s.alloc_typed_word::<B>(&held[..values.len()], raw)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_layouts::{on_every_plan, runtime, Mixed as Node, Pair};
    use crate::{Handle, PlanKind, Result};

    #[test]
    fn a_list_of_combined_allocations_survives_collections_on_every_plan() {
        on_every_plan(|s, plan| {
            // 5,000 nodes `[prev, id, (i, -i)]`, enough for many
            // minor collections, each its pair's holder.
            let list = s.slot(Handle::NIL);
            for i in 0..5_000i64 {
                let prev = list.get();
                let n = s.scope_fresh(|s| {
                    s.alloc_fresh_holding::<Pair, Node>(
                        &[Handle::int(i), Handle::int(-i)],
                        &[],
                        &[prev, Handle::NIL],
                        &[i as u64 * 7],
                        1,
                    )
                })?;
                s.assign(list, n.untyped());
            }
            s.collect_major()?;
            let mut node = s.typed::<Node>(list.get());
            let mut i = 5_000i64;
            while let Some(n) = node {
                i -= 1;
                assert_eq!(s.raw_of(n, 1), i as u64 * 7, "{plan:?}");
                let pair = s.get(n, 2).record::<Pair>().expect("the inner pair");
                assert_eq!((pair.int(0), pair.int(1)), (Some(i), Some(-i)), "{plan:?}");
                let prev = s.handle(s.get(n, 0));
                node = s.typed::<Node>(prev);
            }
            assert_eq!(i, 0, "{plan:?}: the whole list");
            Ok(())
        });
    }

    #[test]
    fn a_field_number_past_the_values_is_an_error() {
        let rt = runtime(PlanKind::SplitHeap);
        let e = rt
            .run_on(0, |s| -> Result<()> {
                s.alloc_fresh_holding::<Pair, Pair>(
                    &[Handle::int(1), Handle::int(2)],
                    &[],
                    &[Handle::NIL, Handle::NIL],
                    &[],
                    2,
                )
                .map(|_| ())
            })
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("value field 2 of `pair`"), "{e}");
    }
}
