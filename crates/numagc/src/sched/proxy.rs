//! The proxy thread of a vproc: acts for the vproc while its thread is in a
//! blocking section (the protocol and the reasons: `gc::blocking`).
//!
//! A vproc starts its proxy the first time it blocks and stops it when its
//! thread exits, so a runtime whose code never blocks has no proxies. The
//! proxy sleeps on its bell; woken with the vproc blocked and a collection
//! pending (or a thief's request waiting), it takes the vproc's state and
//! runs the vproc's safepoint — the same `plan::poll` the vproc would run —
//! then hands the state back.
//!
//! Invariant: the proxy dereferences the vproc's state only between winning
//! `BLOCKED → PROXIED` and `proxy_done`; the owner publishes the pointer
//! before each section and touches the state only outside sections.

use crate::error::{Error, ErrorKind, Result};
use crate::gc::blocking::ProxyWake;
use crate::vproc::{Shared, Vproc};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Stack of a proxy thread: the collector's traversals are iterative (a
/// work list, Cheney scans), so it needs little; this is address space,
/// committed only as touched.
const PROXY_STACK: usize = 8 << 20;

/// A vproc's proxy thread.
pub(crate) struct Proxy {
    handle: JoinHandle<()>,
    /// The vproc's state, published by the owner before each section.
    state: Arc<AtomicPtr<Vproc>>,
}

impl Proxy {
    /// Starts the proxy of `vp` (sleeping until `vp` blocks).
    fn start(vp: &Vproc) -> Result<Proxy> {
        let state = Arc::new(AtomicPtr::new(std::ptr::null_mut()));
        let cell = state.clone();
        let shared: Arc<Shared> = vp.shared.clone();
        let id = vp.id;
        let handle = std::thread::Builder::new()
            .name(format!("numagc-proxy-{id}"))
            .stack_size(PROXY_STACK)
            .spawn(move || serve(&shared, id, cell))
            .map_err(|e| {
                Error::from(ErrorKind::Os {
                    what: "starting the proxy thread of a vproc in a blocking section",
                    source: e,
                })
            })?;
        Ok(Proxy { handle, state })
    }
}

/// The proxy's loop.
fn serve(shared: &Shared, id: usize, cell: Arc<AtomicPtr<Vproc>>) {
    loop {
        match shared.coord.proxy_wait(id) {
            ProxyWake::Stop => return,
            ProxyWake::Serve => {
                let p = cell.load(Ordering::Acquire);
                debug_assert!(!p.is_null(), "a vproc blocked without publishing its state");
                // SAFETY: the owner stored `p` (its own `&mut Vproc`, which
                // outlives the section) before entering the section, and
                // touches it again only after `leave_blocking` has seen the
                // state back from `PROXIED`; winning `BLOCKED → PROXIED`
                // (SeqCst) makes this thread the state's only user until
                // `proxy_done`, and orders the owner's accesses before ours.
                let vp = unsafe { &mut *p };
                crate::plan::poll(vp);
                shared.coord.proxy_done(id);
            }
        }
    }
}

/// Enters a blocking section on `vp`'s thread: starts the proxy if this is
/// the vproc's first, publishes the state and hands it over.
///
/// # Safety
/// Until [`leave`] returns, the caller must not touch `vp` (nor anything
/// reached through it: the root stack, the local heap).
pub(crate) unsafe fn enter(vp: &mut Vproc) -> Result<()> {
    if vp.proxy.is_none() {
        vp.proxy = Some(Proxy::start(vp)?);
    }
    // The pointer is taken first; the reads through `vp` below leave it
    // valid, and nothing writes through `vp` until the section is left.
    let state: *mut Vproc = vp;
    let proxy = vp.proxy.as_ref().expect("started above");
    proxy.state.store(state, Ordering::Release);
    vp.shared.coord.enter_blocking(vp.id);
    Ok(())
}

/// Leaves the blocking section of vproc `id`: once this returns, its thread
/// owns its state again.
pub(crate) fn leave(shared: &Shared, id: usize) {
    shared.coord.leave_blocking(id);
}

/// Stops `vp`'s proxy, if it has one (its thread is exiting).
pub(crate) fn stop(vp: &mut Vproc) {
    if let Some(p) = vp.proxy.take() {
        vp.shared.coord.stop_proxy(vp.id);
        let _ = p.handle.join();
    }
}
