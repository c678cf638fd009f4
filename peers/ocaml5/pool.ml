(* A fixed pool of domains running fork-join tasks: the async/await of
   domainslib's Task pool, in the standard library only (no other library is
   available here). [run k f] runs [f] on the calling domain with k-1 more
   domains spawned as workers; [async] queues a task, [await] waits for it,
   running queued tasks meanwhile, so that a domain waiting on a join is
   never idle while there is work and nested fork-join cannot deadlock.
   One queue under one mutex: the benchmarks cut their recursion off into
   sequential work (as numagc's versions do), so tasks are few and coarse
   and the lock is taken rarely. FIFO: an idle domain takes the oldest,
   hence largest, task. *)
type 'a state = Pending | Done of 'a | Failed of exn
type 'a promise = 'a state Atomic.t

let jobs : (unit -> unit) Queue.t = Queue.create ()
let lock = Mutex.create ()
let work = Condition.create ()
let stop = ref false

let async f =
  let p = Atomic.make Pending in
  let job () = Atomic.set p (match f () with v -> Done v | exception e -> Failed e) in
  Mutex.lock lock;
  Queue.push job jobs;
  Condition.signal work;
  Mutex.unlock lock;
  p

let try_pop () =
  Mutex.lock lock;
  let j = Queue.take_opt jobs in
  Mutex.unlock lock;
  j

let rec await p =
  match Atomic.get p with
  | Done v -> v
  | Failed e -> raise e
  | Pending ->
      (* The unlocked emptiness test is only a hint (a racy read is safe in
         OCaml 5); try_pop decides under the lock. *)
      (match if Queue.is_empty jobs then None else try_pop () with
      | Some j -> j ()
      | None -> Domain.cpu_relax ());
      await p

let rec worker () =
  Mutex.lock lock;
  while Queue.is_empty jobs && not !stop do Condition.wait work lock done;
  let j = Queue.take_opt jobs in
  Mutex.unlock lock;
  match j with Some j -> j (); worker () | None -> ()

(* [fork_join a b]: a queued for another domain, b run here. *)
let fork_join a b =
  let pa = async a in
  let vb = b () in
  (await pa, vb)

let run k f =
  let domains = List.init (max 1 k - 1) (fun _ -> Domain.spawn worker) in
  let finish () =
    Mutex.lock lock; stop := true; Condition.broadcast work; Mutex.unlock lock;
    List.iter Domain.join domains
  in
  Fun.protect ~finally:finish f
