{-# OPTIONS_GHC -fno-spec-constr #-}
-- ^ With the strict coin pairs below, SpecConstr would specialise payN on
-- the shape `Coin c q : cs` and pass c, q and cs unboxed: no pair and no
-- cons cell would be allocated, where numagc's version (and the original)
-- allocates both. Like -fno-full-laziness and -fno-cse (build.sh), this keeps
-- every allocation of the program.
-- coins peer (numagc's crates/numagc-bench/src/benchmarks/coins.rs; nofib
-- parallel/coins, payN and payN_par). Usage: peers/build/haskell/coins VALUE DEPTH +RTS -N<workers>
-- Parallelism: par/pseq, the original's: while depth > 0 the right branch
-- is sparked (right `par` left) with depth-1; the left keeps its depth
-- unless it used the last coin of a value.
-- The coins are a list of strict pairs (value, quantity), and the list a
-- left step pays from is built strictly ($!): each left step allocates one
-- pair and one cons cell, as numagc's version does (48 bytes, as OCaml's).
-- Until 2026-11-26 this was nofib's text exactly, with lazy tuples
-- `(c, q - 1) : cs` passed unevaluated: a thunk, a boxed Int and a tuple per
-- left step, 2.2 x numagc's allocation (same answers).
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import Text.Printf (printf)

data Coin = Coin !Int !Int

coins :: [Coin]
coins = zipWith Coin [250, 100, 25, 10, 5, 1] [55, 88, 88, 99, 122, 177]

payN :: Int -> [Coin] -> Int
payN 0 _ = 1
payN _ [] = 0
payN val (Coin c q : cs)
  | c > val = payN val cs
  | otherwise = (payN (val - c) $! payOne c q cs) + payN val cs

payOne :: Int -> Int -> [Coin] -> [Coin]
payOne c q cs = if q == 1 then cs else Coin c (q - 1) : cs

payNPar :: Int -> Int -> [Coin] -> Int
payNPar 0 val cs = payN val cs
payNPar _ 0 _ = 1
payNPar _ _ [] = 0
payNPar depth val (Coin c q : cs)
  | c > val = payNPar depth val cs
  | otherwise =
      let left = payNPar (if q == 1 then depth - 1 else depth) (val - c) $! payOne c q cs
          right = payNPar (depth - 1) val cs
      in right `par` (left `pseq` (left + right))

main :: IO ()
main = do
  [vs, ds] <- getArgs
  let val = read vs; depth = read ds :: Int
  printf "coins: ways to pay %d (depth %d) = %d\n" val depth (payNPar depth val coins)
