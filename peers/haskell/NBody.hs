{-# OPTIONS_GHC -feager-blackholing #-}
-- ^ Eager blackholing (GHC user's guide, "Using SMP parallelism": it "avoids
-- repeating a computation in a parallel program"): a thunk is marked as
-- under evaluation when its evaluation starts, not at the next context
-- switch. Each sparked task here is a long computation that allocates little
-- (so it reaches no context switch), and the main thread demands the sparks
-- in the order the other capability steals them: with lazy blackholing both
-- capabilities evaluated the same thunks
-- (until 2026-11-26; see docs/results/peers.md for the figures).
{-# OPTIONS_GHC -fcse #-}
-- ^ GHC 9.0.2 (Debian bookworm) panics (Core Lint: "Float inwards" in `energy`)
-- when this file is built with both -fno-full-laziness and -fno-cse, so CSE is
-- turned back on here: nbody builds no trees that CSE could share.
{-# LANGUAGE BangPatterns #-}
-- nbody peer (numagc's crates/numagc-bench/src/benchmarks/nbody.rs; Sandmark's
-- nbody_multicore). Usage: peers/build/haskell/nbody BODIES STEPS SEED +RTS -N<workers>
-- Same bodies as numagc (body i drawn from its own splitmix stream (SEED, i)),
-- same floating-point operations in the same order, so the printed energies
-- are identical. The state is an immutable unboxed array of the packed bodies
-- (7 doubles each); each step builds a new one from chunks of 16 bodies, every
-- chunk sparked (par/pseq), each chunk an unboxed array written in place
-- (runSTUArray) and the chunks copied into the new state. (Until 2026-11-26
-- the chunks and the state were built from lists of boxed Doubles, 13 x
-- numagc's allocation.) The energy is numagc's par_reduce: halves down to
-- at most 16 bodies, one half sparked, summed in the same order.
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import Data.Array.ST (newArray, writeArray, runSTUArray)
import Data.Array.Unboxed (UArray, listArray, bounds, (!))
import Data.Bits (xor, shiftR, shiftL)
import Data.List (foldl')
import Data.Word (Word64)

solarMass, daysPerYear, dt :: Double
solarMass = 4.0 * pi * pi
daysPerYear = 365.24
dt = 0.01

f, grain :: Int
f = 7
grain = 16

mix :: Word64 -> Word64
mix z0 =
  let z1 = z0 + 0x9e3779b97f4a7c15
      z2 = (z1 `xor` (z1 `shiftR` 30)) * 0xbf58476d1ce4e5b9
      z3 = (z2 `xor` (z2 `shiftR` 27)) * 0x94d049bb133111eb
  in z3 `xor` (z3 `shiftR` 31)

initialBody :: Word64 -> Int -> [Double]
initialBody seed i = [x, y, z, vx, vy, vz, m]
  where
    s0 = mix (seed `xor` mix (fromIntegral i))
    s1 = mix s0; s2 = mix s1; s3 = mix s2; s4 = mix s3; s5 = mix s4; s6 = mix s5; s7 = mix s6
    u :: Word64 -> Double -> Double
    u s scale = fromIntegral (s `shiftR` 11) / fromIntegral (1 `shiftL` 53 :: Word64) * scale
    x = u s1 10.0; y = u s2 10.0; z = u s3 10.0
    vx = u s4 5.0 * daysPerYear; vy = u s5 4.0 * daysPerYear; vz = u s6 5.0 * daysPerYear
    m = u s7 10.0 * solarMass

sumD :: [Double] -> Double
sumD = foldl' (+) 0.0

type Bodies = UArray Int Double

data V3 = V3 !Double !Double !Double

energyOf :: Bodies -> Int -> Int -> Double
energyOf p n i = go (i + 1) e0
  where
    o = i * f
    bx = p ! o; by = p ! (o + 1); bz = p ! (o + 2); bm = p ! (o + 6)
    e0 = 0.5 * bm * (p ! (o + 3) * p ! (o + 3) + p ! (o + 4) * p ! (o + 4) + p ! (o + 5) * p ! (o + 5))
    go !j !e
      | j >= n = e
      | otherwise =
          let q = j * f
              dx = bx - p ! q; dy = by - p ! (q + 1); dz = bz - p ! (q + 2)
          in go (j + 1) (e - (bm * p ! (q + 6)) / sqrt (dx * dx + dy * dy + dz * dz))

energy :: Bodies -> Int -> Int -> Int -> Double
energy p n lo hi
  | hi - lo <= grain = leaf lo 0.0
  | otherwise =
      let mid = lo + (hi - lo) `div` 2
          a = energy p n lo mid
          b = energy p n mid hi
      in a `par` (b `pseq` (a + b))
  where
    leaf !i !e
      | i >= hi = e
      | otherwise = leaf (i + 1) (e + energyOf p n i)

-- Body i's velocity after the kick from the old state.
kick :: Bodies -> Int -> Int -> V3
kick p n i = go 0 (p ! (o + 3)) (p ! (o + 4)) (p ! (o + 5))
  where
    o = i * f
    bx = p ! o; by = p ! (o + 1); bz = p ! (o + 2)
    go !j !ax !ay !az
      | j >= n = V3 ax ay az
      | j == i = go (j + 1) ax ay az
      | otherwise =
          let q = j * f
              m = p ! (q + 6)
              dx = bx - p ! q; dy = by - p ! (q + 1); dz = bz - p ! (q + 2)
              dist2 = dx * dx + dy * dy + dz * dz
              mag = dt / (dist2 * sqrt dist2)
          in go (j + 1) (ax - dx * m * mag) (ay - dy * m * mag) (az - dz * m * mag)

-- Bodies lo..hi-1 after one step (kick, then drift), packed into a new
-- unboxed array written in place.
stepChunk :: Bodies -> Int -> Int -> Int -> Bodies
stepChunk p n lo hi = runSTUArray $ do
  a <- newArray (0, (hi - lo) * f - 1) 0
  let body !i
        | i >= hi = return a
        | otherwise = do
            let o = i * f
                t = (i - lo) * f
            case kick p n i of
              V3 vx vy vz -> do
                writeArray a t (p ! o + dt * vx)
                writeArray a (t + 1) (p ! (o + 1) + dt * vy)
                writeArray a (t + 2) (p ! (o + 2) + dt * vz)
                writeArray a (t + 3) vx
                writeArray a (t + 4) vy
                writeArray a (t + 5) vz
                writeArray a (t + 6) (p ! (o + 6))
            body (i + 1)
  body lo

-- The next state: chunks of 16 bodies, every chunk sparked, copied into one
-- new packed array (numagc packs its new body sequence before each step).
advance :: Int -> Bodies -> Bodies
advance n p = foldr par () chunks `pseq` runSTUArray (do
    a <- newArray (0, n * f - 1) 0
    let copy _ [] = return a
        copy !lo (c : cs) = do
          let m = snd (bounds c)
              go !k | k > m = return ()
                    | otherwise = writeArray a (lo * f + k) (c ! k) >> go (k + 1)
          go 0
          copy (lo + grain) cs
    copy 0 chunks)
  where
    chunks = [stepChunk p n lo (min n (lo + grain)) | lo <- [0, grain .. n - 1]]

-- Exact decimal with 9 places (as Rust's {:.9}): round the exact rational value.
fmt9 :: Double -> String
fmt9 e =
  let q = round (toRational e * 10 ^ (9 :: Int)) :: Integer
      (w, fr) = abs q `quotRem` (10 ^ (9 :: Int))
      fs = show fr
  in (if q < 0 || (q == 0 && e < 0) then "-" else "") ++ show w ++ "." ++ replicate (9 - length fs) '0' ++ fs

main :: IO ()
main = do
  [ns, ss, seeds] <- getArgs
  let n = read ns :: Int
      steps = read ss :: Int
      seed = read seeds :: Word64
      drawn = map (initialBody seed) [0 .. n - 1]
      px = sumD [b !! 3 * b !! 6 | b <- drawn]
      py = sumD [b !! 4 * b !! 6 | b <- drawn]
      pz = sumD [b !! 5 * b !! 6 | b <- drawn]
      fixed = case drawn of
        (b : bs) -> (take 3 b ++ [-px / solarMass, -py / solarMass, -pz / solarMass, b !! 6]) : bs
        [] -> []
      b0 = listArray (0, n * f - 1) (concat fixed) :: Bodies
      e0 = energy b0 n 0 n
      run 0 !p = p
      run k !p = run (k - 1 :: Int) (advance n p)
      e1 = energy (run steps b0) n 0 n
  putStr (fmt9 e0 ++ "\n" ++ fmt9 e1 ++ "\n")
