(* A fixed pool of domains running fork-join tasks: the async/await of
   domainslib's Task pool, in the standard library only (no other library is
   available here). [run k f] runs [f] on the calling domain with k-1 more
   domains spawned as workers; [async] queues a task, [await] waits for it,
   running queued tasks meanwhile, so that a domain waiting on a join is
   never idle while there is work and nested fork-join cannot deadlock.

   Work stealing, as domainslib (and numagc, Java's ForkJoinPool, GHC's spark
   pools): every domain has its own deque of tasks; [async] pushes at its
   bottom, and a domain looking for work takes the newest task of its own
   deque (LIFO: depth first, the order of the sequential program, so the
   stack and the live data stay those of the sequential run) or else steals
   the oldest, hence largest, task of another domain's deque. Each deque has
   its own mutex (taken by its owner at every push and pop, uncontended but
   for steals); idle workers spin briefly, then sleep on a condition that
   [async] signals only when some worker sleeps.

   Until 2026-11-26 this was one FIFO queue under one mutex: every domain,
   the forking one too, took the oldest task first, so at one domain a
   waiting fork ran the oldest pending task, not its own child, the
   recursion went breadth first, and pending tasks and their data piled up:
   coins (paper size) took 1.39 s at 1 domain, 0.75 s with this pool (0.51 s
   in OCaml 4.13). *)
type 'a state = Pending | Done of 'a | Failed of exn
type 'a promise = 'a state Atomic.t

let nop () = ()

(* A deque: a ring buffer of capacity a power of two; [nop] marks empty
   cells and "no task". *)
type deque = { lock : Mutex.t; mutable buf : (unit -> unit) array; mutable head : int; mutable len : int }

let new_deque () = { lock = Mutex.create (); buf = Array.make 64 nop; head = 0; len = 0 }

let push_bottom d j =
  Mutex.lock d.lock;
  let cap = Array.length d.buf in
  if d.len = cap then begin
    let b = Array.make (2 * cap) nop in
    for i = 0 to d.len - 1 do b.(i) <- d.buf.((d.head + i) land (cap - 1)) done;
    d.buf <- b;
    d.head <- 0
  end;
  d.buf.((d.head + d.len) land (Array.length d.buf - 1)) <- j;
  d.len <- d.len + 1;
  Mutex.unlock d.lock

let pop_bottom d =
  Mutex.lock d.lock;
  let j =
    if d.len = 0 then nop
    else begin
      d.len <- d.len - 1;
      let i = (d.head + d.len) land (Array.length d.buf - 1) in
      let j = d.buf.(i) in
      d.buf.(i) <- nop;
      j
    end
  in
  Mutex.unlock d.lock;
  j

let steal_top d =
  Mutex.lock d.lock;
  let j =
    if d.len = 0 then nop
    else begin
      let j = d.buf.(d.head) in
      d.buf.(d.head) <- nop;
      d.head <- (d.head + 1) land (Array.length d.buf - 1);
      d.len <- d.len - 1;
      j
    end
  in
  Mutex.unlock d.lock;
  j

let deques : deque array ref = ref [| new_deque () |]
let self : int Domain.DLS.key = Domain.DLS.new_key (fun () -> 0)
let queued = Atomic.make 0 (* tasks in all deques *)
let sleepers = Atomic.make 0
let stop = Atomic.make false
let lock = Mutex.create ()
let work = Condition.create ()

(* The newest task of this domain's deque, else the oldest of another's;
   [nop] when there is none. *)
let find_task () =
  let ds = !deques in
  let me = Domain.DLS.get self in
  let j = pop_bottom ds.(me) in
  let j =
    if j != nop then j
    else begin
      let n = Array.length ds and r = ref nop and k = ref 1 in
      while !r == nop && !k < n do
        if ds.((me + !k) mod n).len > 0 then r := steal_top ds.((me + !k) mod n);
        incr k
      done;
      !r
    end
  in
  if j != nop then Atomic.decr queued;
  j

let async f =
  let p = Atomic.make Pending in
  let job () = Atomic.set p (match f () with v -> Done v | exception e -> Failed e) in
  push_bottom !deques.(Domain.DLS.get self) job;
  Atomic.incr queued;
  if Atomic.get sleepers > 0 then begin
    Mutex.lock lock;
    Condition.signal work;
    Mutex.unlock lock
  end;
  p

let rec await p =
  match Atomic.get p with
  | Done v -> v
  | Failed e -> raise e
  | Pending ->
      let j = find_task () in
      if j != nop then j () else Domain.cpu_relax ();
      await p

let rec worker spins =
  if not (Atomic.get stop) then begin
    let j = find_task () in
    if j != nop then (j (); worker 0)
    else if spins < 1000 then (Domain.cpu_relax (); worker (spins + 1))
    else begin
      (* Sleep until a task is queued: [async] reads [sleepers] after
         counting its task in [queued], this reads [queued] after counting
         itself in [sleepers] (sequentially consistent atomics), so one of
         the two sees the other. *)
      Mutex.lock lock;
      Atomic.incr sleepers;
      while Atomic.get queued = 0 && not (Atomic.get stop) do Condition.wait work lock done;
      Atomic.decr sleepers;
      Mutex.unlock lock;
      worker 0
    end
  end

(* [fork_join a b]: a queued for another domain, b run here. *)
let fork_join a b =
  let pa = async a in
  let vb = b () in
  (await pa, vb)

let run k f =
  let k = max 1 k in
  deques := Array.init k (fun _ -> new_deque ());
  Atomic.set stop false;
  Domain.DLS.set self 0;
  let domains = List.init (k - 1) (fun i -> Domain.spawn (fun () -> Domain.DLS.set self (i + 1); worker 0)) in
  let finish () =
    Mutex.lock lock; Atomic.set stop true; Condition.broadcast work; Mutex.unlock lock;
    List.iter Domain.join domains
  in
  Fun.protect ~finally:finish f
