// sumEuler peer (numagc's crates/numagc-bench/src/benchmarks/sumeuler.rs;
// nofib parallel/sumeuler). Usage: java -cp peers/build/java SumEuler N CHUNK [WORKERS]
// Parallelism: a ForkJoinPool of WORKERS threads; the interval [N, N-1 .. 0]
// is cut into chunks of CHUNK numbers (each a linked list), and the chunk
// vector is split recursively in halves down to one chunk per task (numagc's
// par_map). euler k conses the coprime j < k into a linked list and takes its
// length, as numagc's version (and the original's GHC) allocate.
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;

public final class SumEuler {
    record Cons(long head, Cons tail) {}

    static long hcf(long x, long y) {
        while (y != 0) { long t = x % y; x = y; y = t; }
        return x;
    }

    static long euler(long k) {
        Cons coprimes = null;
        for (long j = k - 1; j >= 1; j--) if (hcf(k, j) == 1) coprimes = new Cons(j, coprimes);
        long n = 0;
        for (Cons c = coprimes; c != null; c = c.tail()) n++;
        return n;
    }

    static Cons chunkList(long n, long chunk, long i) {
        long first = n - i * chunk;
        long last = Math.max(0, first - (chunk - 1));
        Cons list = null;
        for (long k = last; k <= first; k++) list = new Cons(k, list);
        return list;
    }

    static final class Sum extends RecursiveTask<Long> {
        final Cons[] chunks; final int lo, hi;
        Sum(Cons[] c, int lo, int hi) { chunks = c; this.lo = lo; this.hi = hi; }
        protected Long compute() {
            if (hi - lo == 1) {
                long s = 0;
                for (Cons c = chunks[lo]; c != null; c = c.tail()) s += euler(c.head());
                return s;
            }
            int mid = lo + (hi - lo) / 2;
            Sum a = new Sum(chunks, lo, mid), b = new Sum(chunks, mid, hi);
            a.fork();
            long y = b.compute();
            return a.join() + y;
        }
    }

    public static void main(String[] args) {
        long n = Long.parseLong(args[0]);
        long chunk = Long.parseLong(args[1]);
        int workers = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
        int chunks = (int) ((n + 1 + chunk - 1) / chunk);
        Cons[] interval = new Cons[chunks];
        for (int i = 0; i < chunks; i++) interval[i] = chunkList(n, chunk, i);
        ForkJoinPool pool = new ForkJoinPool(workers);
        long got = pool.invoke(new Sum(interval, 0, chunks));
        System.out.print("sumEuler [0.." + n + "] = " + got + " (" + chunks + " chunks of " + chunk + ")\n");
        pool.shutdown();
    }
}
