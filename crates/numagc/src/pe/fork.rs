//! `Scope::par2_export`: a fork whose second half another PE may run.

use super::export::Export;
use super::group::Offered;
use crate::error::{ErrorKind, Result};
use crate::mutator::{Handle, Scope, SlotHandles};
use std::sync::Arc;

impl<'s> Scope<'s> {
    /// Runs `a` here and `export`'s function on `args` in parallel, and
    /// returns both results, as [`Scope::par2`] does with a closure. On a
    /// runtime that is one PE of a group (`crate::pe::PeGroup`), another
    /// PE that runs out of work may take the second half: its arguments
    /// travel packed (this vproc packs them at its next safepoint after
    /// the PE's service gave the task away, so that the service never
    /// reads the heap and a fork that stays home packs nothing), and its
    /// result comes back the same way, to this vproc, which waits for it after
    /// `a`. A vproc of this PE may still steal it, and if no one takes it
    /// the forker runs it after `a`, as `par2` would.
    ///
    /// When the arguments cannot be packed (a mutable object, a graph
    /// past the packet limit) the task stays here; outside a group this
    /// is `par2` calling the function.
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
        // The arguments in slots of a scope of their own, where the
        // forker packs them if another PE takes the task; the offer is
        // settled before the scope ends (the fork is joined in it).
        let (wa, wb) = self.scope(|s| -> Result<(u64, u64)> {
            let base = s.roots_in_use();
            for &h in args {
                let w = s.word(h);
                s.push_slot_word(w);
            }
            let offer = Arc::new(Offered::new(export, s.vproc(), base, args.len()));
            ctx.offer(offer.clone());
            let side = offer.clone();
            let home = ctx.clone();
            let (x, y) = s.par2(args, a, move |s, env| {
                if side.claim_local() {
                    home.withdraw(&side);
                    return f(s, env);
                }
                // Exported: the forker waits for the result after the
                // join, in its own frame. Waiting here could bury frames:
                // a vproc that stole this half would wait on top of its
                // own stack for a computation that started elsewhere
                // before the steal, and that computation may need a frame
                // below (seen: a deadlock of maze at 2 PEs x 2 vprocs).
                Ok(Handle::NIL)
            })?;
            let y = if offer.exported() {
                match ctx.wait_remote(s, &offer) {
                    // The forker could not pack the arguments: the task is
                    // this PE's after all.
                    Err(e) if matches!(e.kind(), ErrorKind::NotExportable(_)) => {
                        let env = SlotHandles::new(base, args.len());
                        f(s, env.as_slice())?
                    }
                    r => r?,
                }
            } else {
                y
            };
            Ok((s.word(x), s.word(y)))
        })?;
        Ok((self.push_root(wa), self.push_root(wb)))
    }
}
