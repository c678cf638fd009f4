//! Placement on a synthetic 4-node topology: chunk bindings follow the
//! policy (§4.3) and freed chunks keep their node affinity (§3.1).

mod common;

use common::*;
use numagc::numa::{BindMode, BindOutcome, BindRequest};
use numagc::{BindRecord, NumaPolicy, Runtime};

fn four_nodes(policy: NumaPolicy) -> Runtime {
    let config = test_config(4)
        .topology(Some("4x1".into()))
        .numa_policy(policy)
        .pin(false)
        .build()
        .unwrap();
    Runtime::new(config).unwrap()
}

/// Chunks carved for a vproc's local heap: 256 KiB / 64 KiB on the split
/// plan; on the shared plan its minor heap at the largest it may grow to
/// (`max-minor-heap`), which is reserved whole.
fn local_chunks(rt: &Runtime) -> usize {
    let cfg = rt.config();
    let bytes = if split_plan() {
        cfg.local_heap_size
    } else {
        cfg.max_minor_heap_size
    };
    assert_eq!(cfg.local_heap_size, LOCAL_HEAP);
    bytes / CHUNK
}

fn global_chunk_records(log: &[BindRecord]) -> Vec<&BindRecord> {
    log.iter().filter(|r| r.chunks == 1).collect()
}

#[test]
fn chunk_reuse_keeps_node_affinity() {
    let rt = four_nodes(NumaPolicy::Local);
    let cons = register_cons(&rt);
    let nodes = rt.info().topology.nodes.len();
    assert_eq!(nodes, 4);
    let placements = rt.info().placements;
    let vproc_node: Vec<usize> = placements.iter().map(|p| p.node).collect();
    assert_eq!(
        vproc_node,
        vec![0, 1, 2, 3],
        "sparse placement puts one vproc per node"
    );

    // Every vproc promotes data that is garbage by the end of the job
    // (several chunks each), plus a little that stays live until the job ends.
    let got = rt
        .run_each(move |s| {
            let keep = promoted_list(s, cons, s.vproc() as i64, 1_000).unwrap();
            for k in 0..4 {
                s.scope(|s| {
                    let _ = promoted_list(s, cons, 10 + k, 1_000).unwrap();
                });
            }
            read_list(s.view(keep), cons).unwrap().len()
        })
        .unwrap();
    assert_eq!(got, vec![1_000; 4]);
    let per_node = rt.global_heap_bytes_per_node();
    assert_eq!(per_node.len(), 4);
    for (node, &b) in per_node.iter().enumerate() {
        assert!(
            b >= CHUNK as u64,
            "node {node} has {b} global-heap bytes: {per_node:?}"
        );
    }

    // Every binding under the local policy asks for exactly the node of the
    // vproc it is for; global chunks were bound on every node.
    let log = rt.binding_log();
    for r in &log {
        assert_eq!(
            r.request,
            BindRequest {
                mode: BindMode::Bind,
                nodes: vec![r.node]
            },
            "{r:?}"
        );
        assert!(vproc_node.contains(&r.node), "{r:?}");
    }
    let local = local_chunks(&rt);
    let locals: Vec<usize> = log
        .iter()
        .filter(|r| r.chunks == local)
        .map(|r| r.node)
        .collect();
    assert_eq!(locals.len(), 4, "one binding per local heap: {log:?}");
    for node in 0..4 {
        // The split plan takes global chunks one at a time; the shared plan
        // sets its pages' chunks aside in runs before a minor collection.
        let bound = if split_plan() {
            global_chunk_records(&log).iter().any(|r| r.node == node)
        } else {
            log.iter().any(|r| r.node == node && r.chunks != local)
        };
        assert!(bound, "no global chunk bound on node {node}: {log:?}");
    }

    rt.run_on(0, |s| s.collect_global().unwrap()).unwrap();
    rt.run_on(2, |s| s.collect_global().unwrap()).unwrap();
    let pooled: Vec<usize> = (0..4).map(|n| rt.pooled_chunks(n)).collect();
    for (node, &p) in pooled.iter().enumerate() {
        assert!(
            p > 0,
            "no freed chunk in the pool of node {node}: {pooled:?}"
        );
    }

    // Later allocation by vproc k reuses node k's pool: its pool shrinks,
    // the other pools do not, and no new chunk is bound.
    for k in 0..4 {
        let before: Vec<usize> = (0..4).map(|n| rt.pooled_chunks(n)).collect();
        let log_before = rt.binding_log().len();
        let gcs = rt.global_collections();
        rt.run_on(k, move |s| {
            // About one chunk of promoted data.
            let l = promoted_list(s, cons, 7, 600).unwrap();
            assert_eq!(read_list(s.view(l), cons).unwrap().len(), 600);
        })
        .unwrap();
        if split_plan() {
            assert_eq!(
                rt.global_collections(),
                gcs,
                "no global collection expected here"
            );
        }
        let after: Vec<usize> = (0..4).map(|n| rt.pooled_chunks(n)).collect();
        assert!(
            after[k] < before[k],
            "vproc {k} did not take chunks from node {k}'s pool: {before:?} -> {after:?}"
        );
        for n in (0..4).filter(|&n| n != k) {
            assert_eq!(
                after[n], before[n],
                "vproc {k} took chunks from node {n}'s pool: {before:?} -> {after:?}"
            );
        }
        let new_log = rt.binding_log();
        assert_eq!(
            new_log.len(),
            log_before,
            "new bindings although the pool had chunks: {:?}",
            &new_log[log_before..]
        );
    }
}

fn check_outcome(rt: &Runtime, r: &BindRecord) {
    let topo = rt.info().topology;
    let os: Vec<usize> = r
        .request
        .nodes
        .iter()
        .filter_map(|&n| topo.nodes[n].os_node)
        .collect();
    match &r.outcome {
        BindOutcome::Applied { mode, os_nodes } => {
            assert!(
                !os.is_empty(),
                "applied although no requested node exists: {r:?}"
            );
            assert_eq!(*mode, r.request.mode);
            assert_eq!(os_nodes, &os, "{r:?}");
        }
        BindOutcome::Skipped { reason } => {
            assert!(
                os.is_empty(),
                "skipped although node(s) {os:?} exist: {r:?}"
            );
            assert!(reason.contains("no NUMA node"), "{reason}");
        }
        // mbind may be forbidden in a container; then the kernel says so.
        BindOutcome::Failed { errno } => {
            assert!(
                !os.is_empty() && (*errno == libc_enosys() || *errno == 1),
                "unexpected failure {r:?}"
            )
        }
    }
}

fn libc_enosys() -> i32 {
    38
}

#[test]
fn placement_policies_issue_expected_bindings() {
    for policy in NumaPolicy::ALL {
        let rt = four_nodes(policy);
        let cons = register_cons(&rt);
        let topo = rt.info().topology;
        assert!(
            topo.nodes[0].os_node.is_some(),
            "node 0 exists on every Linux machine"
        );
        for k in 1..4 {
            assert_eq!(
                topo.nodes[k].os_node, None,
                "synthetic node {k} has no OS node on a 1-node machine"
            );
        }
        rt.run_each(move |s| {
            let l = promoted_list(s, cons, 1, 1_500).unwrap();
            assert_eq!(read_list(s.view(l), cons).unwrap().len(), 1_500);
        })
        .unwrap();
        let log = rt.binding_log();
        assert!(
            global_chunk_records(&log).len() >= 4 || !split_plan(),
            "{policy}: {log:?}"
        );
        for r in &log {
            let expected = match policy {
                NumaPolicy::Local => BindRequest {
                    mode: BindMode::Bind,
                    nodes: vec![r.node],
                },
                NumaPolicy::Interleave => BindRequest {
                    mode: BindMode::Interleave,
                    nodes: vec![0, 1, 2, 3],
                },
                NumaPolicy::Node0 => BindRequest {
                    mode: BindMode::Bind,
                    nodes: vec![0],
                },
            };
            assert_eq!(r.request, expected, "{policy}: {r:?}");
            if policy == NumaPolicy::Node0 {
                assert_eq!(r.node, 0, "{policy}: {r:?}");
            }
            check_outcome(&rt, r);
        }
        if policy == NumaPolicy::Local {
            for node in 0..4 {
                assert!(
                    log.iter().any(|r| r.node == node),
                    "local: nothing bound for node {node}"
                );
            }
            assert!(log
                .iter()
                .any(|r| matches!(r.outcome, BindOutcome::Skipped { .. })));
        }
        let counts = rt.info().bindings;
        let n = log.len() as u64;
        assert_eq!(
            counts.applied + counts.skipped + counts.failed,
            n,
            "{policy}: counts {counts:?}"
        );
        if policy != NumaPolicy::Local {
            assert_eq!(
                counts.skipped, 0,
                "{policy}: every request names node 0, which exists"
            );
        }
    }
}
