{-# LANGUAGE BangPatterns #-}
-- binarytrees peer (numagc's crates/numagc-bench/src/benchmarks/binarytrees.rs).
-- Usage: peers/build/haskell/binarytrees DEPTH +RTS -N<workers>
-- Parallelism: par/pseq from GHC.Conc (base only). The stretch and long-lived
-- trees have their top 3 levels sparked (as numagc's make_par); the
-- iterations of each depth are split statically into one chunk per
-- capability (chunk k takes every N-th iteration starting at k), each chunk
-- sparked. Built with -fno-full-laziness -fno-cse (see build.sh) so that GHC
-- neither floats `make d` out of the iteration loop nor shares the two
-- subtrees `make (d-1)`: every node is allocated, as in numagc's version.
import GHC.Conc (par, pseq, getNumCapabilities)
import System.Environment (getArgs)
import Control.Exception (evaluate)
import Data.List (foldl')
import Data.Bits (shiftL)
import Text.Printf (printf)

data Tree = Nil | Node !Tree !Tree

make :: Int -> Tree
make 0 = Node Nil Nil
make d = Node (make (d - 1)) (make (d - 1))

parLevels :: Int
parLevels = 3

makePar :: Int -> Int -> Tree
makePar d levels
  | levels == 0 || d == 0 = make d
  | otherwise =
      let l = makePar (d - 1) (levels - 1)
          r = makePar (d - 1) (levels - 1)
      in l `par` (r `pseq` (l `pseq` Node l r))

check :: Tree -> Int
check Nil = 0
check (Node l r) = 1 + check l + check r

minDepth :: Int
minDepth = 4

-- Sum of the checks of iterations k, k+step, ... below n, each on a fresh tree.
chunkSum :: Int -> Int -> Int -> Int -> Int
chunkSum d n k step = go k 0
  where
    go !i !acc
      | i >= n = acc
      | otherwise = go (i + step) (acc + check (make d))

main :: IO ()
main = do
  [ds] <- getArgs
  let maxDepth = read ds :: Int
  w <- getNumCapabilities
  let stretch = check (makePar (maxDepth + 1) parLevels)
  printf "stretch tree of depth %d\t check: %d\n" (maxDepth + 1) stretch
  long <- evaluate (makePar maxDepth parLevels)
  let loop d
        | d > maxDepth = return ()
        | otherwise = do
            let n = 1 `shiftL` (maxDepth - d + minDepth) :: Int
                sums = [chunkSum d n k w | k <- [0 .. w - 1]]
                total = foldr par (foldl' (+) 0 sums) sums
            t <- evaluate total
            printf "%d\t trees of depth %d\t check: %d\n" n d t
            loop (d + 2)
  loop minDepth
  printf "long lived tree of depth %d\t check: %d\n" maxDepth (check long)
