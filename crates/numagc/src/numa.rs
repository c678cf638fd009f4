//! Memory placement: turns a [`NumaPolicy`] into an `mbind` of a chunk's pages.
//!
//! Invariant: a policy is only ever applied to real NUMA nodes. Topology nodes
//! without an `os_node` (the extra nodes of a synthetic topology) are dropped
//! from a request; if none remain the binding is skipped, never sent to the
//! kernel with a made-up node. Every attempt ends in a [`BindOutcome`], counted
//! by [`BindingCounts`] for the statistics.
//!
//! Paper §3.1: each chunk of the global heap keeps the node it was allocated on,
//! which holds physically only if its pages are placed there, hence `mbind`
//! before the chunk's pages are first touched. §4.3 compares three policies:
//! `local` (pages on the requesting vproc's node, the default), `interleave`
//! (pages spread over all nodes) and `node0` (everything on node 0).
//!
//! The `mbind` system call is made directly (`libc::syscall`); libnuma is not used.

use crate::config::NumaPolicy;
use crate::topology::Topology;

/// Kernel `MPOL_BIND`: allocate only on the given nodes.
const MPOL_BIND: libc::c_long = 2;
/// Kernel `MPOL_INTERLEAVE`: allocate round-robin over the given nodes.
const MPOL_INTERLEAVE: libc::c_long = 3;
const BITS_PER_WORD: usize = libc::c_ulong::BITS as usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum BindMode {
    Bind,
    Interleave,
}

/// Which topology nodes a range of memory should come from, and how.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BindRequest {
    pub mode: BindMode,
    /// Topology node ids (not OS node ids).
    pub nodes: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum BindOutcome {
    /// The kernel accepted the policy for these OS nodes.
    Applied {
        mode: BindMode,
        os_nodes: Vec<usize>,
    },
    /// No requested node exists on this machine; the kernel's default placement stays.
    Skipped { reason: String },
    /// The range was refused (`EINVAL` without a call when not page aligned or empty)
    /// or the kernel returned this errno.
    Failed { errno: i32 },
}

impl std::fmt::Display for BindMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BindMode::Bind => "bind",
            BindMode::Interleave => "interleave",
        })
    }
}

fn node_list(nodes: &[usize]) -> String {
    let s = if nodes.len() == 1 { "" } else { "s" };
    let ids: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
    format!("node{s} {}", ids.join(", "))
}

impl std::fmt::Display for BindRequest {
    /// `bind to node 0`, `interleave over nodes 0, 1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.mode {
            BindMode::Bind => "bind to",
            BindMode::Interleave => "interleave over",
        };
        write!(f, "{how} {}", node_list(&self.nodes))
    }
}

impl std::fmt::Display for BindOutcome {
    /// `applied (bind, OS node 0)`, `skipped: <reason>`, `failed: <errno text>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindOutcome::Applied { mode, os_nodes } => {
                write!(f, "applied ({mode}, OS {})", node_list(os_nodes))
            }
            BindOutcome::Skipped { reason } => write!(f, "skipped: {reason}"),
            BindOutcome::Failed { errno } => {
                write!(f, "failed: {}", std::io::Error::from_raw_os_error(*errno))
            }
        }
    }
}

/// The placement `policy` asks for when a vproc on `requesting_node` gets a chunk.
pub fn request_for(policy: NumaPolicy, requesting_node: usize, topo: &Topology) -> BindRequest {
    match policy {
        NumaPolicy::Local => BindRequest {
            mode: BindMode::Bind,
            nodes: vec![requesting_node],
        },
        NumaPolicy::Interleave => BindRequest {
            mode: BindMode::Interleave,
            nodes: (0..topo.num_nodes()).collect(),
        },
        NumaPolicy::Node0 => BindRequest {
            mode: BindMode::Bind,
            nodes: vec![0],
        },
    }
}

/// Sets the placement policy of `len` bytes at `addr` to `req`, mapping topology
/// nodes to OS nodes.
///
/// This is a safe function: with flags 0, `mbind` only records the policy by which
/// pages of the range will be allocated when first touched. It never moves, frees
/// or alters memory, and on an unmapped range it fails with an errno, so no
/// pointer is dereferenced and no Rust invariant can be broken. The range should
/// be a mapping the runtime owns (a chunk of its reservation, not yet touched);
/// binding someone else's mapping changes only where its future pages go.
pub fn apply(req: &BindRequest, topo: &Topology, addr: *mut u8, len: usize) -> BindOutcome {
    let mut os_nodes = Vec::new();
    let mut missing = Vec::new();
    for &node in &req.nodes {
        match topo.nodes.get(node).and_then(|n| n.os_node) {
            Some(os) => os_nodes.push(os),
            None => missing.push(node.to_string()),
        }
    }
    if os_nodes.is_empty() {
        return BindOutcome::Skipped {
            reason: format!(
                "topology node(s) {} have no NUMA node on this machine",
                missing.join(", ")
            ),
        };
    }
    os_nodes.sort_unstable();
    os_nodes.dedup();

    // The kernel takes the range as a number and never dereferences it.
    let start = addr as usize;
    if len == 0 || !start.is_multiple_of(page_size()) {
        return BindOutcome::Failed {
            errno: libc::EINVAL,
        };
    }
    let highest = *os_nodes.last().expect("os_nodes is not empty");
    let mut mask: Vec<libc::c_ulong> = vec![0; highest / BITS_PER_WORD + 1];
    for &os in &os_nodes {
        mask[os / BITS_PER_WORD] |= 1 << (os % BITS_PER_WORD);
    }
    let mode = match req.mode {
        BindMode::Bind => MPOL_BIND,
        BindMode::Interleave => MPOL_INTERLEAVE,
    };
    // The kernel reads maxnode - 1 bits of the mask.
    let maxnode = (mask.len() * BITS_PER_WORD + 1) as libc::c_ulong;
    // SAFETY: mbind reads `mask.len()` words from `mask`, which lives until the
    // call returns; it only sets the allocation policy of the range (see the doc
    // above) and reports an unmapped range as an error.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            start as libc::c_ulong,
            len as libc::c_ulong,
            mode,
            mask.as_ptr(),
            maxnode,
            0 as libc::c_uint,
        )
    };
    if rc == 0 {
        BindOutcome::Applied {
            mode: req.mode,
            os_nodes,
        }
    } else {
        BindOutcome::Failed {
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

/// How many bindings were applied, skipped and failed.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BindingCounts {
    pub applied: u64,
    pub skipped: u64,
    pub failed: u64,
}

impl BindingCounts {
    pub fn record(&mut self, outcome: &BindOutcome) {
        match outcome {
            BindOutcome::Applied { .. } => self.applied += 1,
            BindOutcome::Skipped { .. } => self.skipped += 1,
            BindOutcome::Failed { .. } => self.failed += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 16, defect 9: `numagc info` shows these in words.
    #[test]
    fn requests_and_outcomes_read_as_words() {
        let req = BindRequest {
            mode: BindMode::Interleave,
            nodes: vec![0, 1],
        };
        assert_eq!(req.to_string(), "interleave over nodes 0, 1");
        let req = BindRequest {
            mode: BindMode::Bind,
            nodes: vec![2],
        };
        assert_eq!(req.to_string(), "bind to node 2");
        let applied = BindOutcome::Applied {
            mode: BindMode::Bind,
            os_nodes: vec![0],
        };
        assert_eq!(applied.to_string(), "applied (bind, OS node 0)");
        let failed = BindOutcome::Failed {
            errno: libc::EINVAL,
        };
        assert!(
            failed.to_string().starts_with("failed: Invalid argument"),
            "{failed}"
        );
        let skipped = BindOutcome::Skipped {
            reason: "no node".into(),
        };
        assert_eq!(skipped.to_string(), "skipped: no node");
    }
    use crate::topology::NumaNode;

    /// An anonymous mapping of `pages` untouched pages, unmapped on drop.
    struct Mapping {
        addr: *mut u8,
        len: usize,
    }

    impl Mapping {
        fn new(pages: usize) -> Mapping {
            let len = pages * page_size();
            // SAFETY: a fresh anonymous private mapping; no existing memory is affected.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(addr, libc::MAP_FAILED, "mmap failed");
            Mapping {
                addr: addr.cast(),
                len,
            }
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: unmaps exactly the mapping created in `new`, used by nothing else.
            unsafe { libc::munmap(self.addr.cast(), self.len) };
        }
    }

    /// A 4x1 synthetic topology as it is on a one-node machine: only node 0 is real.
    fn four_nodes_one_real() -> Topology {
        let mut topo = Topology::synthetic("4x1").unwrap();
        for node in &mut topo.nodes {
            node.os_node = (node.id == 0).then_some(0);
        }
        topo
    }

    /// Accepts a kernel refusal only where containers forbid mbind.
    fn applied_or_forbidden(outcome: &BindOutcome, expected: BindOutcome) {
        match outcome {
            BindOutcome::Failed { errno } if *errno == libc::ENOSYS || *errno == libc::EPERM => {
                eprintln!("mbind is not permitted here (errno {errno}); placement not checked");
            }
            other => assert_eq!(other, &expected),
        }
    }

    #[test]
    fn requests_for_each_policy() {
        let topo = four_nodes_one_real();
        assert_eq!(
            request_for(NumaPolicy::Local, 2, &topo),
            BindRequest {
                mode: BindMode::Bind,
                nodes: vec![2]
            }
        );
        assert_eq!(
            request_for(NumaPolicy::Interleave, 2, &topo),
            BindRequest {
                mode: BindMode::Interleave,
                nodes: vec![0, 1, 2, 3]
            }
        );
        assert_eq!(
            request_for(NumaPolicy::Node0, 2, &topo),
            BindRequest {
                mode: BindMode::Bind,
                nodes: vec![0]
            }
        );
    }

    #[test]
    fn bind_to_real_node_0_is_applied_and_the_kernel_reports_it() {
        let topo = Topology::detect();
        let os = topo.nodes[0]
            .os_node
            .expect("this machine lists node 0 under /sys");
        let map = Mapping::new(4);
        let outcome = apply(
            &request_for(NumaPolicy::Node0, 0, &topo),
            &topo,
            map.addr,
            map.len,
        );
        applied_or_forbidden(
            &outcome,
            BindOutcome::Applied {
                mode: BindMode::Bind,
                os_nodes: vec![os],
            },
        );
        if let BindOutcome::Applied { .. } = outcome {
            let mut mode: libc::c_int = -1;
            let mut mask: [libc::c_ulong; 16] = [0; 16];
            // SAFETY: get_mempolicy writes one int to `mode` and at most 16 words
            // (maxnode = 16 * 64 bits) to `mask`, both live locals.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_get_mempolicy,
                    &mut mode as *mut libc::c_int,
                    mask.as_mut_ptr(),
                    (16 * BITS_PER_WORD) as libc::c_ulong,
                    map.addr,
                    2 as libc::c_ulong, // MPOL_F_ADDR: the policy of the page at addr
                )
            };
            assert_eq!(rc, 0, "get_mempolicy: {}", std::io::Error::last_os_error());
            assert_eq!(mode as libc::c_long, MPOL_BIND);
            assert_eq!(mask[os / BITS_PER_WORD], 1 << (os % BITS_PER_WORD));
            // SAFETY: the mapping is writable and `len` bytes long; touching it faults pages in under the policy.
            unsafe { std::ptr::write_bytes(map.addr, 0xA5, map.len) };
        }
    }

    #[test]
    fn local_on_a_node_that_does_not_exist_is_skipped() {
        let topo = four_nodes_one_real();
        let map = Mapping::new(1);
        let outcome = apply(
            &request_for(NumaPolicy::Local, 2, &topo),
            &topo,
            map.addr,
            map.len,
        );
        match outcome {
            BindOutcome::Skipped { reason } => assert!(reason.contains("node(s) 2 "), "{reason}"),
            other => panic!("expected Skipped, got {other:?}"),
        }
    }

    #[test]
    fn interleave_applies_to_the_existing_subset() {
        let topo = four_nodes_one_real();
        let map = Mapping::new(8);
        let outcome = apply(
            &request_for(NumaPolicy::Interleave, 1, &topo),
            &topo,
            map.addr,
            map.len,
        );
        applied_or_forbidden(
            &outcome,
            BindOutcome::Applied {
                mode: BindMode::Interleave,
                os_nodes: vec![0],
            },
        );
    }

    #[test]
    fn unaligned_or_empty_ranges_fail_with_einval() {
        let topo = four_nodes_one_real();
        let map = Mapping::new(2);
        let req = request_for(NumaPolicy::Node0, 0, &topo);
        // SAFETY: one byte into a two-page mapping stays inside it.
        let unaligned = unsafe { map.addr.add(1) };
        assert_eq!(
            apply(&req, &topo, unaligned, page_size()),
            BindOutcome::Failed {
                errno: libc::EINVAL
            }
        );
        assert_eq!(
            apply(&req, &topo, map.addr, 0),
            BindOutcome::Failed {
                errno: libc::EINVAL
            }
        );
    }

    #[test]
    fn nodes_beyond_the_topology_count_as_missing() {
        let topo = Topology {
            nodes: vec![NumaNode {
                id: 0,
                cpus: vec![0],
                os_node: None,
            }],
            synthetic: None,
        };
        let req = BindRequest {
            mode: BindMode::Bind,
            nodes: vec![0, 7],
        };
        let map = Mapping::new(1);
        match apply(&req, &topo, map.addr, map.len) {
            BindOutcome::Skipped { reason } => assert!(reason.contains("0, 7"), "{reason}"),
            other => panic!("expected Skipped, got {other:?}"),
        }
    }

    #[test]
    fn counts_record_each_outcome() {
        let mut counts = BindingCounts::default();
        counts.record(&BindOutcome::Applied {
            mode: BindMode::Bind,
            os_nodes: vec![0],
        });
        counts.record(&BindOutcome::Applied {
            mode: BindMode::Interleave,
            os_nodes: vec![0, 1],
        });
        counts.record(&BindOutcome::Skipped {
            reason: String::new(),
        });
        counts.record(&BindOutcome::Failed {
            errno: libc::EINVAL,
        });
        assert_eq!((counts.applied, counts.skipped, counts.failed), (2, 1, 1));
    }
}
