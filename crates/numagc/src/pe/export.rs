//! Exportable tasks: functions registered by name that another PE may run.
//!
//! A closure cannot leave its PE (its code and captures are addresses of
//! this process), so the work that travels (`gumsmp-shared-distributed-heaps.txt`
//! §2.1: a spark's graph, packed) is a registered function applied to heap
//! arguments. Every PE runs the same program and registers the same
//! functions in the same order, so an [`Export`]'s number names the same
//! function everywhere; its name's hash travels with it and a PE whose
//! table disagrees refuses the task.
//!
//! [`crate::Scope::par2_export`] forks one: on a runtime outside a PE
//! group, or when its arguments cannot be packed, it is `par2` calling the
//! function.

use crate::error::{Error, Result};
use crate::mutator::{Handle, Scope};

/// The code of an exportable task: its arguments in, its value out.
pub type ExportFn = for<'s> fn(&mut Scope<'s>, &[Handle<'s>]) -> Result<Handle<'s>>;

/// The code of an exportable task that carries data of this process (the
/// C ABI's function and user pointer): registered once, kept for the life
/// of the program.
pub type ExportClosure =
    dyn for<'s> Fn(&mut Scope<'s>, &[Handle<'s>]) -> Result<Handle<'s>> + Send + Sync;

/// Every registered closure: [`Export`]s name them by `&'static`.
static CLOSURES: std::sync::Mutex<Vec<&'static ExportClosure>> = std::sync::Mutex::new(Vec::new());

#[derive(Clone, Copy)]
pub(crate) enum Code {
    Fn(ExportFn),
    Closure(&'static ExportClosure),
}

/// A registered exportable function: its number in the [`Exports`] table,
/// and its code.
#[derive(Clone, Copy)]
pub struct Export {
    pub(crate) id: u32,
    pub(crate) name_hash: u64,
    pub(crate) code: Code,
}

impl Export {
    /// The function's number in its table.
    pub fn id(self) -> u32 {
        self.id
    }

    /// Runs the function here.
    pub fn call<'s>(self, s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
        match self.code {
            Code::Fn(f) => f(s, args),
            Code::Closure(f) => f(s, args),
        }
    }
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Export({})", self.id)
    }
}

/// The exportable functions of a program, in registration order.
#[derive(Clone, Default)]
pub struct Exports {
    names: Vec<String>,
    fns: Vec<Export>,
}

/// Most functions a table holds.
pub const MAX_EXPORTS: usize = 1 << 16;

impl Exports {
    pub fn new() -> Exports {
        Exports::default()
    }

    /// Registers `f` under `name` (unique in the table).
    /// Errors: a name registered already, or a full table.
    pub fn register(&mut self, name: &str, f: ExportFn) -> Result<Export> {
        self.add(name, Code::Fn(f))
    }

    /// Registers `f` under `name`, as [`Exports::register`], for code
    /// that carries data of this process (every PE's process registers its
    /// own). The closure is kept for the life of the program (a program
    /// registers its exportable functions once, at start-up).
    ///
    /// Errors: as [`Exports::register`].
    pub fn register_closure(
        &mut self,
        name: &str,
        f: impl for<'s> Fn(&mut Scope<'s>, &[Handle<'s>]) -> Result<Handle<'s>> + Send + Sync + 'static,
    ) -> Result<Export> {
        self.check(name)?;
        let f: &'static ExportClosure = Box::leak(Box::new(f));
        // Kept reachable for the life of the program (a leak checker sees
        // it held, as it is).
        CLOSURES.lock().unwrap_or_else(|e| e.into_inner()).push(f);
        self.add(name, Code::Closure(f))
    }

    /// The function numbered `id`, for the callers that name functions by
    /// number (the C ABI).
    pub fn by_id(&self, id: u32) -> Option<Export> {
        self.fns.get(id as usize).copied()
    }

    fn check(&self, name: &str) -> Result<()> {
        if self.names.iter().any(|n| n == name) {
            return Err(Error::misuse(format!(
                "exportable function `{name}` is registered twice"
            )));
        }
        if self.fns.len() >= MAX_EXPORTS {
            return Err(Error::misuse(format!(
                "at most {MAX_EXPORTS} exportable functions"
            )));
        }
        Ok(())
    }

    fn add(&mut self, name: &str, code: Code) -> Result<Export> {
        self.check(name)?;
        let e = Export {
            id: self.fns.len() as u32,
            name_hash: name_hash(name),
            code,
        };
        self.names.push(name.to_string());
        self.fns.push(e);
        Ok(e)
    }

    /// The function numbered `id`, if its name hashes to `hash`.
    pub(crate) fn get(&self, id: u32, hash: u64) -> Option<Export> {
        self.fns
            .get(id as usize)
            .copied()
            .filter(|e| e.name_hash == hash)
    }

    /// The name of the function numbered `id`.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.fns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fns.is_empty()
    }
}

/// FNV-1a of the name: the same on every PE and every build.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one<'s>(_: &mut Scope<'s>, _: &[Handle<'s>]) -> Result<Handle<'s>> {
        Ok(Handle::int(1))
    }

    #[test]
    fn names_are_unique_and_ids_follow_registration() {
        let mut t = Exports::new();
        let a = t.register("a", one).unwrap();
        let b = t.register("b", one).unwrap();
        assert_eq!((a.id(), b.id()), (0, 1));
        assert!(t.register("a", one).is_err());
        assert_eq!(t.name(1), Some("b"));
        assert!(t.get(1, b.name_hash).is_some());
        // Another table's function 1 has another name: refused.
        assert!(t.get(1, a.name_hash).is_none());
        assert!(t.get(2, b.name_hash).is_none());
    }
}
