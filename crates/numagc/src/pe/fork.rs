//! `Scope::par2_export`: a fork whose second half another PE may run;
//! `Scope::call_on`: a task sent to a PE of the caller's choice.

use super::export::Export;
use super::group::{Offered, EXPORTED};
use super::message::Message;
use super::pack;
use crate::error::{Error, ErrorKind, Result};
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
        let ctx = match self.vproc_mut().shared.pe.get() {
            Some(c) if c.pes > 1 => c.clone(),
            _ => return self.par2(args, a, move |s, env| export.call(s, env)),
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
                    return export.call(s, env);
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
                        let env = SlotHandles::new(s.roots(), base, args.len());
                        export.call(s, env.as_slice())?
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

    /// Runs `export`'s function on `args` on PE `pe` of this runtime's
    /// group and waits for its value (only this task waits: its vproc
    /// runs the work other PEs send meanwhile). The arguments travel
    /// packed, their mutable objects as global addresses, and so does the
    /// value: a mutable object made there comes back as a FetchMe. This is
    /// explicit placement (Eden's process instantiation; GUM places work
    /// only by work requests, `par2_export`); on this PE, or outside a
    /// group, it calls the function here.
    ///
    /// Errors: `pe` outside the group ([`ErrorKind::Misuse`]); arguments
    /// that cannot travel ([`ErrorKind::NotExportable`]); the task's error,
    /// or the loss of PE `pe`, as [`ErrorKind::Pe`].
    pub fn call_on(
        &mut self,
        pe: usize,
        export: Export,
        args: &[Handle<'_>],
    ) -> Result<Handle<'s>> {
        let ctx = self.vproc_mut().shared.pe.get().cloned();
        let (pes, here) = ctx.as_ref().map_or((1, 0), |c| (c.pes, c.pe));
        if pe >= pes {
            return Err(Error::misuse(format!(
                "call_on PE {pe}: the group has {pes} PEs (a runtime outside a group is PE 0 of 1)"
            )));
        }
        let ctx = match ctx {
            Some(c) if pe != here => c,
            _ => {
                let w = self.scope(|s| -> Result<u64> {
                    let env: Vec<Handle<'_>> =
                        args.iter().map(|&h| s.push_root(s.word(h))).collect();
                    let r = export.call(s, &env)?;
                    Ok(s.word(r))
                })?;
                return Ok(self.push_root(w));
            }
        };
        let packed = {
            let t0 = std::time::Instant::now();
            let r = pack::pack_in(self, args, ctx.task_packing(), &ctx);
            ctx.add_ns(&ctx.counters.pack_ns, t0);
            r?
        };
        // An offer claimed for export at once, never in the pool: its
        // result comes back as an exported fork's does.
        let offer = Arc::new(Offered::new(export, self.vproc(), 0, 0));
        let claimed = offer.claim(EXPORTED);
        debug_assert!(claimed);
        offer.to.store(pe, std::sync::atomic::Ordering::Release);
        let task = ctx
            .next_task
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        crate::sync::lock(&ctx.exported).insert(task, offer.clone());
        ctx.counters
            .tasks_exported
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let m = Message::Schedule {
            task,
            export: export.id,
            name_hash: export.name_hash,
            args: packed,
        };
        if let Err(e) = ctx.send(pe, &m) {
            crate::sync::lock(&ctx.exported).remove(&task);
            return Err(e);
        }
        match ctx.wait_remote(self, &offer) {
            // Its value could not travel back: it is an error here, as
            // the task ran there (and may have done what it does).
            Err(e) if matches!(e.kind(), ErrorKind::NotExportable(_)) => Err(ErrorKind::Pe {
                pe,
                message: format!("the value of a task sent with call_on could not travel: {e}"),
            }
            .into()),
            r => r,
        }
    }
}
