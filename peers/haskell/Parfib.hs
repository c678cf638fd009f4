-- parfib peer (numagc's crates/numagc-bench/src/benchmarks/parfib.rs).
-- Usage: peers/build/haskell/parfib N THRESHOLD +RTS -N<workers>
-- Parallelism: par/pseq from GHC.Conc; calls with n > THRESHOLD spark
-- pfib (n-1) and evaluate pfib (n-2) themselves; calls at or below it run
-- sequentially. Results are GHC's boxed Int (no unboxing is asked for).
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import Text.Printf (printf)

pfib :: Int -> Int -> Int
pfib n t
  | n < 2 = n
  | n <= t = pfib (n - 1) t + pfib (n - 2) t
  | otherwise =
      let x = pfib (n - 1) t
          y = pfib (n - 2) t
      in x `par` (y `pseq` (x + y))

main :: IO ()
main = do
  [ns, ts] <- getArgs
  let n = read ns :: Int
      t = read ts :: Int
  printf "parfib %d (threshold %d) = %d\n" n t (pfib n t)
