// quicksort peer (numagc's crates/numagc-bench/src/benchmarks/quicksort.rs;
// the NESL/Manticore quicksort over ropes).
// Usage: java -cp peers/build/java Quicksort N RANGE GRAIN SEED [WORKERS]
// The same immutable ropes as numagc's: leaves of at most 1024 keys (long[]),
// inner nodes Cat(len, left, right); concatenation is a new node, except that
// two sequences of at most 1024 keys in all are copied into one leaf; a
// filter reads a subtree of at most 4096 keys in one go and cuts what it keeps
// into new leaves. Parallelism: a ForkJoinPool of WORKERS threads; the three
// filters run in parallel, each filter forks at rope nodes above 8192 keys,
// the input is built in parallel above 8192 keys, and the two recursive sorts
// run in parallel; sequences of at most GRAIN keys are sorted sequentially
// (copied out and sorted with Arrays.sort).
import java.util.ArrayList;
import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.RecursiveTask;

public final class Quicksort {
    static final int LEAF_MAX = 1024, CHUNK = 4 * LEAF_MAX, FILTER_GRAIN = 8 * LEAF_MAX;

    static abstract class Seq { abstract long len(); }
    static final class Leaf extends Seq {
        final long[] w;
        Leaf(long[] w) { this.w = w; }
        long len() { return w.length; }
    }
    static final class Cat extends Seq {
        final long n; final Seq l, r;
        Cat(long n, Seq l, Seq r) { this.n = n; this.l = l; this.r = r; }
        long len() { return n; }
    }
    static long len(Seq s) { return s == null ? 0 : s.len(); }

    static long mix(long z) {
        z = z + 0x9e3779b97f4a7c15L;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
    static long key(long seed, long range, long i) { return Long.remainderUnsigned(mix(mix(seed) ^ i), range); }

    static long nth(Seq s, long i) {
        while (true) {
            if (s instanceof Leaf lf) return lf.w[(int) i];
            Cat c = (Cat) s;
            long ll = len(c.l);
            if (i < ll) s = c.l; else { i -= ll; s = c.r; }
        }
    }

    interface LeafFn { void leaf(long[] w); }
    static void forEachLeaf(Seq s, LeafFn f) {
        if (s == null) return;
        if (s instanceof Leaf lf) { f.leaf(lf.w); return; }
        Cat c = (Cat) s;
        forEachLeaf(c.l, f);
        forEachLeaf(c.r, f);
    }

    static long[] elements(Seq s) {
        long[] out = new long[(int) len(s)];
        int[] at = {0};
        forEachLeaf(s, w -> { System.arraycopy(w, 0, out, at[0], w.length); at[0] += w.length; });
        return out;
    }

    static Seq cat(Seq a, Seq b) {
        long al = len(a), bl = len(b);
        if (al == 0) return b;
        if (bl == 0) return a;
        if (al + bl <= LEAF_MAX) {
            long[] both = new long[(int) (al + bl)];
            System.arraycopy(elements(a), 0, both, 0, (int) al);
            System.arraycopy(elements(b), 0, both, (int) al, (int) bl);
            return new Leaf(both);
        }
        return new Cat(al + bl, a, b);
    }

    static Seq fromWords(long[] w, int lo, int hi) {
        if (hi - lo <= LEAF_MAX) return new Leaf(Arrays.copyOfRange(w, lo, hi));
        int mid = lo + (hi - lo) / 2;
        Seq l = fromWords(w, lo, mid), r = fromWords(w, mid, hi);
        return new Cat(hi - lo, l, r);
    }

    static final class Input extends RecursiveTask<Seq> {
        final long seed, range; final long lo, hi;
        Input(long seed, long range, long lo, long hi) { this.seed = seed; this.range = range; this.lo = lo; this.hi = hi; }
        protected Seq compute() {
            if (hi - lo <= LEAF_MAX) {
                long[] w = new long[(int) (hi - lo)];
                for (int k = 0; k < w.length; k++) w[k] = key(seed, range, lo + k);
                return new Leaf(w);
            }
            long mid = lo + (hi - lo) / 2;
            Seq l, r;
            if (hi - lo > FILTER_GRAIN) {
                Input a = new Input(seed, range, lo, mid);
                a.fork();
                r = new Input(seed, range, mid, hi).compute();
                l = a.join();
            } else {
                l = new Input(seed, range, lo, mid).compute();
                r = new Input(seed, range, mid, hi).compute();
            }
            return new Cat(hi - lo, l, r);
        }
    }

    static boolean test(int keep, long x, long p) { return keep < 0 ? x < p : keep == 0 ? x == p : x > p; }

    static final class Filter extends RecursiveTask<Seq> {
        final Seq s; final long pivot; final int keep;
        Filter(Seq s, long pivot, int keep) { this.s = s; this.pivot = pivot; this.keep = keep; }
        protected Seq compute() {
            if (!(s instanceof Cat c) || c.n <= CHUNK) {
                long[] kept = new long[(int) len(s)];
                int[] k = {0};
                forEachLeaf(s, w -> { for (long x : w) if (test(keep, x, pivot)) kept[k[0]++] = x; });
                return k[0] == 0 ? null : fromWords(kept, 0, k[0]);
            }
            Seq a, b;
            if (c.n > FILTER_GRAIN) {
                Filter fa = new Filter(c.l, pivot, keep);
                fa.fork();
                b = new Filter(c.r, pivot, keep).compute();
                a = fa.join();
            } else {
                a = new Filter(c.l, pivot, keep).compute();
                b = new Filter(c.r, pivot, keep).compute();
            }
            return cat(a, b);
        }
    }

    static Seq sortSmall(Seq s) {
        long[] keys = elements(s);
        if (keys.length == 0) return null;
        Arrays.sort(keys);
        return fromWords(keys, 0, keys.length);
    }

    static final class Sort extends RecursiveTask<Seq> {
        final Seq s; final long grain;
        Sort(Seq s, long grain) { this.s = s; this.grain = grain; }
        protected Seq compute() {
            long n = len(s);
            if (n <= Math.max(grain, 1)) return sortSmall(s);
            long pivot = nth(s, n / 2);
            Filter lt = new Filter(s, pivot, -1), eq = new Filter(s, pivot, 0);
            lt.fork();
            eq.fork();
            Seq gt = new Filter(s, pivot, 1).compute();
            Seq e = eq.join(), l = lt.join();
            Sort sl = new Sort(l, grain);
            sl.fork();
            Seq u = new Sort(gt, grain).compute();
            return cat(sl.join(), cat(e, u));
        }
    }

    public static void main(String[] args) {
        long n = Long.parseLong(args[0]);
        long range = Long.parseLong(args[1]);
        long grain = Long.parseLong(args[2]);
        long seed = Long.parseLong(args[3]);
        int workers = args.length > 4 ? Integer.parseInt(args[4]) : Runtime.getRuntime().availableProcessors();
        ForkJoinPool pool = new ForkJoinPool(workers);
        Seq xs = n == 0 ? null : pool.invoke(new Input(seed, range, 0, n));
        Seq sorted = pool.invoke(new Sort(xs, grain));
        long total = len(sorted);
        long[] sum = new long[5]; // len, first, middle, last, checksum
        forEachLeaf(sorted, w -> {
            for (long x : w) {
                if (sum[0] == 0) sum[1] = x;
                if (sum[0] == total / 2) sum[2] = x;
                sum[3] = x;
                sum[4] = sum[4] * 1_000_003L + x;
                sum[0]++;
            }
        });
        System.out.print("quicksort: " + sum[0] + " integers in [0, " + range + ") sorted\n"
            + "first " + sum[1] + ", middle " + sum[2] + ", last " + sum[3] + ", checksum " + Long.toUnsignedString(sum[4]) + "\n");
        pool.shutdown();
    }
}
