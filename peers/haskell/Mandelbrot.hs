{-# OPTIONS_GHC -feager-blackholing #-}
-- ^ Eager blackholing (GHC user's guide, "Using SMP parallelism": it "avoids
-- repeating a computation in a parallel program"): a thunk is marked as
-- under evaluation when its evaluation starts, not at the next context
-- switch. Each sparked task here is a long computation that allocates little
-- (so it reaches no context switch), and the main thread demands the sparks
-- in the order the other capability steals them: with lazy blackholing both
-- capabilities evaluated the same thunks
-- (until 2026-11-26: at the paper size -N2 took 2.84 s against 3.14 s at -N1;
-- now 1.54 s).
{-# LANGUAGE BangPatterns #-}
-- mandelbrot peer (numagc's crates/numagc-bench/src/benchmarks/mandelbrot.rs).
-- Usage: peers/build/haskell/mandelbrot SIZE ITERATIONS +RTS -N<workers>
-- Parallelism: par/pseq; the picture is a list of rows, each the list of its
-- pixels' iteration counts, and every row's sum is sparked.
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import Text.Printf (printf)

iterations :: Double -> Double -> Int -> Int
iterations cRe cIm limit = go 0 0 0
  where
    go :: Double -> Double -> Int -> Int
    go !re !im !n
      | n < limit && re * re + im * im <= 4.0 = go (re * re - im * im + cRe) (2.0 * re * im + cIm) (n + 1)
      | otherwise = n

parList :: [Int] -> ()
parList [] = ()
parList (x : xs) = x `par` parList xs

main :: IO ()
main = do
  [ss, ls] <- getArgs
  let size = read ss :: Int; limit = read ls :: Int
      step = 3.0 / fromIntegral size :: Double
      row r = [iterations (-2.0 + fromIntegral c * step) (1.5 - fromIntegral r * step) limit | c <- [0 .. size - 1]]
      sums = [sum (row r) | r <- [0 .. size - 1]]
      total = parList sums `pseq` sum sums
  printf "mandelbrot %dx%d, %d iterations: sum of iteration counts %d\n" size size limit total
