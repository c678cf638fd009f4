//! NUMA topology: nodes and their CPUs, read from /sys or made up (synthetic),
//! sparse placement of vprocs over the nodes, and pinning of vproc threads.
//!
//! Invariant: a [`Topology`] has at least one node, node ids are `0..nodes.len()`,
//! and every node has at least one CPU, each an OS CPU this process may run on.
//! `os_node` is `Some(k)` only when real NUMA node `k` exists on this machine, so
//! memory placement ([`crate::numa`]) never binds to a node the kernel lacks.
//!
//! Paper §2.2: each vproc is hosted by a thread pinned to a node; when there are
//! fewer vprocs than processors they are placed sparsely across the nodes
//! ([`Topology::place_vprocs`]: vproc `i` on node `i % N`) to spread contention on
//! the node-shared L3 caches. A synthetic topology ("4x6") lets that placement,
//! and the per-node heap structures, be exercised on a machine with fewer nodes.

use std::path::Path;

use crate::config::Config;
use crate::error::ConfigError;

/// Where the kernel lists NUMA nodes.
pub const SYS_NODE_DIR: &str = "/sys/devices/system/node";

const MAX_SYNTHETIC_NODES: usize = 64;
const MAX_SYNTHETIC_CPUS_PER_NODE: usize = 1024;
const TOPOLOGY_ALLOWED: &str =
    "NxM with N nodes 1 ..= 64 and M CPUs per node 1 ..= 1024, or \"detect\"";

#[derive(Clone, Debug, serde::Serialize)]
pub struct Topology {
    pub nodes: Vec<NumaNode>,
    /// The spec this topology was made from, `None` when it was detected.
    pub synthetic: Option<String>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct NumaNode {
    /// Node id in this topology (`0..nodes.len()`).
    pub id: usize,
    /// OS CPU ids that this node's CPUs run on (real ones; may repeat across
    /// nodes of a synthetic topology).
    pub cpus: Vec<usize>,
    /// The real NUMA node to bind this node's memory to; `None` when no such node
    /// exists on this machine.
    pub os_node: Option<usize>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct VprocPlacement {
    pub vproc: usize,
    /// Topology node id.
    pub node: usize,
    /// OS CPU id.
    pub cpu: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PinOutcome {
    Pinned { cpu: usize },
    Failed { cpu: usize, error: String },
    Disabled,
}

impl std::fmt::Display for PinOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PinOutcome::Pinned { cpu } => write!(f, "pinned to cpu {cpu}"),
            PinOutcome::Failed { cpu, error } => write!(f, "pinning to cpu {cpu} failed: {error}"),
            PinOutcome::Disabled => f.write_str("not pinned (pin is off)"),
        }
    }
}

/// Writes `items` as `"a, b, c"`, at most `max` of them, then `", ..."`.
fn list(items: &[usize], max: usize) -> String {
    let mut out: Vec<String> = items.iter().take(max).map(|i| i.to_string()).collect();
    if items.len() > max {
        out.push("...".to_string());
    }
    out.join(", ")
}

/// A sentence for each way OS CPUs are shared: a synthetic topology with
/// more CPUs than this process may run on maps some OS CPUs to several of
/// its CPUs, and more vprocs than CPUs put several vprocs on one OS CPU
/// (pinned there when `pinned`, so they take turns). Empty when nothing is
/// shared. The library never prints these: [`crate::Config::warnings`] and
/// [`crate::RuntimeInfo`] carry them, and the CLI prints them.
pub fn cpu_warnings(topo: &Topology, placements: &[VprocPlacement], pinned: bool) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(spec) = &topo.synthetic {
        let total: usize = topo.nodes.iter().map(|n| n.cpus.len()).sum();
        let mut by_cpu: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for node in &topo.nodes {
            for &cpu in &node.cpus {
                let nodes = by_cpu.entry(cpu).or_default();
                if nodes.last() != Some(&node.id) {
                    nodes.push(node.id);
                }
            }
        }
        if by_cpu.len() < total {
            let shared: Vec<String> = by_cpu
                .iter()
                .filter(|(_, nodes)| nodes.len() > 1)
                .take(8)
                .map(|(cpu, nodes)| format!("cpu {cpu} by nodes {}", list(nodes, 8)))
                .collect();
            let within = if shared.is_empty() {
                "within a node".to_string()
            } else {
                shared.join("; ")
            };
            out.push(format!(
                "topology {spec} has {total} CPUs but this process may run on {}: OS CPUs are shared ({within})",
                by_cpu.len()
            ));
        }
    }
    let mut by_cpu: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for p in placements {
        by_cpu.entry(p.cpu).or_default().push(p.vproc);
    }
    let shared: Vec<String> = by_cpu
        .iter()
        .filter(|(_, vprocs)| vprocs.len() > 1)
        .map(|(cpu, vprocs)| format!("cpu {cpu} runs vprocs {}", list(vprocs, 8)))
        .collect();
    if !shared.is_empty() {
        let how = if pinned {
            "pinned there, they take turns"
        } else {
            "not pinned, the OS spreads them"
        };
        out.push(format!(
            "{} vprocs share {} OS CPUs ({how}): {}{}",
            placements.len(),
            by_cpu.len(),
            shared
                .iter()
                .take(8)
                .cloned()
                .collect::<Vec<_>>()
                .join("; "),
            if shared.len() > 8 { "; ..." } else { "" }
        ));
    }
    out
}

impl Topology {
    /// The machine's nodes from /sys, keeping only CPUs this process may run on;
    /// one node with all allowed CPUs when /sys has no usable node.
    pub fn detect() -> Topology {
        let allowed = allowed_cpus();
        Topology::from_sys(Path::new(SYS_NODE_DIR), &allowed).unwrap_or_else(|_| Topology {
            nodes: vec![NumaNode {
                id: 0,
                cpus: allowed,
                os_node: os_node_exists(0).then_some(0),
            }],
            synthetic: None,
        })
    }

    /// Reads `<sys_node_dir>/node<K>/cpulist` for every node K, keeps only
    /// `allowed_cpus`, and drops nodes left without a CPU. Fails when a cpulist
    /// cannot be read or parsed, or no node has an allowed CPU.
    pub fn from_sys(sys_node_dir: &Path, allowed_cpus: &[usize]) -> std::io::Result<Topology> {
        use std::io::{Error, ErrorKind};
        let mut os_nodes: Vec<usize> = std::fs::read_dir(sys_node_dir)?
            .filter_map(|entry| {
                entry
                    .ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("node")?
                    .parse()
                    .ok()
            })
            .collect();
        os_nodes.sort_unstable();
        let mut nodes = Vec::new();
        for os_node in os_nodes {
            let path = sys_node_dir.join(format!("node{os_node}")).join("cpulist");
            let text = std::fs::read_to_string(&path)?;
            let cpus = parse_cpulist(&text).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidData,
                    format!("{}: bad cpulist {:?}", path.display(), text.trim()),
                )
            })?;
            let cpus: Vec<usize> = cpus
                .into_iter()
                .filter(|c| allowed_cpus.contains(c))
                .collect();
            if !cpus.is_empty() {
                nodes.push(NumaNode {
                    id: nodes.len(),
                    cpus,
                    os_node: Some(os_node),
                });
            }
        }
        if nodes.is_empty() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "no NUMA node with an allowed CPU under {}",
                    sys_node_dir.display()
                ),
            ));
        }
        Ok(Topology {
            nodes,
            synthetic: None,
        })
    }

    /// `"NxM"`: N virtual nodes of M virtual CPUs. Virtual CPU `g = k*M + i` runs on
    /// `allowed_cpus()[g % len]`; node k's memory goes to real node k if it exists.
    pub fn synthetic(spec: &str) -> Result<Topology, ConfigError> {
        let refuse = || ConfigError {
            setting: "topology",
            value: spec.to_string(),
            allowed: TOPOLOGY_ALLOWED.to_string(),
        };
        let (n, m) = spec.trim().split_once(['x', 'X']).ok_or_else(refuse)?;
        let count = |s: &str, max: usize| {
            s.parse::<usize>()
                .ok()
                .filter(|v| (1..=max).contains(v))
                .ok_or_else(refuse)
        };
        let (num_nodes, cpus_per_node) = (
            count(n, MAX_SYNTHETIC_NODES)?,
            count(m, MAX_SYNTHETIC_CPUS_PER_NODE)?,
        );
        let real = allowed_cpus();
        let nodes = (0..num_nodes)
            .map(|k| NumaNode {
                id: k,
                cpus: (0..cpus_per_node)
                    .map(|i| real[(k * cpus_per_node + i) % real.len()])
                    .collect(),
                os_node: os_node_exists(k).then_some(k),
            })
            .collect();
        Ok(Topology {
            nodes,
            synthetic: Some(spec.trim().to_string()),
        })
    }

    /// The synthetic topology of `cfg.topology` if set, else the detected one.
    pub fn from_config(cfg: &Config) -> Result<Topology, ConfigError> {
        match &cfg.topology {
            Some(spec) => Topology::synthetic(spec),
            None => Ok(Topology::detect()),
        }
    }

    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// §2.2 sparse placement: vproc `i` on node `i % N`, on that node's
    /// `(i / N) % cpus`-th CPU, so nodes fill evenly and CPUs of a node are reused
    /// only once every CPU of it has a vproc.
    pub fn place_vprocs(&self, n: usize) -> Vec<VprocPlacement> {
        let num_nodes = self.num_nodes();
        (0..n)
            .map(|vproc| {
                let node = &self.nodes[vproc % num_nodes];
                let cpu = node.cpus[(vproc / num_nodes) % node.cpus.len()];
                VprocPlacement {
                    vproc,
                    node: node.id,
                    cpu,
                }
            })
            .collect()
    }

    /// Where PE `pe` of a group of `pes` (`crate::pe`) puts its `n`
    /// vprocs: all on one node, node `pe % N`, as the paper's best
    /// configuration has one PE per NUMA region
    /// (`gumsmp-shared-distributed-heaps.txt` §3.3); PEs that share a node
    /// (more PEs than nodes) take the node's CPUs one after the other.
    /// One PE places its vprocs as a runtime does ([`Topology::place_vprocs`]).
    pub fn place_pe_vprocs(&self, pe: usize, pes: usize, n: usize) -> Vec<VprocPlacement> {
        if pes <= 1 {
            return self.place_vprocs(n);
        }
        let num_nodes = self.num_nodes();
        let node = &self.nodes[pe % num_nodes];
        let before = pe / num_nodes;
        (0..n)
            .map(|vproc| VprocPlacement {
                vproc,
                node: node.id,
                cpu: node.cpus[(before * n + vproc) % node.cpus.len()],
            })
            .collect()
    }

    /// A few human-readable lines: where the topology came from, then one line per node.
    pub fn describe(&self) -> String {
        let source = match &self.synthetic {
            Some(spec) => format!("synthetic {spec}"),
            None => format!("detected from {SYS_NODE_DIR}"),
        };
        let mut out = format!("topology: {source}, {} node(s)\n", self.num_nodes());
        for node in &self.nodes {
            let memory = match node.os_node {
                Some(k) => format!("memory on OS node {k}"),
                None => "memory unbound (no such OS node)".to_string(),
            };
            out += &format!(
                "  node {}: {} cpu(s) [{}], {memory}\n",
                node.id,
                node.cpus.len(),
                format_cpulist(&node.cpus)
            );
        }
        out
    }
}

fn os_node_exists(k: usize) -> bool {
    Path::new(SYS_NODE_DIR).join(format!("node{k}")).is_dir()
}

/// OS CPUs the calling thread may run on (sched_getaffinity; the process's set
/// unless the thread was pinned), in increasing order; `0..available_parallelism`
/// when the kernel does not say.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array for which all-zero is a valid value.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live, writable cpu_set_t and the size passed is its size.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    let cpus: Vec<usize> = if rc == 0 {
        // SAFETY: CPU_ISSET only reads `set`; every index is below CPU_SETSIZE.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    } else {
        Vec::new()
    };
    if cpus.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n).collect();
    }
    cpus
}

/// Pins the calling thread to OS CPU `cpu` (best effort).
pub fn pin_current_thread(cpu: usize) -> PinOutcome {
    if cpu >= libc::CPU_SETSIZE as usize {
        return PinOutcome::Failed {
            cpu,
            error: format!("cpu {cpu} is beyond CPU_SETSIZE"),
        };
    }
    // SAFETY: cpu_set_t is a plain bit array for which all-zero is a valid value.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu < CPU_SETSIZE` (checked above), so CPU_SET writes inside `set`;
    // sched_setaffinity(0, ..) only reads `set` and affects the calling thread.
    let rc = unsafe {
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        PinOutcome::Pinned { cpu }
    } else {
        PinOutcome::Failed {
            cpu,
            error: std::io::Error::last_os_error().to_string(),
        }
    }
}

/// Parses a kernel CPU list such as `"0-3,8,10-11"` into sorted, distinct ids.
/// Blank input is an empty list (a node without CPUs); `None` when malformed.
pub fn parse_cpulist(s: &str) -> Option<Vec<usize>> {
    let s = s.trim();
    let mut cpus = Vec::new();
    if s.is_empty() {
        return Some(cpus);
    }
    for part in s.split(',') {
        let part = part.trim();
        let (first, last): (usize, usize) = match part.split_once('-') {
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            None => {
                let c = part.parse().ok()?;
                (c, c)
            }
        };
        if first > last {
            return None;
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// The inverse of [`parse_cpulist`] for sorted lists; unsorted input is listed as given.
fn format_cpulist(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn nodes_on(cpus: &[&[usize]]) -> Vec<NumaNode> {
        cpus.iter()
            .enumerate()
            .map(|(id, c)| NumaNode {
                id,
                cpus: c.to_vec(),
                os_node: None,
            })
            .collect()
    }

    /// Issue 16, defect 9: a synthetic topology that maps an OS CPU twice,
    /// and vprocs sharing an OS CPU, are said, not silent.
    #[test]
    fn shared_cpus_are_warned_about() {
        // "3x3" on 2 CPUs.
        let topo = Topology {
            nodes: nodes_on(&[&[0, 1, 0], &[1, 0, 1], &[0, 1, 0]]),
            synthetic: Some("3x3".into()),
        };
        let w = cpu_warnings(&topo, &topo.place_vprocs(2), true);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with(
                "topology 3x3 has 9 CPUs but this process may run on 2: OS CPUs are shared"
            ) && w[0].contains("cpu 0 by nodes 0, 1, 2"),
            "{}",
            w[0]
        );
        let w = cpu_warnings(&topo, &topo.place_vprocs(6), true);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[1].starts_with(
                "6 vprocs share 2 OS CPUs (pinned there, they take turns): cpu 0 runs vprocs"
            ),
            "{}",
            w[1]
        );
        // A detected topology with a vproc per CPU: nothing to say.
        let topo = Topology {
            nodes: nodes_on(&[&[0, 1], &[2, 3]]),
            synthetic: None,
        };
        assert!(cpu_warnings(&topo, &topo.place_vprocs(4), true).is_empty());
        let w = cpu_warnings(&topo, &topo.place_vprocs(5), false);
        assert_eq!(
            w,
            ["5 vprocs share 4 OS CPUs (not pinned, the OS spreads them): cpu 0 runs vprocs 0, 4"]
        );
        assert_eq!(PinOutcome::Pinned { cpu: 3 }.to_string(), "pinned to cpu 3");
        assert_eq!(PinOutcome::Disabled.to_string(), "not pinned (pin is off)");
    }

    #[test]
    fn parse_cpulist_cases() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpulist("5"), Some(vec![5]));
        assert_eq!(parse_cpulist("3,1-2,2"), Some(vec![1, 2, 3]));
        assert_eq!(parse_cpulist(" \n"), Some(vec![]));
        for bad in ["3-1", "a", "1-", "1,,2", "-2", "1-2-3"] {
            assert_eq!(parse_cpulist(bad), None, "{bad:?}");
        }
        assert_eq!(format_cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    }

    #[test]
    fn synthetic_4x6_maps_virtual_cpus_onto_allowed_cpus() {
        let real = allowed_cpus();
        let topo = Topology::synthetic("4x6").unwrap();
        assert_eq!(topo.num_nodes(), 4);
        assert_eq!(topo.synthetic.as_deref(), Some("4x6"));
        for (k, node) in topo.nodes.iter().enumerate() {
            assert_eq!(node.id, k);
            let expected: Vec<usize> = (0..6).map(|i| real[(k * 6 + i) % real.len()]).collect();
            assert_eq!(node.cpus, expected);
            assert_eq!(
                node.os_node.is_some(),
                Path::new(SYS_NODE_DIR).join(format!("node{k}")).is_dir()
            );
            assert!(node.os_node.is_none_or(|os| os == k));
        }
    }

    #[test]
    fn each_pe_takes_one_node_and_pes_sharing_a_node_take_other_cpus() {
        let topo = Topology {
            nodes: (0..2)
                .map(|k| NumaNode {
                    id: k,
                    cpus: (k * 4..k * 4 + 4).collect(),
                    os_node: None,
                })
                .collect(),
            synthetic: Some("2x4".into()),
        };
        let at = |pe, pes, n| -> Vec<(usize, usize)> {
            topo.place_pe_vprocs(pe, pes, n)
                .iter()
                .map(|p| (p.node, p.cpu))
                .collect()
        };
        // One PE per node: all of a PE's vprocs on its node.
        assert_eq!(at(0, 2, 2), [(0, 0), (0, 1)]);
        assert_eq!(at(1, 2, 2), [(1, 4), (1, 5)]);
        // Four PEs on two nodes: the second PE of a node takes the next CPUs.
        assert_eq!(at(2, 4, 2), [(0, 2), (0, 3)]);
        assert_eq!(at(3, 4, 2), [(1, 6), (1, 7)]);
        // One PE places as a runtime does.
        let cpus = |ps: Vec<VprocPlacement>| ps.iter().map(|p| (p.node, p.cpu)).collect::<Vec<_>>();
        assert_eq!(
            cpus(topo.place_pe_vprocs(0, 1, 3)),
            cpus(topo.place_vprocs(3))
        );
    }

    #[test]
    fn sparse_placement_spreads_over_nodes_first() {
        let topo = Topology {
            nodes: (0..4)
                .map(|k| NumaNode {
                    id: k,
                    cpus: (k * 6..k * 6 + 6).collect(),
                    os_node: None,
                })
                .collect(),
            synthetic: Some("4x6".into()),
        };
        let four = topo.place_vprocs(4);
        assert_eq!(
            four.iter().map(|p| p.node).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        let eight = topo.place_vprocs(8);
        for node in 0..4 {
            let cpus: HashSet<usize> = eight
                .iter()
                .filter(|p| p.node == node)
                .map(|p| p.cpu)
                .collect();
            assert_eq!(
                cpus.len(),
                2,
                "node {node} should host two vprocs on distinct CPUs"
            );
            assert!(cpus.iter().all(|c| topo.nodes[node].cpus.contains(c)));
        }
        assert!(eight.iter().enumerate().all(|(i, p)| p.vproc == i));
        // More vprocs than CPUs wrap around within each node.
        let many = topo.place_vprocs(25);
        assert_eq!((many[24].node, many[24].cpu), (0, 0));
    }

    #[test]
    fn from_sys_reads_a_fake_tree() {
        let dir = std::env::temp_dir().join(format!("numagc-topology-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (node, cpulist) in [(0, "0-3\n"), (1, "4-7\n"), (2, "\n"), (3, "8,9\n")] {
            std::fs::create_dir_all(dir.join(format!("node{node}"))).unwrap();
            std::fs::write(dir.join(format!("node{node}/cpulist")), cpulist).unwrap();
        }
        std::fs::create_dir_all(dir.join("power")).unwrap();
        std::fs::write(dir.join("possible"), "0-3\n").unwrap();

        let topo = Topology::from_sys(&dir, &[1, 2, 5, 9]).unwrap();
        let summary: Vec<(usize, Vec<usize>, Option<usize>)> = topo
            .nodes
            .iter()
            .map(|n| (n.id, n.cpus.clone(), n.os_node))
            .collect();
        assert_eq!(
            summary,
            [
                (0, vec![1, 2], Some(0)),
                (1, vec![5], Some(1)),
                (2, vec![9], Some(3))
            ]
        );
        assert!(Topology::from_sys(&dir, &[100]).is_err());

        std::fs::write(dir.join("node1/cpulist"), "7-4\n").unwrap();
        assert_eq!(
            Topology::from_sys(&dir, &[1]).unwrap_err().kind(),
            std::io::ErrorKind::InvalidData
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn detect_gives_nodes_with_allowed_cpus() {
        let topo = Topology::detect();
        let allowed = allowed_cpus();
        assert!(topo.num_nodes() >= 1);
        assert!(topo.synthetic.is_none());
        for (k, node) in topo.nodes.iter().enumerate() {
            assert_eq!(node.id, k);
            assert!(!node.cpus.is_empty() && node.cpus.iter().all(|c| allowed.contains(c)));
        }
        assert!(topo.describe().contains("node 0:"));
    }

    #[test]
    fn bad_specs_are_refused_as_topology() {
        for bad in [
            "4x", "0x2", "65x1", "axb", "4", "2x0", "2x1025", "x4", "-1x2",
        ] {
            let e = Topology::synthetic(bad).unwrap_err();
            assert_eq!((e.setting, e.value.as_str()), ("topology", bad));
        }
        assert_eq!(Topology::synthetic("64x1024").unwrap().num_nodes(), 64);
    }

    #[test]
    fn from_config_uses_the_spec() {
        let cfg = Config::builder()
            .topology(Some("2x3".into()))
            .build()
            .unwrap();
        let topo = Topology::from_config(&cfg).unwrap();
        assert_eq!((topo.num_nodes(), topo.nodes[1].cpus.len()), (2, 3));
        assert!(topo
            .describe()
            .starts_with("topology: synthetic 2x3, 2 node(s)"));
    }

    #[test]
    fn pinning_to_an_allowed_cpu_succeeds() {
        let cpu = *allowed_cpus().last().unwrap();
        let outcome = std::thread::spawn(move || {
            let outcome = pin_current_thread(cpu);
            (outcome, allowed_cpus())
        })
        .join()
        .unwrap();
        assert_eq!(outcome.0, PinOutcome::Pinned { cpu });
        assert_eq!(
            outcome.1,
            vec![cpu],
            "the pinned thread may run only on its CPU"
        );
        assert!(matches!(
            pin_current_thread(usize::MAX),
            PinOutcome::Failed { .. }
        ));
    }
}
