//! What the PE versions of the benchmarks (`--pes`, `numagc::pe`) share:
//! the table of a program's exportable functions, built once, and the
//! [`PeProgram`] a benchmark hands to the harness.

use crate::PeProgram;
use numagc::pe::{Export, ExportFn, Exports};
use numagc::{Handle, Runtime, Scope};
use std::sync::OnceLock;

/// A program's exportable functions, by name, in registration order.
///
/// It is a `static` of the benchmark's module, built on first use: the
/// program's forks (`Scope::par2_export`) name its functions, and every
/// PE of a group gets a clone of the same table, so a function's number
/// means the same function on every PE.
pub(crate) struct ExportTable<const N: usize> {
    functions: [(&'static str, ExportFn); N],
    built: OnceLock<(Exports, [Export; N])>,
}

impl<const N: usize> ExportTable<N> {
    /// The table of `functions` (name, code), numbered in this order.
    pub(crate) const fn new(functions: [(&'static str, ExportFn); N]) -> Self {
        ExportTable {
            functions,
            built: OnceLock::new(),
        }
    }

    fn built(&self) -> &(Exports, [Export; N]) {
        self.built.get_or_init(|| {
            let mut table = Exports::new();
            let exports = self.functions.map(|(name, f)| {
                table
                    .register(name, f)
                    .unwrap_or_else(|e| panic!("the program's export table: {e}"))
            });
            (table, exports)
        })
    }

    /// The `index`-th function of the table, for `par2_export`.
    pub(crate) fn export(&self, index: usize) -> Export {
        self.built().1[index]
    }

    /// The PE program: this table, and the `setup` every PE's runtime runs.
    pub(crate) fn program(&'static self, setup: fn(&Runtime) -> numagc::Result<()>) -> PeProgram {
        PeProgram {
            exports: &self.built().0,
            setup,
        }
    }
}

/// The setup of a program that registers no descriptors (its heap data
/// are vectors, raw objects and immediates only).
pub(crate) fn no_descriptors(_: &Runtime) -> numagc::Result<()> {
    Ok(())
}

/// The arguments of an exported task that takes `N` non-negative
/// integers, as `u64`s; `expected` (the function's name and what its
/// arguments mean) words the error when `args` are not that, since an
/// exported task's arguments come from another PE's packet.
pub(crate) fn task_ints<const N: usize>(
    s: &Scope<'_>,
    args: &[Handle<'_>],
    expected: &str,
) -> numagc::Result<[u64; N]> {
    let ints: Vec<u64> = args
        .iter()
        .map_while(|&h| s.as_int(h).and_then(|i| u64::try_from(i).ok()))
        .collect();
    <[u64; N]>::try_from(ints).map_err(|_| numagc::Error::misuse(format!("{expected} expected")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one<'s>(_: &mut Scope<'s>, _: &[Handle<'s>]) -> numagc::Result<Handle<'s>> {
        Ok(Handle::int(1))
    }

    fn two<'s>(_: &mut Scope<'s>, _: &[Handle<'s>]) -> numagc::Result<Handle<'s>> {
        Ok(Handle::int(2))
    }

    static TABLE: ExportTable<2> = ExportTable::new([("test.one", one), ("test.two", two)]);

    #[test]
    fn functions_are_numbered_in_order_and_named_in_the_program_table() {
        assert_eq!((TABLE.export(0).id(), TABLE.export(1).id()), (0, 1));
        let program = TABLE.program(no_descriptors);
        assert_eq!(program.exports.len(), 2);
        assert_eq!(program.exports.name(1), Some("test.two"));
        // Built once: the program's table is the one the forks number into.
        assert!(std::ptr::eq(
            program.exports,
            TABLE.program(no_descriptors).exports
        ));
    }
}
