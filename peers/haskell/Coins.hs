-- coins peer (numagc's crates/numagc-bench/src/benchmarks/coins.rs; nofib
-- parallel/coins, payN and payN_par). Usage: peers/build/haskell/coins VALUE DEPTH +RTS -N<workers>
-- Parallelism: par/pseq, the original's: while depth > 0 the right branch
-- is sparked (right `par` left) with depth-1; the left keeps its depth
-- unless it used the last coin of a value.
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import Text.Printf (printf)

coins :: [(Int, Int)]
coins = zip [250, 100, 25, 10, 5, 1] [55, 88, 88, 99, 122, 177]

payN :: Int -> [(Int, Int)] -> Int
payN 0 _ = 1
payN _ [] = 0
payN val ((c, q) : cs)
  | c > val = payN val cs
  | otherwise = payN (val - c) (payOne c q cs) + payN val cs

payOne :: Int -> Int -> [(Int, Int)] -> [(Int, Int)]
payOne c q cs = if q == 1 then cs else (c, q - 1) : cs

payNPar :: Int -> Int -> [(Int, Int)] -> Int
payNPar 0 val cs = payN val cs
payNPar _ 0 _ = 1
payNPar _ _ [] = 0
payNPar depth val ((c, q) : cs)
  | c > val = payNPar depth val cs
  | otherwise =
      let left = payNPar (if q == 1 then depth - 1 else depth) (val - c) (payOne c q cs)
          right = payNPar (depth - 1) val cs
      in right `par` (left `pseq` (left + right))

main :: IO ()
main = do
  [vs, ds] <- getArgs
  let val = read vs; depth = read ds :: Int
  printf "coins: ways to pay %d (depth %d) = %d\n" val depth (payNPar depth val coins)
