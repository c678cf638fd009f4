{-# LANGUAGE BangPatterns, FlexibleContexts #-}
-- quicksort peer (numagc's crates/numagc-bench/src/benchmarks/quicksort.rs;
-- the NESL/Manticore quicksort over ropes).
-- Usage: peers/build/haskell/quicksort N RANGE GRAIN SEED +RTS -N<workers>
-- The same immutable ropes as numagc's: leaves of at most 1024 keys (unboxed
-- arrays), inner nodes Cat len left right (strict fields, so a rope in WHNF is
-- fully built); concatenation is a new node except that two sequences of at
-- most 1024 keys in all are copied into one leaf; a filter reads a subtree of
-- at most 4096 keys in one go and cuts what it keeps into new leaves.
-- Parallelism (par/pseq): the three filters are sparked, each filter sparks
-- at rope nodes above 8192 keys (a subtree of at most 4096 keys is filtered
-- into an unboxed array and cut into leaves, no lists), the input is built in parallel above 8192
-- keys, and the two recursive sorts are sparked; sequences of at most GRAIN
-- keys are copied into an unboxed mutable array (STUArray) and sorted in
-- place (a median-of-three quicksort with insertion sort below 16 keys), as
-- numagc sorts a new leaf in place, Java with Arrays.sort and OCaml with
-- Array.fast_sort; the sorted array is the new leaf.
import Control.Monad (when)
import Control.Monad.ST (ST, runST)
import Data.Array.Base (unsafeAt, unsafeFreeze, unsafeRead, unsafeWrite)
import Data.Array.ST (STUArray, newArray, newListArray, runSTUArray)
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import Data.Array.Unboxed (UArray, listArray, elems, bounds, (!))
import Data.Bits (xor, shiftR)
import Data.List (foldl')
import Data.Word (Word64)

data Seq = Empty | Leaf !(UArray Int Int) | Cat !Int !Seq !Seq

leafMax, chunk, filterGrain :: Int
leafMax = 1024
chunk = 4 * leafMax
filterGrain = 8 * leafMax

len :: Seq -> Int
len Empty = 0
len (Leaf w) = snd (bounds w) + 1
len (Cat n _ _) = n

mix :: Word64 -> Word64
mix z0 =
  let z1 = z0 + 0x9e3779b97f4a7c15
      z2 = (z1 `xor` (z1 `shiftR` 30)) * 0xbf58476d1ce4e5b9
      z3 = (z2 `xor` (z2 `shiftR` 27)) * 0x94d049bb133111eb
  in z3 `xor` (z3 `shiftR` 31)

key :: Word64 -> Word64 -> Int -> Int
key seed range i = fromIntegral (mix (mix seed `xor` fromIntegral i) `rem` range)

nth :: Seq -> Int -> Int
nth (Leaf w) i = w ! i
nth (Cat _ l r) i = let ll = len l in if i < ll then nth l i else nth r (i - ll)
nth Empty _ = error "nth: past the end"

elements :: Seq -> [Int]
elements Empty = []
elements (Leaf w) = elems w
elements (Cat _ l r) = elements l ++ elements r

leaf :: Int -> [Int] -> Seq
leaf n xs = Leaf (listArray (0, n - 1) xs)

cat :: Seq -> Seq -> Seq
cat a b
  | al == 0 = b
  | bl == 0 = a
  | al + bl <= leafMax = leaf (al + bl) (elements a ++ elements b)
  | otherwise = Cat (al + bl) a b
  where
    al = len a
    bl = len b

fromWords :: Int -> [Int] -> Seq
fromWords n xs
  | n <= leafMax = leaf n xs
  | otherwise =
      let h = n `div` 2
          (a, b) = splitAt h xs
          l = fromWords h a
          r = fromWords (n - h) b
      in l `pseq` r `pseq` Cat n l r

input :: Word64 -> Word64 -> Int -> Int -> Seq
input seed range lo hi
  | hi - lo <= leafMax = leaf (hi - lo) [key seed range k | k <- [lo .. hi - 1]]
  | hi - lo > filterGrain = l `par` (r `pseq` Cat (hi - lo) l r)
  | otherwise = Cat (hi - lo) l r
  where
    mid = lo + (hi - lo) `div` 2
    l = input seed range lo mid
    r = input seed range mid hi

filterSeq :: (Int -> Bool) -> Seq -> Seq
filterSeq keep s = case s of
  Cat n l r | n > chunk ->
    let a = filterSeq keep l
        b = filterSeq keep r
    in if n > filterGrain then a `par` (b `pseq` cat a b) else a `pseq` cat a b
  _ -> filterChunk keep s

-- A subtree of at most `chunk` keys filtered in one go: the keys kept are
-- written into an unboxed array, then cut into new leaves.
filterChunk :: (Int -> Bool) -> Seq -> Seq
filterChunk keep s = runST $ do
  out <- newArray (0, max 0 (len s - 1)) 0 :: ST t (STUArray t Int Int)
  k <- fill out 0 s
  frozen <- unsafeFreeze out
  return (if k == 0 then Empty else fromArray frozen 0 k)
  where
    fill _ !i Empty = return i
    fill out !i (Cat _ l r) = fill out i l >>= \j -> fill out j r
    fill out !i0 (Leaf w) = go i0 0
      where
        m = snd (bounds w) + 1
        go !i !j
          | j >= m = return i
          | otherwise = do
              let x = unsafeAt w j
              if keep x then unsafeWrite out i x >> go (i + 1) (j + 1) else go i (j + 1)

-- The rope of a[lo .. hi-1], in leaves of at most leafMax keys.
fromArray :: UArray Int Int -> Int -> Int -> Seq
fromArray a lo hi
  | n <= leafMax = Leaf (runSTUArray (do
      l <- newArray (0, n - 1) 0
      mapM_ (\j -> unsafeWrite l j (unsafeAt a (lo + j))) [0 .. n - 1]
      return l))
  | otherwise =
      let h = lo + n `div` 2
          l = fromArray a lo h
          r = fromArray a h hi
      in l `pseq` r `pseq` Cat n l r
  where
    n = hi - lo

-- The n keys xs, sorted in place in an unboxed array.
sortedArray :: Int -> [Int] -> UArray Int Int
sortedArray n xs = runSTUArray $ do
  a <- newListArray (0, n - 1) xs
  sortRange a 0 (n - 1)
  return a

sortRange :: STUArray s Int Int -> Int -> Int -> ST s ()
sortRange a lo hi
  | hi - lo < 16 = insertion a lo hi
  | otherwise = do
      let mid = lo + (hi - lo) `div` 2
      order a lo mid
      order a mid hi
      order a lo mid
      p <- unsafeRead a mid
      j <- partition a p lo hi
      sortRange a lo j
      sortRange a (j + 1) hi

-- Swaps a[i] and a[j] when they are out of order.
order :: STUArray s Int Int -> Int -> Int -> ST s ()
order a i j = do
  x <- unsafeRead a i
  y <- unsafeRead a j
  when (y < x) $ unsafeWrite a i y >> unsafeWrite a j x

-- Hoare's partition around the value p: returns j with a[lo..j] <= p <= a[j+1..hi].
partition :: STUArray s Int Int -> Int -> Int -> Int -> ST s Int
partition a p = go
  where
    go i0 j0 = do
      i <- up i0
      j <- down j0
      if i >= j
        then return j
        else do
          x <- unsafeRead a i
          y <- unsafeRead a j
          unsafeWrite a i y
          unsafeWrite a j x
          go (i + 1) (j - 1)
    up i = do
      x <- unsafeRead a i
      if x < p then up (i + 1) else return i
    down j = do
      y <- unsafeRead a j
      if y > p then down (j - 1) else return j

insertion :: STUArray s Int Int -> Int -> Int -> ST s ()
insertion a lo hi = mapM_ insert [lo + 1 .. hi]
  where
    insert i = unsafeRead a i >>= shift i
    shift j x
      | j > lo = do
          y <- unsafeRead a (j - 1)
          if y > x then unsafeWrite a j y >> shift (j - 1) x else unsafeWrite a j x
      | otherwise = unsafeWrite a j x

quicksort :: Int -> Seq -> Seq
quicksort grain s
  | n == 0 = Empty
  | n <= max grain 1 =
      let sorted = sortedArray n (elements s)
      in if n <= leafMax then Leaf sorted else fromArray sorted 0 n
  | otherwise =
      let p = nth s (n `div` 2)
          lt = filterSeq (< p) s
          eq = filterSeq (== p) s
          gt = filterSeq (> p) s
          l = quicksort grain lt
          u = quicksort grain gt
      in lt `par` (eq `par` (gt `pseq` eq `pseq` lt `pseq`
           (l `par` (u `pseq` l `pseq` cat l (cat eq u)))))
  where
    n = len s

main :: IO ()
main = do
  [ns, rs, gs, ss] <- getArgs
  let n = read ns :: Int
      range = read rs :: Word64
      grain = read gs :: Int
      seed = read ss :: Word64
      xs = if n == 0 then Empty else input seed range 0 n
      sorted = quicksort grain xs
      total = len sorted
      step (!c, !f, !m, !_, !sm) x =
        (c + 1, if c == 0 then x else f, if c == total `div` 2 then x else m, x, sm * 1000003 + fromIntegral x :: Word64)
      (cnt, first, middle, lastK, checksum) = foldl' step (0 :: Int, 0, 0, 0, 0) (elements sorted)
  putStr ("quicksort: " ++ show cnt ++ " integers in [0, " ++ show range ++ ") sorted\n"
    ++ "first " ++ show first ++ ", middle " ++ show middle ++ ", last " ++ show lastK ++ ", checksum " ++ show checksum ++ "\n")
