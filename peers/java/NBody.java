// nbody peer (numagc's crates/numagc-bench/src/benchmarks/nbody.rs; Sandmark's
// nbody_multicore). Usage: java -cp peers/build/java NBody BODIES STEPS SEED [WORKERS]
// Same bodies as numagc (body i drawn from its own splitmix stream (SEED, i)),
// same arithmetic in the same order, so the energies print identically.
// Parallelism: a ForkJoinPool of WORKERS threads. Each step builds a new
// packed double[] of the bodies (functional style, as numagc's new body
// sequence per step) from the old one, the bodies split recursively in
// halves down to 16 per task; the energy is the same halving reduction with
// leaves of at most 16 bodies (numagc's par_reduce), so the sum order is the same.
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveAction;
import java.util.concurrent.RecursiveTask;

public final class NBody {
    static final double PI = Math.PI;
    static final double SOLAR_MASS = 4.0 * PI * PI;
    static final double DAYS_PER_YEAR = 365.24;
    static final double DT = 0.01;
    static final int F = 7, GRAIN = 16;

    static long mix(long z) {
        z = z + 0x9e3779b97f4a7c15L;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    static long state;
    static double uniform(double scale) {
        state = mix(state);
        return (double) (state >>> 11) / (double) (1L << 53) * scale;
    }

    static void initialBody(long seed, int i, double[] out) {
        state = mix(seed ^ mix(i));
        double x = uniform(10.0), y = uniform(10.0), z = uniform(10.0);
        double vx = uniform(5.0) * DAYS_PER_YEAR, vy = uniform(4.0) * DAYS_PER_YEAR, vz = uniform(5.0) * DAYS_PER_YEAR;
        double m = uniform(10.0) * SOLAR_MASS;
        double[] b = {x, y, z, vx, vy, vz, m};
        System.arraycopy(b, 0, out, i * F, F);
    }

    static double energyOf(double[] p, int n, int i) {
        int o = i * F;
        double bx = p[o], by = p[o + 1], bz = p[o + 2], bm = p[o + 6];
        double e = 0.5 * bm * (p[o + 3] * p[o + 3] + p[o + 4] * p[o + 4] + p[o + 5] * p[o + 5]);
        for (int j = i + 1; j < n; j++) {
            int q = j * F;
            double dx = bx - p[q], dy = by - p[q + 1], dz = bz - p[q + 2];
            e -= (bm * p[q + 6]) / Math.sqrt(dx * dx + dy * dy + dz * dz);
        }
        return e;
    }

    static final class Energy extends RecursiveTask<Double> {
        final double[] p; final int n, lo, hi;
        Energy(double[] p, int n, int lo, int hi) { this.p = p; this.n = n; this.lo = lo; this.hi = hi; }
        protected Double compute() {
            if (hi - lo <= GRAIN) {
                double e = 0.0;
                for (int i = lo; i < hi; i++) e += energyOf(p, n, i);
                return e;
            }
            int mid = lo + (hi - lo) / 2;
            Energy a = new Energy(p, n, lo, mid), b = new Energy(p, n, mid, hi);
            a.fork();
            double y = b.compute();
            return a.join() + y;
        }
    }

    static final class Advance extends RecursiveAction {
        final double[] old, next; final int n, lo, hi;
        Advance(double[] old, double[] next, int n, int lo, int hi) { this.old = old; this.next = next; this.n = n; this.lo = lo; this.hi = hi; }
        protected void compute() {
            if (hi - lo <= GRAIN) {
                for (int i = lo; i < hi; i++) {
                    int o = i * F;
                    double bx = old[o], by = old[o + 1], bz = old[o + 2];
                    double vx = old[o + 3], vy = old[o + 4], vz = old[o + 5];
                    for (int j = 0; j < n; j++) {
                        if (j == i) continue;
                        int q = j * F;
                        double m = old[q + 6];
                        double dx = bx - old[q], dy = by - old[q + 1], dz = bz - old[q + 2];
                        double dist2 = dx * dx + dy * dy + dz * dz;
                        double mag = DT / (dist2 * Math.sqrt(dist2));
                        vx -= dx * m * mag;
                        vy -= dy * m * mag;
                        vz -= dz * m * mag;
                    }
                    next[o + 3] = vx; next[o + 4] = vy; next[o + 5] = vz;
                    next[o] = bx + DT * vx; next[o + 1] = by + DT * vy; next[o + 2] = bz + DT * vz;
                    next[o + 6] = old[o + 6];
                }
                return;
            }
            int mid = lo + (hi - lo) / 2;
            invokeAll(new Advance(old, next, n, lo, mid), new Advance(old, next, n, mid, hi));
        }
    }

    static String fmt(double e) {
        return new BigDecimal(e).setScale(9, RoundingMode.HALF_EVEN).toPlainString();
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        int steps = Integer.parseInt(args[1]);
        long seed = Long.parseLong(args[2]);
        int workers = args.length > 3 ? Integer.parseInt(args[3]) : Runtime.getRuntime().availableProcessors();
        ForkJoinPool pool = new ForkJoinPool(workers);
        double[] bodies = new double[n * F];
        for (int i = 0; i < n; i++) initialBody(seed, i, bodies);
        double[] p = new double[3];
        for (int i = 0; i < n; i++) for (int k = 0; k < 3; k++) p[k] += bodies[i * F + 3 + k] * bodies[i * F + 6];
        for (int k = 0; k < 3; k++) bodies[3 + k] = -p[k] / SOLAR_MASS;
        double e0 = pool.invoke(new Energy(bodies, n, 0, n));
        for (int s = 0; s < steps; s++) {
            double[] next = new double[n * F];
            pool.invoke(new Advance(bodies, next, n, 0, n));
            bodies = next;
        }
        double e1 = pool.invoke(new Energy(bodies, n, 0, n));
        System.out.print(fmt(e0) + "\n" + fmt(e1) + "\n");
        pool.shutdown();
    }
}
