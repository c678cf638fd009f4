//! A proof that the runtime registered a layout, made once per job.
//!
//! Typed allocation tests, at every allocation, that the runtime
//! registered `T::DESC` with `T`'s layout (two loads and a 64-bit
//! compare, and a register for the constant): the one test a compiler's
//! allocation does not make, because its layouts are fixed when the
//! program starts. A [`Registered`] token is that test made once
//! ([`Scope::registered`]): it is a zero-sized value a program passes
//! down its recursion, and [`Scope::alloc_fresh_as`] allocates with it
//! and no test.
//!
//! Sound because a registration never changes once made (the descriptor
//! table only grows) and a token cannot reach another runtime: it is
//! neither `Send` nor `Sync`, so it stays on its vproc's thread, and it
//! borrows the job's scope, so it does not outlive the job.

use super::scope::{Handle, Scope};
use super::typed::{packed, Fresh, Layout};
use crate::error::Result;
use std::marker::PhantomData;

/// This runtime registered `T::DESC` with `T`'s layout (module doc).
pub struct Registered<'s, T> {
    _scope: PhantomData<&'s ()>,
    _layout: PhantomData<fn() -> T>,
    _not_send: PhantomData<*const ()>,
}

impl<T> Clone for Registered<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Registered<'_, T> {}

impl<'s> Scope<'s> {
    /// The proof that this runtime registered `T::DESC` with `T`'s
    /// layout, or the error `Scope::alloc_typed` would return.
    pub fn registered<T: Layout>(&self) -> Result<Registered<'s, T>> {
        if !self.registered_as::<T>() {
            return Err(self.layout_error::<T>());
        }
        Ok(Registered {
            _scope: PhantomData,
            _layout: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// [`Scope::alloc_fresh`] with the registration proved: no test of
    /// it on the fast path.
    ///
    /// ```
    /// use numagc::{Config, DescId, Handle, Layout, Runtime};
    /// struct Boxed;
    /// impl Layout for Boxed {
    ///     const NAME: &'static str = "box";
    ///     const DESC: DescId = DescId::nth_registered(0);
    ///     const SIZE: usize = 1;
    ///     const VALUES: u32 = 0b1;
    /// }
    /// let rt = Runtime::new(Config::builder().vprocs(1).build()?)?;
    /// rt.register(Boxed::descriptor()?)?;
    /// let x = rt.run_on(0, |s| -> numagc::Result<i64> {
    ///     let boxed = s.registered::<Boxed>()?;
    ///     let b = s.scope_fresh(|s| s.alloc_fresh_as(boxed, &[Handle::int(7)], &[]))?;
    ///     Ok(s.int(b, 0).unwrap())
    /// })??;
    /// assert_eq!(x, 7);
    /// # Ok::<(), numagc::Error>(())
    /// ```
    #[inline(always)]
    pub fn alloc_fresh_as<T: Layout>(
        &mut self,
        _registered: Registered<'_, T>,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Result<Fresh<'_, T>> {
        debug_assert!(
            self.registered_as::<T>(),
            "a `Registered` of another runtime"
        );
        if let Some(p) = self.alloc_small(T::DESC.id(), packed::<T>(), values, raw) {
            return Ok(Fresh::new(p as u64));
        }
        self.alloc_typed_general::<T>(values, raw).map(Fresh::new)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_layouts::{on_every_plan, runtime, Impostor, Mixed, Pair};
    use crate::object::descriptor::DescId;
    use crate::{Handle, Layout, PlanKind};

    /// Never registered.
    struct Unknown;
    impl Layout for Unknown {
        const NAME: &'static str = "unknown";
        const DESC: DescId = DescId::nth_registered(7);
        const SIZE: usize = 1;
        const VALUES: u32 = 0b1;
    }

    #[test]
    fn a_layout_registered_otherwise_or_not_at_all_gets_no_proof() {
        let rt = runtime(PlanKind::SplitHeap);
        rt.run_on(0, |s| {
            let e = s.registered::<Impostor>().map(|_| ()).unwrap_err();
            assert!(e.to_string().contains("layout `impostor`"), "{e}");
            let e = s.registered::<Unknown>().map(|_| ()).unwrap_err();
            assert!(e.to_string().contains("layout `unknown`"), "{e}");
            assert!(s.registered::<Pair>().is_ok() && s.registered::<Mixed>().is_ok());
        })
        .unwrap();
    }

    #[test]
    fn allocations_under_a_proof_survive_collections_on_every_plan() {
        on_every_plan(|s, plan| {
            let pair = s.registered::<Pair>()?;
            // A list of 20,000 pairs, enough for many collections.
            let list = s.slot(Handle::NIL);
            for i in 0..20_000i64 {
                let cell =
                    s.scope_fresh(|s| s.alloc_fresh_as(pair, &[Handle::int(i), list.get()], &[]))?;
                s.assign(list, cell.untyped());
            }
            s.collect_major()?;
            let (mut cell, mut i) = (s.typed::<Pair>(list.get()), 20_000i64);
            while let Some(c) = cell {
                i -= 1;
                assert_eq!(s.int(c, 0), Some(i), "{plan:?}");
                let tail = s.handle(s.get(c, 1));
                cell = s.typed::<Pair>(tail);
            }
            assert_eq!(i, 0, "{plan:?}: the whole list");
            Ok(())
        });
    }
}
