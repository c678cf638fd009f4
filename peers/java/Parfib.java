// parfib peer (numagc's crates/numagc-bench/src/benchmarks/parfib.rs).
// Usage: java -cp peers/build/java Parfib N THRESHOLD [WORKERS]
// Parallelism: a ForkJoinPool of WORKERS threads; calls with n > THRESHOLD
// fork fib(n-1) and compute fib(n-2) themselves, calls at or below it run
// sequentially. Every call returns its result boxed in a heap object (Box),
// as numagc's version does.
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;

public final class Parfib {
    static final class Box {
        final long v;
        Box(long v) { this.v = v; }
    }

    static Box seq(long n) {
        if (n < 2) return new Box(n);
        Box x = seq(n - 1);
        Box y = seq(n - 2);
        return new Box(x.v + y.v);
    }

    static final class Task extends RecursiveTask<Box> {
        final long n, threshold;
        Task(long n, long t) { this.n = n; threshold = t; }
        protected Box compute() {
            if (n < 2 || n <= threshold) return seq(n);
            Task l = new Task(n - 1, threshold);
            Task r = new Task(n - 2, threshold);
            l.fork();
            Box y = r.compute();
            Box x = l.join();
            return new Box(x.v + y.v);
        }
    }

    public static void main(String[] args) {
        long n = Long.parseLong(args[0]);
        long threshold = Long.parseLong(args[1]);
        int workers = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
        ForkJoinPool pool = new ForkJoinPool(workers);
        Box got = pool.invoke(new Task(n, threshold));
        System.out.print("parfib " + n + " (threshold " + threshold + ") = " + got.v + "\n");
        pool.shutdown();
    }
}
