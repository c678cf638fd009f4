{-# LANGUAGE BangPatterns #-}
-- GCBench peer (numagc's crates/numagc-bench/src/benchmarks/gcbench.rs).
-- Usage: peers/build/haskell/gcbench STRETCH_DEPTH LONG_LIVED_DEPTH MAX_DEPTH ARRAY_SIZE GRAIN +RTS -N<workers>
-- Parallelism: par/pseq. The trees of each phase and depth are split
-- recursively in halves down to ranges of max 1 (GRAIN / TreeSize d) trees
-- (numagc's par_reduce), one half sparked; the stretch and long-lived trees
-- spark their subtrees deeper than 12. Nodes are immutable (strict fields
-- left, right, i, j); both phases build bottom up, as numagc's.
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import Control.Exception (evaluate)
import Data.Array.Unboxed (UArray, listArray, (!))
import Text.Printf (printf)

data Node = Leaf | Node !Node !Node !Int !Int

treeSize :: Int -> Int
treeSize d = 2 ^ (d + 1) - 1

makeTree :: Int -> Node
makeTree 0 = Node Leaf Leaf 0 0
makeTree d = Node (makeTree (d - 1)) (makeTree (d - 1)) 0 0

makeBig :: Int -> Node
makeBig d
  | d <= 12 = makeTree d
  | otherwise = let l = makeBig (d - 1); r = makeBig (d - 1) in l `par` (r `pseq` (l `pseq` Node l r 0 0))

count :: Node -> Int
count Leaf = 0
count (Node l r _ _) = 1 + count l + count r

-- (trees, nodes) of trees lo..hi-1.
phase :: Int -> Int -> Int -> Int -> (Int, Int)
phase d per lo hi
  | hi - lo <= per = go lo 0 0
  | otherwise =
      let mid = lo + (hi - lo) `div` 2
          a = phase d per lo mid
          b = phase d per mid hi
      in fst a `par` (snd b `pseq` (snd a `pseq` (fst a + fst b, snd a + snd b)))
  where
    go !k !t !n
      | k >= hi = (t, n)
      | otherwise = go (k + 1) (t + 1) (n + count (makeTree d))

main :: IO ()
main = do
  [s1, s2, s3, s4, s5] <- getArgs
  let stretch = read s1; longDepth = read s2; maxDepth = read s3; arraySize = read s4; grain = read s5 :: Int
  putStr "Garbage Collector Test\n"
  printf " Stretching memory with a binary tree of depth %d: %d nodes\n" stretch (count (makeBig stretch))
  printf " Creating a long-lived binary tree of depth %d\n" longDepth
  long <- evaluate (makeBig longDepth)
  printf " Creating a long-lived array of %d doubles\n" arraySize
  let arr = listArray (0, arraySize - 1) [if i < arraySize `div` 2 then 1 / fromIntegral i else 0 | i <- [0 .. arraySize - 1]] :: UArray Int Double
  _ <- evaluate (arr ! 0)
  let loop d
        | d > maxDepth = return ()
        | otherwise = do
            let iters = 2 * treeSize stretch `div` treeSize d
                per = max 1 (grain `div` treeSize d)
            (t, td) <- evaluate (phase d per 0 iters)
            (_, bu) <- evaluate (phase d per 0 iters)
            printf "Creating %d trees of depth %d: top down %d nodes, bottom up %d nodes\n" t d td bu
            loop (d + 2)
  loop 4
  printf "Long-lived tree: %d nodes; array[1000] == 1/1000: %s\n" (count long) (if arr ! 1000 == 1 / 1000 then "true" else "false")
