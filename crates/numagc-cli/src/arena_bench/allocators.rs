//! The allocators `numagc arena-bench` compares (issue 7, item 6; the
//! paper's §4 compares SACPHM with the multithreaded allocators of its
//! day): glibc's malloc (nothing preloaded), jemalloc, mimalloc and
//! tcmalloc from Debian's packages (`scripts/install-allocators.sh`), and
//! numagc-arena as `libnumagc_malloc.so` (`crates/numagc-malloc`). All but
//! glibc are preloaded with `LD_PRELOAD`, so every allocator runs the same
//! workload binary. `numagc-rich` is the paper's own setting: the heap
//! manager linked into the program and called through its rich interface
//! (the workload's `--rich`; fig1, ft and mg, whose arrays SAC's generated
//! code would allocate so), with nothing preloaded. A library that is not there is reported as such, never
//! skipped in silence; a run whose `malloc` turns out to come from
//! another object than the one preloaded (the dynamic linker ignores a
//! preload it cannot load, with a warning only) is a failed run.

use std::path::{Path, PathBuf};

/// Every allocator, in the order they run.
pub const ALL: [&str; 6] = [
    "glibc",
    "jemalloc",
    "mimalloc",
    "tcmalloc",
    "numagc",
    "numagc-rich",
];

/// The Debian shared objects, by allocator (the first found is used).
fn debian_names(name: &str) -> &'static [&'static str] {
    match name {
        "jemalloc" => &["libjemalloc.so.2"],
        "mimalloc" => &["libmimalloc.so.2.0", "libmimalloc.so.2"],
        "tcmalloc" => &["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"],
        _ => &[],
    }
}

/// Where Debian puts them.
pub fn default_lib_dirs() -> Vec<PathBuf> {
    let arch = std::env::consts::ARCH;
    [
        format!("/usr/lib/{arch}-linux-gnu"),
        "/usr/lib64".into(),
        "/usr/lib".into(),
        "/usr/local/lib".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

pub const NOT_INSTALLED: &str = "not installed (run scripts/install-allocators.sh)";

/// One allocator and how to run it.
pub struct Allocator {
    pub name: String,
    /// The library to preload (None: glibc, nothing preloaded).
    pub preload: Option<PathBuf>,
    /// Why it cannot run, when it cannot.
    pub missing: Option<String>,
    /// numagc-arena linked into the workload and called through its own
    /// interface (`--rich`), not `malloc`: fig1, ft and mg only.
    pub rich: bool,
}

impl Allocator {
    /// Whether this allocator runs `workload`: the rich interface only runs
    /// the array workloads (fig1, ft, mg), not the malloc patterns.
    pub fn runs(&self, workload: &str) -> bool {
        !self.rich || matches!(workload, "fig1" | "ft" | "mg")
    }

    /// Finds `name`'s library: in `lib_dirs` for the Debian ones, at
    /// `numagc_malloc` for numagc.
    pub fn find(
        name: &str,
        lib_dirs: &[PathBuf],
        numagc_malloc: &Path,
    ) -> Result<Allocator, String> {
        let (preload, missing) = match name {
            "glibc" | "numagc-rich" => (None, None),
            "numagc" => {
                if numagc_malloc.is_file() {
                    (Some(numagc_malloc.to_path_buf()), None)
                } else {
                    (
                        None,
                        Some(format!(
                            "not built ({} missing: cargo build --release -p numagc-malloc, or --numagc-malloc PATH)",
                            numagc_malloc.display()
                        )),
                    )
                }
            }
            "jemalloc" | "mimalloc" | "tcmalloc" => {
                let found = debian_names(name)
                    .iter()
                    .flat_map(|lib| lib_dirs.iter().map(move |d| d.join(lib)))
                    .find(|p| p.exists());
                match found {
                    Some(p) => (Some(p), None),
                    None => (None, Some(NOT_INSTALLED.to_string())),
                }
            }
            other => {
                return Err(format!(
                    "no allocator {other:?}; the allocators: {}",
                    ALL.join(", ")
                ))
            }
        };
        Ok(Allocator {
            name: name.to_string(),
            preload,
            missing,
            rich: name == "numagc-rich",
        })
    }

    /// None when `origin` (the object whose `malloc` the workload called,
    /// as it reported it) is this allocator's; otherwise what went wrong.
    pub fn origin_error(&self, origin: &str) -> Option<String> {
        if self.rich {
            return (origin != numagc_arena_bench::RICH_ORIGIN).then(|| {
                format!(
                    "the arrays came from {origin}, not from {}",
                    numagc_arena_bench::RICH_ORIGIN
                )
            });
        }
        let ok = match &self.preload {
            None => Path::new(origin)
                .file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with("libc.so") || f.starts_with("libc-")),
            Some(p) => std::fs::canonicalize(p).is_ok_and(|c| Path::new(origin) == c),
        };
        if ok {
            None
        } else {
            Some(format!(
                "malloc came from {origin}, not from {}",
                self.preload
                    .as_ref()
                    .map_or("the C library".into(), |p| p.display().to_string())
            ))
        }
    }
}
