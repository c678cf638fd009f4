// GCBench peer (numagc's crates/numagc-bench/src/benchmarks/gcbench.rs;
// Boehm and Ellis's Java GCBench with the output compacted as numagc's).
// Usage: java -cp peers/build/java GCBench STRETCH_DEPTH LONG_LIVED_DEPTH MAX_DEPTH ARRAY_SIZE GRAIN [WORKERS]
// Parallelism: a ForkJoinPool of WORKERS threads. The trees of each phase and
// depth are split recursively in halves down to ranges of max(1, GRAIN /
// TreeSize(d)) trees built one after the other (numagc's par_reduce); the
// stretch and long-lived trees fork their subtrees deeper than 12.
// Java nodes are mutable, so the top-down phase is GCBench's own Populate
// (node first, children stored into it); the bottom-up phase is MakeTree.
// numagc builds both bottom-up (its young objects are immutable); the node
// counts, and so the output, are the same.
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;

public final class GCBench {
    static final int MIN_TREE_DEPTH = 4;
    static final int FORK_DEPTH = 12;

    static final class Node {
        Node left, right;
        long i, j;
        Node(Node l, Node r) { left = l; right = r; }
        Node() {}
    }

    static long treeSize(int d) { return (1L << (d + 1)) - 1; }
    static long numIters(int stretch, int d) { return 2 * treeSize(stretch) / treeSize(d); }

    static Node makeTree(int d) {
        if (d == 0) return new Node();
        return new Node(makeTree(d - 1), makeTree(d - 1));
    }

    static void populate(int d, Node n) {
        if (d <= 0) return;
        d--;
        n.left = new Node();
        n.right = new Node();
        populate(d, n.left);
        populate(d, n.right);
    }

    static long count(Node t) {
        if (t.left == null) return 1;
        return 1 + count(t.left) + count(t.right);
    }

    static final class Big extends RecursiveTask<Node> {
        final int d;
        Big(int d) { this.d = d; }
        protected Node compute() {
            if (d <= FORK_DEPTH) return makeTree(d);
            Big l = new Big(d - 1), r = new Big(d - 1);
            l.fork();
            Node rn = r.compute();
            return new Node(l.join(), rn);
        }
    }

    /** [trees, nodes] of the trees lo..hi. */
    static final class Phase extends RecursiveTask<long[]> {
        final int d; final long lo, hi, per; final boolean topDown;
        Phase(int d, long lo, long hi, long per, boolean td) { this.d = d; this.lo = lo; this.hi = hi; this.per = per; topDown = td; }
        protected long[] compute() {
            if (hi - lo <= per) {
                long trees = 0, nodes = 0;
                for (long k = lo; k < hi; k++) {
                    Node t;
                    if (topDown) { t = new Node(); populate(d, t); } else t = makeTree(d);
                    trees++;
                    nodes += count(t);
                }
                return new long[] {trees, nodes};
            }
            long mid = lo + (hi - lo) / 2;
            Phase a = new Phase(d, lo, mid, per, topDown), b = new Phase(d, mid, hi, per, topDown);
            a.fork();
            long[] y = b.compute(), x = a.join();
            return new long[] {x[0] + y[0], x[1] + y[1]};
        }
    }

    public static void main(String[] args) {
        int stretch = Integer.parseInt(args[0]);
        int longDepth = Integer.parseInt(args[1]);
        int maxDepth = Integer.parseInt(args[2]);
        int arraySize = Integer.parseInt(args[3]);
        long grain = Long.parseLong(args[4]);
        int workers = args.length > 5 ? Integer.parseInt(args[5]) : Runtime.getRuntime().availableProcessors();
        ForkJoinPool pool = new ForkJoinPool(workers);
        StringBuilder out = new StringBuilder();
        out.append("Garbage Collector Test\n");
        long stretchNodes = count(pool.invoke(new Big(stretch)));
        out.append(" Stretching memory with a binary tree of depth ").append(stretch).append(": ").append(stretchNodes).append(" nodes\n");
        out.append(" Creating a long-lived binary tree of depth ").append(longDepth).append('\n');
        Node longLived = pool.invoke(new Big(longDepth));
        out.append(" Creating a long-lived array of ").append(arraySize).append(" doubles\n");
        double[] array = new double[arraySize];
        for (int i = 0; i < arraySize / 2; i++) array[i] = 1.0 / i;
        for (int d = MIN_TREE_DEPTH; d <= maxDepth; d += 2) {
            long iters = numIters(stretch, d);
            long per = Math.max(1, grain / treeSize(d));
            long[] td = pool.invoke(new Phase(d, 0, iters, per, true));
            long[] bu = pool.invoke(new Phase(d, 0, iters, per, false));
            out.append("Creating ").append(td[0]).append(" trees of depth ").append(d)
               .append(": top down ").append(td[1]).append(" nodes, bottom up ").append(bu[1]).append(" nodes\n");
        }
        boolean intact = array[1000] == 1.0 / 1000.0;
        out.append("Long-lived tree: ").append(count(longLived)).append(" nodes; array[1000] == 1/1000: ").append(intact).append('\n');
        System.out.print(out);
        pool.shutdown();
    }
}
