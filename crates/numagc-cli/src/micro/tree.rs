//! The test graph of `micro pack` and `micro copy`: a complete binary
//! tree of immutable mixed nodes (left, right, a raw payload word) whose
//! payloads follow a formula, and its census to check it.

use numagc::{Config, DescId, Descriptor, Handle, Result, Runtime, Scope, View};

/// A runtime set up for a tree of `depth` levels: the nodes' descriptor
/// registered, and what the census of the tree must find.
pub struct TreeRun {
    pub rt: Runtime,
    pub node: DescId,
    /// 2^depth − 1.
    pub nodes: u64,
    /// The wrapping sum of every node's payload.
    pub want_sum: u64,
}

/// Checks `depth` (1 ..= `max_depth`), starts a runtime on `config` and
/// registers the nodes' descriptor.
pub fn start(depth: u32, max_depth: u32, config: Config) -> std::result::Result<TreeRun, String> {
    if !(1..=max_depth).contains(&depth) {
        return Err(format!("--depth {depth}: 1 ..= {max_depth}"));
    }
    let rt = Runtime::new(config).map_err(|e| e.to_string())?;
    let node = register_node(&rt)?;
    let nodes = (1u64 << depth) - 1;
    let want_sum = (0..nodes).fold(0u64, |a, i| a.wrapping_add(payload(i)));
    Ok(TreeRun {
        rt,
        node,
        nodes,
        want_sum,
    })
}

/// Registers the nodes' descriptor (left, right, the payload).
fn register_node(rt: &Runtime) -> std::result::Result<DescId, String> {
    rt.register(Descriptor::mixed("node", 3, &[0, 1]).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())
}

/// The payload of node `i` (pre-order).
pub fn payload(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555
}

/// The tree of `depth` levels whose nodes are numbered in pre-order from
/// `first` (a subtree of `d` levels has 2^d − 1 nodes).
pub fn tree<'s>(s: &mut Scope<'s>, node: DescId, depth: u32, first: u64) -> Result<Handle<'s>> {
    if depth == 0 {
        return Ok(Handle::NIL);
    }
    s.scope_value(|s| {
        let l = tree(s, node, depth - 1, first + 1)?;
        let r = tree(s, node, depth - 1, first + (1 << (depth - 1)))?;
        s.alloc_mixed(node, &[l, r], &[payload(first)])
    })
}

/// (nodes, wrapping sum of payloads) of the tree at `root`, iteratively.
pub fn census(root: View<'_>) -> (u64, u64) {
    let (mut nodes, mut sum) = (0u64, 0u64);
    let mut stack = vec![root];
    while let Some(v) = stack.pop() {
        if !v.is_object() {
            continue;
        }
        nodes += 1;
        sum = sum.wrapping_add(v.raw(2));
        stack.push(v.field(0));
        stack.push(v.field(1));
    }
    (nodes, sum)
}
