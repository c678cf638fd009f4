{-# OPTIONS_GHC -feager-blackholing #-}
-- ^ Eager blackholing (GHC user's guide, "Using SMP parallelism": it "avoids
-- repeating a computation in a parallel program"): a thunk is marked as
-- under evaluation when its evaluation starts, not at the next context
-- switch. Each sparked task here is a long computation that allocates little
-- (so it reaches no context switch), and the main thread demands the sparks
-- in the order the other capability steals them: with lazy blackholing both
-- capabilities evaluated the same thunks
-- (until 2026-11-26: at the paper size -N2 took 6.33 s, as long as -N1, with
-- twice its CPU time; now 3.17 s).
-- sumEuler peer (numagc's crates/numagc-bench/src/benchmarks/sumeuler.rs;
-- nofib parallel/sumeuler, sumEulerJFP_Final). Usage: peers/build/haskell/sumeuler N CHUNK +RTS -N<workers>
-- Parallelism: par/pseq; the interval [n, n-1 .. 0] is cut into chunks of
-- CHUNK numbers and every chunk's sum is sparked (the original's parList,
-- written with par since only base is used). euler k = length (filter
-- (relprime k) [1..k-1]) as the original; GHC -O2 may fuse that list away
-- (numagc's version allocates it, as the GHC of the paper's time did).
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import Text.Printf (printf)

hcf :: Int -> Int -> Int
hcf x 0 = x
hcf x y = hcf y (x `rem` y)

euler :: Int -> Int
euler k = length (filter (\j -> hcf k j == 1) [1 .. k - 1])

splitAtN :: Int -> [a] -> [[a]]
splitAtN _ [] = []
splitAtN c xs = let (a, b) = splitAt c xs in a : splitAtN c b

parList :: [Int] -> ()
parList [] = ()
parList (x : xs) = x `par` parList xs

main :: IO ()
main = do
  [ns, cs] <- getArgs
  let n = read ns; c = read cs :: Int
      sums = [sum (map euler x) | x <- splitAtN c [n, n - 1 .. 0]]
      total = parList sums `pseq` sum sums
  printf "sumEuler [0..%d] = %d (%d chunks of %d)\n" n total (length sums) c
