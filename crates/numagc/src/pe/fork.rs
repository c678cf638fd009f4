//! `Scope::par2_export`: a fork whose second half another PE may run.

use super::export::Export;
use super::group::Offered;
use super::pack;
use crate::error::{ErrorKind, Result};
use crate::mutator::{Handle, Scope};
use std::sync::Arc;
use std::time::Instant;

impl<'s> Scope<'s> {
    /// Runs `a` here and `export`'s function on `args` in parallel, and
    /// returns both results, as [`Scope::par2`] does with a closure. On a
    /// runtime that is one PE of a group (`crate::pe::PeGroup`), another
    /// PE that runs out of work may take the second half: its arguments
    /// travel packed (`crate::pe` packs them here, at the fork, so that
    /// the PE's service thread never reads the heap), and its result
    /// comes back the same way. A vproc of this PE may still steal it, and
    /// if no one takes it the forker runs it after `a`, as `par2` would.
    ///
    /// When the arguments cannot be packed (a mutable object, a graph
    /// past the packet limit), or outside a group, this is `par2` calling
    /// the function.
    ///
    /// Errors: those of `par2`; an exported task's error, or the loss of
    /// the PE that ran it, as [`ErrorKind::Pe`].
    pub fn par2_export<A>(
        &mut self,
        export: Export,
        args: &[Handle<'_>],
        a: A,
    ) -> Result<(Handle<'s>, Handle<'s>)>
    where
        A: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>>,
    {
        let f = export.f;
        let ctx = match self.vproc_mut().shared.pe.get() {
            Some(c) if c.pes > 1 => c.clone(),
            _ => return self.par2(args, a, f),
        };
        let t0 = Instant::now();
        let packed = match pack::pack(self, args, ctx.packet_limit) {
            Ok(p) => p,
            Err(e) if matches!(e.kind(), ErrorKind::NotExportable(_)) => {
                return self.par2(args, a, f);
            }
            Err(e) => return Err(e),
        };
        ctx.packed_since(t0);
        let offer = Arc::new(Offered::new(export, packed));
        ctx.offer(offer.clone());
        self.par2(args, a, move |s, env| {
            if offer.claim_local() {
                ctx.withdraw(&offer);
                return f(s, env);
            }
            ctx.wait_remote(s, &offer)
        })
    }
}
