// binarytrees peer (numagc's crates/numagc-bench/src/benchmarks/binarytrees.rs).
// Usage: java -cp peers/build/java BinaryTrees DEPTH [WORKERS]
// Parallelism: a ForkJoinPool of WORKERS threads. The stretch and long-lived
// trees have their top 3 levels forked (as numagc's make_par); the iterations
// of each depth are split statically over WORKERS tasks (task k takes every
// WORKERS-th iteration starting at k), as numagc's run_each does.
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;
import java.util.ArrayList;
import java.util.List;

public final class BinaryTrees {
    static final int MIN_DEPTH = 4;
    static final int PAR_LEVELS = 3;

    static final class Node {
        final Node left, right;
        Node(Node l, Node r) { left = l; right = r; }
    }

    static Node make(int depth) {
        if (depth == 0) return new Node(null, null);
        return new Node(make(depth - 1), make(depth - 1));
    }

    static final class MakePar extends RecursiveTask<Node> {
        final int depth, levels;
        MakePar(int d, int l) { depth = d; levels = l; }
        protected Node compute() {
            if (levels == 0 || depth == 0) return make(depth);
            MakePar l = new MakePar(depth - 1, levels - 1);
            MakePar r = new MakePar(depth - 1, levels - 1);
            l.fork();
            Node rn = r.compute();
            return new Node(l.join(), rn);
        }
    }

    static long check(Node t) {
        if (t.left == null) return 1;
        return 1 + check(t.left) + check(t.right);
    }

    public static void main(String[] args) throws Exception {
        int maxDepth = Integer.parseInt(args[0]);
        int workers = args.length > 1 ? Integer.parseInt(args[1]) : Runtime.getRuntime().availableProcessors();
        ForkJoinPool pool = new ForkJoinPool(workers);
        StringBuilder out = new StringBuilder();

        long stretch = check(pool.invoke(new MakePar(maxDepth + 1, PAR_LEVELS)));
        out.append("stretch tree of depth ").append(maxDepth + 1).append("\t check: ").append(stretch).append('\n');

        Node longLived = pool.invoke(new MakePar(maxDepth, PAR_LEVELS));

        for (int d = MIN_DEPTH; d <= maxDepth; d += 2) {
            final int depth = d;
            final long iterations = 1L << (maxDepth - d + MIN_DEPTH);
            List<java.util.concurrent.ForkJoinTask<Long>> tasks = new ArrayList<>();
            for (int k = 0; k < workers; k++) {
                final int me = k;
                tasks.add(pool.submit(() -> {
                    long sum = 0;
                    for (long i = me; i < iterations; i += workers) sum += check(make(depth));
                    return sum;
                }));
            }
            long sum = 0;
            for (var t : tasks) sum += t.get();
            out.append(iterations).append("\t trees of depth ").append(d).append("\t check: ").append(sum).append('\n');
        }

        out.append("long lived tree of depth ").append(maxDepth).append("\t check: ").append(check(longLived)).append('\n');
        System.out.print(out);
        pool.shutdown();
    }
}
