// mandelbrot peer (numagc's crates/numagc-bench/src/benchmarks/mandelbrot.rs).
// Usage: java -cp peers/build/java Mandelbrot SIZE ITERATIONS [WORKERS]
// Parallelism: a ForkJoinPool of WORKERS threads; the rows are split
// recursively in halves down to one row per task; each task builds the row's
// array of iteration counts and returns its sum. Window [-2,1]x[-1.5,1.5].
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;

public final class Mandelbrot {
    static int iterations(double cRe, double cIm, int limit) {
        double re = 0, im = 0;
        int n = 0;
        while (n < limit && re * re + im * im <= 4.0) {
            double nextRe = re * re - im * im + cRe;
            im = 2.0 * re * im + cIm;
            re = nextRe;
            n++;
        }
        return n;
    }

    static final class Rows extends RecursiveTask<Long> {
        final int size, limit, lo, hi;
        Rows(int size, int limit, int lo, int hi) { this.size = size; this.limit = limit; this.lo = lo; this.hi = hi; }
        protected Long compute() {
            if (hi - lo == 1) {
                double step = 3.0 / size;
                int[] row = new int[size];
                for (int col = 0; col < size; col++) row[col] = iterations(-2.0 + col * step, 1.5 - lo * step, limit);
                long s = 0;
                for (int x : row) s += x;
                return s;
            }
            int mid = lo + (hi - lo) / 2;
            Rows a = new Rows(size, limit, lo, mid), b = new Rows(size, limit, mid, hi);
            a.fork();
            long y = b.compute();
            return a.join() + y;
        }
    }

    public static void main(String[] args) {
        int size = Integer.parseInt(args[0]);
        int limit = Integer.parseInt(args[1]);
        int workers = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
        ForkJoinPool pool = new ForkJoinPool(workers);
        long total = pool.invoke(new Rows(size, limit, 0, size));
        System.out.print("mandelbrot " + size + "x" + size + ", " + limit + " iterations: sum of iteration counts " + total + "\n");
        pool.shutdown();
    }
}
