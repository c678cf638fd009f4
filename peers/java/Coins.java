// coins peer (numagc's crates/numagc-bench/src/benchmarks/coins.rs; nofib
// parallel/coins payN_par). Usage: java -cp peers/build/java Coins VALUE DEPTH [WORKERS]
// Parallelism: a ForkJoinPool of WORKERS threads; while depth > 0 the right
// branch (drop the first coin value) is forked with depth-1, the left branch
// (pay one coin) keeps its depth unless it used the last coin of a value.
// The coins are an immutable linked list of (value, quantity) pairs; each
// left step allocates a new pair and cons cell, as numagc's and GHC's do.
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;

public final class Coins {
    record Pair(long value, long quantity) {}
    record Cons(Pair head, Cons tail) {}

    static final long[][] COINS = {{250, 55}, {100, 88}, {25, 88}, {10, 99}, {5, 122}, {1, 177}};

    static Cons payOne(Cons coins, long c, long q) {
        return q == 1 ? coins.tail() : new Cons(new Pair(c, q - 1), coins.tail());
    }

    static long payN(long val, Cons coins) {
        if (val == 0) return 1;
        if (coins == null) return 0;
        long c = coins.head().value(), q = coins.head().quantity();
        if (c > val) return payN(val, coins.tail());
        return payN(val - c, payOne(coins, c, q)) + payN(val, coins.tail());
    }

    static final class Par extends RecursiveTask<Long> {
        final long depth, val; final Cons coins;
        Par(long depth, long val, Cons coins) { this.depth = depth; this.val = val; this.coins = coins; }
        protected Long compute() {
            if (depth == 0) return payN(val, coins);
            if (val == 0) return 1L;
            if (coins == null) return 0L;
            long c = coins.head().value(), q = coins.head().quantity();
            if (c > val) return new Par(depth, val, coins.tail()).compute();
            Par right = new Par(depth - 1, val, coins.tail());
            right.fork();
            long left = new Par(q == 1 ? depth - 1 : depth, val - c, payOne(coins, c, q)).compute();
            return left + right.join();
        }
    }

    public static void main(String[] args) {
        long val = Long.parseLong(args[0]);
        long depth = Long.parseLong(args[1]);
        int workers = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
        Cons coins = null;
        for (int i = COINS.length - 1; i >= 0; i--) coins = new Cons(new Pair(COINS[i][0], COINS[i][1]), coins);
        ForkJoinPool pool = new ForkJoinPool(workers);
        long got = pool.invoke(new Par(depth, val, coins));
        System.out.print("coins: ways to pay " + val + " (depth " + depth + ") = " + got + "\n");
        pool.shutdown();
    }
}
