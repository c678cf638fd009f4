(* nbody peer, parallel (numagc's crates/numagc-bench/src/benchmarks/nbody.rs;
   Sandmark's nbody). Usage: peers/build/ocaml5/nbody BODIES STEPS SEED [WORKERS]
   WORKERS domains (Pool). Same bodies and arithmetic as peers/ocaml/nbody.ml
   (numagc's, in the same order); each step builds a new packed float array,
   its bodies split in halves down to 16 per task; the energy is reduced in
   the same halves (leaves of 16 bodies), so it prints identically. *)
let pi = 4.0 *. atan 1.0
let solar_mass = 4.0 *. pi *. pi
let days_per_year = 365.24
let dt = 0.01
let f = 7
let grain = 16

let mix z =
  let open Int64 in
  let z = add z 0x9e3779b97f4a7c15L in
  let z = mul (logxor z (shift_right_logical z 30)) 0xbf58476d1ce4e5b9L in
  let z = mul (logxor z (shift_right_logical z 27)) 0x94d049bb133111ebL in
  logxor z (shift_right_logical z 31)

let two53 = Int64.to_float (Int64.shift_left 1L 53)

let initial_body seed i b =
  let state = ref (mix (Int64.logxor seed (mix (Int64.of_int i)))) in
  let uniform scale =
    state := mix !state;
    Int64.to_float (Int64.shift_right_logical !state 11) /. two53 *. scale
  in
  let x = uniform 10.0 in let y = uniform 10.0 in let z = uniform 10.0 in
  let vx = uniform 5.0 *. days_per_year in let vy = uniform 4.0 *. days_per_year in
  let vz = uniform 5.0 *. days_per_year in let m = uniform 10.0 *. solar_mass in
  Array.blit [| x; y; z; vx; vy; vz; m |] 0 b (i * f) f

let energy_of p n i =
  let o = i * f in
  let bm = p.(o + 6) in
  let e = ref (0.5 *. bm *. ((p.(o + 3) *. p.(o + 3)) +. (p.(o + 4) *. p.(o + 4)) +. (p.(o + 5) *. p.(o + 5)))) in
  for j = i + 1 to n - 1 do
    let q = j * f in
    let dx = p.(o) -. p.(q) and dy = p.(o + 1) -. p.(q + 1) and dz = p.(o + 2) -. p.(q + 2) in
    e := !e -. (bm *. p.(q + 6) /. sqrt ((dx *. dx) +. (dy *. dy) +. (dz *. dz)))
  done;
  !e

let rec energy p n lo hi =
  if hi - lo <= grain then begin
    let e = ref 0.0 in
    for i = lo to hi - 1 do e := !e +. energy_of p n i done;
    !e
  end else
    let mid = lo + ((hi - lo) / 2) in
    let a, b = Pool.fork_join (fun () -> energy p n lo mid) (fun () -> energy p n mid hi) in
    a +. b

(* Bodies lo..hi-1 of the next step, written into next. *)
let rec advance old next n lo hi =
  if hi - lo > grain then begin
    let mid = lo + ((hi - lo) / 2) in
    ignore (Pool.fork_join (fun () -> advance old next n lo mid) (fun () -> advance old next n mid hi))
  end else
    for i = lo to hi - 1 do
      let o = i * f in
      let bx = old.(o) and by = old.(o + 1) and bz = old.(o + 2) in
      let vx = ref old.(o + 3) and vy = ref old.(o + 4) and vz = ref old.(o + 5) in
      for j = 0 to n - 1 do
        if j <> i then begin
          let q = j * f in
          let m = old.(q + 6) in
          let dx = bx -. old.(q) and dy = by -. old.(q + 1) and dz = bz -. old.(q + 2) in
          let dist2 = (dx *. dx) +. (dy *. dy) +. (dz *. dz) in
          let mag = dt /. (dist2 *. sqrt dist2) in
          vx := !vx -. (dx *. m *. mag);
          vy := !vy -. (dy *. m *. mag);
          vz := !vz -. (dz *. m *. mag)
        end
      done;
      next.(o + 3) <- !vx; next.(o + 4) <- !vy; next.(o + 5) <- !vz;
      next.(o) <- bx +. (dt *. !vx); next.(o + 1) <- by +. (dt *. !vy); next.(o + 2) <- bz +. (dt *. !vz);
      next.(o + 6) <- old.(o + 6)
    done

let () =
  let n = int_of_string Sys.argv.(1) and steps = int_of_string Sys.argv.(2) in
  let seed = Int64.of_string Sys.argv.(3) in
  let workers = if Array.length Sys.argv > 4 then int_of_string Sys.argv.(4) else Domain.recommended_domain_count () in
  Pool.run workers @@ fun () ->
  let b = Array.make (n * f) 0.0 in
  for i = 0 to n - 1 do initial_body seed i b done;
  let p = Array.make 3 0.0 in
  for i = 0 to n - 1 do
    for k = 0 to 2 do p.(k) <- p.(k) +. (b.((i * f) + 3 + k) *. b.((i * f) + 6)) done
  done;
  for k = 0 to 2 do b.(3 + k) <- -.p.(k) /. solar_mass done;
  let e0 = energy b n 0 n in
  let b = ref b in
  for _ = 1 to steps do
    let next = Array.make (n * f) 0.0 in
    advance !b next n 0 n;
    b := next
  done;
  Printf.printf "%.9f\n%.9f\n" e0 (energy !b n 0 n)
