// main.swift — the Swift Observation anchor of the benchmark suite.
//
// Swift's own answer to "keep state and react to it": an @Observable class
// and withObservationTracking(_:onChange:), which calls onChange once, on
// the writing thread, in willSet (before the new value is stored), and then
// must be re-armed. Measured here with the same protocol and checks as
// benchmarks/tether/bench_tether.c:
//
//  - set+notify: one object, one tracking re-armed in its onChange, 1M
//    writes of distinct values;
//  - 50-deep chain (kairo deepPropagation): Observation has no derived
//    values, so the chain is 51 objects, each but the head recomputed from
//    the one before. onChange runs before the new value is stored, so it
//    cannot compute the next value there: it queues the node, and the writer
//    drains the queue once its write has returned (what SwiftUI does with the
//    views it invalidates: they are re-evaluated later). Recomputing node k
//    re-arms its tracking on node k-1 and writes node k, whose own tracking
//    queues node k+1; the effect at the end counts;
//  - fan-out: one object, 1000 trackings, each re-armed in its onChange.
//  - memory per state: 1M @Observable objects.
//
// Output: JSON lines on stdout as benchmarks/common/bench.h writes them.
// BENCH_QUICK=1: small sizes. BENCH_ONLY: sections, as for the C drivers.
// `--icount setnotify|fanout|chain N` runs one of those three once, N times
// over, for callgrind (benchmarks/icount/icount.py; benchmarks/common/bench.h
// says how).

import CMallinfo
import Foundation
import Glibc
import Observation

@Observable final class Cell {
  var value: Int = 0
  init(_ v: Int) { value = v }
}

let env = ProcessInfo.processInfo.environment
let quick = env["BENCH_QUICK"] == "1"
let args = CommandLine.arguments
// --icount WORKLOAD N: N repetitions in place of the timed sizes, one run.
let icountWorkload: String? = args.count >= 2 && args[1] == "--icount" ? (args.count > 2 ? args[2] : "") : nil
let icountN: Int? = args.count >= 4 ? Int(args[3]).flatMap { $0 > 0 ? $0 : nil } : nil

func want(_ section: String) -> Bool {
  guard let only = env["BENCH_ONLY"], !only.isEmpty else { return true }
  return only.split(whereSeparator: { $0 == " " || $0 == "," }).contains { $0 == section }
}

func nowNs() -> Int64 {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

func mallocInUse() -> Int64 { Int64(bench_malloc_in_use()) }

// Resident set size from /proc/self/statm, in bytes.
func rss() -> Int64 {
  guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return -1 }
  let parts = text.split(separator: " ")
  guard parts.count > 1, let pages = Int64(parts[1]) else { return -1 }
  return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
}

func jsonString(_ s: String) -> String {
  var out = "\""
  for ch in s.unicodeScalars {
    switch ch {
    case "\"": out += "\\\""
    case "\\": out += "\\\\"
    default:
      if ch.value < 0x20 { out += String(format: "\\u%04x", ch.value) } else { out.unicodeScalars.append(ch) }
    }
  }
  return out + "\""
}

// Out of line, so that benchmarks/icount/icount.py can leave it out of the
// instruction count (--toggle-collect): the line it builds has a timing in
// it, whose length differs from run to run.
@inline(never)
func emit(_ group: String, _ name: String, ok: Bool, _ value: Double, _ unit: String,
          protocol proto: String, extra: String = "", note: String = "") {
  var line = "{\"sys\":\"swift\",\"group\":\(jsonString(group)),\"name\":\(jsonString(name)),\"ok\":\(ok)"
  if ok { line += ",\"value\":\(String(format: "%.6g", value))" }
  line += ",\"unit\":\(jsonString(unit)),\"protocol\":\(jsonString(proto))"
  if !extra.isEmpty { line += "," + extra }
  if !note.isEmpty { line += ",\"note\":\(jsonString(note))" }
  line += "}"
  print(line)
  fflush(stdout)
  let shown = ok ? String(format: "%12.4g %@", value, unit) : "FAILED (no figure)"
  FileHandle.standardError.write("  swift    \(group.padding(toLength: 22, withPad: " ", startingAt: 0)) \(name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(shown)\n".data(using: .utf8)!)
}

func skip(_ group: String, _ name: String, _ why: String) {
  print("{\"sys\":\"swift\",\"group\":\(jsonString(group)),\"name\":\(jsonString(name)),\"ok\":false,\"skip\":true,\"note\":\(jsonString(why))}")
  fflush(stdout)
}

// MARK: - set+notify

final class Tracker {
  let cell: Cell
  var calls = 0
  init(_ c: Cell) { cell = c }
  func arm() {
    withObservationTracking {
      _ = cell.value
    } onChange: { [unowned self] in
      self.calls += 1
      self.arm()
    }
  }
}

func benchSetNotify() {
  let n = icountN ?? (quick ? 20_000 : 1_000_000)
  let runs = icountN != nil ? 1 : quick ? 2 : 3
  let cell = Cell(0)
  let t = Tracker(cell)
  t.arm()
  var base = 0
  for i in 1...10_000 { cell.value = base + i }
  base += 10_000
  var best = Int64.max
  var ok = true
  for _ in 0..<runs {
    let c0 = t.calls
    let t0 = nowNs()
    for i in 1...n { cell.value = base + i }
    best = min(best, nowNs() - t0)
    ok = ok && t.calls - c0 == n && cell.value == base + n
    base += n
  }
  emit("micro", "set+notify", ok: ok, Double(best) / Double(n), "ns/write",
       protocol: "1M writes of distinct ints, one withObservationTracking re-armed in its onChange; fastest of \(runs) runs after 10k warm-up writes",
       note: "@Observable class; onChange runs in willSet on the writing thread")
}

// MARK: - 50-deep chain (kairo deepPropagation)

final class Chain {
  let cells: [Cell]          // head, c1 ... c50
  var queue: [Int] = []      // nodes to recompute (k >= 1), or 51: the effect
  var count = 0
  var lastSeen = 0
  init() {
    cells = (0...50).map { _ in Cell(0) }
    for k in 1...50 { recompute(k) }
    runEffect()
  }
  // Node k = node k-1 + 1; re-arms the tracking of node k-1.
  func recompute(_ k: Int) {
    let v = withObservationTracking {
      cells[k - 1].value + 1
    } onChange: { [unowned self] in
      self.queue.append(k)
    }
    cells[k].value = v  // an equal value notifies nobody
  }
  func runEffect() {
    lastSeen = withObservationTracking {
      cells[50].value
    } onChange: { [unowned self] in
      self.queue.append(51)
    }
    count += 1
  }
  func drain() {
    var i = 0
    while i < queue.count {
      let k = queue[i]
      i += 1
      if k == 51 { runEffect() } else { recompute(k) }
    }
    queue.removeAll(keepingCapacity: true)
  }
  func write(_ v: Int) {
    cells[0].value = v
    drain()
  }
  func iter() -> Bool {
    var ok = true
    write(1)
    count = 0
    for i in 0..<50 {
      write(i)
      ok = ok && cells[50].value == 50 + i && lastSeen == 50 + i
    }
    return ok && count == 50
  }
}

func benchChain() {
  let samples = icountN != nil ? 1 : quick ? 2 : 5
  let per = icountN ?? (quick ? 5 : 500)
  let c = Chain()
  var ok = true
  for _ in 0..<3 { ok = c.iter() && ok }
  var best = Int64.max
  for _ in 0..<samples where ok {
    let t0 = nowNs()
    for _ in 0..<per { ok = c.iter() && ok }
    best = min(best, nowNs() - t0)
  }
  emit("micro", "50-deep chain", ok: ok, Double(best) / 1e6, "ms",
       protocol: "kairo deepPropagation: head -> 50 objects recomputed by onChange handlers -> a counting tracking; 500 iter() of 51 writes; fastest of \(samples) samples",
       note: "onChange queues the node (it fires before the value is stored); the writer drains the queue after each write")
}

// MARK: - fan-out

func benchFanout() {
  let observers = 1000
  let writes = icountN ?? (quick ? 100 : 10_000)
  let cell = Cell(0)
  let trackers = (0..<observers).map { _ in Tracker(cell) }
  for t in trackers { t.arm() }
  var base = 0
  for i in 1...20 { cell.value = base + i }
  base += 20
  let t0 = nowNs()
  for i in 1...writes { cell.value = base + i }
  let dt = nowNs() - t0
  base += writes
  let ok = trackers.allSatisfy { $0.calls == base } && cell.value == base
  emit("micro", "fan-out", ok: ok, Double(dt) / Double(writes * observers), "ns/notification",
       protocol: "one object, 1000 trackings each re-armed in its onChange, 10k writes; time / (writes x 1000); one timed run (it takes about 10 s) after 20 warm-up writes",
       note: "every notification re-registers its tracking")
}

// MARK: - memory

func benchMemory() {
  let n = quick ? 20_000 : 1_000_000
  var cells: [Cell] = []
  cells.reserveCapacity(n)
  _ = Cell(0)
  let m0 = mallocInUse()
  let r0 = rss()
  for i in 0..<n { cells.append(Cell(i)) }
  let m1 = mallocInUse()
  let r1 = rss()
  emit("memory", "per state", ok: m1 > m0, Double(m1 - m0) / Double(n), "bytes",
       protocol: "1M @Observable objects with one Int property (array of references reserved before the baseline)",
       extra: "\"malloc_bytes\":\(m1 - m0),\"rss_bytes\":\(r1 - r0),\"count\":\(n),\"rss_per\":\(String(format: "%.1f", Double(r1 - r0) / Double(n)))",
       note: "mallinfo2 difference / count; untracked (an observed object also allocates its registrar's state)")
  withExtendedLifetime(cells) {}
}

// MARK: - main

if let workload = icountWorkload {
  // One workload under callgrind; its result line says whether its checks held.
  switch (workload, icountN) {
  case ("setnotify", .some): benchSetNotify()
  case ("fanout", .some): benchFanout()
  case ("chain", .some): benchChain()
  default:
    FileHandle.standardError.write("usage: \(args[0]) --icount setnotify|fanout|chain N\n".data(using: .utf8)!)
    exit(2)
  }
  exit(0)
}

FileHandle.standardError.write("bench_swift_observation\(quick ? " (BENCH_QUICK)" : "")\n".data(using: .utf8)!)
if want("memory") { benchMemory() }
if want("chain") { benchChain() }
if want("setnotify") { benchSetNotify() }
if want("fanout") { benchFanout() }

let kairoWhy = "Observation has no derived (cached, lazy) values and no transactions: every node would be an object recomputed by hand-queued onChange handlers; only the 50-deep chain is emulated that way, as BENCHMARKS.md's anchor table does"
for name in ["avoidablePropagation", "broadPropagation", "deepPropagation", "diamond", "mux",
             "repeatedObservers", "triangle", "unstable", "molBench"] {
  skip("kairo", name, kairoWhy)
}
for name in ["cellx1000", "cellx2500"] { skip("cellx", name, kairoWhy) }
for name in ["createSignals", "createComputations", "updateSignals"] {
  skip("creation", name, "no effects (callbacks re-run on whatever they read, re-armed automatically) or derived values")
}
for name in ["2-10x5 lazy80%", "6-10x10 dyn25% lazy80%", "4-1000x12 dyn5%", "25-1000x5", "3-5x500", "6-100x15 dyn50%"] {
  skip("dynamic", name, "no derived values: nodes computed from several inputs, lazily, would all be hand-written queueing")
}
for name in ["latency p50", "latency p99", "sustained writes/s"] {
  skip("crossthread", name, "onChange runs synchronously on the writing thread, in willSet; delivering to another thread is a separate mechanism (a DispatchQueue or an actor), not part of Observation")
}
skip("memory", "per computed", "no derived values")
skip("memory", "per dependency edge", "a dependency is a one-shot tracking, gone after it fires; there is no standing edge to measure")
